// gemmlab/kernels/slice_load.cuh — the scalar cooperative copy global -> shared memory that the
// scalar stages s02-s06 share (s07 replaces it with float4 loads).
//
// One ROWS x COLS slice of a matrix with any element strides is copied into a row-major shared
// array. The THREADS threads are re-arranged as (THREADS / THREAD_COLS) x THREAD_COLS for the copy
// (000 §4.4): consecutive threads take consecutive columns, so a warp reads contiguous global
// memory when the column stride is 1, and each thread covers ROWS_PER_THREAD x COLS_PER_THREAD
// elements, THREAD_ROWS rows and THREAD_COLS columns apart. Elements past (rows_left, cols_left)
// are stored as zero, so edge tiles need no special case in the compute loop.
#pragma once
#include "common.cuh"

namespace gemmlab {

template <int ROWS, int COLS, int THREADS, int THREAD_COLS>
struct SliceLoad {
    static constexpr int THREAD_ROWS = THREADS / THREAD_COLS;
    static constexpr int ROWS_PER_THREAD = ROWS / THREAD_ROWS;
    static constexpr int COLS_PER_THREAD = COLS / THREAD_COLS;
    static_assert(THREADS % THREAD_COLS == 0, "slice load: the thread count must be a multiple of the threads per row");
    static_assert(COLS % THREAD_COLS == 0, "slice load: the slice width must be a multiple of the threads per row");
    static_assert(ROWS % THREAD_ROWS == 0, "slice load: the slice height must be a multiple of the thread rows");

    // tile: the shared array [ROWS][COLS]; src: global address of slice element (0, 0).
    static __device__ __forceinline__ void load(float (*tile)[COLS], const float* src, int64 row_stride,
                                                int64 col_stride, int64 rows_left, int64 cols_left) {
        const int first_row = threadIdx.x / THREAD_COLS, first_col = threadIdx.x % THREAD_COLS;
        // Clamp to the slice once so the per-element checks are 32-bit.
        const int rows_in = rows_left < ROWS ? (int)rows_left : ROWS;
        const int cols_in = cols_left < COLS ? (int)cols_left : COLS;
        const int64 row_step = THREAD_ROWS * row_stride, col_step = THREAD_COLS * col_stride;
        const float* row_ptr = src + first_row * row_stride + first_col * col_stride;
        float value[ROWS_PER_THREAD][COLS_PER_THREAD];
        // All global loads first, then all shared stores: the loads overlap in flight. Pointers
        // advance by a step rather than being recomputed, to keep few 64-bit values live.
#pragma unroll
        for (int i = 0; i < ROWS_PER_THREAD; ++i, row_ptr += row_step) {
            const float* ptr = row_ptr;
#pragma unroll
            for (int j = 0; j < COLS_PER_THREAD; ++j, ptr += col_step) {
                const bool inside = first_row + i * THREAD_ROWS < rows_in && first_col + j * THREAD_COLS < cols_in;
                value[i][j] = inside ? *ptr : 0.0f;
            }
        }
#pragma unroll
        for (int i = 0; i < ROWS_PER_THREAD; ++i)
#pragma unroll
            for (int j = 0; j < COLS_PER_THREAD; ++j)
                tile[first_row + i * THREAD_ROWS][first_col + j * THREAD_COLS] = value[i][j];
    }
};

}  // namespace gemmlab
