// s05 thread_tiling_2d (notes 000 §5, 001 kernel 5): over s04, each thread owns a contiguous
// THREAD_M x THREAD_N = 8 x 8 square of D instead of a strip. For every k it first copies its
// THREAD_M elements of the A column into a_frag and its THREAD_N elements of the B row into
// b_frag, then does the THREAD_M x THREAD_N register outer product: 16 shared loads feed 64 FFMA
// (§5.2: TM*TN / (2*(TM+TN)) = 2 FLOP per byte of shared traffic, vs 8/9 for the s04 strip).
// BLOCK_M = BLOCK_N = 128, BLOCK_K = 8, 256 threads laid out row-major over the thread tiles.
#pragma once
#include "common.cuh"
#include "copy/slice_load.cuh"

namespace gemmlab {

template <int BLOCK_M_, int BLOCK_N_, int BLOCK_K_, int THREAD_M_, int THREAD_N_>
struct S05ThreadTiling2D {
    static constexpr int BLOCK_M = BLOCK_M_;
    static constexpr int BLOCK_N = BLOCK_N_;
    static constexpr int BLOCK_K = BLOCK_K_;
    static constexpr int THREAD_M = THREAD_M_;
    static constexpr int THREAD_N = THREAD_N_;
    static constexpr int THREADS_N = BLOCK_N / THREAD_N;  // thread tiles across the block tile
    static constexpr int THREADS = BLOCK_M / THREAD_M * THREADS_N;
    static_assert(BLOCK_M % THREAD_M == 0 && BLOCK_N % THREAD_N == 0,
                  "block_m and block_n must be multiples of thread_m and thread_n");
    static_assert(THREADS % 32 == 0 && THREADS <= 1024,
                  "(block_m/thread_m)*(block_n/thread_n) threads must be a multiple of 32, at most 1024");
    static_assert(THREAD_M * THREAD_N <= 128, "at most 128 outputs per thread (more would spill)");
    // Cooperative copies: consecutive threads take consecutive k of an A row / n of a B row.
    static constexpr int B_LOAD_COLS = BLOCK_N < THREADS ? BLOCK_N : THREADS;
    static_assert(THREADS % BLOCK_K == 0 && BLOCK_M % (THREADS / BLOCK_K) == 0,
                  "A slice: threads must be a multiple of block_k and block_m a multiple of threads/block_k");
    static_assert(THREADS % B_LOAD_COLS == 0 && BLOCK_N % B_LOAD_COLS == 0 && BLOCK_K % (THREADS / B_LOAD_COLS) == 0,
                  "B slice: block_n and the thread count must be multiples of each other, and block_k a multiple "
                  "of threads/block_n");
    using ALoad = SliceLoad<BLOCK_M, BLOCK_K, THREADS, BLOCK_K>;
    using BLoad = SliceLoad<BLOCK_K, BLOCK_N, THREADS, B_LOAD_COLS>;
    static constexpr int SMEM_BYTES = (BLOCK_M * BLOCK_K + BLOCK_K * BLOCK_N) * 4;

    static __device__ __forceinline__ void run(const GemmArgs& args, int64 row0, int64 col0, unsigned char* smem) {
        // Shared memory holds a_tile[BLOCK_M][BLOCK_K] (row-major, as A), then b_tile[BLOCK_K][BLOCK_N].
        float (*a_tile)[BLOCK_K] = reinterpret_cast<float (*)[BLOCK_K]>(smem);
        float (*b_tile)[BLOCK_N] = reinterpret_cast<float (*)[BLOCK_N]>(smem + BLOCK_M * BLOCK_K * 4);
        const int thread_row = threadIdx.x / THREADS_N * THREAD_M;  // top-left of this thread's square
        const int thread_col = threadIdx.x % THREADS_N * THREAD_N;

        float acc[THREAD_M][THREAD_N];
        float a_frag[THREAD_M], b_frag[THREAD_N];
#pragma unroll
        for (int i = 0; i < THREAD_M; ++i)
#pragma unroll
            for (int j = 0; j < THREAD_N; ++j) acc[i][j] = 0.0f;

        const float* a_slice = args.A + row0 * args.a_row_stride;  // A[row0][k0]
        const float* b_slice = args.B + col0 * args.b_col_stride;  // B[k0][col0]
        for (int64 k_left = args.K; k_left > 0; k_left -= BLOCK_K) {
            ALoad::load(a_tile, a_slice, args.a_row_stride, args.a_col_stride, args.M - row0, k_left);
            BLoad::load(b_tile, b_slice, args.b_row_stride, args.b_col_stride, k_left, args.N - col0);
            a_slice += BLOCK_K * args.a_col_stride;
            b_slice += BLOCK_K * args.b_row_stride;
            __syncthreads();
#pragma unroll
            for (int k = 0; k < BLOCK_K; ++k) {
                // Shared -> registers: THREAD_M + THREAD_N loads ...
#pragma unroll
                for (int i = 0; i < THREAD_M; ++i) a_frag[i] = a_tile[thread_row + i][k];
#pragma unroll
                for (int j = 0; j < THREAD_N; ++j) b_frag[j] = b_tile[k][thread_col + j];
                // ... feed THREAD_M * THREAD_N FFMA on registers only.
#pragma unroll
                for (int i = 0; i < THREAD_M; ++i)
#pragma unroll
                    for (int j = 0; j < THREAD_N; ++j) acc[i][j] += a_frag[i] * b_frag[j];
            }
            __syncthreads();  // the next slice overwrites the tiles
        }
        // The tile's extent inside D, clamped so the guards are 32-bit. Rows and columns grow
        // with i and j, so the first one outside ends the loop.
        const int rows_in = args.M - row0 < BLOCK_M ? (int)(args.M - row0) : BLOCK_M;
        const int cols_in = args.N - col0 < BLOCK_N ? (int)(args.N - col0) : BLOCK_N;
#pragma unroll
        for (int i = 0; i < THREAD_M; ++i) {
            if (thread_row + i >= rows_in) break;
#pragma unroll
            for (int j = 0; j < THREAD_N; ++j) {
                if (thread_col + j >= cols_in) break;
                store_output(args, row0 + thread_row + i, col0 + thread_col + j, acc[i][j]);
            }
        }
    }
};

}  // namespace gemmlab
