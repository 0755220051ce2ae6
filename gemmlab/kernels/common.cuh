// gemmlab/kernels/common.cuh — what every stage shares.
//
// Every stage computes D = alpha * A * B + beta * D for one output tile. The host side
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
//   the transposed problem D^T = B^T A^T). C is always read from D itself: when the caller passes
//   a separate c the host copies it into the output first, so there is one epilogue rule.
//   beta == 0 never reads D (so NaN there cannot leak); alpha == 0 is sent as K = 0.
//   All offsets are 64-bit: sizes past 2^31 elements work.
#pragma once

typedef long long int64;

namespace gemmlab {

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
};

// The epilogue for one element: beta == 0 never reads the old value.
__device__ __forceinline__ void store_output(const GemmArgs& args, int64 row, int64 col, float acc) {
    float* dst = args.D + row * args.ldd + col;
    *dst = (args.beta == 0.0f) ? args.alpha * acc : args.alpha * acc + args.beta * (*dst);
}

// Epilogue for four consecutive columns, 16-byte aligned (the caller checked alignment of D and ldd).
__device__ __forceinline__ void store_output4(const GemmArgs& args, int64 row, int64 col, float4 acc) {
    float4* dst = reinterpret_cast<float4*>(args.D + row * args.ldd + col);
    float4 out;
    if (args.beta == 0.0f) {
        out = make_float4(args.alpha * acc.x, args.alpha * acc.y, args.alpha * acc.z, args.alpha * acc.w);
    } else {
        float4 old = *dst;
        out = make_float4(args.alpha * acc.x + args.beta * old.x, args.alpha * acc.y + args.beta * old.y,
                          args.alpha * acc.z + args.beta * old.z, args.alpha * acc.w + args.beta * old.w);
    }
    *dst = out;
}

// Bounds-checked scalar reads: zero outside the matrix (zero-filled edges).
__device__ __forceinline__ float load_a(const GemmArgs& args, int64 row, int64 k) {
    return (row < args.M && k < args.K) ? args.A[row * args.a_row_stride + k * args.a_col_stride] : 0.0f;
}
__device__ __forceinline__ float load_b(const GemmArgs& args, int64 k, int64 col) {
    return (k < args.K && col < args.N) ? args.B[k * args.b_row_stride + col * args.b_col_stride] : 0.0f;
}

}  // namespace gemmlab

// Strided batched copy, used by the host to materialise c into the output (any layout to any
// layout) and to make unusual strides contiguous. dst[b][r][c] = src[b][r][c].
extern "C" __global__ void __launch_bounds__(256) gemmlab_copy(
    const float* __restrict__ src, float* __restrict__ dst, int64 rows, int64 cols, int64 batch,
    int64 src_bs, int64 src_rs, int64 src_cs, int64 dst_bs, int64 dst_rs, int64 dst_cs) {
    const int64 per_batch = rows * cols;
    const int64 total = per_batch * batch;
    for (int64 i = (int64)blockIdx.x * blockDim.x + threadIdx.x; i < total; i += (int64)gridDim.x * blockDim.x) {
        const int64 b = i / per_batch;
        const int64 rem = i - b * per_batch;
        // Walk the destination's fast dimension with consecutive threads.
        int64 r, c;
        if (dst_cs == 1 || dst_rs != 1) { r = rem / cols; c = rem - r * cols; }
        else { c = rem / rows; r = rem - c * rows; }
        dst[b * dst_bs + r * dst_rs + c * dst_cs] = src[b * src_bs + r * src_rs + c * src_cs];
    }
}
