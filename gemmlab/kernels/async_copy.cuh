// gemmlab/kernels/async_copy.cuh — PTX wrappers for the asynchronous copies of s10 and s11
// (notes 000 §10): Ampere cp.async with commit/wait groups, and Hopper mbarriers plus TMA bulk
// tensor copies. NVRTC has no cuda.h, so the 128-byte tensor map type is declared here.
#pragma once

namespace gemmlab {
namespace async {

__device__ __forceinline__ unsigned smem_address(const void* p) {
    return static_cast<unsigned>(__cvta_generic_to_shared(p));
}

// ---- cp.async (sm_80+) ---------------------------------------------------------------------
// 16 bytes global -> shared, L1 bypassed (.cg). Bytes past src_bytes (0..16) are zero-filled and
// not read, so edge chunks need no branch.
__device__ __forceinline__ void copy_16(unsigned dst, const void* src, int src_bytes) {
    asm volatile("cp.async.cg.shared.global [%0], [%1], 16, %2;\n" ::"r"(dst), "l"(src), "r"(src_bytes)
                 : "memory");
}

// 4 bytes global -> shared (.ca: the only cache mode for 4-byte copies); src_bytes 0 or 4.
__device__ __forceinline__ void copy_4(unsigned dst, const void* src, int src_bytes) {
    asm volatile("cp.async.ca.shared.global [%0], [%1], 4, %2;\n" ::"r"(dst), "l"(src), "r"(src_bytes)
                 : "memory");
}

__device__ __forceinline__ void commit_group() { asm volatile("cp.async.commit_group;\n" ::: "memory"); }

// Wait until at most PENDING of this thread's committed groups are still in flight.
template <int PENDING>
__device__ __forceinline__ void wait_group() {
    asm volatile("cp.async.wait_group %0;\n" ::"n"(PENDING) : "memory");
}

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

// Named barrier `id` (1..15; 0 is __syncthreads) for `threads` threads (a multiple of 32): lets a
// subset of warps, e.g. the consumers of a warp-specialized kernel, synchronise among themselves.
__device__ __forceinline__ void named_barrier_sync(int id, int threads) {
    asm volatile("bar.sync %0, %1;\n" ::"r"(id), "r"(threads) : "memory");
}

// setmaxnreg (sm_90a): the executing warpgroup's per-thread register limit becomes N, registers
// going to / coming from the block's pool (.inc waits until the pool has them). Every warp of the
// warpgroup executes it, converged; the warpgroup must synchronise between two of them.
template <int N>
__device__ __forceinline__ void setmaxnreg_inc() {
    static_assert(N % 8 == 0 && N >= 24 && N <= 256, "setmaxnreg: a multiple of 8 in 24..256");
#if defined(__CUDA_ARCH_FEAT_SM90_ALL)
    asm volatile("setmaxnreg.inc.sync.aligned.u32 %0;\n" ::"n"(N));
#endif
}
template <int N>
__device__ __forceinline__ void setmaxnreg_dec() {
    static_assert(N % 8 == 0 && N >= 24 && N <= 256, "setmaxnreg: a multiple of 8 in 24..256");
#if defined(__CUDA_ARCH_FEAT_SM90_ALL)
    asm volatile("setmaxnreg.dec.sync.aligned.u32 %0;\n" ::"n"(N));
#endif
}

// ---- TMA (sm_90) -----------------------------------------------------------------------------
// The driver's CUtensorMap: 128 opaque bytes, 64-byte aligned. Passed as a
// `const __grid_constant__` kernel parameter so the TMA unit reads it from parameter space.
struct alignas(64) TmaDescriptor {
    unsigned long long opaque[16];
};

__device__ __forceinline__ void prefetch_descriptor(const TmaDescriptor* map) {
    asm volatile("prefetch.tensormap [%0];\n" ::"l"(reinterpret_cast<unsigned long long>(map)) : "memory");
}

// One box of a 3-D tensor map (c0 innermost) into shared memory at dst; completes tx bytes on bar.
// Parts of the box outside the tensor are written as zeros.
__device__ __forceinline__ void tma_load_3d(unsigned dst, const TmaDescriptor* map, unsigned bar, int c0, int c1,
                                            int c2) {
    asm volatile(
        "cp.async.bulk.tensor.3d.shared::cluster.global.tile.mbarrier::complete_tx::bytes"
        " [%0], [%1, {%2, %3, %4}], [%5];\n" ::"r"(dst),
        "l"(reinterpret_cast<unsigned long long>(map)), "r"(c0), "r"(c1), "r"(c2), "r"(bar)
        : "memory");
}

}  // namespace async
}  // namespace gemmlab
