// gemmlab/kernels/copy/cp_async_tile.cuh — one operand tile, global -> shared with cp.async
// (s10): coalesced along the unit-stride dimension, edges zero-filled by the copy's src-size;
// with 4-byte copies a K-major operand may also be turned into [k][x] on the way (TransposingCopier).
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
    // With 4-byte copies a tile wholly inside the operand (every block's tiles but those at the
    // M/N/K edges) skips the per-copy bounds tests and source selects. The 16-byte copies keep the
    // one path: they are a quarter as many, and the second copy of the code made ptxas spill s10's
    // 128x256 nt kernel for sm_80.
    __device__ __forceinline__ void copy_and_advance(unsigned tile, int k_left, int fixed_left,
                                                     const float* any_valid) {
        const int outer_left = INNER_IS_K ? fixed_left : k_left;
        const int inner_left = INNER_IS_K ? k_left : fixed_left;
        if (!VEC && outer_left >= OUTER && inner_left >= INNER) {
            copy<false>(tile, outer_left, inner_left, any_valid);
        } else {
            copy<true>(tile, outer_left, inner_left, any_valid);
        }
        src += tile_step;
    }

  private:
    template <bool EDGE>
    __device__ __forceinline__ void copy(unsigned tile, int outer_left, int inner_left, const float* any_valid) const {
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
            int count = UNIT;
            if constexpr (EDGE) {
                count = inner_left - inner;
                count = count < 0 ? 0 : (count > UNIT ? UNIT : count);
                if (outer >= outer_left) count = 0;
            }
            const float* from = ROWS_PER_ITER ? row : row + (it % ITERS_PER_ROW) * inner_jump;
            if constexpr (EDGE) from = count > 0 ? from : any_valid;  // a zero-byte copy reads nothing; keep it in bounds
            if constexpr (VEC) {
                async::copy_16(tile + 4u * dst_float, from, count * 4);
            } else {
                async::copy_4(tile + 4u * dst_float, from, count * 4);
            }
            if (ROWS_PER_ITER || (it + 1) % ITERS_PER_ROW == 0) row += row_jump;
        }
    }
};

// Copies a K-major operand tile (X rows of M or N, each K-contiguous in memory or of any stride)
// into a [BLOCK_K][LD] tile in shared memory, one 4-byte cp.async per element: a 4-byte copy
// lands anywhere, so the copy transposes, and the core reads the operand as [k][x] (s10's
// `transpose_in`: the outer-product layout, whatever the operand's global layout). A warp takes
// 8 consecutive k of 4 consecutive x: it reads 4 runs of 32 bytes (whole sectors) and, with LD =
// X + 4 (LD mod 32 = 4 for the X the tiles use), writes bank (4k + x) mod 32, all 32 different.
// A thread's consecutive copies walk K first (the next 8 k of the same rows), so the 4 requests
// that share a 128-byte line leave one after another; walking the rows first spread them over the
// whole tile, and 64x128 x2 ran 333x555x777x8 tt in 133 us against 106 with [x][k] (K first: 111).
// The destination of iteration `it` is the thread's first plus a constant (no swizzle), the source
// a pointer walked with adds; a tile wholly inside the operand skips the bounds tests.
template <int X, int BLOCK_K, int LD, int THREADS>
struct TransposingCopier {
    static constexpr int T8 = THREADS / 8;  // x rows one pass of the threads covers
    static constexpr int UNITS = X * BLOCK_K;
    static constexpr int ITERS = UNITS / THREADS;
    static constexpr int OCTETS = BLOCK_K / 8;
    static_assert(BLOCK_K % 8 == 0 && THREADS % 32 == 0, "transpose_in: k in groups of 8, whole warps");
    static_assert(X % T8 == 0, "transpose_in: the tile's rows must be a multiple of threads/8");
    static_assert(LD >= X && LD % 4 == 0, "transpose_in: rows of the [k][x] tile hold X and stay 16-byte aligned");
    // Iterations take the OCTETS k-octets of T8 rows, then the next T8 rows.
    static __device__ __forceinline__ constexpr int x_step(int it) { return (it / OCTETS) * T8; }
    static __device__ __forceinline__ constexpr int k_step(int it) { return 8 * (it % OCTETS); }

    const float* src;  // this thread's element of iteration 0, in the current K tile
    int64 k_jump;      // to the next k-octet of the same rows
    int64 wrap;        // from the last k-octet of T8 rows to the first of the next T8
    int64 tile_step;   // elements per K tile
    int x0, k0;

    // origin: global address of the block's tile (x 0) at k = 0; strides in elements.
    __device__ __forceinline__ TransposingCopier(const float* origin, int64 x_stride, int64 k_stride) {
        const int t = static_cast<int>(threadIdx.x);
        x0 = t / 8;
        k0 = t % 8;
        src = origin + x0 * x_stride + k0 * k_stride;
        k_jump = 8 * k_stride;
        wrap = T8 * x_stride - (OCTETS - 1) * 8 * k_stride;
        tile_step = BLOCK_K * k_stride;
    }

    // Same contract as TileCopier::copy_and_advance (fixed_left: rows of M or N left, x_left here).
    __device__ __forceinline__ void copy_and_advance(unsigned tile, int k_left, int x_left, const float* any_valid) {
        if (x_left >= X && k_left >= BLOCK_K) {
            copy<false>(tile, k_left, x_left, any_valid);
        } else {
            copy<true>(tile, k_left, x_left, any_valid);
        }
        src += tile_step;
    }

  private:
    template <bool EDGE>
    __device__ __forceinline__ void copy(unsigned tile, int k_left, int x_left, const float* any_valid) const {
        const unsigned dst0 = tile + 4u * static_cast<unsigned>(k0 * LD + x0);
        const float* from = src;
#pragma unroll
        for (int it = 0; it < ITERS; ++it) {
            const unsigned dst = dst0 + 4u * static_cast<unsigned>(k_step(it) * LD + x_step(it));
            if constexpr (EDGE) {
                const bool in = x0 + x_step(it) < x_left && k0 + k_step(it) < k_left;
                async::copy_4(dst, in ? from : any_valid, in ? 4 : 0);
            } else {
                async::copy_4(dst, from, 4);
            }
            from += (it + 1) % OCTETS == 0 ? wrap : k_jump;
        }
    }
};

}  // namespace gemmlab
