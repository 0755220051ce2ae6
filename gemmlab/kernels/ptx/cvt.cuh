// gemmlab/kernels/ptx/cvt.cuh — FP32 -> TF32 rounding (cvt.rna.tf32.f32: round to nearest, ties
// away from zero; the result is an FP32 word whose low 13 mantissa bits are zero), and the
// 3xTF32 split built on it.
#pragma once

namespace gemmlab {

__device__ __forceinline__ float tf32_round(float v) {
    unsigned r;
    asm("cvt.rna.tf32.f32 %0, %1;" : "=r"(r) : "f"(v));
    return __uint_as_float(r);
}

// v = hi + lo to about 2^-22 relative, both TF32-exact. Where v - hi is not finite (v infinite or
// NaN) lo = 0, so inf and NaN reach the product as they are; a finite v that would round to
// infinity keeps its truncated value as hi.
__device__ __forceinline__ void split_tf32(float v, float& hi, float& lo) {
    hi = tf32_round(v);
    if (isinf(hi) && isfinite(v)) hi = __uint_as_float(__float_as_uint(v) & 0xffffe000u);
    const float rest = v - hi;
    lo = isfinite(rest) ? tf32_round(rest) : 0.0f;
}

// The four words of an RS wgmma fragment, split: w = hi + lo word by word (bit patterns in and out).
__device__ __forceinline__ void split_tf32_words(const unsigned (&w)[4], unsigned (&hi)[4], unsigned (&lo)[4]) {
#pragma unroll
    for (int j = 0; j < 4; ++j) {
        float h, l;
        split_tf32(__uint_as_float(w[j]), h, l);
        hi[j] = __float_as_uint(h);
        lo[j] = __float_as_uint(l);
    }
}

}  // namespace gemmlab
