// s11 tma (notes 000 §10.5): s10's warp-tiled SIMT FFMA core fed by Hopper's Tensor Memory
// Accelerator instead of cp.async. What it adds over s10:
//   - one elected thread issues two cp.async.bulk.tensor copies per K tile (one box of A, one of
//     B); no other thread spends an issue slot on addresses, predicates or loads;
//   - the M/N/K edges are zero-filled by the TMA unit (the boxes may hang off the matrix);
//   - each stage has a "full" mbarrier (the producer's expect_tx; the copies complete the bytes)
//     and an "empty" mbarrier (every thread arrives when it has read the stage), so there is no
//     __syncthreads in the main loop and the producer never overwrites a stage still being read;
//   - K-major A and B land in As[m][k] / Bs[n][k] with the TMA SWIZZLE_{32,64,128}B pattern
//     that WarpTileCore reads conflict-free; the [k][x] layouts need none (see s10_cp_async.cuh).
// The tensor maps are built on the host (stages/tensor_map.py) and passed as
// `const __grid_constant__` parameters. They are 3-D (inner, outer, batch); batch_mask bit 0/1
// says whether A/B have a batch dimension (else every batch reads batch 0: broadcast).
// The batch index is blockIdx.z: the host sends problems with more than 65535 batches to s10.
#pragma once
#include "common.cuh"
#include "async_copy.cuh"
#include "s10_cp_async.cuh"

namespace gemmlab {

template <int BLOCK_M_, int BLOCK_N_, int BLOCK_K_, int WARP_M_, int WARP_N_, int K_UNROLL_, bool A_SWIZZLE_,
          int STAGES_, bool PRODUCER_WARP_, bool CONSUMER_SYNC_, bool A_K_MAJOR_, bool B_N_MAJOR_>
struct S11Tma {
    using Core = WarpTileCore<BLOCK_M_, BLOCK_N_, BLOCK_K_, WARP_M_, WARP_N_, K_UNROLL_, A_SWIZZLE_, A_K_MAJOR_,
                              B_N_MAJOR_>;
    static constexpr int BLOCK_M = BLOCK_M_, BLOCK_N = BLOCK_N_, BLOCK_K = BLOCK_K_;
    static constexpr int STAGES = STAGES_;
    // Consumer warps 0..CONSUMERS/32-1 compute (WarpTileCore's warp numbering); with PRODUCER_WARP
    // one more warp, the last, only issues the copies.
    static constexpr bool PRODUCER_WARP = PRODUCER_WARP_;
    static constexpr int CONSUMERS = Core::THREADS;
    static constexpr int CONSUMER_WARPS = CONSUMERS / 32;
    static constexpr int THREADS = CONSUMERS + (PRODUCER_WARP ? 32 : 0);
    static constexpr int PRODUCER_THREAD = PRODUCER_WARP ? CONSUMERS : 0;
    static_assert(THREADS <= 1024, "consumer threads + the producer warp must be at most 1024");
    static_assert(STAGES >= 2 && STAGES <= 16, "stages must be 2..16");
    static_assert(BLOCK_M <= 256 && BLOCK_N <= 256, "a TMA box is at most 256 elements per dimension");

    // Every stage buffer starts on a 1024-byte boundary (the period of the 128-byte swizzle).
    static constexpr __host__ __device__ int round_1k(int bytes) { return (bytes + 1023) / 1024 * 1024; }
    static constexpr int A_STAGE_BYTES = round_1k(Core::A_TILE_FLOATS * 4);
    static constexpr int B_STAGE_BYTES = round_1k(Core::B_TILE_FLOATS * 4);
    static constexpr unsigned TX_BYTES = (Core::A_TILE_FLOATS + Core::B_TILE_FLOATS) * 4;
    static_assert(TX_BYTES < (1u << 20), "an mbarrier phase counts at most 2^20-1 transaction bytes");
    // 1024 bytes of slack to align the dynamic buffer, the stages, then 2*STAGES mbarriers.
    static constexpr int SMEM_BYTES = 1024 + STAGES * (A_STAGE_BYTES + B_STAGE_BYTES) + 2 * STAGES * 8;

    static __device__ __forceinline__ void run(const GemmArgs& args, int64 row0, int64 col0, unsigned char* smem,
                                               const async::TmaDescriptor& a_map, const async::TmaDescriptor& b_map,
                                               int batch_mask) {
        const unsigned raw = async::smem_address(smem);
        const unsigned base = (raw + 1023u) & ~1023u;
        unsigned char* aligned = smem + (base - raw);
        const unsigned a_stages = base;
        const unsigned b_stages = base + STAGES * A_STAGE_BYTES;
        const unsigned bars = b_stages + STAGES * B_STAGE_BYTES;
        auto full_bar = [&](int s) { return bars + 8u * s; };
        auto empty_bar = [&](int s) { return bars + 8u * (STAGES + s); };
        const float* a_tiles = reinterpret_cast<const float*>(aligned);
        const float* b_tiles = reinterpret_cast<const float*>(aligned + STAGES * A_STAGE_BYTES);
        const bool producer = threadIdx.x == PRODUCER_THREAD;

        if (producer) {
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

        // Coordinates are int32 (the host sends dimensions >= 2^31 to s10).
        const int m0 = static_cast<int>(row0), n0 = static_cast<int>(col0);
        const int a_batch = (batch_mask & 1) ? static_cast<int>(blockIdx.z) : 0;
        const int b_batch = (batch_mask & 2) ? static_cast<int>(blockIdx.z) : 0;
        const int num_tiles = static_cast<int>((args.K + BLOCK_K - 1) / BLOCK_K);

        // Producer: tile -> stage, both boxes completing on the stage's full barrier.
        auto issue = [&](int tile, int stage) {
            const int k0 = tile * BLOCK_K;
            const unsigned bar = full_bar(stage);
            async::mbarrier_arrive_expect_tx(bar, TX_BYTES);
            const unsigned a_dst = a_stages + stage * A_STAGE_BYTES;
            const unsigned b_dst = b_stages + stage * B_STAGE_BYTES;
            if constexpr (A_K_MAJOR_) {
                async::tma_load_3d(a_dst, &a_map, bar, k0, m0, a_batch);  // box [BLOCK_M][BLOCK_K] (swizzled)
            } else {
                async::tma_load_3d(a_dst, &a_map, bar, m0, k0, a_batch);  // box [BLOCK_K][BLOCK_M]
            }
            if constexpr (B_N_MAJOR_) {
                async::tma_load_3d(b_dst, &b_map, bar, n0, k0, b_batch);  // box [BLOCK_K][BLOCK_N]
            } else {
                async::tma_load_3d(b_dst, &b_map, bar, k0, n0, b_batch);  // box [BLOCK_N][BLOCK_K], swizzled
            }
        };

        // Tile t lives in stage t % STAGES; its full/empty phases there have parity (t / STAGES) & 1.
        if constexpr (PRODUCER_WARP) {
            if (threadIdx.x >= CONSUMERS) {
                // The producer warp: one lane streams every tile, each as soon as its stage is free
                // (tile t >= STAGES reuses the stage of tile t - STAGES: wait for that tile's empty
                // phase, parity ((t / STAGES) - 1) & 1). It never waits for a slow consumer warp
                // unless the ring is full, and no consumer waits for it to finish a tile.
                if (producer) {
                    int stage = 0;
                    unsigned phase = 0;
                    for (int t = 0; t < num_tiles; ++t) {
                        if (t >= STAGES) async::mbarrier_wait(empty_bar(stage), phase ^ 1u);
                        issue(t, stage);
                        if (++stage == STAGES) {
                            stage = 0;
                            phase ^= 1u;
                        }
                    }
                }
                __syncwarp();  // reconverge before the wrapper's __syncthreads (batched problems)
                return;
            }
        } else {
            if (producer) {
                for (int t = 0; t < STAGES && t < num_tiles; ++t) issue(t, t);
            }
        }

        const Core core;
        float acc[Core::THREAD_M][Core::THREAD_N];
#pragma unroll
        for (int i = 0; i < Core::THREAD_M; ++i)
#pragma unroll
            for (int j = 0; j < Core::THREAD_N; ++j) acc[i][j] = 0.0f;

        const bool warp_leader = threadIdx.x % 32 == 0;
        int stage = 0;
        unsigned phase = 0;
        int prev_stage = STAGES - 1;
        unsigned prev_phase = 1;  // (t-1) / STAGES parity as seen from t = 0, never used there
        for (int t = 0; t < num_tiles; ++t) {
            if constexpr (!PRODUCER_WARP) {
                // Thread 0 refills the stage of tile t-1 with tile t-1+STAGES once every warp has
                // read it. Its own warp has just read it, so it waits only for slower warps.
                if (producer && t > 0 && t - 1 + STAGES < num_tiles) {
                    async::mbarrier_wait(empty_bar(prev_stage), prev_phase);
                    issue(t - 1 + STAGES, prev_stage);
                }
            }
            // Optional: keep the consumer warps in step (as s10's __syncthreads does); barrier 1,
            // consumer threads only, so the producer warp never takes part.
            if constexpr (CONSUMER_SYNC_) async::named_barrier_sync(1, CONSUMERS);
            async::mbarrier_wait(full_bar(stage), phase);
            core.multiply(acc, a_tiles + stage * (A_STAGE_BYTES / 4), b_tiles + stage * (B_STAGE_BYTES / 4));
            // Release the stage: one arrival per warp, after all its lanes' reads (__syncwarp orders them).
            __syncwarp();
            if (warp_leader) async::mbarrier_arrive(empty_bar(stage));
            prev_stage = stage;
            prev_phase = phase;
            if (++stage == STAGES) {
                stage = 0;
                phase ^= 1u;
            }
        }
        core.store(args, row0, col0, acc);
    }
};

}  // namespace gemmlab
