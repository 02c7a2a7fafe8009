// A program with a thread pool of its own (an inference server's) hands it to heed: heed then
// runs its parallel work as the pool's tasks and starts no thread of its own. The output is the
// same, to the bit, as on heed's own threads and on one thread.
//   build/release/examples/heed_example_thread_pool
#include <heed/core/eigen_executor.hpp>
#include <heed/heed.hpp>

#include <cstdio>
#include <cstring>
#include <memory>

int main() {
  const heed::nn::TransformerEncoder<float> encoder(
      {.d_model = 128, .nhead = 8, .dim_feedforward = 256, .num_layers = 2, .seed = 1});
  const auto x = heed::randn<float>({4, 64, 128}, 2);

  heed::set_num_threads(1);
  const auto one_thread = encoder(x);
  heed::set_num_threads(0);  // the default: every CPU of the process
  const auto own_threads = encoder(x);

  Eigen::ThreadPool pool(3);  // the program's pool: three threads, and the calling thread helps
  heed::set_executor(std::make_shared<heed::EigenExecutor>(pool));
  std::printf("heed::num_threads() on the pool: %d\n", heed::num_threads());
  const auto on_pool = encoder(x);
  heed::set_executor(nullptr);  // heed's own threads again

  const auto bytes = static_cast<std::size_t>(x.numel()) * sizeof(float);
  const bool same = std::memcmp(one_thread.data(), own_threads.data(), bytes) == 0 &&
                    std::memcmp(one_thread.data(), on_pool.data(), bytes) == 0;
  std::printf("Encoder output %s on one thread, on heed's threads and on the pool: %s\n",
              heed::to_string(on_pool.shape()).c_str(), same ? "identical" : "DIFFERENT");
  return same ? 0 : 1;
}
