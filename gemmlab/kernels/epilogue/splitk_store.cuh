// gemmlab/kernels/epilogue/splitk_store.cuh — the split-K epilogue for four consecutive columns of
// one row, once the slices' partials are added: D = alpha * sum + beta * C, where beta == 0 never
// reads C. D and C have any strides (a transposed output or a broadcast c costs nothing extra);
// one 16-byte store where D's rows are unit-stride and aligned (``d_vec``), one 16-byte load of C
// where its columns are unit-stride and the address aligned. Used by the reduce kernel
// (splitk_reduce.cuh), which finishes split-K through a workspace.
#pragma once
#include "common.cuh"

namespace gemmlab {

// d: D's element (row, n); c: C's; left: N - n (columns at and after n); d_vec: D's rows unit-stride
// and 16-byte aligned.
__device__ __forceinline__ void split_out4(float* d, int64 d_cs, bool d_vec, const float* c, int64 c_cs, float alpha,
                                           float beta, const float4& sum, int64 left) {
    const float acc[4] = {sum.x, sum.y, sum.z, sum.w};
    if (d_vec && left > 3) {
        float4 out = make_float4(alpha * acc[0], alpha * acc[1], alpha * acc[2], alpha * acc[3]);
        if (beta != 0.0f) {
            const float4 old = (c_cs == 1 && (reinterpret_cast<unsigned long long>(c) & 15) == 0)
                                   ? *reinterpret_cast<const float4*>(c)
                                   : make_float4(c[0], c[c_cs], c[2 * c_cs], c[3 * c_cs]);
            out.x += beta * old.x;
            out.y += beta * old.y;
            out.z += beta * old.z;
            out.w += beta * old.w;
        }
        *reinterpret_cast<float4*>(d) = out;
    } else {
        for (int e = 0; e < 4 && e < left; ++e)
            d[e * d_cs] = beta == 0.0f ? alpha * acc[e] : alpha * acc[e] + beta * c[e * c_cs];
    }
}

}  // namespace gemmlab
