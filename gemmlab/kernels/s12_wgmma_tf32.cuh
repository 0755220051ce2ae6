// s12 wgmma_tf32 (notes 000 §10.5, the ladder's last rung): s11's TMA + mbarrier pipeline, with the
// SIMT FFMA core replaced by Hopper's warpgroup tensor-core MMA. What it adds over s11:
//   - wgmma.mma_async m64nNk8 TF32 (mma/wgmma_core.cuh): each consumer warpgroup multiplies its
//     64 rows of the A tile by the whole B tile straight from shared memory (matrix descriptors),
//     accumulating FP32 in registers; no LDS, no FFMA in the main loop;
//   - both tiles K-major with the 128-byte swizzle (TF32 wgmma cannot transpose): A as [m][k], B as
//     [n][k], one {32, rows} TMA box each; the host hands this stage K-major operands (a transposing
//     copy where the caller's are not: plan.py);
//   - the consumers keep one wgmma group in flight (wait_group 1) and release a stage only when
//     the group that read it has completed;
//   - always warp-specialized: warpgroups 0..C-1 consume, the last warpgroup produces (one thread
//     issues the copies), setmaxnreg moves registers from the producer to the consumers.
// Precision: tf32 (inputs keep 10 mantissa bits: the tensor core truncates the low 13 bits of each
// FP32 word), FP32 accumulation. Edges: TMA zero-fills, the epilogue is predicated.
#pragma once
#include "common.cuh"
#include "ptx/mbarrier.cuh"
#include "ptx/sync.cuh"
#include "ptx/tma.cuh"
#include "ptx/wgmma.cuh"
#include "mma/wgmma_core.cuh"
#include "epilogue/wgmma_store.cuh"

namespace gemmlab {

template <int BLOCK_M_, int BLOCK_N_, int BLOCK_K_, int STAGES_>
struct S12WgmmaTf32 {
    static constexpr int BLOCK_M = BLOCK_M_, BLOCK_N = BLOCK_N_, BLOCK_K = BLOCK_K_, STAGES = STAGES_;
    using Core = WgmmaCoreTf32<BLOCK_N, BLOCK_K>;
    static_assert(BLOCK_M % 64 == 0 && BLOCK_M >= 64 && BLOCK_M <= 256, "block_m: 64..256, one consumer warpgroup per 64 rows");
    static_assert(BLOCK_N <= 256, "a TMA box is at most 256 rows");
    static_assert(STAGES >= 2 && STAGES <= 8, "stages must be 2..8");
    static constexpr int CONSUMER_WGS = BLOCK_M / 64;
    static constexpr int CONSUMERS = 128 * CONSUMER_WGS;
    static constexpr int CONSUMER_WARPS = CONSUMERS / 32;
    static constexpr int THREADS = CONSUMERS + 128;  // + the producer warpgroup
    static constexpr int PRODUCER_THREAD = CONSUMERS;
    // Registers: the launch cap (launch bounds THREADS, 1) is what the block's 64K give each
    // thread; the producer drops to PRODUCER_REGS and the consumers share the rest (at most 240).
    static constexpr int LAUNCH_REGS_RAW = 65536 / THREADS / 8 * 8;
    static constexpr int LAUNCH_REGS = LAUNCH_REGS_RAW > 255 ? 248 : LAUNCH_REGS_RAW;
    static constexpr int PRODUCER_REGS = 40;
    static constexpr int POOL_REGS = (65536 - 128 * PRODUCER_REGS) / CONSUMERS / 8 * 8;
    static constexpr int CONSUMER_REGS = POOL_REGS < 240 ? POOL_REGS : 240;
    static constexpr bool REBALANCE = CONSUMER_REGS > LAUNCH_REGS;
    static_assert(Core::ACC + 40 <= CONSUMER_REGS, "accumulators (block_n/2) + 40 must fit a consumer's registers");

    // Each tile row is 128 bytes; every stage buffer starts on a 1024-byte boundary (an atom).
    static constexpr int A_STAGE_BYTES = BLOCK_M * BLOCK_K * 4;
    static constexpr int B_STAGE_BYTES = BLOCK_N * BLOCK_K * 4;
    static_assert(A_STAGE_BYTES % 1024 == 0 && B_STAGE_BYTES % 1024 == 0, "tiles are whole 8-row atoms");
    static constexpr unsigned TX_BYTES = A_STAGE_BYTES + B_STAGE_BYTES;
    static constexpr int SMEM_BYTES = 1024 + STAGES * (A_STAGE_BYTES + B_STAGE_BYTES) + 2 * STAGES * 8;

    static __device__ __forceinline__ void run(const GemmArgs& args, int64 row0, int64 col0, unsigned char* smem,
                                               const async::TmaDescriptor& a_map, const async::TmaDescriptor& b_map,
                                               int batch_mask) {
        const unsigned raw = async::smem_address(smem);
        const unsigned base = (raw + 1023u) & ~1023u;
        const unsigned a_stages = base;
        const unsigned b_stages = base + STAGES * A_STAGE_BYTES;
        const unsigned bars = b_stages + STAGES * B_STAGE_BYTES;
        auto full_bar = [&](int s) { return bars + 8u * s; };
        auto empty_bar = [&](int s) { return bars + 8u * (STAGES + s); };

        if (threadIdx.x == PRODUCER_THREAD) {
            async::prefetch_descriptor(&a_map);
            async::prefetch_descriptor(&b_map);
#pragma unroll
            for (int s = 0; s < STAGES; ++s) {
                async::mbarrier_init(full_bar(s), 1);                // the producer's expect_tx
                async::mbarrier_init(empty_bar(s), CONSUMER_WARPS);  // lane 0 of each consumer warp
            }
            async::fence_barrier_init();
        }
        __syncthreads();

        const int num_tiles = static_cast<int>((args.K + BLOCK_K - 1) / BLOCK_K);

        if (threadIdx.x >= CONSUMERS) {
            // ---- producer warpgroup: one thread streams the tiles --------------------------
            if constexpr (REBALANCE) async::setmaxnreg_dec<PRODUCER_REGS>();
            if (threadIdx.x == PRODUCER_THREAD) {
                const int m0 = static_cast<int>(row0), n0 = static_cast<int>(col0);
                const int a_batch = (batch_mask & 1) ? static_cast<int>(blockIdx.z) : 0;
                const int b_batch = (batch_mask & 2) ? static_cast<int>(blockIdx.z) : 0;
                int stage = 0;
                unsigned phase = 0;
#pragma unroll 1
                for (int t = 0; t < num_tiles; ++t) {
                    // Tile t reuses the stage of tile t - STAGES once its consumers released it.
                    if (t >= STAGES) async::mbarrier_wait(empty_bar(stage), phase ^ 1u);
                    const int k0 = static_cast<int>(args.k_begin) + t * BLOCK_K;
                    async::mbarrier_arrive_expect_tx(full_bar(stage), TX_BYTES);
                    async::tma_load_3d(a_stages + stage * A_STAGE_BYTES, &a_map, full_bar(stage), k0, m0, a_batch);
                    async::tma_load_3d(b_stages + stage * B_STAGE_BYTES, &b_map, full_bar(stage), k0, n0, b_batch);
                    if (++stage == STAGES) {
                        stage = 0;
                        phase ^= 1u;
                    }
                }
            }
            __syncwarp();
            if constexpr (REBALANCE) {  // back to the launch count before leaving (see s11)
                async::named_barrier_sync(2, 128);
                async::setmaxnreg_inc<LAUNCH_REGS>();
            }
            return;
        }

        // ---- consumer warpgroups ------------------------------------------------------------
        if constexpr (REBALANCE) async::setmaxnreg_inc<CONSUMER_REGS>();
        const int wg = threadIdx.x / 128;
        const unsigned a_rows = wg * 64 * (BLOCK_K * 4);  // this warpgroup's 64 rows of the A tile
        float acc[Core::ACC];
#pragma unroll
        for (int i = 0; i < Core::ACC; ++i) acc[i] = 0.0f;

        const bool warp_leader = threadIdx.x % 32 == 0;
        int stage = 0, prev_stage = 0;
        unsigned phase = 0;
        for (int t = 0; t < num_tiles; ++t) {
            async::mbarrier_wait(full_bar(stage), phase);
            wgmma::fence_operands(acc);
            wgmma::fence();
            Core::multiply(acc, a_stages + stage * A_STAGE_BYTES + a_rows, b_stages + stage * B_STAGE_BYTES);
            wgmma::commit();
            // At most this tile's group still runs: the previous tile's stage has been read.
            wgmma::wait<1>();
            wgmma::fence_operands(acc);
            if (t > 0) {
                __syncwarp();
                if (warp_leader) async::mbarrier_arrive(empty_bar(prev_stage));
            }
            prev_stage = stage;
            if (++stage == STAGES) {
                stage = 0;
                phase ^= 1u;
            }
        }
        wgmma::wait<0>();
        wgmma::fence_operands(acc);
        store_wgmma_tile<BLOCK_N>(args, row0 + 64 * wg, col0, threadIdx.x % 128, acc);
        if constexpr (REBALANCE) {
            async::named_barrier_sync(1, CONSUMERS);
            async::setmaxnreg_dec<LAUNCH_REGS>();
        }
    }
};

}  // namespace gemmlab
