// gemmlab/kernels/mma/promoted_sums.cuh — s13's accumulators: FP32 sums in registers that the
// tensor cores' partial sums are promoted into every PROMOTE_K of K (the tensor core accumulates with
// truncation; the long sum over K is IEEE FP32 this way). With SPLIT_PARTIALS, hi·hi has a partial
// of its own (promoted every PROMOTE_K) and the small products lo·hi + hi·lo another, promoted every
// SMALL_PROMOTE_K = max(PROMOTE_K, 512): a short PROMOTE_K then costs one add per accumulator, not two.
// Shared by s13's kernels (SS, and the two that split an operand in registers).
#pragma once
#include "ptx/wgmma.cuh"

namespace gemmlab {

template <int ACC, int BLOCK_K, int PROMOTE_K, bool SPLIT_PARTIALS>
struct PromotedSums {
    static_assert(PROMOTE_K % BLOCK_K == 0 && PROMOTE_K >= BLOCK_K, "promote_k: a multiple of block_k");
    static constexpr int TILES_PER_PROMOTE = PROMOTE_K / BLOCK_K;
    // the small products' partial: every max(PROMOTE_K, 512) of K (a whole number of hi·hi intervals)
    static constexpr int SMALL_PROMOTE_K = SPLIT_PARTIALS && PROMOTE_K < 512 ? (512 / PROMOTE_K) * PROMOTE_K : PROMOTE_K;
    static constexpr int TILES_PER_SMALL = SMALL_PROMOTE_K / BLOCK_K;
    static_assert(TILES_PER_SMALL % TILES_PER_PROMOTE == 0, "small products: promoted at a hi·hi promotion");
    static constexpr int SETS = SPLIT_PARTIALS ? 3 : 2;  // register sets of ACC floats

    float acc[ACC];    // FP32 sums (promoted)
    float part[ACC];   // tensor-core partial sum over at most PROMOTE_K of K (of hi·hi when split)
    float small_own[SPLIT_PARTIALS ? ACC : 1];  // SPLIT: lo·hi + hi·lo, ~2^-11 of hi·hi

    using Acc = float[ACC];
    __device__ __forceinline__ Acc& small() {
        if constexpr (SPLIT_PARTIALS) return small_own; else return part;
    }

    __device__ __forceinline__ void init() {
#pragma unroll
        for (int i = 0; i < ACC; ++i) acc[i] = part[i] = small()[i] = 0.0f;
        // Opaque zeros: the compiler must not fold "0 + part" into reading the tensor core's
        // registers later (that read would need an extra, serializing wgmma wait).
        wgmma::fence_operands(acc);
    }
    // scale-d of tile t's first wgmma into the small products' partial and into hi·hi's: 0 (start a
    // new partial sum) on the first tile of an interval.
    static __device__ __forceinline__ int small_scale(int t) { return t % TILES_PER_SMALL == 0 ? 0 : 1; }
    static __device__ __forceinline__ int part_scale(int t) {
        return (t % TILES_PER_PROMOTE == 0 && SPLIT_PARTIALS) ? 0 : 1;
    }
    // After the tile's wgmma group has completed (wait_group 0).
    __device__ __forceinline__ void landed() {
        wgmma::fence_operands(part);
        if constexpr (SPLIT_PARTIALS) wgmma::fence_operands(small_own);
    }
    // Promotion after tile t: the partial sums into the FP32 sums, with IEEE adds, where an
    // interval ends (with SPLIT_PARTIALS, the small products' too where their longer interval ends).
    __device__ __forceinline__ void promote(int t, bool last) {
        if (t % TILES_PER_PROMOTE == TILES_PER_PROMOTE - 1 || last) {
            if (SPLIT_PARTIALS && (t % TILES_PER_SMALL == TILES_PER_SMALL - 1 || last)) {
#pragma unroll
                for (int i = 0; i < ACC; ++i) acc[i] += part[i] + small()[i];
            } else {
#pragma unroll
                for (int i = 0; i < ACC; ++i) acc[i] += part[i];
            }
            wgmma::fence_operands(acc);
        }
    }
};

}  // namespace gemmlab
