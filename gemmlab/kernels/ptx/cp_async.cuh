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

// An L2 cache policy that makes the lines a copy brings in the first to be evicted (createpolicy,
// sm_80+): for data read once, such as skinny's big operand, streamed from DRAM. Its lines then
// displace each other rather than what L2 held before (dirty lines, whose eviction costs a DRAM
// write while the stream reads).
__device__ __forceinline__ unsigned long long l2_evict_first_policy() {
    unsigned long long policy;
    asm volatile("createpolicy.fractional.L2::evict_first.b64 %0, 1.0;\n" : "=l"(policy));
    return policy;
}

// The default L2 policy as a policy operand, for a copy that takes one only to carry another hint.
__device__ __forceinline__ unsigned long long l2_evict_normal_policy() {
    unsigned long long policy;
    asm volatile("createpolicy.fractional.L2::evict_normal.b64 %0, 1.0;\n" : "=l"(policy));
    return policy;
}

// copy_16 / copy_4 with an L2 cache policy (l2_evict_first_policy).
__device__ __forceinline__ void copy_16(unsigned dst, const void* src, int src_bytes, unsigned long long policy) {
    asm volatile("cp.async.cg.shared.global.L2::cache_hint [%0], [%1], 16, %2, %3;\n" ::"r"(dst), "l"(src),
                 "r"(src_bytes), "l"(policy) : "memory");
}
__device__ __forceinline__ void copy_4(unsigned dst, const void* src, int src_bytes, unsigned long long policy) {
    asm volatile("cp.async.ca.shared.global.L2::cache_hint [%0], [%1], 4, %2, %3;\n" ::"r"(dst), "l"(src),
                 "r"(src_bytes), "l"(policy) : "memory");
}

// copy_16 with an L2 cache policy and an L2 prefetch size (.L2::64B/128B/256B, sm_80+): the line
// fill from DRAM is widened to PREFETCH bytes around the 16 copied, so a warp's 128-byte row
// segment also brings in its neighbour's (skinny's big operand: neighbouring blocks read the
// adjacent segments of the same rows). PREFETCH 0: no hint, copy_16 above.
template <int PREFETCH>
__device__ __forceinline__ void copy_16_prefetch(unsigned dst, const void* src, int src_bytes, unsigned long long policy) {
    static_assert(PREFETCH == 0 || PREFETCH == 64 || PREFETCH == 128 || PREFETCH == 256,
                  "the L2 prefetch size must be 0, 64, 128 or 256 bytes");
    if constexpr (PREFETCH == 64) {
        asm volatile("cp.async.cg.shared.global.L2::cache_hint.L2::64B [%0], [%1], 16, %2, %3;\n" ::"r"(dst),
                     "l"(src), "r"(src_bytes), "l"(policy) : "memory");
    } else if constexpr (PREFETCH == 128) {
        asm volatile("cp.async.cg.shared.global.L2::cache_hint.L2::128B [%0], [%1], 16, %2, %3;\n" ::"r"(dst),
                     "l"(src), "r"(src_bytes), "l"(policy) : "memory");
    } else if constexpr (PREFETCH == 256) {
        asm volatile("cp.async.cg.shared.global.L2::cache_hint.L2::256B [%0], [%1], 16, %2, %3;\n" ::"r"(dst),
                     "l"(src), "r"(src_bytes), "l"(policy) : "memory");
    } else {
        copy_16(dst, src, src_bytes, policy);
    }
}

__device__ __forceinline__ void commit_group() { asm volatile("cp.async.commit_group;\n" ::: "memory"); }

// Wait until at most PENDING of this thread's committed groups are still in flight.
template <int PENDING>
__device__ __forceinline__ void wait_group() {
    asm volatile("cp.async.wait_group %0;\n" ::"n"(PENDING) : "memory");
}

}  // namespace async
}  // namespace gemmlab
