// s13 tf32x3 (beyond the notes): FP32-accurate GEMM on s12's tensor-core engine. What it adds:
//   - each operand arrives split (copy/split_tf32.cuh, a pre-pass): v = hi + lo, both TF32-exact;
//     each stage holds four TMA boxes (A hi, A lo, B hi, B lo), 128-byte swizzled, K-major;
//   - per k8 step three wgmmas, small products first: lo(A)·hi(B), hi(A)·lo(B), hi(A)·hi(B)
//     (lo·lo, ~2^-22 relative, is dropped), hi·hi into a partial sum of its own (SPLIT_PARTIALS:
//     a third of the truncating accumulation steps on the large one);
//   - promotion: every PROMOTE_K of K the partial sum (which the tensor core accumulates with
//     truncation) is added into FP32 registers with ordinary adds and restarted (scale-d = 0), so
//     the long sum over K is IEEE FP32 (TENSORCORE.md: 3.5e-7 at K = 4096 against 9.6e-6 without).
// Everything else (producer warpgroup, full/empty mbarriers, setmaxnreg, epilogue) is s12's.
#pragma once
#include "common.cuh"
#include "ptx/mbarrier.cuh"
#include "ptx/sync.cuh"
#include "ptx/tma.cuh"
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
    static_assert(BLOCK_M % 64 == 0 && BLOCK_M >= 64 && BLOCK_M <= 256, "block_m: 64..256, one consumer warpgroup per 64 rows");
    static_assert(BLOCK_N <= 256, "a TMA box is at most 256 rows");
    static_assert(STAGES >= 2 && STAGES <= 8, "stages must be 2..8");
    static_assert(PROMOTE_K % BLOCK_K == 0 && PROMOTE_K >= BLOCK_K, "promote_k: a multiple of block_k");
    static constexpr int TILES_PER_PROMOTE = PROMOTE_K / BLOCK_K;
    static constexpr int CONSUMER_WGS = BLOCK_M / 64;
    static constexpr int CONSUMERS = 128 * CONSUMER_WGS;
    static constexpr int CONSUMER_WARPS = CONSUMERS / 32;
    static constexpr int THREADS = CONSUMERS + 128;
    static constexpr int PRODUCER_THREAD = CONSUMERS;
    static constexpr int LAUNCH_REGS_RAW = 65536 / THREADS / 8 * 8;
    static constexpr int LAUNCH_REGS = LAUNCH_REGS_RAW > 255 ? 248 : LAUNCH_REGS_RAW;
    static constexpr int PRODUCER_REGS = 40;
    static constexpr int POOL_REGS = (65536 - 128 * PRODUCER_REGS) / CONSUMERS / 8 * 8;
    static constexpr int CONSUMER_REGS = POOL_REGS < 240 ? POOL_REGS : 240;
    static constexpr bool REBALANCE = CONSUMER_REGS > LAUNCH_REGS;
    static_assert((SPLIT_PARTIALS ? 3 : 2) * Core::ACC + 32 <= CONSUMER_REGS,
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
        const unsigned bars = base + STAGES * STAGE_BYTES;
        auto full_bar = [&](int s) { return bars + 8u * s; };
        auto empty_bar = [&](int s) { return bars + 8u * (STAGES + s); };

        if (threadIdx.x == PRODUCER_THREAD) {
            async::prefetch_descriptor(&a_map);
            async::prefetch_descriptor(&a_lo_map);
            async::prefetch_descriptor(&b_map);
            async::prefetch_descriptor(&b_lo_map);
#pragma unroll
            for (int s = 0; s < STAGES; ++s) {
                async::mbarrier_init(full_bar(s), 1);
                async::mbarrier_init(empty_bar(s), CONSUMER_WARPS);
            }
            async::fence_barrier_init();
        }
        __syncthreads();

        const int num_tiles = static_cast<int>((args.K + BLOCK_K - 1) / BLOCK_K);

        if (threadIdx.x >= CONSUMERS) {
            // ---- producer warpgroup: one thread streams four boxes per tile ----------------
            if constexpr (REBALANCE) async::setmaxnreg_dec<PRODUCER_REGS>();
            if (threadIdx.x == PRODUCER_THREAD) {
                const int m0 = static_cast<int>(row0), n0 = static_cast<int>(col0);
                const int a_batch = (batch_mask & 1) ? static_cast<int>(blockIdx.z) : 0;
                const int b_batch = (batch_mask & 2) ? static_cast<int>(blockIdx.z) : 0;
                int stage = 0;
                unsigned phase = 0;
#pragma unroll 1
                for (int t = 0; t < num_tiles; ++t) {
                    if (t >= STAGES) async::mbarrier_wait(empty_bar(stage), phase ^ 1u);
                    const int k0 = static_cast<int>(args.k_begin) + t * BLOCK_K;
                    const unsigned bar = full_bar(stage);
                    async::mbarrier_arrive_expect_tx(bar, TX_BYTES);
                    async::tma_load_3d(a_hi(stage), &a_map, bar, k0, m0, a_batch);
                    async::tma_load_3d(a_lo(stage), &a_lo_map, bar, k0, m0, a_batch);
                    async::tma_load_3d(b_hi(stage), &b_map, bar, k0, n0, b_batch);
                    async::tma_load_3d(b_lo(stage), &b_lo_map, bar, k0, n0, b_batch);
                    if (++stage == STAGES) {
                        stage = 0;
                        phase ^= 1u;
                    }
                }
            }
            __syncwarp();
            if constexpr (REBALANCE) {
                async::named_barrier_sync(2, 128);
                async::setmaxnreg_inc<LAUNCH_REGS>();
            }
            return;
        }

        // ---- consumer warpgroups ------------------------------------------------------------
        if constexpr (REBALANCE) async::setmaxnreg_inc<CONSUMER_REGS>();
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
        const bool warp_leader = threadIdx.x % 32 == 0;
        int stage = 0;
        unsigned phase = 0;
        for (int t = 0; t < num_tiles; ++t) {
            const int in_interval = t % TILES_PER_PROMOTE;
            async::mbarrier_wait(full_bar(stage), phase);
            wgmma::fence();
            // Two partial sums: the tensor core truncates every accumulation, so hi·hi gets one of
            // its own (a third of the truncating steps); the first wgmma of an interval overwrites.
            Core::multiply(small, a_lo(stage) + a_rows, b_hi(stage), in_interval == 0 ? 0 : 1);
            Core::multiply(small, a_hi(stage) + a_rows, b_lo(stage), 1);
            Core::multiply(part, a_hi(stage) + a_rows, b_hi(stage), (in_interval == 0 && SPLIT_PARTIALS) ? 0 : 1);
            wgmma::commit();
            wgmma::wait<0>();
            wgmma::fence_operands(part);
            if constexpr (SPLIT_PARTIALS) wgmma::fence_operands(small);
            __syncwarp();
            if (warp_leader) async::mbarrier_arrive(empty_bar(stage));
            if (in_interval == TILES_PER_PROMOTE - 1 || t == num_tiles - 1) {
                // Promotion: the partial sum over PROMOTE_K into the FP32 sums, with IEEE adds.
#pragma unroll
                for (int i = 0; i < Core::ACC; ++i) acc[i] += SPLIT_PARTIALS ? part[i] + small[i] : part[i];
                wgmma::fence_operands(acc);
            }
            if (++stage == STAGES) {
                stage = 0;
                phase ^= 1u;
            }
        }
        store_wgmma_tile<BLOCK_N>(args, row0 + 64 * wg, col0, threadIdx.x % 128, acc);
        if constexpr (REBALANCE) {
            async::named_barrier_sync(1, CONSUMERS);
            async::setmaxnreg_dec<LAUNCH_REGS>();
        }
    }
};

}  // namespace gemmlab
