// gemmlab/kernels/copy/cp_async_tile.cuh — one operand tile, global -> shared with cp.async
// (s10): coalesced along the unit-stride dimension, edges zero-filled by the copy's src-size.
#pragma once
#include "common.cuh"
#include "ptx/cp_async.cuh"

namespace gemmlab {

// Copies one operand tile, stored [OUTER][INNER] in shared memory, with cp.async. Consecutive
// threads take consecutive units (4 floats when VEC, else 1) along INNER, the unit-stride global
// dimension when the layout was chosen by the operand's majorness, so reads are coalesced and a
// warp's shared-memory writes are contiguous. INNER_IS_K says which of the two dimensions walks
// K (it moves by BLOCK_K per tile); the other is M or N (fixed for the block). All 64-bit address
// arithmetic is done once in the constructor; a tile costs an add per copy plus the edge tests.
template <int OUTER, int INNER, bool INNER_IS_K, bool SWIZZLE, bool VEC, int THREADS, class Core>
struct TileCopier {
    static constexpr int UNIT = VEC ? 4 : 1;
    static constexpr int UNITS_PER_ROW = INNER / UNIT;
    static constexpr int UNITS = OUTER * UNITS_PER_ROW;
    static constexpr int ITERS = UNITS / THREADS;
    static_assert(INNER % 4 == 0, "tile rows are whole 16-byte chunks");
    static_assert(UNITS % THREADS == 0 && (THREADS % UNITS_PER_ROW == 0 || UNITS_PER_ROW % THREADS == 0),
                  "the tile copy must split evenly over the threads");
    // Iteration `it` copies unit threadIdx.x + it*THREADS: (outer0 + outer_step, inner0 + inner_step).
    static constexpr int ROWS_PER_ITER = THREADS >= UNITS_PER_ROW ? THREADS / UNITS_PER_ROW : 0;
    static constexpr int ITERS_PER_ROW = THREADS >= UNITS_PER_ROW ? 1 : UNITS_PER_ROW / THREADS;
    static __device__ __forceinline__ constexpr int outer_step(int it) {
        return ROWS_PER_ITER ? it * ROWS_PER_ITER : it / ITERS_PER_ROW;
    }
    static __device__ __forceinline__ constexpr int inner_step(int it) {
        return ROWS_PER_ITER ? 0 : (it % ITERS_PER_ROW) * THREADS * UNIT;
    }

    const float* src;  // this thread's unit of iteration 0, in the current K tile
    int64 row_jump;    // elements from one iteration's row to the next (ROWS_PER_ITER rows, or 1)
    int64 inner_jump;  // elements between iterations within a row (when a row spans iterations)
    int64 tile_step;   // elements per K tile
    int outer0, inner0;

    // origin: global address of the block's tile (outer 0, inner 0) at k = 0; strides in elements
    // (the inner one is 1 when VEC: the host checked).
    __device__ __forceinline__ TileCopier(const float* origin, int64 outer_stride, int64 inner_stride) {
        if (VEC) inner_stride = 1;
        outer0 = ROWS_PER_ITER ? static_cast<int>(threadIdx.x) / UNITS_PER_ROW : 0;
        inner0 = (ROWS_PER_ITER ? static_cast<int>(threadIdx.x) % UNITS_PER_ROW : static_cast<int>(threadIdx.x)) * UNIT;
        src = origin + outer0 * outer_stride + inner0 * inner_stride;
        row_jump = (ROWS_PER_ITER ? ROWS_PER_ITER : 1) * outer_stride;
        inner_jump = static_cast<int64>(THREADS * UNIT) * inner_stride;
        tile_step = (INNER_IS_K ? inner_stride : outer_stride) * (Core::K_GROUPS * 4);
    }

    // Copy the current K tile into the tile at shared address `tile`, then step to the next.
    // k_left = K - k0 (> 0), fixed_left = rows (M) or columns (N) left from the block's origin;
    // both are clamped to 2^30 by the caller, so the edge tests are 32-bit.
    __device__ __forceinline__ void copy_and_advance(unsigned tile, int k_left, int fixed_left,
                                                     const float* any_valid) {
        const int outer_left = INNER_IS_K ? fixed_left : k_left;
        const int inner_left = INNER_IS_K ? k_left : fixed_left;
        const float* row = src;  // walked with adds: no per-iteration 64-bit products to keep live
#pragma unroll
        for (int it = 0; it < ITERS; ++it) {
            const int outer = outer0 + outer_step(it);
            const int inner = inner0 + inner_step(it);
            int dst_float;
            if constexpr (SWIZZLE) {
                dst_float = outer * INNER + Core::swizzle_chunk(outer, inner / 4) * 4 + inner % 4;
            } else {
                dst_float = outer * INNER + inner;
            }
            int count = inner_left - inner;
            count = count < 0 ? 0 : (count > UNIT ? UNIT : count);
            if (outer >= outer_left) count = 0;
            const float* from = ROWS_PER_ITER ? row : row + (it % ITERS_PER_ROW) * inner_jump;
            from = count > 0 ? from : any_valid;  // a zero-byte copy reads nothing, but keep it in bounds
            if constexpr (VEC) {
                async::copy_16(tile + 4u * dst_float, from, count * 4);
            } else {
                async::copy_4(tile + 4u * dst_float, from, count * 4);
            }
            if (ROWS_PER_ITER || (it + 1) % ITERS_PER_ROW == 0) row += row_jump;
        }
        src += tile_step;
    }
};

}  // namespace gemmlab
