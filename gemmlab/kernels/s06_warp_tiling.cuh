// s06 warp_tiling (notes 000 §6, 001 kernel 10): over s05, the thread tiles are placed through
// an explicit block -> warp -> thread hierarchy. The block tile is split into warp tiles of
// WARP_M x WARP_N (default 8 warps as 4 x 2, each 32 x 64); a warp covers its tile in
// WARP_M_ITER x WARP_N_ITER steps of a warp sub-tile (SUB_M x SUB_N), inside which the 32 lanes
// sit as LANES_M x LANES_N (default 4 x 8) and each lane owns THREAD_M x THREAD_N outputs.
// Per k a warp reads LANES_M*THREAD_M distinct A and LANES_N*THREAD_N distinct B values per
// sub-tile, the rest are broadcasts (§6.2: warp ratio 16*TM/(x+y), best at 4 x 8 where x+y = 12,
// vs 2 x 16 (18) for the row-major lanes of s05).
// Default config = the notes' (000 §6.3, §12.1): 128 x 128 x 8, TM = TN = 8, 256 threads.
#pragma once
#include "common.cuh"
#include "copy/slice_load.cuh"

namespace gemmlab {

template <int BLOCK_M_, int BLOCK_N_, int BLOCK_K_, int WARP_M_, int WARP_N_, int WARP_M_ITER_, int WARP_N_ITER_,
          int THREAD_M_, int THREAD_N_>
struct S06WarpTiling {
    static constexpr int BLOCK_M = BLOCK_M_;
    static constexpr int BLOCK_N = BLOCK_N_;
    static constexpr int BLOCK_K = BLOCK_K_;
    static constexpr int WARP_M = WARP_M_;
    static constexpr int WARP_N = WARP_N_;
    static constexpr int WARP_M_ITER = WARP_M_ITER_;
    static constexpr int WARP_N_ITER = WARP_N_ITER_;
    static constexpr int THREAD_M = THREAD_M_;
    static constexpr int THREAD_N = THREAD_N_;
    static constexpr int WARPS_N = BLOCK_N / WARP_N;  // warps across the block tile
    static constexpr int THREADS = 32 * (BLOCK_M / WARP_M) * WARPS_N;
    static constexpr int SUB_M = WARP_M / WARP_M_ITER;  // warp sub-tile
    static constexpr int SUB_N = WARP_N / WARP_N_ITER;
    static constexpr int LANES_N = SUB_N / THREAD_N;    // lanes across the sub-tile
    static constexpr int LANES_M = SUB_M / THREAD_M;
    static constexpr int FRAG_M = WARP_M_ITER * THREAD_M;  // per-thread A and B registers per k
    static constexpr int FRAG_N = WARP_N_ITER * THREAD_N;
    static_assert(BLOCK_M % WARP_M == 0 && BLOCK_N % WARP_N == 0,
                  "block_m and block_n must be multiples of warp_m and warp_n");
    static_assert(THREADS <= 1024, "(block_m/warp_m)*(block_n/warp_n) must be at most 32 warps");
    static_assert(WARP_M % WARP_M_ITER == 0 && WARP_N % WARP_N_ITER == 0,
                  "warp_m and warp_n must be multiples of warp_m_iter and warp_n_iter");
    static_assert(SUB_M % THREAD_M == 0 && SUB_N % THREAD_N == 0,
                  "the warp sub-tile (warp_m/warp_m_iter x warp_n/warp_n_iter) must be a multiple of "
                  "thread_m x thread_n");
    static_assert(LANES_M * LANES_N == 32, "the warp sub-tile must hold exactly 32 thread tiles, one per lane");
    static_assert(FRAG_M * FRAG_N <= 128, "at most 128 outputs per thread (more would spill)");
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
        const int warp_id = threadIdx.x / 32, lane_id = threadIdx.x % 32;
        const int warp_row = warp_id / WARPS_N, warp_col = warp_id % WARPS_N;  // 000 §6.3: 4 x 2
        const int lane_row = lane_id / LANES_N, lane_col = lane_id % LANES_N;  // 000 §6.3: 4 x 8
        // This lane's tile in sub-tile (0, 0); sub-tile (m, n) is SUB_M*m rows and SUB_N*n columns on.
        const int thread_row = warp_row * WARP_M + lane_row * THREAD_M;
        const int thread_col = warp_col * WARP_N + lane_col * THREAD_N;

        // acc[m*THREAD_M + i][n*THREAD_N + j] is D[thread_row + m*SUB_M + i][thread_col + n*SUB_N + j].
        float acc[FRAG_M][FRAG_N];
        float a_frag[FRAG_M], b_frag[FRAG_N];
#pragma unroll
        for (int i = 0; i < FRAG_M; ++i)
#pragma unroll
            for (int j = 0; j < FRAG_N; ++j) acc[i][j] = 0.0f;

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
#pragma unroll
                for (int m = 0; m < WARP_M_ITER; ++m)
#pragma unroll
                    for (int i = 0; i < THREAD_M; ++i) a_frag[m * THREAD_M + i] = a_tile[thread_row + m * SUB_M + i][k];
#pragma unroll
                for (int n = 0; n < WARP_N_ITER; ++n)
#pragma unroll
                    for (int j = 0; j < THREAD_N; ++j) b_frag[n * THREAD_N + j] = b_tile[k][thread_col + n * SUB_N + j];
#pragma unroll
                for (int i = 0; i < FRAG_M; ++i)
#pragma unroll
                    for (int j = 0; j < FRAG_N; ++j) acc[i][j] += a_frag[i] * b_frag[j];
            }
            __syncthreads();  // the next slice overwrites the tiles
        }
        // The tile's extent inside D, clamped so the guards are 32-bit. Rows grow with
        // (m, i) and columns with (n, j), so the first one outside ends the loop.
        const int rows_in = args.M - row0 < BLOCK_M ? (int)(args.M - row0) : BLOCK_M;
        const int cols_in = args.N - col0 < BLOCK_N ? (int)(args.N - col0) : BLOCK_N;
#pragma unroll
        for (int mi = 0; mi < FRAG_M; ++mi) {
            const int row = thread_row + mi / THREAD_M * SUB_M + mi % THREAD_M;
            if (row >= rows_in) break;
#pragma unroll
            for (int nj = 0; nj < FRAG_N; ++nj) {
                const int col = thread_col + nj / THREAD_N * SUB_N + nj % THREAD_N;
                if (col >= cols_in) break;
                store_output(args, row0 + row, col0 + col, acc[mi][nj]);
            }
        }
    }
};

}  // namespace gemmlab
