// tests/host/ptx/sync.cuh — stands in for gemmlab/kernels/ptx/sync.cuh on the CPU: named barrier
// `id` is a std::barrier of the `threads` threads that meet there (made by the first to arrive;
// every use of one id must name the same count, as bar.sync requires of a CTA's warps), and
// setmaxnreg does nothing (the host has no register file to share).
#pragma once
#include <barrier>
#include <cstdio>
#include <cstdlib>
#include <map>
#include <memory>
#include <mutex>

namespace gemmlab {
namespace async {

struct HostNamedBarrier {
    int threads;
    std::unique_ptr<std::barrier<>> bar;
};
inline std::mutex host_named_mutex;
inline std::map<int, HostNamedBarrier> host_named;

inline std::barrier<>& host_named_barrier(int id, int threads) {
    std::lock_guard<std::mutex> lock(host_named_mutex);
    auto it = host_named.find(id);
    if (it == host_named.end())
        it = host_named.emplace(id, HostNamedBarrier{threads, std::make_unique<std::barrier<>>(threads)}).first;
    if (it->second.threads != threads) {
        std::fprintf(stderr, "named barrier %d used with %d and %d threads\n", id, it->second.threads, threads);
        std::abort();
    }
    return *it->second.bar;
}

inline void named_barrier_sync(int id, int threads) { host_named_barrier(id, threads).arrive_and_wait(); }
inline void named_barrier_arrive(int id, int threads) { (void)host_named_barrier(id, threads).arrive(); }

template <int N>
inline void setmaxnreg_inc() {}
template <int N>
inline void setmaxnreg_dec() {}

}  // namespace async
}  // namespace gemmlab
