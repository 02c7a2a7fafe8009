// The cost of a parallel loop itself: parallel_for over two empty tasks on two workers, the
// start and join a short loop of a decoder step pays. On heed's own team in a build without
// OpenMP, on OpenMP's in a build with it (HEED_OPENMP=ON), and on an Eigen::ThreadPool through
// heed::EigenExecutor. Run on two cores:
//   taskset -c 0,1 build/release/benchmarks/heed_bench_core_parallel
#include <benchmark/benchmark.h>

#include <atomic>
#include <memory>

#include "heed/core/eigen_executor.hpp"
#include "heed/core/parallel.hpp"

namespace {

void empty_loops(benchmark::State& state) {
  std::atomic<int> ran{0};
  for (auto _ : state)
    heed::parallel_for(2, 2, [&](heed::index_t, int) { ran.fetch_add(1, std::memory_order_relaxed); });
  state.counters["loops/s"] = benchmark::Counter(1.0, benchmark::Counter::kIsIterationInvariantRate);
  if (ran.load() != 2 * static_cast<int>(state.iterations())) state.SkipWithError("a task did not run");
}

void BM_parallel_for_two_empty_tasks(benchmark::State& state) {
#if defined(_OPENMP)
  state.SetLabel("OpenMP");
#else
  state.SetLabel("heed's team");
#endif
  empty_loops(state);
}
BENCHMARK(BM_parallel_for_two_empty_tasks)->UseRealTime();

void BM_parallel_for_two_empty_tasks_on_eigen_pool(benchmark::State& state) {
  Eigen::ThreadPool pool(1);
  heed::set_executor(std::make_shared<heed::EigenExecutor>(pool));
  state.SetLabel("Eigen::ThreadPool(1) and the caller");
  empty_loops(state);
  heed::set_executor(nullptr);
}
BENCHMARK(BM_parallel_for_two_empty_tasks_on_eigen_pool)->UseRealTime();

}  // namespace
