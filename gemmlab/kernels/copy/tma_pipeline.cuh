// gemmlab/kernels/copy/tma_pipeline.cuh — the warp-specialized TMA pipeline that s12 and s13 share:
// consumer warpgroups 0..C-1 compute, the last warpgroup produces (one thread issues every copy),
// STAGES shared-memory stages each with a "full" mbarrier (the producer's expect_tx; the copies
// complete the bytes) and an "empty" mbarrier (one arrival per consumer warp once the stage has
// been read), and setmaxnreg moving registers from the producer warpgroup to the consumers.
#pragma once
#include "ptx/mbarrier.cuh"
#include "ptx/sync.cuh"
#include "ptx/tma.cuh"

namespace gemmlab {

// Tile t of the K loop lives in stage t % STAGES; its full/empty phases have parity (t / STAGES) & 1.
template <int STAGES>
struct StageRing {
    int stage = 0;
    unsigned phase = 0;
    __device__ __forceinline__ void advance() {
        if (++stage == STAGES) {
            stage = 0;
            phase ^= 1u;
        }
    }
};

template <int CONSUMERS_, int STAGES_>
struct TmaPipeline {
    static constexpr int STAGES = STAGES_;
    static constexpr int CONSUMERS = CONSUMERS_;
    static constexpr int CONSUMER_WARPS = CONSUMERS / 32;
    static constexpr int THREADS = CONSUMERS + 128;  // + the producer warpgroup
    static constexpr int PRODUCER_THREAD = CONSUMERS;
    static_assert(CONSUMERS % 128 == 0 && THREADS <= 1024, "whole consumer warpgroups, at most 1024 threads");
    // Registers: the launch cap (launch bounds THREADS, 1) is what the block's 64K give each
    // thread, in multiples of 8; the producer drops to PRODUCER_REGS and the consumers share the
    // rest (at most 240). The rest is of the block's own allocation, THREADS x LAUNCH_REGS, not of
    // the SM's 64K: with 640 threads (96 each, 61440 in all) consumers asking for 112 waited in
    // setmaxnreg.inc forever (H200, s12 block_m=256: hung); they get 104.
    static constexpr int LAUNCH_REGS_RAW = 65536 / THREADS / 8 * 8;
    static constexpr int LAUNCH_REGS = LAUNCH_REGS_RAW > 255 ? 248 : LAUNCH_REGS_RAW;
    static constexpr int PRODUCER_REGS = 40;
    static constexpr int POOL_REGS = (THREADS * LAUNCH_REGS - 128 * PRODUCER_REGS) / CONSUMERS / 8 * 8;
    static_assert(CONSUMERS * (POOL_REGS < 240 ? POOL_REGS : 240) + 128 * PRODUCER_REGS <= THREADS * LAUNCH_REGS,
                  "setmaxnreg: the warpgroups' registers must fit in the block's launch allocation");
    static constexpr int CONSUMER_REGS = POOL_REGS < 240 ? POOL_REGS : 240;
    static constexpr bool REBALANCE = CONSUMER_REGS > LAUNCH_REGS;
    static_assert(STAGES >= 2 && STAGES <= 8, "stages must be 2..8");

    unsigned bars;  // 2 * STAGES mbarriers in shared memory: full[0..STAGES), empty[0..STAGES)

    __device__ __forceinline__ unsigned full(int s) const { return bars + 8u * s; }
    __device__ __forceinline__ unsigned empty(int s) const { return bars + 8u * (STAGES + s); }

    // Every thread; the producer thread prefetches the tensor maps and initialises the barriers.
    template <class... Maps>
    __device__ __forceinline__ explicit TmaPipeline(unsigned bars_, const Maps*... maps) : bars(bars_) {
        if (threadIdx.x == PRODUCER_THREAD) {
            (async::prefetch_descriptor(maps), ...);
#pragma unroll
            for (int s = 0; s < STAGES; ++s) {
                async::mbarrier_init(full(s), 1);                // the producer's expect_tx
                async::mbarrier_init(empty(s), CONSUMER_WARPS);  // lane 0 of each consumer warp
            }
            async::fence_barrier_init();
        }
        __syncthreads();
    }

    __device__ __forceinline__ static bool is_producer_group() { return threadIdx.x >= CONSUMERS; }
    __device__ __forceinline__ static bool is_producer() { return threadIdx.x == PRODUCER_THREAD; }

    // The producer warpgroup: fewer registers while it streams; back to the launch count at the
    // end (the wrapper's code after run(), its batch loop, is compiled for that count).
    // The order matters: the producer's increase comes after every consumer warp has given its
    // registers back (consumer_exit arrives at barrier 2 after its decrease). A producer with
    // fewer tiles than stages never waits for the consumers, and could otherwise take its
    // registers back before they had raised theirs, leaving their increase waiting.
    __device__ __forceinline__ static void producer_enter() {
        if constexpr (REBALANCE) async::setmaxnreg_dec<PRODUCER_REGS>();
    }
    __device__ __forceinline__ static void producer_exit() {
        __syncwarp();
        if constexpr (REBALANCE) {
            async::named_barrier_sync(2, THREADS);  // the producer warpgroup + every consumer's arrival
            async::setmaxnreg_inc<LAUNCH_REGS>();
        }
    }
    __device__ __forceinline__ static void consumer_enter() {
        if constexpr (REBALANCE) async::setmaxnreg_inc<CONSUMER_REGS>();
    }
    __device__ __forceinline__ static void consumer_exit() {
        if constexpr (REBALANCE) {
            async::named_barrier_sync(1, CONSUMERS);
            async::setmaxnreg_dec<LAUNCH_REGS>();
            async::named_barrier_arrive(2, THREADS);  // the producer may take its registers back now
        }
    }

    // Producer, before filling tile t: its stage must have been released by the consumers of
    // tile t - STAGES (whose empty phase has parity ring.phase ^ 1).
    __device__ __forceinline__ void wait_free(int t, const StageRing<STAGES>& ring, unsigned tx_bytes) const {
        if (t >= STAGES) async::mbarrier_wait(empty(ring.stage), ring.phase ^ 1u);
        async::mbarrier_arrive_expect_tx(full(ring.stage), tx_bytes);
    }
    // The whole producer warpgroup's part: fewer registers, then one thread fills tile after tile
    // (k0 = k_begin + t * block_k) as the consumers free the stages, ``load(stage, k0, full
    // barrier, a_batch, b_batch)`` issuing that tile's TMA boxes (tx_bytes in all); then the
    // registers back. a_batch / b_batch: blockIdx.z for a batched operand (batch_mask bit 0 / 1),
    // else 0 (broadcast).
    template <int BLOCK_K, class Load>
    __device__ __forceinline__ void produce(int num_tiles, int64 k_begin, int batch_mask, unsigned tx_bytes,
                                            Load&& load) const {
        producer_enter();
        if (is_producer()) {
            const int a_batch = (batch_mask & 1) ? static_cast<int>(blockIdx.z) : 0;
            const int b_batch = (batch_mask & 2) ? static_cast<int>(blockIdx.z) : 0;
            StageRing<STAGES> ring;
#pragma unroll 1
            for (int t = 0; t < num_tiles; ++t, ring.advance()) {
                wait_free(t, ring, tx_bytes);
                load(ring.stage, static_cast<int>(k_begin) + t * BLOCK_K, full(ring.stage), a_batch, b_batch);
            }
        }
        producer_exit();
    }

    // Consumer: the copies of the ring's current stage have landed.
    __device__ __forceinline__ void wait_full(const StageRing<STAGES>& ring) const {
        async::mbarrier_wait(full(ring.stage), ring.phase);
    }
    // Consumer: this warp has finished reading stage s (one arrival per warp, after all its lanes).
    __device__ __forceinline__ void release(int s) const {
        __syncwarp();
        if (threadIdx.x % 32 == 0) async::mbarrier_arrive(empty(s));
    }
};

}  // namespace gemmlab
