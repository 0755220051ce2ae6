// tests/host/epilogue_host.cpp — the SIMT epilogues of s10/s11 (mma/warp_tile.cuh
// WarpTileCore::store, epilogue/cluster_reduce.cuh reduce_store) and s10's moved edge blocks
// (common.cuh edge_origin / skipped), compiled from the kernels' own headers and run on the CPU
// thread by thread, block by block (tests/test_kernels_host.py builds it with the address and
// undefined-behaviour sanitizers: a store past the output or a misaligned 16-byte store fails).
//
// Each block stores, for every output its threads hold, a value that names the output (1000 row +
// col, as the block placed it), into D full of known values c0 with D = acc + beta * c0 read in
// place: an output written twice (read back after the first write) or not at all, or at the wrong
// place, comes out wrong; the padding columns of D must stay c0. The blocks are placed as s10
// places them: with SHIFTED_M / SHIFTED_N their origins move inside (edge_origin), as s10 does
// for an operand on 4-byte copies (EDGE_SHIFT).
#include "cuda_host.h"

#include <cstdio>
#include <cstdlib>
#include <vector>

#include "mma/warp_tile.cuh"
#include "epilogue/cluster_reduce.cuh"

using gemmlab::GemmArgs;

static int failures = 0, cases = 0;

static float c0(long r, long c) { return float((r * 7 + c * 3) % 11 - 5); }
static float value(long r, long c) { return float(1000 * r + c); }

struct Output {  // D: M rows of ldd floats, its base `off` floats past a 16-byte boundary
    std::vector<float4> storage;
    float* d;
    Output(int M, int ldd, int off) : storage((size_t(M) * ldd + off + 3) / 4 + 1) {
        d = reinterpret_cast<float*>(storage.data()) + off;
        for (int r = 0; r < M; ++r)
            for (int c = 0; c < ldd; ++c) d[size_t(r) * ldd + c] = c0(r, c);
    }
};

// D = acc + beta * D: the output is its own addend, read in place.
static GemmArgs in_place(const Output& out, int M, int N, int ldd, float beta) {
    GemmArgs args{};
    args.D = out.d;
    args.C = out.d;
    args.M = M;
    args.N = N;
    args.ldd = ldd;
    args.alpha = 1.0f;
    args.beta = beta;
    return args;
}

static void check(const char* what, const Output& out, int M, int N, int ldd, float beta, float add,
                  int bm, int bn, bool sm, bool sn) {
    ++cases;
    int bad = 0;
    for (int r = 0; r < M; ++r)
        for (int c = 0; c < ldd; ++c) {
            const float want = c < N ? value(r, c) + add + beta * c0(r, c) : c0(r, c);
            const float got = out.d[size_t(r) * ldd + c];
            if (got != want && bad++ < 3)
                std::printf("FAIL %s tile %dx%d shift %d%d M=%d N=%d ldd=%d beta=%g: D[%d][%d] = %g, want %g\n", what, bm,
                            bn, sm, sn, M, N, ldd, beta, r, c, got, want);
        }
    failures += bad != 0;
}

template <class Core, bool SM, bool SN>
static void store_case(int M, int N, int ldd, int off, float beta) {
    constexpr int BM = Core::WARPS_M * (Core::THREAD_M * Core::LANES_M), BN = Core::WARPS_N * (Core::THREAD_N * Core::LANES_N);
    Output out(M, ldd, off);
    const GemmArgs args = in_place(out, M, N, ldd, beta);
    for (long row0 = 0; row0 < M; row0 += BM)
        for (long col0 = 0; col0 < N; col0 += BN) {
            const long rs = SM ? gemmlab::edge_origin<BM>(row0, M) : row0;
            const long cs = SN ? gemmlab::edge_origin<BN>(col0, N) : col0;
            for (unsigned t = 0; t < unsigned(Core::THREADS); ++t) {
                threadIdx.x = t;
                const Core core;
                float acc[Core::THREAD_M][Core::THREAD_N];
                for (int i = 0; i < Core::THREAD_M; ++i)
                    for (int j = 0; j < Core::THREAD_N; ++j)
                        acc[i][j] = value(rs + core.m_base + Core::row_of(i), cs + core.n_base + Core::col_of(j));
                core.template store<SM, SN>(args, rs, cs, acc);
            }
        }
    check("store", out, M, N, ldd, beta, 0.0f, BM, BN, SM, SN);
}

// ClusterReduce::reduce_store over SLICES CTAs whose partial tiles (rows of BN + 8 floats) hold
// value(row, col) in slice 0 and s in slice s: the sum adds SLICES (SLICES - 1) / 2.
template <int BM, int BN, int SLICES, int THREADS, bool SM, bool SN>
static void reduce_case(int M, int N, int ldd, int off, float beta) {
    using Reduce = gemmlab::ClusterReduce<BM, BN, SLICES, THREADS>;
    Output out(M, ldd, off);
    const GemmArgs args = in_place(out, M, N, ldd, beta);
    std::vector<std::vector<float4>> smem(SLICES, std::vector<float4>(Reduce::BYTES / 16 + 1));
    for (long row0 = 0; row0 < M; row0 += BM)
        for (long col0 = 0; col0 < N; col0 += BN) {
            const long rs = SM ? gemmlab::edge_origin<BM>(row0, M) : row0;
            const long cs = SN ? gemmlab::edge_origin<BN>(col0, N) : col0;
            for (int s = 0; s < SLICES; ++s) {
                float* part = reinterpret_cast<float*>(smem[s].data());
                for (int r = 0; r < BM; ++r)
                    for (int c = 0; c < BN; ++c) part[r * Reduce::LD + c] = s == 0 ? value(rs + r, cs + c) : float(s);
                gemmlab::async::host_smem[s] = reinterpret_cast<unsigned char*>(part);
            }
            for (int rank = 0; rank < SLICES; ++rank) {
                gemmlab::async::host_rank = rank;
                for (int t = 0; t < THREADS; ++t) Reduce::template reduce_store<SM, SN>(args, rs, cs, 0u, t);
            }
        }
    check("cluster reduce", out, M, N, ldd, beta, float(SLICES * (SLICES - 1) / 2), BM, BN, SM, SN);
}

// The shapes: partial last tiles in both dimensions (odd N: scalar stores; N a multiple of 4 with
// ldd = N: 16-byte stores from a moved column origin), smaller than a tile, whole tiles, D's base
// misaligned, beta 0 and 2.
template <int BM, int BN>
static std::vector<std::vector<int>> shapes() {
    return {{333, 555, 555, 0}, {333, 556, 556, 0}, {BM + 1, BN + 3, BN + 5, 0}, {2 * BM + 5, 2 * BN + 4, 2 * BN + 4, 0},
            {5, 7, 9, 0}, {2 * BM, 2 * BN, 2 * BN, 0}, {BM - 3, 3 * BN + 8, 3 * BN + 8, 1}, {3 * BM + 7, 77, 80, 0}};
}

template <int BM, int BN, int WM, int WN, bool A_K_MAJOR, bool A_SWIZZLE, bool B_N_MAJOR>
static void tile_cases() {
    using Core = gemmlab::WarpTileCore<BM, BN, 32, WM, WN, 1, A_SWIZZLE, A_K_MAJOR, B_N_MAJOR>;
    for (const auto& s : shapes<BM, BN>())
        for (float beta : {0.0f, 2.0f}) {
            store_case<Core, false, false>(s[0], s[1], s[2], s[3], beta);
            store_case<Core, true, false>(s[0], s[1], s[2], s[3], beta);
            store_case<Core, false, true>(s[0], s[1], s[2], s[3], beta);
            store_case<Core, true, true>(s[0], s[1], s[2], s[3], beta);
        }
}

template <int BM, int BN, int THREADS>
static void reduce_cases() {
    for (const auto& s : shapes<BM, BN>())
        for (float beta : {0.0f, 2.0f}) {
            reduce_case<BM, BN, 2, THREADS, false, false>(s[0], s[1], s[2], s[3], beta);
            reduce_case<BM, BN, 2, THREADS, true, true>(s[0], s[1], s[2], s[3], beta);
            reduce_case<BM, BN, 3, THREADS, true, false>(s[0], s[1], s[2], s[3], beta);
            reduce_case<BM, BN, 4, THREADS, false, true>(s[0], s[1], s[2], s[3], beta);
        }
}

int main() {
    // the tiles of s10's stand-ins (B N-major: columns in fours; K-major: single columns; A K-major
    // swizzled: rows 4 apart; else groups of 4 rows)
    tile_cases<64, 128, 32, 64, true, true, true>();
    tile_cases<64, 128, 32, 64, false, false, false>();
    tile_cases<64, 64, 32, 32, true, false, true>();
    tile_cases<64, 64, 32, 32, true, true, false>();
    tile_cases<32, 64, 16, 32, false, false, true>();
    tile_cases<128, 32, 32, 32, true, false, false>();
    tile_cases<128, 64, 32, 32, false, false, true>();
    tile_cases<128, 128, 64, 64, true, false, true>();
    tile_cases<128, 256, 64, 64, false, false, false>();
    reduce_cases<64, 64, 128>();
    reduce_cases<128, 64, 256>();
    reduce_cases<128, 256, 256>();
    std::printf("%d of %d cases wrong\n", failures, cases);
    return failures != 0;
}
