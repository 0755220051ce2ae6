// s02 smem_tiling (notes 001 kernel 3; 002 "基于 shared memory 计算"): over s01, the block
// stages a BLOCK_M x BLOCK_K slice of A and a BLOCK_K x BLOCK_N slice of B in shared memory and
// walks K one slice at a time; every thread still computes one element of D, but the A row and
// B column it needs now come from shared memory, where the block's other threads reuse them.
// Global reads per output fall from 2K (s01) to K/BLOCK_N + K/BLOCK_M; shared reads stay 2K.
// Latency: each slice waits at a barrier for its global loads, and nothing in the block can
// compute meanwhile, so the spec asks __launch_bounds__(1024, min_blocks = 2): 32 registers, two
// blocks per SM, one computing while the other waits (one block per SM at the 56 registers
// ptxas takes unbounded).
#pragma once
#include "common.cuh"
#include "copy/slice_load.cuh"

namespace gemmlab {

template <int BLOCK_M_, int BLOCK_N_, int BLOCK_K_>
struct S02SmemTiling {
    static constexpr int BLOCK_M = BLOCK_M_;
    static constexpr int BLOCK_N = BLOCK_N_;
    static constexpr int BLOCK_K = BLOCK_K_;
    static constexpr int THREADS = BLOCK_M * BLOCK_N;  // one thread per output element
    static_assert(BLOCK_N % 32 == 0, "block_n must be a multiple of 32 (a warp spans one row of D)");
    static_assert(THREADS <= 1024, "block_m * block_n must be at most 1024 threads");
    // Cooperative copies: consecutive threads take consecutive k of an A row / n of a B row.
    static_assert(THREADS % BLOCK_K == 0 && BLOCK_M % (THREADS / BLOCK_K) == 0,
                  "A slice: threads must be a multiple of block_k and block_m a multiple of threads/block_k");
    static_assert(BLOCK_K % (THREADS / BLOCK_N) == 0,
                  "B slice: block_k must be a multiple of threads/block_n = block_m");
    using ALoad = SliceLoad<BLOCK_M, BLOCK_K, THREADS, BLOCK_K>;
    using BLoad = SliceLoad<BLOCK_K, BLOCK_N, THREADS, BLOCK_N>;
    static constexpr int SMEM_BYTES = (BLOCK_M * BLOCK_K + BLOCK_K * BLOCK_N) * 4;

    static __device__ __forceinline__ void run(const GemmArgs& args, int64 row0, int64 col0, unsigned char* smem) {
        // Shared memory holds a_tile[BLOCK_M][BLOCK_K] (row-major, as A), then b_tile[BLOCK_K][BLOCK_N].
        float (*a_tile)[BLOCK_K] = reinterpret_cast<float (*)[BLOCK_K]>(smem);
        float (*b_tile)[BLOCK_N] = reinterpret_cast<float (*)[BLOCK_N]>(smem + BLOCK_M * BLOCK_K * 4);
        const int thread_row = threadIdx.x / BLOCK_N;  // a warp = 32 consecutive columns of one row
        const int thread_col = threadIdx.x % BLOCK_N;

        float acc = 0.0f;
        const float* a_slice = args.A + row0 * args.a_row_stride;  // A[row0][k0]
        const float* b_slice = args.B + col0 * args.b_col_stride;  // B[k0][col0]
        for (int64 k_left = args.K; k_left > 0; k_left -= BLOCK_K) {
            ALoad::load(a_tile, a_slice, args.a_row_stride, args.a_col_stride, args.M - row0, k_left);
            BLoad::load(b_tile, b_slice, args.b_row_stride, args.b_col_stride, k_left, args.N - col0);
            a_slice += BLOCK_K * args.a_col_stride;
            b_slice += BLOCK_K * args.b_row_stride;
            __syncthreads();
            // A is a broadcast (one row per warp), B one bank per lane: no conflicts.
#pragma unroll
            for (int k = 0; k < BLOCK_K; ++k) acc += a_tile[thread_row][k] * b_tile[k][thread_col];
            __syncthreads();  // the next slice overwrites the tiles
        }
        const int64 row = row0 + thread_row, col = col0 + thread_col;
        if (row < args.M && col < args.N) store_output(args, row, col, acc);
    }
};

}  // namespace gemmlab
