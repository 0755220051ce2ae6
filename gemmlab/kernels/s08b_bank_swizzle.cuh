// s08b bank_swizzle (notes 000 §8.5 scheme 2): s07 with XOR-swizzled shared-memory addresses,
// fixing the same two conflicts as s08a's padding without any extra space:
//   - As[k][m] lives at column m ^ ((k / 4) * 128 / BLOCK_K): the rows of As that s07's transposed
//     store writes together (k, k+4, ...) are XORed into different 16-bank halves (BLOCK_K = 8),
//     so that store is conflict-free. The notes XOR with k*4; XORing only by k / 4 does the same
//     for the store while a thread's fragment address takes one value per group of 4 k steps,
//     so the main loop still reads at compile-time offsets from a few base registers. An M-major
//     A is stored along m with STS.128, conflict-free already: that instantiation leaves As plain
//     (one base register fewer).
//   - Bs[k][n] lives at n ^ (bit 5 of n) * 4: a float4 in the second 32-float half of a 64-float
//     run is swapped with its neighbour, so lanes l and l+4 of a quarter-warp (32 floats apart
//     in s07: same banks) now hit banks 4 apart.
// XORing with a multiple of 4 keeps every float4 whole and 16-byte aligned (LDS.128, STS.128).
// Wavefronts per k step, A + B, per the notes' model: 2 + 4 = 6 (s07: 10).
#pragma once
#include "s07_vectorized.cuh"

namespace gemmlab {

template <int BLOCK_M, int BLOCK_N, int BLOCK_K, int LANES_N, bool SWIZZLE_A>
struct S08bLayout : S07Layout<BLOCK_M, BLOCK_N, BLOCK_K, LANES_N> {
    // XOR step per group of 4 k (BLOCK_K/4 groups over 32 floats); 0: As unswizzled.
    static constexpr int A_SWIZZLE = SWIZZLE_A ? 128 / BLOCK_K : 0;
    static constexpr int A_RUN = SWIZZLE_A ? A_SWIZZLE : BLOCK_M;  // the XOR leaves aligned runs whole
    static constexpr int B_RUN = 4;
    static_assert((BLOCK_K == 4 || BLOCK_K == 8 || BLOCK_K == 16 || BLOCK_K == 32) && BLOCK_M % 32 == 0,
                  "bank swizzle: block_k must be 4, 8, 16 or 32 and block_m a multiple of 32 (the XOR stays inside "
                  "32 floats)");
    static __device__ __forceinline__ int a_index(int k, int m) { return k * BLOCK_M + (m ^ ((k >> 2) * A_SWIZZLE)); }
    static __device__ __forceinline__ int b_index(int k, int n) { return k * BLOCK_N + (n ^ (((n >> 5) & 1) << 2)); }
};

template <int BLOCK_M, int BLOCK_N, int BLOCK_K, int WARP_M, int WARP_N, int WARP_M_ITER, int WARP_N_ITER, int THREAD_M,
          int THREAD_N, int VEC, int A_K_MAJOR, int B_N_MAJOR>
struct S08bBankSwizzle
    : S07Vectorized<BLOCK_M, BLOCK_N, BLOCK_K, WARP_M, WARP_N, WARP_M_ITER, WARP_N_ITER, THREAD_M, THREAD_N, VEC, A_K_MAJOR,
                    B_N_MAJOR, S08bLayout<BLOCK_M, BLOCK_N, BLOCK_K, WARP_N / WARP_N_ITER / THREAD_N, !VEC || A_K_MAJOR>> {};

}  // namespace gemmlab
