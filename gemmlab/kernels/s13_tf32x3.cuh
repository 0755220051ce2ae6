// s13 tf32x3 (beyond the notes): FP32-accurate GEMM on s12's tensor-core engine. What it adds:
//   - each operand arrives split (copy/split_tf32.cuh, a pre-pass): v = hi + lo, both TF32-exact;
//     each stage holds four TMA boxes (A hi, A lo, B hi, B lo), 128-byte swizzled, K-major;
//   - per k8 step three wgmmas, small products first: lo(A)·hi(B), hi(A)·lo(B), hi(A)·hi(B)
//     (lo·lo, ~2^-22 relative, is dropped), hi·hi into a partial sum of its own (SPLIT_PARTIALS:
//     a third of the truncating accumulation steps on the large one);
//   - promotion (mma/promoted_sums.cuh): every PROMOTE_K of K the partial sum (which the tensor
//     core accumulates with truncation) is added into FP32 registers with ordinary adds and
//     restarted (scale-d = 0), so the long sum over K is IEEE FP32 (TENSORCORE.md: 3.5e-7 at
//     K = 4096 against 9.6e-6 without); with SPLIT_PARTIALS the small products' partial every
//     max(PROMOTE_K, 512).
// Everything else (producer warpgroup, full/empty mbarriers, setmaxnreg, epilogue) is s12's.
//
// Two variants split one operand in registers instead, so that a large operand is read once, as
// it is, with no copy of it written (only the other operand goes through the pre-pass):
//   S13Tf32x3Rs, a row-major (N-major) B (128x8192x8192): s12's RS path, D^T = B^T A^T with B^T's
//     raw words read into wgmma's register fragment (mma/wgmma_rs_fragment.cuh) and split there;
//   S13Tf32x3Ra, a K-major A (8192x128x8192): the SS tile, with A's raw tile read into registers
//     by each consumer warpgroup and split there.
// Both issue the three products per k8 step from registers, small products first:
// lo·hi, hi·lo, hi·hi (register operand first).
#pragma once
#include "common.cuh"
#include "copy/tma_pipeline.cuh"
#include "ptx/cvt.cuh"
#include "ptx/wgmma.cuh"
#include "mma/wgmma_core.cuh"
#include "mma/wgmma_rs_fragment.cuh"
#include "mma/promoted_sums.cuh"
#include "epilogue/wgmma_store.cuh"

namespace gemmlab {

template <int BLOCK_M_, int BLOCK_N_, int BLOCK_K_, int STAGES_, int PROMOTE_K_, bool SPLIT_PARTIALS_>
struct S13Tf32x3 {
    static constexpr int BLOCK_M = BLOCK_M_, BLOCK_N = BLOCK_N_, BLOCK_K = BLOCK_K_, STAGES = STAGES_;
    static constexpr int PROMOTE_K = PROMOTE_K_;
    static constexpr bool SPLIT_PARTIALS = SPLIT_PARTIALS_;  // hi·hi in a partial sum of its own
    using Core = WgmmaCoreTf32<BLOCK_N, BLOCK_K>;
    using Sums = PromotedSums<Core::ACC, BLOCK_K, PROMOTE_K, SPLIT_PARTIALS>;
    using Pipe = TmaPipeline<128 * (BLOCK_M / 64), STAGES>;
    static_assert(BLOCK_M % 64 == 0 && BLOCK_M >= 64 && BLOCK_M <= 256, "block_m: 64..256, one consumer warpgroup per 64 rows");
    static_assert(BLOCK_N <= 256, "a TMA box is at most 256 rows");
    static constexpr int THREADS = Pipe::THREADS;
    static_assert(Sums::SETS * Core::ACC + 32 <= Pipe::CONSUMER_REGS,
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
        Sums sums;
        sums.init();

        // Each tile's group is waited for before the next is issued (wait_group 0): the two
        // consumer warpgroups take turns on the tensor cores, and no branch separates a running
        // wgmma from a read of its registers (ptxas would serialize the pipeline, C7517).
        for (int t = 0; t < num_tiles; ++t, ring.advance()) {
            const int s = ring.stage;
            pipe.wait_full(ring);
            wgmma::fence();
            // Small products first; the first wgmma of an interval into each partial overwrites it.
            Core::multiply(sums.small(), a_lo(s) + a_rows, b_hi(s), Sums::small_scale(t));
            Core::multiply(sums.small(), a_hi(s) + a_rows, b_lo(s), 1);
            Core::multiply(sums.part, a_hi(s) + a_rows, b_hi(s), Sums::part_scale(t));
            wgmma::commit();
            wgmma::wait<0>();
            sums.landed();
            pipe.release(s);
            sums.promote(t, t == num_tiles - 1);
        }
        store_wgmma_tile<BLOCK_N>(args, row0 + 64 * wg, col0, threadIdx.x % 128, sums.acc);
        Pipe::consumer_exit();
    }
};

namespace tf32x3 {
// The consumer's K loop of the two kernels that split an operand in registers: per tile, the
// register operand's raw words (``load(stage, ks, words)``, K_STEPS fragments) split into hi and
// lo, then per k8 step three RS wgmmas against the shared operand's hi and lo tiles (shared
// addresses ``shared_hi(stage)``, ``shared_lo(stage)``), small products first: lo·hi, hi·lo,
// hi·hi. Each tile's group is waited for before its fragments are reused (the consumer warpgroups
// take turns on the tensor cores meanwhile), its stage released, the partial sums promoted.
template <int N, int K_STEPS, class Pipe, class Sums, class Load, class SharedHi, class SharedLo>
__device__ __forceinline__ void register_split_loop(const Pipe& pipe, Sums& sums, int num_tiles, Load&& load,
                                                    SharedHi&& shared_hi, SharedLo&& shared_lo) {
    StageRing<Pipe::STAGES> ring;
    for (int t = 0; t < num_tiles; ++t, ring.advance()) {
        const int s = ring.stage;
        pipe.wait_full(ring);
        unsigned hi[K_STEPS][4], lo[K_STEPS][4];
#pragma unroll
        for (int ks = 0; ks < K_STEPS; ++ks) {
            unsigned w[4];
            load(s, ks, w);
            split_tf32_words(w, hi[ks], lo[ks]);
        }
        wgmma::fence();
        const unsigned long long d_hi = wgmma::desc_k_major_sw128(shared_hi(s));
        const unsigned long long d_lo = wgmma::desc_k_major_sw128(shared_lo(s));
#pragma unroll
        for (int ks = 0; ks < K_STEPS; ++ks)
            wgmma::mma_tf32_rs<N>(sums.small(), lo[ks], d_hi + ks * wgmma::DESC_K8_STEP, ks == 0 ? Sums::small_scale(t) : 1);
#pragma unroll
        for (int ks = 0; ks < K_STEPS; ++ks)
            wgmma::mma_tf32_rs<N>(sums.small(), hi[ks], d_lo + ks * wgmma::DESC_K8_STEP, 1);
#pragma unroll
        for (int ks = 0; ks < K_STEPS; ++ks)
            wgmma::mma_tf32_rs<N>(sums.part, hi[ks], d_hi + ks * wgmma::DESC_K8_STEP, ks == 0 ? Sums::part_scale(t) : 1);
        wgmma::commit();
        wgmma::wait<0>();
        sums.landed();
        pipe.release(s);
        sums.promote(t, t == num_tiles - 1);
    }
}
}  // namespace tf32x3

// D^T tile = B^T (registers, split there) x A^T (hi and lo, shared, K-major). The block covers
// BLOCK_M rows of D (the wgmma N) and BLOCK_N columns (64 per consumer warpgroup, the wgmma M).
template <int BLOCK_M_, int BLOCK_N_, int BLOCK_K_, int STAGES_, int PROMOTE_K_, bool SPLIT_PARTIALS_>
struct S13Tf32x3Rs {
    static constexpr int BLOCK_M = BLOCK_M_, BLOCK_N = BLOCK_N_, BLOCK_K = BLOCK_K_, STAGES = STAGES_;
    static constexpr int PROMOTE_K = PROMOTE_K_;
    static constexpr bool SPLIT_PARTIALS = SPLIT_PARTIALS_;
    using Core = WgmmaCoreTf32<BLOCK_M, BLOCK_K>;  // the wgmma N is the block's M
    using Sums = PromotedSums<Core::ACC, BLOCK_K, PROMOTE_K, SPLIT_PARTIALS>;
    using Frag = RsFragmentNMajor<BLOCK_N, BLOCK_K>;
    using Pipe = TmaPipeline<128 * (BLOCK_N / 64), STAGES>;  // one consumer warpgroup per 64 columns
    static_assert(BLOCK_N % 64 == 0 && BLOCK_N >= 64 && BLOCK_N <= 256, "block_n: 64..256, one consumer warpgroup per 64 columns");
    static_assert(BLOCK_M % 32 == 0 && BLOCK_M >= 32 && BLOCK_M <= 256, "block_m (the wgmma n): 32..256 in steps of 32");
    static constexpr int THREADS = Pipe::THREADS;
    // the accumulator sets + the tile's hi and lo fragments (8 words a k8 step) + 24 for addressing
    static_assert(Sums::SETS * Core::ACC + 8 * Core::K_STEPS + 24 <= Pipe::CONSUMER_REGS,
                  "the accumulator sets (block_m/2 each), the tile's hi and lo fragments and 24 must fit");

    static constexpr int A_TILE_BYTES = BLOCK_M * BLOCK_K * 4;  // [m][k], K-major, swizzled: hi, then lo
    static_assert(A_TILE_BYTES % 1024 == 0, "tiles are whole 8-row atoms");
    static constexpr int STAGE_BYTES = 2 * A_TILE_BYTES + Frag::STAGE_BYTES;
    static constexpr unsigned TX_BYTES = STAGE_BYTES;
    static constexpr int SMEM_BYTES = 1024 + STAGES * STAGE_BYTES + 2 * STAGES * 8;

    static __device__ __forceinline__ void run(const GemmArgs& args, int64 row0, int64 col0, unsigned char* smem,
                                               const async::TmaDescriptor& a_map, const async::TmaDescriptor& a_lo_map,
                                               const async::TmaDescriptor& b_map, int batch_mask) {
        const unsigned raw = async::smem_address(smem);
        const unsigned base = (raw + 1023u) & ~1023u;
        // stage s: [A hi][A lo][B: BLOCK_N/32 boxes of {32 n, 32 k}]
        auto a_hi = [&](int s) { return base + s * STAGE_BYTES; };
        auto a_lo = [&](int s) { return a_hi(s) + A_TILE_BYTES; };
        auto b_raw = [&](int s) { return a_hi(s) + 2 * A_TILE_BYTES; };
        const Pipe pipe(base + STAGES * STAGE_BYTES, &a_map, &a_lo_map, &b_map);
        const int num_tiles = static_cast<int>((args.K + BLOCK_K - 1) / BLOCK_K);

        if (Pipe::is_producer_group()) {
            const int m0 = static_cast<int>(row0), n0 = static_cast<int>(col0);
            pipe.template produce<BLOCK_K>(num_tiles, args.k_begin, batch_mask, TX_BYTES,
                                           [&](int s, int k0, unsigned bar, int a_batch, int b_batch) {
                async::tma_load_3d(a_hi(s), &a_map, bar, k0, m0, a_batch);
                async::tma_load_3d(a_lo(s), &a_lo_map, bar, k0, m0, a_batch);
#pragma unroll
                for (int j = 0; j < BLOCK_N / 32; ++j)
                    async::tma_load_3d(b_raw(s) + j * Frag::BOX_BYTES, &b_map, bar, n0 + 32 * j, k0, b_batch);
            });
            return;
        }

        Pipe::consumer_enter();
        const int n_pair = Frag::n_pair(threadIdx.x);
        const int k_lane = Frag::k_lane(threadIdx.x);
        Sums sums;
        sums.init();
        tf32x3::register_split_loop<BLOCK_M, Core::K_STEPS>(
            pipe, sums, num_tiles,
            [&](int st, int ks, unsigned (&w)[4]) { Frag::load(b_raw(st), ks, n_pair, k_lane, w); }, a_hi, a_lo);
        store_wgmma_tile_transposed<BLOCK_M>(args, row0, col0 + n_pair, k_lane, sums.acc);
        Pipe::consumer_exit();
    }
};

// D tile = A (registers, split there) x B (hi and lo, shared, K-major): the SS kernel's tile, with
// A's raw tile in shared memory and each consumer warpgroup reading its 64 rows into registers.
template <int BLOCK_M_, int BLOCK_N_, int BLOCK_K_, int STAGES_, int PROMOTE_K_, bool SPLIT_PARTIALS_>
struct S13Tf32x3Ra {
    static constexpr int BLOCK_M = BLOCK_M_, BLOCK_N = BLOCK_N_, BLOCK_K = BLOCK_K_, STAGES = STAGES_;
    static constexpr int PROMOTE_K = PROMOTE_K_;
    static constexpr bool SPLIT_PARTIALS = SPLIT_PARTIALS_;
    using Core = WgmmaCoreTf32<BLOCK_N, BLOCK_K>;
    using Sums = PromotedSums<Core::ACC, BLOCK_K, PROMOTE_K, SPLIT_PARTIALS>;
    using Frag = RsFragmentKMajor;
    using Pipe = TmaPipeline<128 * (BLOCK_M / 64), STAGES>;
    static_assert(BLOCK_M % 64 == 0 && BLOCK_M >= 64 && BLOCK_M <= 256, "block_m: 64..256, one consumer warpgroup per 64 rows");
    static_assert(BLOCK_N <= 256, "a TMA box is at most 256 rows");
    static constexpr int THREADS = Pipe::THREADS;
    static_assert(Sums::SETS * Core::ACC + 8 * Core::K_STEPS + 24 <= Pipe::CONSUMER_REGS,
                  "the accumulator sets (block_n/2 each), the tile's hi and lo fragments and 24 must fit");

    // Three tiles a stage: A raw (BLOCK_M rows), B hi, B lo (BLOCK_N rows), 128 bytes a row.
    static constexpr int A_TILE_BYTES = BLOCK_M * BLOCK_K * 4;
    static constexpr int B_TILE_BYTES = BLOCK_N * BLOCK_K * 4;
    static_assert(A_TILE_BYTES % 1024 == 0 && B_TILE_BYTES % 1024 == 0, "tiles are whole 8-row atoms");
    static constexpr int STAGE_BYTES = A_TILE_BYTES + 2 * B_TILE_BYTES;
    static constexpr unsigned TX_BYTES = STAGE_BYTES;
    static constexpr int SMEM_BYTES = 1024 + STAGES * STAGE_BYTES + 2 * STAGES * 8;

    static __device__ __forceinline__ void run(const GemmArgs& args, int64 row0, int64 col0, unsigned char* smem,
                                               const async::TmaDescriptor& a_map, const async::TmaDescriptor& b_map,
                                               const async::TmaDescriptor& b_lo_map, int batch_mask) {
        const unsigned raw = async::smem_address(smem);
        const unsigned base = (raw + 1023u) & ~1023u;
        // stage s: [A][B hi][B lo]
        auto a_raw = [&](int s) { return base + s * STAGE_BYTES; };
        auto b_hi = [&](int s) { return a_raw(s) + A_TILE_BYTES; };
        auto b_lo = [&](int s) { return b_hi(s) + B_TILE_BYTES; };
        const Pipe pipe(base + STAGES * STAGE_BYTES, &a_map, &b_map, &b_lo_map);
        const int num_tiles = static_cast<int>((args.K + BLOCK_K - 1) / BLOCK_K);

        if (Pipe::is_producer_group()) {
            const int m0 = static_cast<int>(row0), n0 = static_cast<int>(col0);
            pipe.template produce<BLOCK_K>(num_tiles, args.k_begin, batch_mask, TX_BYTES,
                                           [&](int s, int k0, unsigned bar, int a_batch, int b_batch) {
                async::tma_load_3d(a_raw(s), &a_map, bar, k0, m0, a_batch);
                async::tma_load_3d(b_hi(s), &b_map, bar, k0, n0, b_batch);
                async::tma_load_3d(b_lo(s), &b_lo_map, bar, k0, n0, b_batch);
            });
            return;
        }

        Pipe::consumer_enter();
        const int wg = threadIdx.x / 128;
        const unsigned thread_in_wg = threadIdx.x % 128;
        const unsigned a_rows = wg * 64 * (BLOCK_K * 4);
        Sums sums;
        sums.init();
        tf32x3::register_split_loop<BLOCK_N, Core::K_STEPS>(
            pipe, sums, num_tiles,
            [&](int st, int ks, unsigned (&w)[4]) { Frag::load(a_raw(st) + a_rows, ks, thread_in_wg, w); }, b_hi, b_lo);
        store_wgmma_tile<BLOCK_N>(args, row0 + 64 * wg, col0, threadIdx.x % 128, sums.acc);
        Pipe::consumer_exit();
    }
};

}  // namespace gemmlab
