// gemmlab/kernels/common.cuh — what every stage shares.
//
// Every stage computes D = alpha * A * B + beta * C for one output tile. The host side
// (gemmlab/jit/source.py) generates one extern "C" kernel per instantiation that
//   1. builds a GemmArgs from flat kernel parameters (flat, so the launch ABI is the same for
//      every stage),
//   2. offsets the pointers for the batch index (blockIdx.z, grid-stride for huge batches) and,
//      for split-K (gridDim.y slices of k_split), for the slice's first k (kernels/splitk_reduce.cuh
//      then adds the slices),
//   3. maps the linear block index to an output tile (optionally grouped along M for L2 reuse),
//   4. calls Stage::run(args, tile_row0, tile_col0, shared_memory).
//
// Conventions:
//   A is M x K with element strides (a_row_stride, a_col_stride): A[m][k] = A[m*a_rs + k*a_cs].
//   B is K x N with element strides (b_row_stride, b_col_stride).
//   D is M x N row-major with leading dimension ldd (the host turns a column-major output into
//   the transposed problem D^T = B^T A^T). C, the addend, has any strides (c_row_stride,
//   c_col_stride): C[m][n] = C[m*c_rs + n*c_cs], so a caller's separate c (a stride-0 bias
//   broadcast, a transposed c) is read where it lies, in the epilogue, never copied first (kernels
//   built with GEMMLAB_SEPARATE_C; the others read C from D: c is the output, or absent). One epilogue rule:
//   D = alpha * acc + beta * C, and beta == 0 never reads C (so NaN there cannot leak); alpha == 0
//   is sent as K = 0.
//   All offsets are 64-bit: sizes past 2^31 elements work.
#pragma once
#include "ptx/grid_dependency.cuh"

typedef long long int64;

namespace gemmlab {

// Pick<C, T, F>: T where C, else F (NVRTC has no <type_traits> without the CUDA headers).
template <bool C, class T, class F> struct PickType { using type = T; };
template <class T, class F> struct PickType<false, T, F> { using type = F; };
template <bool C, class T, class F> using Pick = typename PickType<C, T, F>::type;

struct GemmArgs {
    const float* A;
    const float* B;
    float* D;
    int64 M, N, K;
    int64 a_row_stride, a_col_stride;
    int64 b_row_stride, b_col_stride;
    int64 ldd;
    float alpha, beta;
    int64 k_begin;  // split-K: the k of A's column 0 / B's row 0 in the whole problem (TMA coordinates)
    const float* C;  // the addend (D itself when c is the output or absent); read only when beta != 0
    int64 c_row_stride, c_col_stride;
};

// Where the epilogue reads the addend. GEMMLAB_SEPARATE_C (set by the generated source,
// jit/source.py) is 1 only for kernels built for a c that is not the output: C[row][col] at
// base + row*rs + col*cs. Otherwise C is D and the epilogue reads the element it then writes,
// exactly as a kernel without a c would (the same SASS). An epilogue takes the view once
// (c_view): with a separate C its base and strides pass through an opaque move there, so the
// compiler cannot work out C's row addresses before the main loop and keep them live (spilled)
// through it.
#ifndef GEMMLAB_SEPARATE_C
#define GEMMLAB_SEPARATE_C 0
#endif
struct CView {
    static constexpr bool SEPARATE = GEMMLAB_SEPARATE_C != 0;
    const float* base;
    int64 rs, cs;
    // The addend for output element dst = D[row][col].
    __device__ __forceinline__ const float* src(const float* dst, int64 row, int64 col) const {
        if constexpr (SEPARATE) return base + row * rs + col * cs;
        else return dst;
    }
    // Two / four consecutive columns from src: one 8- / 16-byte load where C's columns are
    // unit-stride and src is aligned for it (a bias broadcast), else scalar loads; C = D: the
    // caller checked D's alignment.
    __device__ __forceinline__ float2 load2(const float* p) const {
        if (!SEPARATE || (cs == 1 && (reinterpret_cast<unsigned long long>(p) & 7) == 0))
            return *reinterpret_cast<const float2*>(p);
        return make_float2(p[0], p[cs]);
    }
    __device__ __forceinline__ float4 load4(const float* p) const {
        if (!SEPARATE || (cs == 1 && (reinterpret_cast<unsigned long long>(p) & 15) == 0))
            return *reinterpret_cast<const float4*>(p);
        return make_float4(p[0], p[cs], p[2 * cs], p[3 * cs]);
    }
};
__device__ __forceinline__ CView c_view(const GemmArgs& args) {
    CView v{nullptr, 0, 0};
    if constexpr (CView::SEPARATE) {
        asm volatile("mov.b64 %0, %1;" : "=l"(v.base) : "l"(args.C));
        asm volatile("mov.b64 %0, %1;" : "=l"(v.rs) : "l"(args.c_row_stride));
        asm volatile("mov.b64 %0, %1;" : "=l"(v.cs) : "l"(args.c_col_stride));
    }
    return v;
}

// The epilogue for one element: beta == 0 never reads C (c: the epilogue's c_view(args)).
__device__ __forceinline__ void store_output(const GemmArgs& args, const CView& c, int64 row, int64 col, float acc) {
    float* dst = args.D + row * args.ldd + col;
    *dst = (args.beta == 0.0f) ? args.alpha * acc : args.alpha * acc + args.beta * *c.src(dst, row, col);
}
__device__ __forceinline__ void store_output(const GemmArgs& args, int64 row, int64 col, float acc) {
    const CView c{args.C, args.c_row_stride, args.c_col_stride};  // plain: the one-element epilogues' loops
    store_output(args, c, row, col, acc);
}

// Epilogue for four consecutive columns, 16-byte aligned (the caller checked alignment of D and ldd).
__device__ __forceinline__ void store_output4(const GemmArgs& args, const CView& c, int64 row, int64 col,
                                              float4 acc) {
    float4* dst = reinterpret_cast<float4*>(args.D + row * args.ldd + col);
    float4 out;
    if (args.beta == 0.0f) {
        out = make_float4(args.alpha * acc.x, args.alpha * acc.y, args.alpha * acc.z, args.alpha * acc.w);
    } else {
        const float4 old = c.load4(c.src(reinterpret_cast<const float*>(dst), row, col));
        out = make_float4(args.alpha * acc.x + args.beta * old.x, args.alpha * acc.y + args.beta * old.y,
                          args.alpha * acc.z + args.beta * old.z, args.alpha * acc.w + args.beta * old.w);
    }
    *dst = out;
}

// Whether a tile's rows of D take 16-byte stores of 4 columns: D and its rows 16-byte aligned and,
// where the tile's column origin may have been moved (COL0_MOVED, edge_origin below), col0 a
// multiple of 4 (an origin on the tile grid always is).
template <bool COL0_MOVED = false>
__device__ __forceinline__ bool d_rows_take_16_bytes(const GemmArgs& args, int64 col0) {
    return ((reinterpret_cast<unsigned long long>(args.D) | (unsigned long long)(args.ldd * 4) |
             (COL0_MOVED ? static_cast<unsigned long long>(col0 * 4) : 0ull)) & 15) == 0;
}

// Edge blocks moved inside the operand (s10's EDGE_SHIFT). A block whose tile hangs over the M
// (N) edge may start at extent - TILE instead, where extent >= TILE, so that its copies take no
// bounds tests in that dimension. It still owns only the rows (columns) from its own multiple of
// TILE up; the skipped(origin) rows below (origin rounded up to TILE, minus origin: 0 for an
// origin that was not moved) belong to the block before it, which computes the same sums, and
// the epilogue leaves them alone. A tile-local 32-bit count, so the epilogue's tests stay
// 32-bit (64-bit bounds there cost s10's 128x256 nt kernel its last registers: it spilled).
template <int TILE>
__device__ __forceinline__ int64 edge_origin(int64 origin, int64 extent) {
    return (origin + TILE > extent && extent >= TILE) ? extent - TILE : origin;
}
// The value as the compiler cannot see through: worked out again where it is used, not kept live.
// (Compiled as host C++ by the CPU tests, tests/host/, it is the value.)
__device__ __forceinline__ int64 opaque(int64 v) {
#ifdef __CUDA_ARCH__
    asm volatile("mov.b64 %0, %0;" : "+l"(v));
#endif
    return v;
}
template <int TILE>
__device__ __forceinline__ int skipped(int64 origin) {
    return static_cast<int>((origin + (TILE - 1)) / TILE * TILE - origin);
}

// Bounds-checked scalar reads: zero outside the matrix (zero-filled edges).
__device__ __forceinline__ float load_a(const GemmArgs& args, int64 row, int64 k) {
    return (row < args.M && k < args.K) ? args.A[row * args.a_row_stride + k * args.a_col_stride] : 0.0f;
}
__device__ __forceinline__ float load_b(const GemmArgs& args, int64 k, int64 col) {
    return (k < args.K && col < args.N) ? args.B[k * args.b_row_stride + col * args.b_col_stride] : 0.0f;
}

}  // namespace gemmlab

// Strided batched copies, used by the host to make unusual strides contiguous (repacking):
// dst[b][r][c] = src[b][r][c], for one or two operands in one launch (blocks [0, blocks0) copy
// the first, the rest the second; a second copy with batch 0 is none). A warp copies a run of
// COPY_RUN elements of one line along the destination's unit-stride dimension, lanes consecutive,
// all COPY_RUN / 32 loads in flight before its first store. Each warp divides once, for where it
// starts and how far its grid stride reaches (batch, line and run); each further run is a carry
// of additions. (Version 1, one element per thread per grid-stride step with two 64-bit divisions
// each: 22% of the H200's DRAM bandwidth on a 3333x2222 repack, 38.7 us; version 2, the two
// divisions per run: 40%, 20.6 us, its FMA pipe 32% busy: results/h200/logs/ncu-copy.txt; this
// one: 3333x2222 and 2222x1111 in one launch 23.6 us where those two took 20.6 + 9.9, DRAM 52%,
// FMA pipe 14.5%: ncu-copy-2.txt.)
#define GEMMLAB_COPY_RUN 128
namespace gemmlab {

template <bool UNIT>  // UNIT: unit stride along the run on both sides
__device__ __forceinline__ void copy_lines(const float* __restrict__ src, float* __restrict__ dst, int64 inner,
                                           int64 outer, int64 batch, int64 src_bs, int64 src_os, int64 src_is,
                                           int64 dst_bs, int64 dst_os, int64 dst_is, int64 warp, int64 warps) {
    constexpr int RUN = GEMMLAB_COPY_RUN, PER_LANE = RUN / 32;
    const int64 runs = (inner + RUN - 1) / RUN;
    if (warp >= runs * outer * batch) return;
    const int lane = threadIdx.x % 32;
    // task t = (b * outer + o) * runs + run; this warp's first, then t += warps each step
    int64 run = warp % runs, o = (warp / runs) % outer, b = warp / runs / outer;
    const int64 d_run = warps % runs, d_o = (warps / runs) % outer, d_b = warps / runs / outer;
    while (b < batch) {
        const float* s = src + b * src_bs + o * src_os;
        float* d = dst + b * dst_bs + o * dst_os;
        const int64 i0 = run * RUN + lane;
        float v[PER_LANE];
#pragma unroll
        for (int u = 0; u < PER_LANE; ++u) {
            const int64 i = i0 + 32 * u;
            v[u] = i < inner ? s[UNIT ? i : i * src_is] : 0.0f;
        }
#pragma unroll
        for (int u = 0; u < PER_LANE; ++u) {
            const int64 i = i0 + 32 * u;
            if (i < inner) d[UNIT ? i : i * dst_is] = v[u];
        }
        run += d_run;  // the next task: run, then line, then batch, each carry at most one
        const int carry = run >= runs;
        run -= carry ? runs : 0;
        o += d_o + carry;
        const int carry_o = o >= outer;
        o -= carry_o ? outer : 0;
        b += d_b + carry_o;
    }
}

__device__ __forceinline__ void copy_one(const float* __restrict__ src, float* __restrict__ dst, int64 rows,
                                         int64 cols, int64 batch, int64 src_bs, int64 src_rs, int64 src_cs,
                                         int64 dst_bs, int64 dst_rs, int64 dst_cs, int64 warp, int64 warps) {
    const bool along_cols = dst_cs == 1 || dst_rs != 1;  // the destination's fast dimension
    const int64 inner = along_cols ? cols : rows, outer = along_cols ? rows : cols;
    const int64 src_is = along_cols ? src_cs : src_rs, src_os = along_cols ? src_rs : src_cs;
    const int64 dst_is = along_cols ? dst_cs : dst_rs, dst_os = along_cols ? dst_rs : dst_cs;
    if (inner <= 0 || outer <= 0) return;
    if (src_is == 1 && dst_is == 1)
        copy_lines<true>(src, dst, inner, outer, batch, src_bs, src_os, 1, dst_bs, dst_os, 1, warp, warps);
    else
        copy_lines<false>(src, dst, inner, outer, batch, src_bs, src_os, src_is, dst_bs, dst_os, dst_is, warp, warps);
}

}  // namespace gemmlab

extern "C" __global__ void __launch_bounds__(256) gemmlab_copy(
    const float* __restrict__ src0, float* __restrict__ dst0, int64 rows0, int64 cols0, int64 batch0,
    int64 src_bs0, int64 src_rs0, int64 src_cs0, int64 dst_bs0, int64 dst_rs0, int64 dst_cs0,
    const float* __restrict__ src1, float* __restrict__ dst1, int64 rows1, int64 cols1, int64 batch1,
    int64 src_bs1, int64 src_rs1, int64 src_cs1, int64 dst_bs1, int64 dst_rs1, int64 dst_cs1, int64 blocks0) {
    gemmlab::grid_dependency_wait();
    const int64 wpb = blockDim.x / 32, w = threadIdx.x / 32;
    if ((int64)blockIdx.x < blocks0)
        gemmlab::copy_one(src0, dst0, rows0, cols0, batch0, src_bs0, src_rs0, src_cs0, dst_bs0, dst_rs0, dst_cs0,
                          (int64)blockIdx.x * wpb + w, blocks0 * wpb);
    else
        gemmlab::copy_one(src1, dst1, rows1, cols1, batch1, src_bs1, src_rs1, src_cs1, dst_bs1, dst_rs1, dst_cs1,
                          ((int64)blockIdx.x - blocks0) * wpb + w, ((int64)gridDim.x - blocks0) * wpb);
}
