// s11 tma (notes 000 §10.5): s10's warp-tiled SIMT FFMA core fed by Hopper's Tensor Memory
// Accelerator instead of cp.async. What it adds over s10:
//   - one thread issues two cp.async.bulk.tensor copies per K tile (one box of A, one of B); no
//     consumer thread spends an issue slot on addresses, predicates or loads;
//   - the M/N/K edges are zero-filled by the TMA unit (the boxes may hang off the matrix);
//   - each stage has a "full" mbarrier (the producer's expect_tx; the copies complete the bytes)
//     and an "empty" mbarrier (lane 0 of every consumer warp arrives when its warp has read the
//     stage), so the producer never overwrites a stage still being read;
//   - PRODUCER_WARP (warp specialization): the producer is a warpgroup of its own after the
//     consumer warps, and setmaxnreg moves its registers to the consumers (sm_90a). Without it,
//     thread 0 of warp 0 issues between its own tiles, waiting for the slowest warp each time;
//   - CONSUMER_SYNC: the consumer warps also meet at a named barrier every K tile, which keeps
//     them in step as s10's __syncthreads does (mbarriers alone let them drift stages-1 tiles apart);
//   - K-major A and B land in As[m][k] / Bs[n][k] with the TMA SWIZZLE_{32,64,128}B pattern
//     that WarpTileCore reads conflict-free; the [k][x] layouts need none (see s10_cp_async.cuh).
//   - B_TRANSPOSE (B K-major only): every consumer warp turns its columns of the stage's Bs[n][k]
//     into a [k][n] tile of its own (copy/smem_transpose.cuh) and the core reads that as it reads
//     an N-major B, whose fragments keep clear of register-bank conflicts; the warps of one tile
//     column each make their own copy, so no barrier joins warps (a __syncwarp orders the lanes).
// The tensor maps are built on the host (stages/tensor_map.py) and passed as
// `const __grid_constant__` parameters. They are 3-D (inner, outer, batch); batch_mask bit 0/1
// says whether A/B have a batch dimension (else every batch reads batch 0: broadcast).
// The batch index is blockIdx.z: the host sends problems with more than 65535 batches to s10.
// CLUSTER_K > 1 (split-K in a cluster): the gridDim.y = CLUSTER_K slices of K of a tile are one
// cluster and add their partials through distributed shared memory (epilogue/cluster_reduce.cuh)
// instead of writing them to a workspace for the reduce kernel.
// ``finish`` stores the accumulators (epilogue/stream_k.cuh): StoreTile into D at the tile; under
// stream-K, StreamKStore into D or the segment's partial slot.
// run_tiles runs a block's tiles (epilogue/stream_k.cuh): OneTile, its own (run), or PersistentTiles
// (config persistent: as many blocks as the GPU holds, each running several tiles through one ring
// of stages, the producer issuing a tile's first K tiles while the consumers store the one before).
#pragma once
#include "common.cuh"
#include "ptx/mbarrier.cuh"
#include "ptx/sync.cuh"
#include "ptx/tma.cuh"
#include "mma/warp_tile.cuh"
#include "copy/smem_transpose.cuh"
#include "epilogue/cluster_reduce.cuh"
#include "epilogue/stream_k.cuh"

namespace gemmlab {

template <int BLOCK_M_, int BLOCK_N_, int BLOCK_K_, int WARP_M_, int WARP_N_, int K_UNROLL_, bool A_SWIZZLE_,
          int STAGES_, bool PRODUCER_WARP_, bool CONSUMER_SYNC_, bool A_K_MAJOR_, bool B_N_MAJOR_, int CLUSTER_K_ = 1,
          int FFMA_ROTATE_ = 0, bool B_SCALAR_ = false, int B_TRANSPOSE_ = 0, bool FRAG_PREFETCH_ = false>
struct S11Tma {
    // B_T: a K-major B is transposed in shared memory; with B_TRANSPOSE_ 1 the core then reads B
    // as N-major; 2 (an experiment) makes the copy and reads Bs[n][k] as without it (the copy's cost).
    static constexpr bool B_T = B_TRANSPOSE_ != 0 && !B_N_MAJOR_;
    static constexpr bool B_READ_T = B_TRANSPOSE_ == 1 && !B_N_MAJOR_;
    static_assert(B_TRANSPOSE_ >= 0 && B_TRANSPOSE_ <= 2, "b_transpose: 0, 1 or 2");
    static_assert(!(B_READ_T && B_SCALAR_), "b_transpose and b_scalar: B's fragments are read one way");
    using Core = WarpTileCore<BLOCK_M_, BLOCK_N_, BLOCK_K_, WARP_M_, WARP_N_, K_UNROLL_, A_SWIZZLE_, A_K_MAJOR_,
                              B_N_MAJOR_ || B_READ_T, FFMA_ROTATE_, B_SCALAR_, 0, 0, FRAG_PREFETCH_>;
    using Transpose = WarpTransposeXK<Core, WARP_N_, BLOCK_N_>;
    static constexpr int BLOCK_M = BLOCK_M_, BLOCK_N = BLOCK_N_, BLOCK_K = BLOCK_K_;
    static constexpr int STAGES = STAGES_;
    // Consumer warps 0..CONSUMERS/32-1 compute (WarpTileCore's warp numbering). PRODUCER_WARP: the
    // warps after them only feed the pipeline; one lane of the first issues every copy. They are a
    // whole warpgroup when the consumers are whole warpgroups, so that setmaxnreg can hand the
    // producers' registers to the consumers (a 9th warp alone would cap every thread at 168
    // registers: 3 warps then share one SM sub-partition's 16K registers, and 128 accumulators spill).
    static constexpr bool PRODUCER_WARP = PRODUCER_WARP_;
    static constexpr int CONSUMERS = Core::THREADS;
    static constexpr int CONSUMER_WARPS = CONSUMERS / 32;
    static constexpr int PRODUCER_THREADS = !PRODUCER_WARP ? 0 : CONSUMER_WARPS % 4 == 0 ? 128 : 32;
    static constexpr int THREADS = CONSUMERS + PRODUCER_THREADS;
    static constexpr int PRODUCER_THREAD = PRODUCER_WARP ? CONSUMERS : 0;
    static_assert(THREADS <= 1024, "consumer threads + the producer warps must be at most 1024");
    // Registers (launch bounds THREADS, 1 block/SM): ptxas gives every thread LAUNCH_REGS, what one
    // sub-partition (16K registers) holds for its ceil(warps/4) warps. With a producer warpgroup the
    // producers drop to PRODUCER_REGS and the consumers take the rest of the block's pool, within
    // their sub-partition (setmaxnreg: sm_90a, counts multiples of 8, at most 240 kept here).
    static constexpr int WARPS_PER_SMSP = (THREADS / 32 + 3) / 4;
    static constexpr int LAUNCH_REGS_RAW = 16384 / (32 * WARPS_PER_SMSP) / 8 * 8;
    static constexpr int LAUNCH_REGS = LAUNCH_REGS_RAW > 255 ? 255 : LAUNCH_REGS_RAW;
    static constexpr int PRODUCER_REGS = 24;
    static constexpr int POOL_REGS =  // the block's registers left by the producers, per consumer thread
        (THREADS * LAUNCH_REGS - PRODUCER_THREADS * PRODUCER_REGS) / CONSUMERS / 8 * 8;
    static constexpr int SMSP_REGS =  // a sub-partition: CONSUMER_WARPS/4 consumer warps + 1 producer warp
        (16384 / 32 - PRODUCER_REGS) / (CONSUMER_WARPS >= 4 ? CONSUMER_WARPS / 4 : 1) / 8 * 8;
    static constexpr int CONSUMER_REGS = POOL_REGS < SMSP_REGS ? (POOL_REGS < 240 ? POOL_REGS : 240)
                                                               : (SMSP_REGS < 240 ? SMSP_REGS : 240);
#if defined(__CUDA_ARCH_FEAT_SM90_ALL)
    static constexpr bool SETMAXNREG_OK = true;
#else
    static constexpr bool SETMAXNREG_OK = false;  // plain sm_90 (or another arch): no setmaxnreg
#endif
    static constexpr bool REBALANCE = SETMAXNREG_OK && PRODUCER_THREADS == 128 && CONSUMER_REGS > LAUNCH_REGS;
    static_assert(STAGES >= 2 && STAGES <= 16, "stages must be 2..16");
    static_assert(BLOCK_M <= 256 && BLOCK_N <= 256, "a TMA box is at most 256 elements per dimension");

    // Every stage buffer starts on a 1024-byte boundary (the period of the 128-byte swizzle).
    static constexpr __host__ __device__ int round_1k(int bytes) { return (bytes + 1023) / 1024 * 1024; }
    static constexpr int A_STAGE_BYTES = round_1k(Core::A_TILE_FLOATS * 4);
    static constexpr int B_STAGE_BYTES = round_1k(Core::B_TILE_FLOATS * 4);
    static constexpr unsigned TX_BYTES = (Core::A_TILE_FLOATS + Core::B_TILE_FLOATS) * 4;
    static_assert(TX_BYTES < (1u << 20), "an mbarrier phase counts at most 2^20-1 transaction bytes");
    // B_T: one [k][n] tile of B per row of warps (the warps of a row write disjoint columns of it).
    static constexpr int BT_BYTES = B_T ? Core::WARPS_M * Core::B_TILE_FLOATS * 4 : 0;
    // 1024 bytes of slack to align the dynamic buffer, the stages, B_T's tiles, then 2*STAGES mbarriers.
    static constexpr int SMEM_BYTES = 1024 + STAGES * (A_STAGE_BYTES + B_STAGE_BYTES) + BT_BYTES + 2 * STAGES * 8;
    // Split-K in a cluster: the partial tile reuses the stage buffers.
    static constexpr int CLUSTER_K = CLUSTER_K_;
    using Reduce = ClusterReduce<BLOCK_M, BLOCK_N, CLUSTER_K < 2 ? 2 : CLUSTER_K, CONSUMERS>;
    static_assert(CLUSTER_K == 1 || (CLUSTER_K >= 2 && CLUSTER_K <= 8), "cluster_k: 1 (none) or 2..8 slices");
    static_assert(CLUSTER_K == 1 || Reduce::BYTES <= STAGES * (A_STAGE_BYTES + B_STAGE_BYTES),
                  "cluster_k: the partial tile must fit in the stage buffers");

    // The block's own tile (the data-parallel grid, split-K, a stream-K segment).
    template <class Finish = StoreTile>
    static __device__ __forceinline__ void run(const GemmArgs& args, int64 row0, int64 col0, unsigned char* smem,
                                               const async::TmaDescriptor& a_map, const async::TmaDescriptor& b_map,
                                               int batch_mask, const Finish& finish = Finish{}) {
        run_tiles(OneTile{args, row0, col0}, smem, a_map, b_map, batch_mask, finish);
    }

    // The block's tiles, one after another through one ring of stages (epilogue/stream_k.cuh:
    // OneTile, or PersistentTiles for a grid of as many blocks as the GPU holds at once). With
    // more than one, the producer runs on into the next tile's K tiles as the consumers free the
    // stages, so a tile's first stages are loaded while the consumers store the tile before it.
    template <class Tiles, class Finish = StoreTile>
    static __device__ __forceinline__ void run_tiles(const Tiles& tiles, unsigned char* smem,
                                                     const async::TmaDescriptor& a_map,
                                                     const async::TmaDescriptor& b_map, int batch_mask,
                                                     const Finish& finish = Finish{}) {
        static_assert(Tiles::ONE || CLUSTER_K == 1, "several tiles a block: no split-K cluster");
        const GemmArgs& args = tiles.args();
        const unsigned raw = async::smem_address(smem);
        const unsigned base = (raw + 1023u) & ~1023u;
        unsigned char* aligned = smem + (base - raw);
        const unsigned a_stages = base;
        const unsigned b_stages = base + STAGES * A_STAGE_BYTES;
        const unsigned bars = b_stages + STAGES * B_STAGE_BYTES + BT_BYTES;
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

        const int num_tiles = static_cast<int>((args.K + BLOCK_K - 1) / BLOCK_K);

        // Where output tile u's boxes start: int32 coordinates (the host sends dimensions >= 2^31 to s10).
        struct Corner {
            int m0, n0, a_batch, b_batch;
        };
        auto corner = [&](int u) {
            const TileAt t = tiles.at(u);
            return Corner{static_cast<int>(t.row0), static_cast<int>(t.col0), (batch_mask & 1) ? t.batch : 0,
                          (batch_mask & 2) ? t.batch : 0};
        };
        // Producer: K tile `tile` of the output tile at c -> stage, both boxes completing on the
        // stage's full barrier.
        auto issue = [&](const Corner& c, int tile, int stage) {
            const int m0 = c.m0, n0 = c.n0, a_batch = c.a_batch, b_batch = c.b_batch;
            const int k0 = static_cast<int>(args.k_begin) + tile * BLOCK_K;  // split-K slices start at k_begin
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
                if constexpr (REBALANCE) async::setmaxnreg_dec<PRODUCER_REGS>();
                // One lane streams every K tile of every output tile, each as soon as its stage
                // is free: the g-th K tile it issues, g >= STAGES, reuses the stage of the
                // (g - STAGES)-th, whose empty phase has parity ((g / STAGES) - 1) & 1. It waits
                // for a slow consumer warp only when the ring is full, and no consumer ever waits
                // for it to finish a tile of its own.
                if (producer) {
                    int stage = 0;
                    unsigned phase = 0;
                    for (int u = 0; u < tiles.count(); ++u) {  // OneTile: no loop
                        const Corner c = corner(u);
#pragma unroll 1  // small code: it must fit in PRODUCER_REGS registers
                        for (int t = 0; t < num_tiles; ++t) {
                            // (a wait in the ring's first round passes at once: the phase
                            // before the first has parity 1; skipped for the first tile's)
                            if (u > 0 || t >= STAGES) async::mbarrier_wait(empty_bar(stage), phase ^ 1u);
                            issue(c, t, stage);
                            if (++stage == STAGES) {
                                stage = 0;
                                phase ^= 1u;
                            }
                        }
                    }
                }
                __syncwarp();
                // The consumers' two cluster barriers (cluster_k): every thread of the cluster meets there.
                if constexpr (CLUSTER_K > 1) {
                    async::cluster_sync();
                    async::cluster_sync();
                }
                // Back to the launch count (the wrapper's code after run() is compiled for it); the
                // warpgroup must meet between two setmaxnreg. The increase waits until the consumers
                // have released theirs.
                if constexpr (REBALANCE) {
                    async::named_barrier_sync(2, PRODUCER_THREADS);
                    async::setmaxnreg_inc<LAUNCH_REGS>();
                }
                return;
            }
            if constexpr (REBALANCE) async::setmaxnreg_inc<CONSUMER_REGS>();
        }
        // Thread 0 producing: the first STAGES K tiles now, then one a K tile (below). With several
        // output tiles a cursor walks their K tiles in order (the next one to issue: K tile next_t
        // of output tile next_u, whose boxes start at next_c), so a tile's first stages are issued
        // during the last K tiles of the one before.
        const Corner c0 = corner(0);
        int next_u = 0, next_t = 0;
        Corner next_c = c0;
        auto issue_next = [&](int stage) {
            issue(next_c, next_t, stage);
            if (++next_t == num_tiles) {
                next_t = 0;
                if (++next_u < tiles.count()) next_c = corner(next_u);
            }
        };
        if constexpr (!PRODUCER_WARP) {
            if (producer) {
                if constexpr (Tiles::ONE) {
                    for (int t = 0; t < STAGES && t < num_tiles; ++t) issue(c0, t, t);
                } else {
                    for (int s = 0; s < STAGES && next_u < tiles.count(); ++s) issue_next(s);
                }
            }
        }

        const Core core;
        const bool warp_leader = threadIdx.x % 32 == 0;
        int stage = 0;
        unsigned phase = 0;
        int prev_stage = STAGES - 1;
        unsigned prev_phase = 1;  // (t-1) / STAGES parity as seen from t = 0, never used there
        for (int u = 0; u < tiles.count(); ++u) {  // OneTile: no loop
            float acc[Core::THREAD_M][Core::THREAD_N];
#pragma unroll
            for (int i = 0; i < Core::THREAD_M; ++i)
#pragma unroll
                for (int j = 0; j < Core::THREAD_N; ++j) acc[i][j] = 0.0f;

            for (int t = 0; t < num_tiles; ++t) {
                if constexpr (!PRODUCER_WARP) {
                    // Thread 0 refills the stage of K tile t-1 with K tile t-1+STAGES (counted over
                    // the block's tiles: the cursor) once every warp has read it. Its own warp has
                    // just read it, so it waits only for slower warps.
                    if constexpr (Tiles::ONE) {
                        if (producer && t > 0 && t - 1 + STAGES < num_tiles) {
                            async::mbarrier_wait(empty_bar(prev_stage), prev_phase);
                            issue(c0, t - 1 + STAGES, prev_stage);
                        }
                    } else if (producer && (u > 0 || t > 0) && next_u < tiles.count()) {
                        async::mbarrier_wait(empty_bar(prev_stage), prev_phase);
                        issue_next(prev_stage);
                    }
                }
                // Optional: keep the consumer warps in step (as s10's __syncthreads does); barrier 1,
                // consumer threads only, so the producer warps never take part.
                if constexpr (CONSUMER_SYNC_) async::named_barrier_sync(1, CONSUMERS);
                async::mbarrier_wait(full_bar(stage), phase);
                if constexpr (B_T) {
                    // The warp's own [k][n] tile: its lanes have read the previous one (__syncwarp),
                    // then write this one and see each other's writes (__syncwarp) before the FFMAs.
                    const int warp = threadIdx.x / 32;
                    float* bt = reinterpret_cast<float*>(aligned + STAGES * (A_STAGE_BYTES + B_STAGE_BYTES)) +
                                (warp / Core::WARPS_N) * Core::B_TILE_FLOATS;
                    __syncwarp();
                    Transpose::run(b_tiles + stage * (B_STAGE_BYTES / 4), bt, (warp % Core::WARPS_N) * WARP_N_,
                                   threadIdx.x % 32);
                    __syncwarp();
                    core.multiply(acc, a_tiles + stage * (A_STAGE_BYTES / 4),
                                  B_READ_T ? bt : b_tiles + stage * (B_STAGE_BYTES / 4));
                } else {
                    core.multiply(acc, a_tiles + stage * (A_STAGE_BYTES / 4), b_tiles + stage * (B_STAGE_BYTES / 4));
                }
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
            if constexpr (CLUSTER_K > 1) {
                async::named_barrier_sync(1, CONSUMERS);  // every consumer warp has read its last stage
                // the partial from the first stage buffer on
                const TileAt t = tiles.at(0);
                Reduce::finish(core, acc, const_cast<float*>(a_tiles), a_stages, args, t.row0, t.col0,
                               static_cast<int>(threadIdx.x));
            } else {
                const TileAt t = tiles.at(u);
                finish(core, tiles.args_of(t), t.row0, t.col0, acc);
            }
        }
        if constexpr (REBALANCE) {
            async::named_barrier_sync(1, CONSUMERS);
            async::setmaxnreg_dec<LAUNCH_REGS>();
        }
    }
};

}  // namespace gemmlab
