// gemmlab/kernels/epilogue/wgmma_store.cuh — D = alpha * acc + beta * C for the FP32 accumulators
// of one warpgroup's m64nNk8 wgmma tile (64 x N), predicated at the matrix edges; and the same for
// a tile of D^T (s12's RS path).
//
// Accumulator layout (PTX ISA, wgmma .f32 D fragment): thread t of the warpgroup (warp w = t/32,
// lane l = t%32) holds N/2 values; value i is at
//   row 16w + l/4 + 8*((i%4)/2),   column 8*(i/4) + 2*(l%4) + (i%2),
// so values i, i+1 (i even) are two adjacent columns: one 8-byte store where D allows it. A warp's
// store instruction covers 8 rows x 8 columns, 32 contiguous bytes per row (whole sectors).
#pragma once
#include "common.cuh"

namespace gemmlab {

template <int N>
__device__ __forceinline__ void store_wgmma_tile(const GemmArgs& args, int64 row0, int64 col0, int thread_in_wg,
                                                 const float (&acc)[N / 2]) {
    const int warp = thread_in_wg / 32, lane = thread_in_wg % 32;
    const int64 row_base = row0 + 16 * warp + lane / 4;
    const int64 col_base = col0 + 2 * (lane % 4);
    // 8-byte stores need an even leading dimension and an 8-byte aligned D (columns are even).
    const bool pairs = (args.ldd % 2 == 0) && (reinterpret_cast<unsigned long long>(args.D) % 8 == 0);
    const CView c = c_view(args);  // a separate C (GEMMLAB_SEPARATE_C); else C is D
#pragma unroll
    for (int i = 0; i < N / 2; i += 2) {
        const int64 row = row_base + 8 * ((i % 4) / 2);
        const int64 col = col_base + 8 * (i / 4);
        if (row >= args.M) continue;
        float* dst = args.D + row * args.ldd + col;
        if (pairs && col + 1 < args.N) {
            float2 out = make_float2(args.alpha * acc[i], args.alpha * acc[i + 1]);
            if (args.beta != 0.0f) {
                const float2 old = CView::SEPARATE ? c.load2(c.src(dst, row, col)) : *reinterpret_cast<const float2*>(dst);
                out.x += args.beta * old.x;
                out.y += args.beta * old.y;
            }
            *reinterpret_cast<float2*>(dst) = out;
        } else if constexpr (CView::SEPARATE) {
            if (col < args.N) store_output(args, c, row, col, acc[i]);
            if (col + 1 < args.N) store_output(args, c, row, col + 1, acc[i + 1]);
        } else {
            if (col < args.N) store_output(args, row, col, acc[i]);
            if (col + 1 < args.N) store_output(args, row, col + 1, acc[i + 1]);
        }
    }
}


// The transposed tile of s12's RS path: the wgmma computed D^T, its rows (the wgmma M) being two
// columns of D per thread (col, col + 1: wgmma rows l/4 and l/4 + 8 of warp w) and its columns (the
// wgmma N) rows of D: value i is at D row row0 + 8*(i/4) + 2*k_lane + i%2, column col + (i%4)/2,
// so values i and i+2 are adjacent columns (one 8-byte store).
template <int N>
__device__ __forceinline__ void store_wgmma_tile_transposed(const GemmArgs& args, int64 row0, int64 col, int k_lane,
                                                            const float (&acc)[N / 2]) {
    // The inputs are made opaque here, so the compiler cannot compute the N/2 row addresses
    // before the caller's main loop (they would be spilled across it).
    float* d_base;
    int64 first_row, ldd;
    asm volatile("mov.b64 %0, %1;\n" : "=l"(d_base) : "l"(args.D));
    asm volatile("mov.b64 %0, %1;\n" : "=l"(first_row) : "l"(row0 + 2 * k_lane));
    asm volatile("mov.b64 %0, %1;\n" : "=l"(ldd) : "l"(args.ldd));
    const bool pairs = (ldd % 2 == 0) && (reinterpret_cast<unsigned long long>(d_base) % 8 == 0);
    const CView c = c_view(args);  // a separate C (GEMMLAB_SEPARATE_C); else C is D
    float* row_ptr = d_base + first_row * ldd + col;
    int64 row = first_row;
#pragma unroll
    for (int i = 0; i < N / 2; i += 4, row_ptr += 8 * ldd, row += 8) {
#pragma unroll
        for (int j = 0; j < 2; ++j) {  // values i + j and i + j + 2
            if (row + j >= args.M) continue;
            float* dst = row_ptr + j * ldd;
            if (pairs && col + 1 < args.N) {
                float2 out = make_float2(args.alpha * acc[i + j], args.alpha * acc[i + j + 2]);
                if (args.beta != 0.0f) {
                    const float2 old = CView::SEPARATE ? c.load2(c.src(dst, row + j, col))
                                                       : *reinterpret_cast<const float2*>(dst);
                    out.x += args.beta * old.x;
                    out.y += args.beta * old.y;
                }
                *reinterpret_cast<float2*>(dst) = out;
            } else if constexpr (CView::SEPARATE) {
                if (col < args.N) store_output(args, c, row + j, col, acc[i + j]);
                if (col + 1 < args.N) store_output(args, c, row + j, col + 1, acc[i + j + 2]);
            } else {
                if (col < args.N) store_output(args, row + j, col, acc[i + j]);
                if (col + 1 < args.N) store_output(args, row + j, col + 1, acc[i + j + 2]);
            }
        }
    }
}

}  // namespace gemmlab
