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
// Precision: tf32 (inputs keep 10 mantissa bits: the TMA copy rounds them, tma_tf32=1), FP32
// accumulation. Edges: TMA zero-fills, the epilogue is predicated.
//
// S12WgmmaTf32Rs, the same step for a row-major (N-major) B without a transposing pre-pass: the
// tensor cores compute the transposed tile D^T = B^T A^T, with B^T as wgmma's A operand taken from
// registers (the RS form, which has no layout restriction) and A, K-major, as its B operand.
#pragma once
#include "common.cuh"
#include "ptx/mbarrier.cuh"
#include "ptx/sync.cuh"
#include "ptx/tma.cuh"
#include "ptx/wgmma.cuh"
#include "mma/wgmma_core.cuh"
#include "epilogue/wgmma_store.cuh"
#include "copy/split_tf32.cuh"

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


// D^T tile = B^T (registers) x A^T (shared, K-major). The block covers BLOCK_M rows of D (the
// wgmma N) and BLOCK_N columns (64 per consumer warpgroup, the wgmma M).
//   - B arrives as its row-major [k][n] tile: BLOCK_N/32 TMA boxes of {32 n, 32 k}, 128-byte
//     swizzled (16-byte chunk index XOR k % 8);
//   - the A fragment of wgmma (warp w, lane l: rows 16w + l/4 and +8, k = l%4 and +4) is mapped to
//     n = 16w + 2(l/4) and +1, so each thread's two rows are adjacent: one 8-byte load per k row,
//     conflict-free under the swizzle; the epilogue undoes the mapping;
//   - the words are rounded to tf32 in registers (cvt.rna), as the TMA rounds A;
//   - each tile's wgmma group is waited for before its registers are reused (the two consumer
//     warpgroups take turns on the tensor cores meanwhile).
template <int BLOCK_M_, int BLOCK_N_, int BLOCK_K_, int STAGES_, int A_ORDER_>
struct S12WgmmaTf32Rs {
    static constexpr int BLOCK_M = BLOCK_M_, BLOCK_N = BLOCK_N_, BLOCK_K = BLOCK_K_, STAGES = STAGES_;
    using Core = WgmmaCoreTf32<BLOCK_M, BLOCK_K>;  // the wgmma N is the block's M
    static_assert(BLOCK_N % 64 == 0 && BLOCK_N >= 64 && BLOCK_N <= 256, "block_n: 64..256, one consumer warpgroup per 64 columns");
    static_assert(BLOCK_M <= 256, "a TMA box is at most 256 rows");
    static_assert(STAGES >= 2 && STAGES <= 8, "stages must be 2..8");
    static constexpr int CONSUMER_WGS = BLOCK_N / 64;
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
    static_assert(Core::ACC + 56 <= CONSUMER_REGS, "accumulators (block_m/2) + 56 must fit a consumer's registers");

    static constexpr int A_STAGE_BYTES = BLOCK_M * BLOCK_K * 4;  // [m][k], K-major, swizzled
    static constexpr int B_BOX_BYTES = 32 * BLOCK_K * 4;         // {32 n, 32 k}: 32 rows of 128 bytes
    static constexpr int B_STAGE_BYTES = BLOCK_N / 32 * B_BOX_BYTES;
    static_assert(A_STAGE_BYTES % 1024 == 0, "tiles are whole 8-row atoms");
    static constexpr unsigned TX_BYTES = A_STAGE_BYTES + B_STAGE_BYTES;
    static constexpr int SMEM_BYTES = 1024 + STAGES * (A_STAGE_BYTES + B_STAGE_BYTES) + 2 * STAGES * 8;

    // The 8 bytes (n, n+1) at row k of the stage's B tile (n even).
    static __device__ __forceinline__ uint2 load_pair(unsigned b_stage, int k, int n) {
        const unsigned box = b_stage + (n / 32) * B_BOX_BYTES;
        const unsigned chunk = static_cast<unsigned>(((n % 32) / 4) ^ (k % 8));
        const unsigned addr = box + k * 128 + chunk * 16 + (n % 4) * 4;
        uint2 v;
        asm volatile("ld.shared.v2.u32 {%0, %1}, [%2];\n" : "=r"(v.x), "=r"(v.y) : "r"(addr));
        return v;
    }
    static __device__ __forceinline__ unsigned tf32_bits(unsigned word) {
        return __float_as_uint(tf32_round(__uint_as_float(word)));
    }

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
                async::mbarrier_init(full_bar(s), 1);
                async::mbarrier_init(empty_bar(s), CONSUMER_WARPS);
            }
            async::fence_barrier_init();
        }
        __syncthreads();

        const int num_tiles = static_cast<int>((args.K + BLOCK_K - 1) / BLOCK_K);

        if (threadIdx.x >= CONSUMERS) {
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
                    async::mbarrier_arrive_expect_tx(full_bar(stage), TX_BYTES);
                    async::tma_load_3d(a_stages + stage * A_STAGE_BYTES, &a_map, full_bar(stage), k0, m0, a_batch);
#pragma unroll
                    for (int j = 0; j < BLOCK_N / 32; ++j)  // B row-major: coordinates (n, k)
                        async::tma_load_3d(b_stages + stage * B_STAGE_BYTES + j * B_BOX_BYTES, &b_map, full_bar(stage),
                                           n0 + 32 * j, k0, b_batch);
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

        if constexpr (REBALANCE) async::setmaxnreg_inc<CONSUMER_REGS>();
        const int wg = threadIdx.x / 128, warp = (threadIdx.x % 128) / 32, lane = threadIdx.x % 32;
        const int n_pair = 64 * wg + 16 * warp + 2 * (lane / 4);  // this thread's two columns of the block
        const int k_lane = lane % 4;
        float acc[Core::ACC];
#pragma unroll
        for (int i = 0; i < Core::ACC; ++i) acc[i] = 0.0f;
        wgmma::fence_operands(acc);

        const bool warp_leader = lane == 0;
        int stage = 0;
        unsigned phase = 0;
        for (int t = 0; t < num_tiles; ++t) {
            async::mbarrier_wait(full_bar(stage), phase);
            const unsigned b_stage = b_stages + stage * B_STAGE_BYTES;
            unsigned frag[Core::K_STEPS][4];
#pragma unroll
            for (int s = 0; s < Core::K_STEPS; ++s) {
                const uint2 lo_k = load_pair(b_stage, 8 * s + k_lane, n_pair);      // k = l%4
                const uint2 hi_k = load_pair(b_stage, 8 * s + k_lane + 4, n_pair);  // k = l%4 + 4
                // (row l/4, k), (row l/4 + 8, k), (row l/4, k + 4), (row l/4 + 8, k + 4); rows l/4
                // and l/4 + 8 are columns n_pair and n_pair + 1.
                if constexpr (A_ORDER_ == 0) {
                    frag[s][0] = tf32_bits(lo_k.x); frag[s][1] = tf32_bits(lo_k.y);
                    frag[s][2] = tf32_bits(hi_k.x); frag[s][3] = tf32_bits(hi_k.y);
                } else {
                    frag[s][0] = tf32_bits(lo_k.x); frag[s][1] = tf32_bits(hi_k.x);
                    frag[s][2] = tf32_bits(lo_k.y); frag[s][3] = tf32_bits(hi_k.y);
                }
            }
            wgmma::fence();
            const unsigned long long a_desc = wgmma::desc_k_major_sw128(a_stages + stage * A_STAGE_BYTES);
#pragma unroll
            for (int s = 0; s < Core::K_STEPS; ++s)
                wgmma::mma_tf32_rs<BLOCK_M>(acc, frag[s], a_desc + s * wgmma::DESC_K8_STEP, 1);
            wgmma::commit();
            wgmma::wait<0>();
            wgmma::fence_operands(acc);
            __syncwarp();
            if (warp_leader) async::mbarrier_arrive(empty_bar(stage));
            if (++stage == STAGES) {
                stage = 0;
                phase ^= 1u;
            }
        }
        // Accumulator i: wgmma row 16*warp + l/4 + 8*((i%4)/2) = column n_pair + (i%4)/2 of D,
        // wgmma column 8*(i/4) + 2*(l%4) + i%2 = row of D. Values i and i+2 are adjacent columns.
        // The epilogue's inputs are made opaque here, so the compiler cannot compute its row
        // addresses before the main loop (they would be spilled across it).
        float* d_base;
        int64 first_row, ldd;
        asm volatile("mov.b64 %0, %1;\n" : "=l"(d_base) : "l"(args.D));
        asm volatile("mov.b64 %0, %1;\n" : "=l"(first_row) : "l"(row0 + 2 * k_lane));
        asm volatile("mov.b64 %0, %1;\n" : "=l"(ldd) : "l"(args.ldd));
        const bool pairs = (ldd % 2 == 0) && (reinterpret_cast<unsigned long long>(d_base) % 8 == 0);
        const int64 col = col0 + n_pair;
        float* row_ptr = d_base + first_row * ldd + col;
        int64 row = first_row;
#pragma unroll
        for (int i = 0; i < Core::ACC; i += 4, row_ptr += 8 * ldd, row += 8) {
#pragma unroll
            for (int j = 0; j < 2; ++j) {  // value i + j and i + j + 2
                if (row + j >= args.M) continue;
                float* dst = row_ptr + j * ldd;
                if (pairs && col + 1 < args.N) {
                    float2 out = make_float2(args.alpha * acc[i + j], args.alpha * acc[i + j + 2]);
                    if (args.beta != 0.0f) {
                        const float2 old = *reinterpret_cast<const float2*>(dst);
                        out.x += args.beta * old.x;
                        out.y += args.beta * old.y;
                    }
                    *reinterpret_cast<float2*>(dst) = out;
                } else {
                    if (col < args.N) store_output(args, row + j, col, acc[i + j]);
                    if (col + 1 < args.N) store_output(args, row + j, col + 1, acc[i + j + 2]);
                }
            }
        }
        if constexpr (REBALANCE) {
            async::named_barrier_sync(1, CONSUMERS);
            async::setmaxnreg_dec<LAUNCH_REGS>();
        }
    }
};

}  // namespace gemmlab
