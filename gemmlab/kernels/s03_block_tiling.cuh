// s03 block_tiling (notes 000 §4.4-4.6): over s02, a bigger tile (BLOCK_M x BLOCK_N = 128 x 128,
// BLOCK_K = 8) computed by fewer threads (256): each thread owns THREAD_M x THREAD_N = 8 x 8
// outputs, strided THREADS_M rows and THREADS_N columns apart (§4.5: a 16 x 16 thread grid that
// "jumps" 8 times each way), and the threads are re-arranged for the cooperative loads (§4.4):
// BLOCK_K threads across a row of the A slice, 32 across a row of the B slice, so a warp reads
// contiguous global memory in both. Intensity of the block tile: BLOCK_M*BLOCK_N /
// (2*(BLOCK_M+BLOCK_N)) = 32 FLOP/byte (§4.3); per thread, 16 shared loads feed 64 FFMA.
#pragma once
#include "common.cuh"
#include "copy/slice_load.cuh"

namespace gemmlab {

template <int BLOCK_M_, int BLOCK_N_, int BLOCK_K_, int THREADS_, int THREADS_N_>
struct S03BlockTiling {
    static constexpr int BLOCK_M = BLOCK_M_;
    static constexpr int BLOCK_N = BLOCK_N_;
    static constexpr int BLOCK_K = BLOCK_K_;
    static constexpr int THREADS = THREADS_;
    // Compute layout: a THREADS_M x THREADS_N grid of threads, each striding over the tile.
    static constexpr int THREADS_N = THREADS_N_;
    static constexpr int THREADS_M = THREADS / THREADS_N;
    static constexpr int THREAD_M = BLOCK_M / THREADS_M;
    static constexpr int THREAD_N = BLOCK_N / THREADS_N;
    // Load layouts (§4.4): the A slice as (THREADS/BLOCK_K) x BLOCK_K threads, B as (THREADS/32) x 32.
    static constexpr int B_LOAD_COLS = 32;
    static_assert(THREADS % 32 == 0 && THREADS <= 1024, "threads must be a multiple of 32, at most 1024");
    static_assert(THREADS % BLOCK_K == 0 && BLOCK_M % (THREADS / BLOCK_K) == 0,
                  "A slice: threads must be a multiple of block_k and block_m a multiple of threads/block_k");
    static_assert(BLOCK_N % B_LOAD_COLS == 0 && BLOCK_K % (THREADS / B_LOAD_COLS) == 0,
                  "B slice: block_n must be a multiple of 32 and block_k a multiple of threads/32");
    static_assert(THREADS % THREADS_N == 0 && BLOCK_N % THREADS_N == 0 && BLOCK_M % THREADS_M == 0,
                  "compute layout: threads_n must divide threads and block_n, threads/threads_n must divide block_m");
    static_assert(THREAD_M * THREAD_N <= 128, "at most 128 outputs per thread (more would spill)");
    using ALoad = SliceLoad<BLOCK_M, BLOCK_K, THREADS, BLOCK_K>;
    using BLoad = SliceLoad<BLOCK_K, BLOCK_N, THREADS, B_LOAD_COLS>;
    static constexpr int SMEM_BYTES = (BLOCK_M * BLOCK_K + BLOCK_K * BLOCK_N) * 4;

    static __device__ __forceinline__ void run(const GemmArgs& args, int64 row0, int64 col0, unsigned char* smem) {
        // Shared memory holds a_tile[BLOCK_M][BLOCK_K] (row-major, as A), then b_tile[BLOCK_K][BLOCK_N].
        float (*a_tile)[BLOCK_K] = reinterpret_cast<float (*)[BLOCK_K]>(smem);
        float (*b_tile)[BLOCK_N] = reinterpret_cast<float (*)[BLOCK_N]>(smem + BLOCK_M * BLOCK_K * 4);
        const int thread_row = threadIdx.x / THREADS_N;  // first of this thread's rows, then + i*THREADS_M
        const int thread_col = threadIdx.x % THREADS_N;  // first of its columns, then + j*THREADS_N

        float acc[THREAD_M][THREAD_N];
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
            __syncthreads();  // the slices are complete
#pragma unroll
            for (int k = 0; k < BLOCK_K; ++k)
#pragma unroll
                for (int i = 0; i < THREAD_M; ++i)
#pragma unroll
                    for (int j = 0; j < THREAD_N; ++j)
                        acc[i][j] += a_tile[thread_row + i * THREADS_M][k] * b_tile[k][thread_col + j * THREADS_N];
            __syncthreads();  // everyone is done with them before the next slice overwrites them
        }
        // The tile's extent inside D, clamped so the guards are 32-bit. Rows and columns grow
        // with i and j, so the first one outside ends the loop.
        const int rows_in = args.M - row0 < BLOCK_M ? (int)(args.M - row0) : BLOCK_M;
        const int cols_in = args.N - col0 < BLOCK_N ? (int)(args.N - col0) : BLOCK_N;
#pragma unroll
        for (int i = 0; i < THREAD_M; ++i) {
            const int row = thread_row + i * THREADS_M;
            if (row >= rows_in) break;
#pragma unroll
            for (int j = 0; j < THREAD_N; ++j) {
                const int col = thread_col + j * THREADS_N;
                if (col >= cols_in) break;
                store_output(args, row0 + row, col0 + col, acc[i][j]);
            }
        }
    }
};

}  // namespace gemmlab
