// tests/host/splitk_last_host.cpp — split-K's last slice (epilogue/splitk_last.cuh
// last_slice_reduce, with the epilogue of epilogue/splitk_store.cuh), compiled from the kernels'
// own headers and run on the CPU: each CUDA thread a std::thread, __syncthreads the block's
// barrier, the slices of a tile as blocks one after another in a shuffled order (whichever comes
// last must add them), under the address and undefined-behaviour sanitizers (tests/test_kernels_host.py).
//
// Slice 0 of each tile holds value(row, col) = 1000 row + col in the workspace, slice s > 0 holds
// s, so every output must come out alpha (value + S (S - 1) / 2) + beta c: exact in floats. The
// output is row-major (16-byte stores where aligned) or column-major (scalar stores), its addend
// the output itself read in place (an output written twice reads its own first write back and
// comes out wrong) or a separate broadcast row; outputs outside the problem must keep their
// poison, every counter must be 0 again, and the workspace is an allocation of exactly its
// extent (a 16-byte read past a row's padding fails the address sanitizer).
#include "cuda_host.h"

#include <algorithm>
#include <cstdio>
#include <random>
#include <thread>
#include <vector>

#include "epilogue/splitk_last.cuh"

static int failures = 0, cases = 0;

static float value(long r, long c) { return float(1000 * r + c); }
static float addend(long r, long c) { return float((r * 7 + c * 3) % 11 - 5); }
static constexpr float POISON = -12345.0f;

template <int BM, int BN>
static void tile_case(int M, int N, int S, float alpha, float beta, bool column_major, bool in_place, int threads) {
    ++cases;
    const long ws_ld = (N + 3) / 4 * 4, ws_ss = (long(M) * ws_ld + 3) / 4 * 4;
    std::vector<float4> ws_store(size_t(S) * ws_ss / 4);  // 16-byte aligned, exactly S slots
    float* ws = reinterpret_cast<float*>(ws_store.data());
    std::fill(ws, ws + size_t(S) * ws_ss, POISON);
    // D with one column (row-major) or one row (column-major) of padding, full of the addend
    const long d_rs = column_major ? 1 : N + 1, d_cs = column_major ? M + 1 : 1;
    const size_t d_size = column_major ? size_t(N) * (M + 1) : size_t(M) * (N + 1);
    std::vector<float> d(d_size, POISON);
    for (long r = 0; r < M; ++r)
        for (long c = 0; c < N; ++c) d[r * d_rs + c * d_cs] = addend(r, c);
    std::vector<float> row(N);  // a separate addend: one row, broadcast (row stride 0)
    for (long c = 0; c < N; ++c) row[c] = addend(7, c);
    const gemmlab::SplitOut out{d.data(), d_rs, d_cs, alpha, beta, in_place ? d.data() : row.data(),
                                in_place ? d_rs : 0, in_place ? d_cs : 1};
    const long tiles_m = (M + BM - 1) / BM, tiles_n = (N + BN - 1) / BN;
    std::vector<unsigned> counters(tiles_m * tiles_n, 0u);
    std::mt19937 rng(M * 31 + N * 7 + S);
    for (long tm = 0; tm < tiles_m; ++tm)
        for (long tn = 0; tn < tiles_n; ++tn) {
            const long row0 = tm * BM, col0 = tn * BN;
            std::vector<int> order(S);
            for (int s = 0; s < S; ++s) order[s] = s;
            std::shuffle(order.begin(), order.end(), rng);
            for (int s : order) {  // the slice's block: its partial, then the last-slice step
                for (long r = row0; r < std::min<long>(row0 + BM, M); ++r)
                    for (long c = col0; c < std::min<long>(col0 + BN, N); ++c)
                        ws[s * ws_ss + r * ws_ld + c] = s == 0 ? value(r, c) : float(s);
                std::barrier<> bar(threads);
                host_block_barrier = &bar;
                blockDim.x = unsigned(threads);
                std::vector<std::thread> block;
                for (int t = 0; t < threads; ++t)
                    block.emplace_back([&, t] {
                        threadIdx.x = unsigned(t);
                        gemmlab::last_slice_reduce<BM, BN>(ws, ws_ld, ws_ss, S, M, N, row0, col0, out,
                                                           &counters[tm * tiles_n + tn]);
                    });
                for (auto& th : block) th.join();
            }
        }
    int bad = 0;
    for (long r = 0; r < (column_major ? M + 1 : M); ++r)
        for (long c = 0; c < (column_major ? N : N + 1); ++c) {
            const bool inside = r < M && c < N;
            const float c_in = in_place ? addend(r, c) : addend(7, c);
            const float want = inside ? alpha * (value(r, c) + float(S * (S - 1) / 2)) + beta * c_in : POISON;
            const float got = d[r * d_rs + c * d_cs];
            if (got != want && bad++ < 3)
                std::printf("FAIL tile %dx%d M=%d N=%d S=%d beta=%g %s %s: D[%ld][%ld] = %g, want %g\n", BM, BN, M, N, S,
                            beta, column_major ? "column-major" : "row-major", in_place ? "in place" : "row c", r, c,
                            got, want);
        }
    for (unsigned k : counters)
        if (k != 0u && bad++ < 3) std::printf("FAIL tile %dx%d M=%d N=%d S=%d: a counter left at %u\n", BM, BN, M, N, S, k);
    failures += bad != 0;
}

template <int BM, int BN>
static void tile_cases(int threads) {
    const int shapes[][2] = {{BM, BN}, {BM + 1, BN + 3}, {2 * BM - 5, 2 * BN + 4}, {5, 7}, {3 * BM + 2, 33}};
    for (const auto& s : shapes)
        for (int S : {2, 3, 5})
            for (bool column_major : {false, true})
                for (bool in_place : {false, true}) {
                    tile_case<BM, BN>(s[0], s[1], S, 0.5f, 0.0f, column_major, in_place, threads);
                    tile_case<BM, BN>(s[0], s[1], S, 0.5f, 2.0f, column_major, in_place, threads);
                }
}

int main() {
    // fewer threads than the kernels' blocks (the step strides over the tile by blockDim.x): the
    // same code paths, far fewer host threads to start
    tile_cases<64, 64>(32);
    tile_cases<64, 128>(32);
    tile_cases<128, 256>(64);
    tile_case<64, 64>(70, 70, 16, 1.0f, 1.0f, false, true, 128);  // many slices, a whole block
    std::printf("%d of %d cases wrong\n", failures, cases);
    return failures != 0;
}
