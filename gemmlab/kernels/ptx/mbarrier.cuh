// gemmlab/kernels/ptx/mbarrier.cuh — Hopper transaction mbarriers (sm_90 forms): init, arrive,
// arrive with an expected byte count (TMA completes the bytes), parity waits.
#pragma once
#include "ptx/smem.cuh"

namespace gemmlab {
namespace async {

// ---- mbarrier (sm_90 forms) ----------------------------------------------------------------
__device__ __forceinline__ void mbarrier_init(unsigned bar, unsigned arrivals) {
    asm volatile("mbarrier.init.shared::cta.b64 [%0], %1;\n" ::"r"(bar), "r"(arrivals) : "memory");
}

// Make the initialised barriers visible to the async proxy (the TMA unit) before any copy uses them.
__device__ __forceinline__ void fence_barrier_init() {
    asm volatile("fence.mbarrier_init.release.cluster;\n" ::: "memory");
    asm volatile("fence.proxy.async.shared::cta;\n" ::: "memory");
}

// Arrive (release semantics: this thread's earlier shared-memory reads are done).
__device__ __forceinline__ void mbarrier_arrive(unsigned bar) {
    asm volatile(
        "{\n .reg .b64 state;\n mbarrier.arrive.shared::cta.b64 state, [%0];\n}\n" ::"r"(bar)
        : "memory");
}

// Arrive and announce tx_bytes that asynchronous copies will complete on this phase.
__device__ __forceinline__ void mbarrier_arrive_expect_tx(unsigned bar, unsigned tx_bytes) {
    asm volatile(
        "{\n .reg .b64 state;\n mbarrier.arrive.expect_tx.shared::cta.b64 state, [%0], %1;\n}\n" ::"r"(bar),
        "r"(tx_bytes)
        : "memory");
}

// Block until the phase with this parity has completed (acquire semantics: data written by the
// copies that completed it is visible afterwards).
__device__ __forceinline__ void mbarrier_wait(unsigned bar, unsigned parity) {
    asm volatile(
        "{\n"
        " .reg .pred done;\n"
        "wait_%=:\n"
        " mbarrier.try_wait.parity.shared::cta.b64 done, [%0], %1;\n"
        " @!done bra wait_%=;\n"
        "}\n" ::"r"(bar),
        "r"(parity)
        : "memory");
}

}  // namespace async
}  // namespace gemmlab
