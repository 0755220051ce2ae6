// s01 naive (notes 000 §3): one thread computes one element of D, reading a whole row of A
// and a whole column of B straight from global memory. Threads of a warp take consecutive
// columns, so the B reads and the D writes are coalesced along N; each A element a warp reads
// is the same address (a broadcast). Arithmetic intensity is 2 FLOP per 8 bytes loaded: this is
// the memory-bound floor every later stage climbs from.
//
// What decides its speed is latency, not arithmetic: every k needs a new B row, which comes from
// L2 or DRAM, and a thread has nothing to do until its loads return. So the K loop is unrolled
// UNROLL times with all 2*UNROLL loads issued before the first multiply-add (UNROLL requests in
// flight per thread instead of a few), and the block is BLOCK_M warps tall so that the BLOCK_M
// warps of a block share each B line in L1 (one L2 request per line per block).
#pragma once
#include "common.cuh"

namespace gemmlab {

template <int BLOCK_M_, int BLOCK_N_, int UNROLL_>
struct S01Naive {
    static constexpr int BLOCK_M = BLOCK_M_;
    static constexpr int BLOCK_N = BLOCK_N_;
    static constexpr int UNROLL = UNROLL_;
    static constexpr int THREADS = BLOCK_M * BLOCK_N;
    static constexpr int PARTS = UNROLL < 4 ? UNROLL : 4;  // partial sums
    static_assert(BLOCK_N % 32 == 0, "block_n must be a multiple of the warp size (coalescing along N)");
    static_assert(THREADS >= 32 && THREADS <= 1024, "block_m * block_n must be 32..1024 threads");
    static_assert(UNROLL >= 1 && UNROLL <= 32, "unroll must be 1..32");

    static __device__ __forceinline__ void run(const GemmArgs& args, int64 row0, int64 col0, unsigned char*) {
        const int64 row = row0 + threadIdx.x / BLOCK_N;
        const int64 col = col0 + threadIdx.x % BLOCK_N;
        if (row >= args.M || col >= args.N) return;
        const float* a = args.A + row * args.a_row_stride;  // A[row][k], advancing along k
        const float* b = args.B + col * args.b_col_stride;  // B[k][col], advancing along k
        const int64 a_step = args.a_col_stride, b_step = args.b_row_stride;
        // PARTS independent partial sums (k % PARTS) so that the multiply-adds of one trip are
        // PARTS short chains instead of one UNROLL long: the next trip's loads issue sooner.
        float acc[PARTS];
#pragma unroll
        for (int p = 0; p < PARTS; ++p) acc[p] = 0.0f;
        int64 k = 0;
#pragma unroll 1
        for (; k + UNROLL <= args.K; k += UNROLL) {
            // All loads of the UNROLL k first (independent, all in flight together), then the
            // multiply-adds.
            float a_value[UNROLL], b_value[UNROLL];
#pragma unroll
            for (int u = 0; u < UNROLL; ++u) {
                a_value[u] = a[u * a_step];
                b_value[u] = b[u * b_step];
            }
#pragma unroll
            for (int u = 0; u < UNROLL; ++u) acc[u % PARTS] += a_value[u] * b_value[u];
            a += UNROLL * a_step;
            b += UNROLL * b_step;
        }
#pragma unroll 1
        for (; k < args.K; ++k, a += a_step, b += b_step) acc[0] += *a * *b;  // the last K % UNROLL
#pragma unroll
        for (int p = 1; p < PARTS; ++p) acc[0] += acc[p];
        store_output(args, row, col, acc[0]);
    }
};

}  // namespace gemmlab
