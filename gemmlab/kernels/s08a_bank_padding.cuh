// s08a bank_padding (notes 000 §8.5 scheme 1): s07 with padded shared-memory rows.
//   - As[BLOCK_K][BLOCK_M + 4]: a row is 4 banks longer, so As[k][m] and As[k+4][m] fall 16 banks
//     apart. That is exactly the pair that collides in s07's transposed store (the two float4s of
//     a K-major A row land in rows k and k+4 of As: 2-way conflict, now none).
//   - Bs rows get 4 floats of padding after every 32 (and a row stride of 4 mod 8 floats): in s07
//     lanes l and l+4 of a quarter-warp read B 32 floats apart, the same banks (2-way conflict,
//     8 wavefronts per LDS.128); 4 floats more between them puts them 4 banks apart.
// The padding is a multiple of 4 floats, so every float4 stays 16-byte aligned (LDS.128 and
// STS.128 keep working). Wavefronts per k step, A + B, per the notes' model: 2 + 4 = 6 (s07: 10).
#pragma once
#include "s07_vectorized.cuh"

namespace gemmlab {

template <int BLOCK_M, int BLOCK_N, int BLOCK_K, int LANES_N>
struct S08aLayout : S07Layout<BLOCK_M, BLOCK_N, BLOCK_K, LANES_N> {
    static constexpr int A_STRIDE = BLOCK_M + 4;
    static constexpr int B_ROW = BLOCK_N + BLOCK_N / 32 * 4;
    static constexpr int B_STRIDE = B_ROW % 8 == 0 ? B_ROW + 4 : B_ROW;  // 4 mod 8: K-major B's transposed store
    static constexpr int B_RUN = 32;  // linear between two paddings
    static constexpr int A_FLOATS = BLOCK_K * A_STRIDE;
    static constexpr int B_FLOATS = BLOCK_K * B_STRIDE;
    static_assert(BLOCK_M % 8 == 0 && BLOCK_N % 32 == 0, "bank padding: block_m must be a multiple of 8, block_n of 32");
    static __device__ __forceinline__ int a_index(int k, int m) { return k * A_STRIDE + m; }
    static __device__ __forceinline__ int b_index(int k, int n) { return k * B_STRIDE + n + (n >> 5) * 4; }
};

template <int BLOCK_M, int BLOCK_N, int BLOCK_K, int WARP_M, int WARP_N, int WARP_M_ITER, int WARP_N_ITER, int THREAD_M,
          int THREAD_N, int VEC, int A_K_MAJOR, int B_N_MAJOR>
struct S08aBankPadding
    : S07Vectorized<BLOCK_M, BLOCK_N, BLOCK_K, WARP_M, WARP_N, WARP_M_ITER, WARP_N_ITER, THREAD_M, THREAD_N, VEC, A_K_MAJOR,
                    B_N_MAJOR, S08aLayout<BLOCK_M, BLOCK_N, BLOCK_K, WARP_N / WARP_N_ITER / THREAD_N>> {};

}  // namespace gemmlab
