// gemmlab/kernels/copy256.cuh — gemmlab_copy (kernels/common.cuh: the repack's strided batched
// copies, one or two operands a launch) with runs of 256 elements a warp a step: 8 loads a lane in
// flight before its first store, where gemmlab_copy has 4.
//
// Why: ncu on the H100 had gemmlab_copy at 58% of the DRAM bandwidth on a 3333x2222 repack, its
// warps stalled on memory (long scoreboard 13 a issue) with half the SM's warps resident
// (results/h100/logs/76b06cd/ncu_mid.txt): about 16 KB in flight an SM where the memory's
// latency asks ~20 KB. Twice the run doubles the bytes in flight a warp. Its own file, so that its
// source (the JIT cache's key) differs from gemmlab_copy's. The plan chooses it with plan.REPACK_RUN.
#pragma once
#include "common.cuh"

extern "C" __global__ void __launch_bounds__(256) gemmlab_copy256(GEMMLAB_COPY_PARAMS) {
    gemmlab::copy_two<256>(GEMMLAB_COPY_ARGS);
}
