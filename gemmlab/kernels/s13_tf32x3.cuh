// s13 tf32x3 (beyond the notes): FP32-accurate GEMM on s12's tensor-core engine. What it adds:
//   - each operand arrives split (copy/split_tf32.cuh, a pre-pass): v = hi + lo, both TF32-exact;
//     each stage holds four TMA boxes (A hi, A lo, B hi, B lo), 128-byte swizzled, K-major;
//   - per k8 step three wgmmas, small products first: lo(A)·hi(B), hi(A)·lo(B), hi(A)·hi(B)
//     (lo·lo, ~2^-22 relative, is dropped), hi·hi into a partial sum of its own (SPLIT_PARTIALS:
//     a third of the truncating accumulation steps on the large one);
//   - promotion: every PROMOTE_K of K the partial sum (which the tensor core accumulates with
//     truncation) is added into FP32 registers with ordinary adds and restarted (scale-d = 0), so
//     the long sum over K is IEEE FP32 (TENSORCORE.md: 3.5e-7 at K = 4096 against 9.6e-6 without).
//     With SPLIT_PARTIALS only hi·hi is promoted every PROMOTE_K; the small products' partial
//     (~2^-11 of it, so its truncation is ~2^-11 as large) every SMALL_PROMOTE_K = max(PROMOTE_K,
//     512): a short PROMOTE_K then costs one add per accumulator, not two.
// Everything else (producer warpgroup, full/empty mbarriers, setmaxnreg, epilogue) is s12's.
#pragma once
#include "common.cuh"
#include "copy/tma_pipeline.cuh"
#include "ptx/wgmma.cuh"
#include "mma/wgmma_core.cuh"
#include "epilogue/wgmma_store.cuh"

namespace gemmlab {

template <int BLOCK_M_, int BLOCK_N_, int BLOCK_K_, int STAGES_, int PROMOTE_K_, bool SPLIT_PARTIALS_>
struct S13Tf32x3 {
    static constexpr int BLOCK_M = BLOCK_M_, BLOCK_N = BLOCK_N_, BLOCK_K = BLOCK_K_, STAGES = STAGES_;
    static constexpr int PROMOTE_K = PROMOTE_K_;
    static constexpr bool SPLIT_PARTIALS = SPLIT_PARTIALS_;  // hi·hi in a partial sum of its own
    using Core = WgmmaCoreTf32<BLOCK_N, BLOCK_K>;
    using Pipe = TmaPipeline<128 * (BLOCK_M / 64), STAGES>;
    static_assert(BLOCK_M % 64 == 0 && BLOCK_M >= 64 && BLOCK_M <= 256, "block_m: 64..256, one consumer warpgroup per 64 rows");
    static_assert(BLOCK_N <= 256, "a TMA box is at most 256 rows");
    static_assert(PROMOTE_K % BLOCK_K == 0 && PROMOTE_K >= BLOCK_K, "promote_k: a multiple of block_k");
    static constexpr int TILES_PER_PROMOTE = PROMOTE_K / BLOCK_K;
    // the small products' partial: every max(PROMOTE_K, 512) of K (a whole number of hi·hi intervals)
    static constexpr int SMALL_PROMOTE_K = SPLIT_PARTIALS && PROMOTE_K < 512 ? (512 / PROMOTE_K) * PROMOTE_K : PROMOTE_K;
    static constexpr int TILES_PER_SMALL = SMALL_PROMOTE_K / BLOCK_K;
    static_assert(TILES_PER_SMALL % TILES_PER_PROMOTE == 0, "small products: promoted at a hi·hi promotion");
    static constexpr int THREADS = Pipe::THREADS;
    static_assert((SPLIT_PARTIALS ? 3 : 2) * Core::ACC + 32 <= Pipe::CONSUMER_REGS,
                  "the accumulator sets (block_n/2 each: FP32 sums and one or two tensor-core partials) + 32 must fit");

    // Four tiles a stage: A hi, A lo (BLOCK_M rows), B hi, B lo (BLOCK_N rows), 128 bytes a row.
    static constexpr int A_TILE_BYTES = BLOCK_M * BLOCK_K * 4;
    static constexpr int B_TILE_BYTES = BLOCK_N * BLOCK_K * 4;
    static_assert(A_TILE_BYTES % 1024 == 0 && B_TILE_BYTES % 1024 == 0, "tiles are whole 8-row atoms");
    static constexpr int STAGE_BYTES = 2 * (A_TILE_BYTES + B_TILE_BYTES);
    static constexpr unsigned TX_BYTES = STAGE_BYTES;
    static constexpr int SMEM_BYTES = 1024 + STAGES * STAGE_BYTES + 2 * STAGES * 8;

    static __device__ __forceinline__ void run(const GemmArgs& args, int64 row0, int64 col0, unsigned char* smem,
                                               const async::TmaDescriptor& a_map, const async::TmaDescriptor& a_lo_map,
                                               const async::TmaDescriptor& b_map, const async::TmaDescriptor& b_lo_map,
                                               int batch_mask) {
        const unsigned raw = async::smem_address(smem);
        const unsigned base = (raw + 1023u) & ~1023u;
        // stage s: [A hi][A lo][B hi][B lo]
        auto a_hi = [&](int s) { return base + s * STAGE_BYTES; };
        auto a_lo = [&](int s) { return a_hi(s) + A_TILE_BYTES; };
        auto b_hi = [&](int s) { return a_hi(s) + 2 * A_TILE_BYTES; };
        auto b_lo = [&](int s) { return b_hi(s) + B_TILE_BYTES; };
        const Pipe pipe(base + STAGES * STAGE_BYTES, &a_map, &a_lo_map, &b_map, &b_lo_map);
        const int num_tiles = static_cast<int>((args.K + BLOCK_K - 1) / BLOCK_K);
        StageRing<STAGES> ring;

        if (Pipe::is_producer_group()) {  // one thread streams four boxes per tile
            const int m0 = static_cast<int>(row0), n0 = static_cast<int>(col0);
            pipe.template produce<BLOCK_K>(num_tiles, args.k_begin, batch_mask, TX_BYTES,
                                           [&](int s, int k0, unsigned bar, int a_batch, int b_batch) {
                async::tma_load_3d(a_hi(s), &a_map, bar, k0, m0, a_batch);
                async::tma_load_3d(a_lo(s), &a_lo_map, bar, k0, m0, a_batch);
                async::tma_load_3d(b_hi(s), &b_map, bar, k0, n0, b_batch);
                async::tma_load_3d(b_lo(s), &b_lo_map, bar, k0, n0, b_batch);
            });
            return;
        }

        // ---- consumer warpgroups ------------------------------------------------------------
        Pipe::consumer_enter();
        const int wg = threadIdx.x / 128;
        const unsigned a_rows = wg * 64 * (BLOCK_K * 4);
        float acc[Core::ACC];    // FP32 sums (promoted)
        float part[Core::ACC];   // tensor-core partial sum over at most PROMOTE_K of K (of hi·hi when split)
        float small_own[SPLIT_PARTIALS ? Core::ACC : 1];  // SPLIT: lo·hi + hi·lo, ~2^-11 of hi·hi
        using Acc = float[Core::ACC];
        Acc& small = *[&]() -> Acc* {
            if constexpr (SPLIT_PARTIALS) return &small_own; else return &part;
        }();
#pragma unroll
        for (int i = 0; i < Core::ACC; ++i) acc[i] = part[i] = small[i] = 0.0f;
        // Opaque zeros: the compiler must not fold "0 + part" into reading the tensor core's
        // registers later (that read would need an extra, serializing wgmma wait).
        wgmma::fence_operands(acc);

        // Each tile's group is waited for before the next is issued (wait_group 0): the two
        // consumer warpgroups take turns on the tensor cores, and no branch separates a running
        // wgmma from a read of its registers (ptxas would serialize the pipeline, C7517).
        for (int t = 0; t < num_tiles; ++t, ring.advance()) {
            const int s = ring.stage;
            const int in_interval = t % TILES_PER_PROMOTE;
            const int in_small = t % TILES_PER_SMALL;  // == in_interval without SPLIT_PARTIALS
            pipe.wait_full(ring);
            wgmma::fence();
            // Small products first; the first wgmma of an interval into each partial overwrites it.
            Core::multiply(small, a_lo(s) + a_rows, b_hi(s), in_small == 0 ? 0 : 1);
            Core::multiply(small, a_hi(s) + a_rows, b_lo(s), 1);
            Core::multiply(part, a_hi(s) + a_rows, b_hi(s), (in_interval == 0 && SPLIT_PARTIALS) ? 0 : 1);
            wgmma::commit();
            wgmma::wait<0>();
            wgmma::fence_operands(part);
            if constexpr (SPLIT_PARTIALS) wgmma::fence_operands(small);
            pipe.release(s);
            const bool last = t == num_tiles - 1;
            if (in_interval == TILES_PER_PROMOTE - 1 || last) {
                // Promotion: the partial sum over PROMOTE_K into the FP32 sums, with IEEE adds (with
                // SPLIT_PARTIALS, the small products' too where their longer interval ends).
                if (SPLIT_PARTIALS && (in_small == TILES_PER_SMALL - 1 || last)) {
#pragma unroll
                    for (int i = 0; i < Core::ACC; ++i) acc[i] += part[i] + small[i];
                } else {
#pragma unroll
                    for (int i = 0; i < Core::ACC; ++i) acc[i] += part[i];
                }
                wgmma::fence_operands(acc);
            }
        }
        store_wgmma_tile<BLOCK_N>(args, row0 + 64 * wg, col0, threadIdx.x % 128, acc);
        Pipe::consumer_exit();
    }
};

}  // namespace gemmlab
