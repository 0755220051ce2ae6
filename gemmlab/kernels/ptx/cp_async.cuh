// gemmlab/kernels/ptx/cp_async.cuh — Ampere cp.async (sm_80+): global -> shared copies that skip
// the registers, in commit/wait groups (notes 000 §10.1–10.4). Used by s10 and skinny.
#pragma once
#include "ptx/smem.cuh"

namespace gemmlab {
namespace async {

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

}  // namespace async
}  // namespace gemmlab
