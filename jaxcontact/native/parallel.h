// The kernels' one way to share a batch out over threads (pgs.cc, narrow.cc, adjoint.cc).
#pragma once

#include <algorithm>
#include <atomic>
#include <cstdint>
#include <thread>
#include <vector>

namespace jaxcontact {

// work(lo, hi) over [0, B): on `threads` threads (0: every core), at most one per `per_thread`
// items; the items are dealt out in small blocks, taken in turn, so that a slow item (a landing
// world) does not hold a thread's share.
template <typename Work>
void ForBatch(int64_t B, int64_t threads, int64_t per_thread, Work&& work) {
  int64_t nt = threads > 0 ? threads : static_cast<int64_t>(std::thread::hardware_concurrency());
  nt = std::max<int64_t>(1, std::min<int64_t>(nt, B / std::max<int64_t>(per_thread, 1)));
  if (nt == 1) {
    work(int64_t(0), B);
    return;
  }
  std::vector<std::thread> pool;
  std::atomic<int64_t> next{0};
  const int64_t block = std::max<int64_t>(1, B / (nt * 8));
  for (int64_t t = 0; t < nt; ++t)
    pool.emplace_back([&] {
      for (int64_t lo; (lo = next.fetch_add(block)) < B;) work(lo, std::min(B, lo + block));
    });
  for (auto& th : pool) th.join();
}

}  // namespace jaxcontact
