// tests/host/s10_host.cpp — s10's whole kernel (s10_cp_async.cuh: the cp.async tile copies, the
// warp-tile FFMAs, the epilogue) on 4-byte copies, compiled from the kernels' own headers and run
// on the CPU: each CUDA thread a std::thread, __syncthreads the block's barrier, a copy landing
// when it is issued or (argument "at-wait") at its wait (tests/host/ptx/), the blocks one after another at the origins the generated
// kernel gives them (jit/source.py: tile_m * BLOCK_M, tile_n * BLOCK_N). Operands of small
// integers, so every sum is exact: D = A B + 2 C (C the output itself, read in place) must match
// an integer reference at every output, for each layout, with and without EDGE_SHIFT (the edge
// blocks moved inside, their copies on the interior path). Each operand is its own allocation of
// exactly its extent (the sanitizers then fail a read past it), with rows not 16-byte aligned.
#include "cuda_host.h"

#include <cstdio>
#include <random>
#include <string>
#include <thread>
#include <vector>

#include "s10_cp_async.cuh"

using gemmlab::GemmArgs;

static int failures = 0, cases = 0;

template <class Kernel, bool A_K_MAJOR, bool B_N_MAJOR, bool A_VEC = false, bool B_VEC = false>
static void run_case(const char* name, int M, int N, int K) {
    ++cases;
    std::mt19937 rng(M * 131 + N * 17 + K);
    std::uniform_int_distribution<int> small(-3, 3);
    // A is M x K, B is K x N; leading dimensions one more than the extent (4-byte copies), or the
    // extent rounded up to 4 floats where the operand has 16-byte copies
    auto ld = [](long extent, bool vec) { return vec ? (extent + 3) / 4 * 4 : extent + 1; };
    const long lda = ld(A_K_MAJOR ? K : M, A_VEC), ldb = ld(B_N_MAJOR ? N : K, B_VEC), ldd = N + 2;
    // each operand exactly as long as its last element: rows - 1 whole rows and the last one's extent
    std::vector<float> a(size_t((A_K_MAJOR ? M : K) - 1) * lda + (A_K_MAJOR ? K : M));
    std::vector<float> b(size_t((B_N_MAJOR ? K : N) - 1) * ldb + (B_N_MAJOR ? N : K));
    std::vector<float> d(size_t(M) * ldd);
    for (auto& x : a) x = float(small(rng));
    for (auto& x : b) x = float(small(rng));
    for (auto& x : d) x = float(small(rng));
    const std::vector<float> c = d;
    GemmArgs args{};
    args.A = a.data();
    args.B = b.data();
    args.D = d.data();
    args.C = d.data();
    args.M = M, args.N = N, args.K = K;
    args.a_row_stride = A_K_MAJOR ? lda : 1, args.a_col_stride = A_K_MAJOR ? 1 : lda;
    args.b_row_stride = B_N_MAJOR ? ldb : 1, args.b_col_stride = B_N_MAJOR ? 1 : ldb;
    args.ldd = ldd;
    args.alpha = 1.0f, args.beta = 2.0f;
    std::vector<unsigned char> smem(Kernel::SMEM_BYTES + 16);
    gemmlab::async::host_shared = smem.data();
    std::barrier<> block(Kernel::THREADS);
    host_block_barrier = &block;
    // The block's threads run every block in turn (made once a case, not once a block: half the
    // time); between two blocks thread 0 poisons the shared memory while the others wait.
    std::vector<std::thread> threads;
    for (int t = 0; t < Kernel::THREADS; ++t)
        threads.emplace_back([&, t] {
            threadIdx.x = t;
            for (long row0 = 0; row0 < M; row0 += Kernel::BLOCK_M)
                for (long col0 = 0; col0 < N; col0 += Kernel::BLOCK_N) {
                    if (t == 0)
                        for (auto& x : smem) x = 0xff;  // NaN where nothing was copied
                    block.arrive_and_wait();
                    Kernel::run(args, row0, col0, smem.data());
                    block.arrive_and_wait();  // every thread is done with the block's shared memory
                }
        });
    for (auto& th : threads) th.join();
    int bad = 0;
    for (int r = 0; r < M; ++r)
        for (int col = 0; col < ldd; ++col) {
            double want = c[size_t(r) * ldd + col];
            if (col < N) {
                double ab = 0;
                for (int k = 0; k < K; ++k)
                    ab += double(a[A_K_MAJOR ? r * lda + k : k * lda + r]) * b[B_N_MAJOR ? k * ldb + col : col * ldb + k];
                want = ab + 2.0 * want;
            }
            const float got = d[size_t(r) * ldd + col];
            if (got != want && bad++ < 3)
                std::printf("FAIL %s M=%d N=%d K=%d: D[%d][%d] = %g, want %g\n", name, M, N, K, r, col, got, want);
        }
    failures += bad != 0;
}

// One tile in every layout, with and without the moved edges: nn and tt with transpose_in (A or
// B turned into a [k][x] tile), nt and tn as they are; FC: FRAG_CARRY (the tile's last k carried
// over the barrier where the core reads A M-major and B N-major: all but nt), CK: CARRY_COPY_K, FS:
// FFMA_SERPENTINE (the FFMA runs of odd rows right to left, in the same layouts), CC: CARRY_CHUNK
// (the carried loop CC k's a trip, a tile's last trip crossing the barrier).
template <int BM, int BN, int BK, int WM, int WN, int KU, int STAGES, bool FP, bool FC = false, int CK = -1,
          bool FS = false, int CC = 0>
static void tile(const char* name) {
    auto shapes = [&](auto run) {
        for (auto [M, N, K] : {std::array<int, 3>{201, 301, 45}, {BM + 3, BN + 5, 2 * BK + 1}, {5, 7, 9}, {2 * BM, BN, BK},
                               {2 * BM - 1, 2 * BN - 1, BK + 7}, {BM - 5, BN + 1, 7 * BK + 3}})
            run(M, N, K);
    };
    auto layout = [&](auto akm, auto bnm) {
        constexpr bool A = decltype(akm)::value, B = decltype(bnm)::value;
        using Plain = gemmlab::S10CpAsync<BM, BN, BK, WM, WN, KU, false, STAGES, false, false, A, B, true, FP, 1, false, FC, CK, FS, CC>;
        using Moved = gemmlab::S10CpAsync<BM, BN, BK, WM, WN, KU, false, STAGES, false, false, A, B, true, FP, 1, true, FC, CK, FS, CC>;
        shapes([&](int M, int N, int K) {
            run_case<Plain, A, B>(name, M, N, K);
            run_case<Moved, A, B>(name, M, N, K);
        });
    };
    layout(std::true_type{}, std::true_type{});
    layout(std::true_type{}, std::false_type{});
    layout(std::false_type{}, std::true_type{});
    layout(std::false_type{}, std::false_type{});
    // one operand on 16-byte copies beside the other on 4-byte ones (s10_cp_async.py ONE_OPERAND_VEC:
    // A M-major with B N-major, either one 16-byte; tt with A 16-byte): only the 4-byte one moves
    auto one_vec = [&](auto bnm, auto avec) {
        constexpr bool B = decltype(bnm)::value, AV = decltype(avec)::value;
        using Plain = gemmlab::S10CpAsync<BM, BN, BK, WM, WN, KU, false, STAGES, AV, !AV, false, B, true, FP, 1, false, FC, CK, FS, CC>;
        using Moved = gemmlab::S10CpAsync<BM, BN, BK, WM, WN, KU, false, STAGES, AV, !AV, false, B, true, FP, 1, true, FC, CK, FS, CC>;
        shapes([&](int M, int N, int K) {
            run_case<Plain, false, B, AV, !AV>(name, M, N, K);
            run_case<Moved, false, B, AV, !AV>(name, M, N, K);
        });
    };
    one_vec(std::true_type{}, std::true_type{});
    one_vec(std::true_type{}, std::false_type{});
    one_vec(std::false_type{}, std::true_type{});
}

// argument "at-wait": the copies land at the wait that covers them (tests/host/ptx/cp_async.cuh)
int main(int argc, char** argv) {
    if (argc > 2 || (argc == 2 && std::string(argv[1]) != "at-wait")) {
        std::fprintf(stderr, "usage: %s [at-wait]\n", argv[0]);
        return 2;
    }
    gemmlab::async::host_cp_async_land_at_wait = argc == 2;
    tile<64, 128, 32, 32, 64, 2, 3, false>("64x128 w32x64 x2");
    tile<64, 64, 32, 32, 32, 2, 3, true, false, -1, true>("64x64 w32x32 x3 (fragment prefetch, serpentine)");
    tile<128, 64, 16, 32, 32, 2, 4, false>("128x64 w32x32 bk16 x2");
    tile<32, 64, 32, 16, 32, 2, 3, true>("32x64 w16x32 x4");
    tile<128, 64, 16, 32, 32, 2, 4, true, true>("128x64 w32x32 bk16 x2 carried");
    tile<64, 64, 8, 32, 32, 2, 2, false, true, 3>("64x64 w32x32 bk8 2 stages carried, copies after k 3");
    tile<64, 64, 16, 32, 32, 2, 3, false, true, 7, true>("64x64 w32x32 bk16 3 stages carried, copies after k 7, serpentine");
    tile<128, 64, 16, 32, 32, 2, 4, true, true, -1, false, 4>("128x64 w32x32 bk16 x2 carried in trips of 4 k");
    tile<64, 64, 32, 32, 32, 2, 3, false, true, -1, true, 8>("64x64 w32x32 3 stages carried in trips of 8 k, serpentine");
    tile<64, 64, 8, 32, 32, 2, 2, false, true, -1, false, 2>("64x64 w32x32 bk8 2 stages carried in trips of 2 k");
    std::printf("%d of %d cases wrong\n", failures, cases);
    return failures != 0;
}
