// s08c bank_zorder (notes 000 §8.5 scheme 3): s07 with the lanes of a warp placed in Z order.
// s07's row-major 4 x 8 lanes make each quarter-warp (8 lanes, one LDS.128 transaction) a 1 x 8
// strip: all 8 read the same A float4 (broadcast) but 8 different B float4s 8 floats apart,
// and lanes l, l+4 collide (2-way conflict): 2 + 8 = 10 wavefronts. Here
//     lane_row = lane % 2 + lane / 16 * 2,   lane_col = (lane % 16) / 2
// makes every quarter-warp a 2 x 4 block: lanes i and i^1 share a column (same B address) and
// lanes i and i^2 share a row (same A address), so both fragment loads satisfy the notes'
// merging rule and a quarter-warp's 4 distinct B float4s (banks 0-3, 8-11, 16-19, 24-27) never
// collide: 2 + 2 = 4 wavefronts, the notes' lower bound. Shared layout as in s07.
#pragma once
#include "s07_vectorized.cuh"

namespace gemmlab {

template <int BLOCK_M, int BLOCK_N, int BLOCK_K, int LANES_N>
struct S08cLayout : S07Layout<BLOCK_M, BLOCK_N, BLOCK_K, LANES_N> {
    static_assert(LANES_N == 8, "Z-order lanes: the warp sub-tile must be 4 x 8 thread tiles");
    static __device__ __forceinline__ int lane_row(int lane) { return (lane & 1) + (lane >> 4) * 2; }
    static __device__ __forceinline__ int lane_col(int lane) { return (lane >> 1) & 7; }
};

template <int BLOCK_M, int BLOCK_N, int BLOCK_K, int WARP_M, int WARP_N, int WARP_M_ITER, int WARP_N_ITER, int THREAD_M,
          int THREAD_N, int VEC, int A_K_MAJOR, int B_N_MAJOR>
struct S08cBankZorder
    : S07Vectorized<BLOCK_M, BLOCK_N, BLOCK_K, WARP_M, WARP_N, WARP_M_ITER, WARP_N_ITER, THREAD_M, THREAD_N, VEC, A_K_MAJOR,
                    B_N_MAJOR, S08cLayout<BLOCK_M, BLOCK_N, BLOCK_K, WARP_N / WARP_N_ITER / THREAD_N>> {};

}  // namespace gemmlab
