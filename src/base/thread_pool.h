// A persistent fork-join thread pool. Run(fn) calls fn(thread_index, n_threads) on every
// thread (the caller is thread 0) and returns when all have finished. Workers spin briefly
// between jobs (decode steps issue hundreds of small jobs per token) and then sleep on a
// futex, so an idle pool costs no CPU. Not reentrant: one Run at a time per pool.
#pragma once

#include <atomic>
#include <cstdint>
#include <thread>
#include <type_traits>
#include <vector>

namespace herd {

class ThreadPool {
 public:
  // n_threads <= 0 means one per available core.
  explicit ThreadPool(int n_threads = 0);
  ~ThreadPool();
  ThreadPool(const ThreadPool&) = delete;
  ThreadPool& operator=(const ThreadPool&) = delete;

  int size() const { return n_threads_; }

  template <typename Fn>
  void Run(Fn&& fn) {
    using F = std::remove_reference_t<Fn>;
    RunImpl(
        [](void* ctx, int ith, int nth) { (*static_cast<F*>(ctx))(ith, nth); },
        const_cast<void*>(static_cast<const void*>(&fn)));
  }

  // Splits [0, n) into contiguous ranges, one per thread, rounded to `grain`.
  // fn(begin, end) is called at most once per thread, never with an empty range.
  template <typename Fn>
  void ParallelFor(int64_t n, int64_t grain, Fn&& fn) {
    if (n <= 0) return;
    if (grain < 1) grain = 1;
    Run([&](int ith, int nth) {
      const int64_t chunks = (n + grain - 1) / grain;
      const int64_t per = (chunks + nth - 1) / nth;
      const int64_t begin = ith * per * grain;
      const int64_t end = begin + per * grain < n ? begin + per * grain : n;
      if (begin < end) fn(begin, end);
    });
  }

  static int DefaultThreadCount();

 private:
  using Invoker = void (*)(void*, int, int);
  void RunImpl(Invoker invoker, void* ctx);
  void WorkerLoop(int ith);

  int n_threads_;
  std::vector<std::thread> workers_;
  Invoker invoker_ = nullptr;
  void* ctx_ = nullptr;
  alignas(64) std::atomic<uint32_t> generation_{0};
  alignas(64) std::atomic<int> pending_{0};
  std::atomic<bool> stop_{false};
};

}  // namespace herd
