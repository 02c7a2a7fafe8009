// "num_threads = N means N cores in all": nothing inside a worker starts threads of its own (an
// OpenMP-parallel Eigen GEMM inside the attention driver did, so that one requested thread
// used two cores). Proven without timing: the process's thread count, read from
// /proc/self/status, before and after each call. This test is its own executable, so no other
// test has started an OpenMP team first; its steps run in one TEST, in order. The counts are
// relative to the threads the process has at the start: one natively, two under qemu-aarch64
// (the emulator keeps a thread of its own).
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <string>

#include "heed/core/parallel.hpp"
#include "heed/core/random.hpp"
#include "heed/kernels/attention.hpp"
#include "heed/nn/transformer_encoder_layer.hpp"

namespace {

using heed::index_t;

// The number of threads of this process (Linux), or -1 where /proc is not there.
int os_threads() {
  std::ifstream status("/proc/self/status");
  for (std::string line; std::getline(status, line);)
    if (line.rfind("Threads:", 0) == 0) return std::stoi(line.substr(8));
  return -1;
}

TEST(OneCore, OneThreadMeansNoOtherThreadAndTwoMeanTwo) {
  if (os_threads() < 0) GTEST_SKIP() << "no /proc/self/status on this system";
  const int start = os_threads();
  // Large enough that a parallel GEMM inside a tile would split it across threads.
  const auto q = heed::randn<float>({1, 4, 512, 64}, 1), k = heed::randn<float>({1, 4, 512, 64}, 2);
  for (bool weights : {false, true}) {
    const auto r =
        heed::attention(q, k, k, heed::ScaledDot{}, heed::mask::Causal{}, {.need_weights = weights, .num_threads = 1});
    EXPECT_EQ(os_threads(), start) << "attention, need_weights " << weights;
  }
  const auto wq = heed::randn<float>({32, 64}, 3), wk = heed::randn<float>({32, 64}, 4);
  const auto v = heed::randn<float>({32}, 5);
  (void)heed::attention(q, k, k, heed::Additive<float>{.w_q = wq, .w_k = wk, .v = v}, heed::mask::None{},
                        {.num_threads = 1, .block_q = 64, .block_k = 64});
  EXPECT_EQ(os_threads(), start) << "additive attention";

  heed::set_num_threads(1);
  const heed::nn::TransformerEncoderLayer<float> layer({.d_model = 256, .nhead = 4, .dim_feedforward = 512});
  (void)layer(heed::randn<float>({4, 128, 256}, 6));
  EXPECT_EQ(os_threads(), start) << "encoder layer after set_num_threads(1)";

  heed::set_num_threads(2);
  (void)layer(heed::randn<float>({4, 128, 256}, 7));
  (void)heed::attention(q, k, k, heed::ScaledDot{}, heed::mask::None{}, {.num_threads = 2});
  EXPECT_LE(os_threads(), start + 1) << "two threads in all";
  heed::set_num_threads(0);
}

}  // namespace
