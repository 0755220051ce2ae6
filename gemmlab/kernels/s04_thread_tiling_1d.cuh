// s04 thread_tiling_1d (notes 001 kernel 4): over s03, a thread's outputs are no longer
// scattered: it owns a contiguous strip of THREAD_M = 8 rows in one column of D, and for every k
// it reads the B element of its column once into a register (b_value) and reuses it for all
// THREAD_M multiply-adds: 9 shared loads per 8 FFMA, down from 2 per FFMA in s02 (001's ledger:
// per output K/32 global and 9K/8 shared reads). s03's 8x8 square needs only 1/4, which is why
// s05 goes back to a square, with explicit register fragments. BLOCK_M = BLOCK_N = 64,
// BLOCK_K = 8, 512 threads; __launch_bounds__(512, 4) by default (spec parameter min_blocks):
// 32 registers, four blocks per SM, so that while one block waits at its barrier for the next
// slice from global memory the other three compute (there is no other latency hiding here).
#pragma once
#include "common.cuh"
#include "copy/slice_load.cuh"

namespace gemmlab {

template <int BLOCK_M_, int BLOCK_N_, int BLOCK_K_, int THREAD_M_>
struct S04ThreadTiling1D {
    static constexpr int BLOCK_M = BLOCK_M_;
    static constexpr int BLOCK_N = BLOCK_N_;
    static constexpr int BLOCK_K = BLOCK_K_;
    static constexpr int THREAD_M = THREAD_M_;
    static constexpr int THREADS = BLOCK_M / THREAD_M * BLOCK_N;  // one thread per column strip
    static_assert(BLOCK_M % THREAD_M == 0, "block_m must be a multiple of thread_m");
    static_assert(THREADS % 32 == 0 && THREADS <= 1024,
                  "block_m/thread_m*block_n threads must be a multiple of 32, at most 1024");
    static_assert(THREAD_M <= 128, "at most 128 outputs per thread (more would spill)");
    // Cooperative copies: consecutive threads take consecutive k of an A row / n of a B row.
    static_assert(THREADS % BLOCK_K == 0 && BLOCK_M % (THREADS / BLOCK_K) == 0,
                  "A slice: threads must be a multiple of block_k and block_m a multiple of threads/block_k");
    static_assert(BLOCK_K % (THREADS / BLOCK_N) == 0,
                  "B slice: block_k must be a multiple of threads/block_n = block_m/thread_m");
    using ALoad = SliceLoad<BLOCK_M, BLOCK_K, THREADS, BLOCK_K>;
    using BLoad = SliceLoad<BLOCK_K, BLOCK_N, THREADS, BLOCK_N>;
    static constexpr int SMEM_BYTES = (BLOCK_M * BLOCK_K + BLOCK_K * BLOCK_N) * 4;

    static __device__ __forceinline__ void run(const GemmArgs& args, int64 row0, int64 col0, unsigned char* smem) {
        // Shared memory holds a_tile[BLOCK_M][BLOCK_K] (row-major, as A), then b_tile[BLOCK_K][BLOCK_N].
        float (*a_tile)[BLOCK_K] = reinterpret_cast<float (*)[BLOCK_K]>(smem);
        float (*b_tile)[BLOCK_N] = reinterpret_cast<float (*)[BLOCK_N]>(smem + BLOCK_M * BLOCK_K * 4);
        const int thread_col = threadIdx.x % BLOCK_N;               // consecutive threads: consecutive columns
        const int thread_row = threadIdx.x / BLOCK_N * THREAD_M;    // first row of the strip

        float acc[THREAD_M];
#pragma unroll
        for (int i = 0; i < THREAD_M; ++i) acc[i] = 0.0f;

        // The tile's extent, clamped to 32-bit once (fewer 64-bit values live across the loop).
        const int rows_in = args.M - row0 < BLOCK_M ? (int)(args.M - row0) : BLOCK_M;
        const int cols_in = args.N - col0 < BLOCK_N ? (int)(args.N - col0) : BLOCK_N;
        const float* a_slice = args.A + row0 * args.a_row_stride;  // A[row0][k0]
        const float* b_slice = args.B + col0 * args.b_col_stride;  // B[k0][col0]
        for (int64 k_left = args.K; k_left > 0; k_left -= BLOCK_K) {
            ALoad::load(a_tile, a_slice, args.a_row_stride, args.a_col_stride, rows_in, k_left);
            BLoad::load(b_tile, b_slice, args.b_row_stride, args.b_col_stride, k_left, cols_in);
            a_slice += BLOCK_K * args.a_col_stride;
            b_slice += BLOCK_K * args.b_row_stride;
            __syncthreads();
            // The B elements of this thread's column: one shared load each, held in registers
            // for THREAD_M uses. Then row by row (001's "version B" order: the same multiply-adds
            // as k-outer, and after full unrolling the same loads, except that with k outer
            // NVVM's load vectorizer leaves a_tile[row][7] of every row to a separate scalar
            // reload, 8 extra LDS per slice; row by row each a_tile row is exactly 2 LDS.128).
            float b_value[BLOCK_K];
#pragma unroll
            for (int k = 0; k < BLOCK_K; ++k) b_value[k] = b_tile[k][thread_col];
#pragma unroll
            for (int i = 0; i < THREAD_M; ++i)
#pragma unroll
                for (int k = 0; k < BLOCK_K; ++k) acc[i] += a_tile[thread_row + i][k] * b_value[k];
            __syncthreads();  // the next slice overwrites the tiles
        }
        if (thread_col < cols_in) {
#pragma unroll
            for (int i = 0; i < THREAD_M; ++i) {
                if (thread_row + i >= rows_in) break;  // rows grow with i
                store_output(args, row0 + thread_row + i, col0 + thread_col, acc[i]);
            }
        }
    }
};

}  // namespace gemmlab
