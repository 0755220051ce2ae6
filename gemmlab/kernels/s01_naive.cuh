// s01 naive (notes 000 §3): one thread computes one element of D, reading a whole row of A
// and a whole column of B straight from global memory. Threads of a warp take consecutive
// columns, so the B reads and the D writes are coalesced along N; each A element a warp reads
// is the same address (a broadcast). Arithmetic intensity is 2 FLOP per 8 bytes loaded: this is
// the memory-bound floor every later stage climbs from.
#pragma once
#include "common.cuh"

namespace gemmlab {

template <int BLOCK_M_, int BLOCK_N_>
struct S01Naive {
    static constexpr int BLOCK_M = BLOCK_M_;
    static constexpr int BLOCK_N = BLOCK_N_;
    static constexpr int THREADS = BLOCK_M * BLOCK_N;
    static_assert(BLOCK_N % 32 == 0, "block_n must be a multiple of the warp size (coalescing along N)");
    static_assert(THREADS >= 32 && THREADS <= 1024, "block_m * block_n must be 32..1024 threads");

    static __device__ __forceinline__ void run(const GemmArgs& args, int64 row0, int64 col0, unsigned char*) {
        const int64 row = row0 + threadIdx.x / BLOCK_N;
        const int64 col = col0 + threadIdx.x % BLOCK_N;
        if (row >= args.M || col >= args.N) return;
        const float* a = args.A + row * args.a_row_stride;
        const float* b = args.B + col * args.b_col_stride;
        float acc = 0.0f;
        for (int64 k = 0; k < args.K; ++k) {
            acc += a[k * args.a_col_stride] * b[k * args.b_row_stride];
        }
        store_output(args, row, col, acc);
    }
};

}  // namespace gemmlab
