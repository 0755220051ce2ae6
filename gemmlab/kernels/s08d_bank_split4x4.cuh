// s08d bank_split4x4 (notes 000 §8.5 scheme 4): s07 with each lane's THREAD_M x THREAD_N tile
// split into (THREAD_M/4) x (THREAD_N/4) sub-tiles of 4 x 4, spread across the warp tile: the
// lanes (still row-major 4 x 8) cover a 16 x 32 block with 4 x 4 each, and that block repeats.
// A quarter-warp's 8 lanes then read B float4s 4 floats apart, one whole 32-bank row, with no
// conflict (s07: 8 floats apart, lanes l and l+4 collide); A stays a broadcast. Per the notes'
// model 2 + 4 = 6 wavefronts per k step (s07: 10). The price: a lane's outputs are no longer
// one contiguous 8 x 8 block, the epilogue writes 4-float runs 32 columns apart.
// In s07's warp-tiling parameters this is the same kernel with warp_m_iter * thread_m/4 by
// warp_n_iter * thread_n/4 warp sub-tiles of 4 x 4 thread tiles, which is how it is built.
#pragma once
#include "s07_vectorized.cuh"

namespace gemmlab {

template <int BLOCK_M, int BLOCK_N, int BLOCK_K, int WARP_M, int WARP_N, int WARP_M_ITER, int WARP_N_ITER, int THREAD_M,
          int THREAD_N, int VEC, int A_K_MAJOR, int B_N_MAJOR>
struct S08dBankSplit4x4 : S07Vectorized<BLOCK_M, BLOCK_N, BLOCK_K, WARP_M, WARP_N, WARP_M_ITER * (THREAD_M / 4),
                                        WARP_N_ITER * (THREAD_N / 4), 4, 4, VEC, A_K_MAJOR, B_N_MAJOR> {
    static_assert(THREAD_M % 4 == 0 && THREAD_N % 4 == 0, "thread_m and thread_n must be multiples of 4 (4 x 4 sub-tiles)");
};

}  // namespace gemmlab
