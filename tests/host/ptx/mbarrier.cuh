// tests/host/ptx/mbarrier.cuh — stands in for gemmlab/kernels/ptx/mbarrier.cuh on the CPU, with
// the PTX semantics the kernels rely on: a barrier has an arrival count and a transaction count;
// its current phase completes when every expected arrival has come and the transactions it was
// told to expect (expect_tx) have completed (complete_tx, from a TMA copy: tests/host/ptx/tma.cuh);
// then the next phase starts with the full arrival count. try_wait.parity(p) succeeds once the
// phase of parity p has completed, i.e. while the current phase's parity is not p (so at the
// start, phase 0 current, a wait on parity 1 passes and one on parity 0 blocks).
// The barriers live beside the block's shared memory (keyed by their shared address); a waiting
// thread sleeps on a condition variable (the CI machine has two CPUs and a block 384 threads).
// A copy may land late (host_tma_land_at_wait, tma.cuh): a wait that would block lands the copies
// queued on its barrier first.
#pragma once
#include <chrono>
#include <condition_variable>
#include <cstdio>
#include <cstdlib>
#include <functional>
#include <map>
#include <mutex>
#include <vector>

#include "ptx/smem.cuh"

namespace gemmlab {
namespace async {

struct HostMbarrier {
    int expected = 0;   // arrivals a phase
    int pending = 0;    // arrivals the current phase still waits for
    long tx = 0;        // transaction bytes expected and not yet completed
    unsigned phase = 0; // the current phase's number
    bool init = false;
    std::vector<std::function<void()>> queued;  // copies that complete_tx this barrier when they land
};

inline std::mutex host_mbar_mutex;
inline std::condition_variable host_mbar_cv;
inline std::map<unsigned, HostMbarrier> host_mbars;
inline long host_mbar_waits = 0;  // waits that found their phase incomplete (the harness reports them)

// Every block's barriers start uninitialized (the harness calls this between blocks).
inline void host_mbarrier_reset() {
    std::lock_guard<std::mutex> lock(host_mbar_mutex);
    host_mbars.clear();
}

inline HostMbarrier& host_mbar(unsigned bar) {  // under host_mbar_mutex
    auto it = host_mbars.find(bar);
    if (it == host_mbars.end() || !it->second.init) {
        std::fprintf(stderr, "mbarrier at shared address %u used before mbarrier.init\n", bar);
        std::abort();
    }
    return it->second;
}

inline void host_mbar_maybe_complete(HostMbarrier& b) {  // under host_mbar_mutex
    if (b.pending < 0) {
        std::fprintf(stderr, "mbarrier: more arrivals than its count in one phase\n");
        std::abort();
    }
    if (b.pending == 0 && b.tx == 0) {
        ++b.phase;
        b.pending = b.expected;
        host_mbar_cv.notify_all();
    }
}

inline void mbarrier_init(unsigned bar, unsigned arrivals) {
    std::lock_guard<std::mutex> lock(host_mbar_mutex);
    HostMbarrier& b = host_mbars[bar];
    b = HostMbarrier{};
    b.expected = b.pending = static_cast<int>(arrivals);
    b.init = true;
}

inline void fence_barrier_init() {}

inline void mbarrier_arrive(unsigned bar) {
    std::lock_guard<std::mutex> lock(host_mbar_mutex);
    HostMbarrier& b = host_mbar(bar);
    --b.pending;
    host_mbar_maybe_complete(b);
}

inline void mbarrier_arrive_expect_tx(unsigned bar, unsigned tx_bytes) {
    std::lock_guard<std::mutex> lock(host_mbar_mutex);
    HostMbarrier& b = host_mbar(bar);
    b.tx += tx_bytes;
    --b.pending;
    host_mbar_maybe_complete(b);
}

// A copy's bytes arrive (tma.cuh; under host_mbar_mutex).
inline void host_mbar_complete_tx(HostMbarrier& b, long bytes) {
    b.tx -= bytes;
    host_mbar_maybe_complete(b);
}

inline void mbarrier_wait(unsigned bar, unsigned parity) {
    std::unique_lock<std::mutex> lock(host_mbar_mutex);
    HostMbarrier* b = &host_mbar(bar);
    if ((b->phase & 1u) == (parity & 1u)) ++host_mbar_waits;
    while ((b->phase & 1u) == (parity & 1u)) {
        if (!b->queued.empty()) {  // late copies land now, as late as the wait allows
            auto land = std::move(b->queued);
            b->queued.clear();
            for (auto& f : land) f();
            continue;
        }
        // A wait that sees no barrier of the block move for 20 s is a deadlock (the PTX program
        // would hang the GPU): stop with the barrier's state instead of hanging the test.
        if (host_mbar_cv.wait_for(lock, std::chrono::seconds(20)) == std::cv_status::timeout) {
            b = &host_mbar(bar);
            std::fprintf(stderr, "mbarrier wait at shared address %u, parity %u: no progress in 20 s (phase %u, "
                         "%d arrivals and %ld bytes pending, %zu copies queued): deadlock\n", bar, parity, b->phase,
                         b->pending, b->tx, b->queued.size());
            std::abort();
        }
        b = &host_mbar(bar);
    }
}

}  // namespace async
}  // namespace gemmlab
