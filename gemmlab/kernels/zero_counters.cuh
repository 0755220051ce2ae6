// gemmlab/kernels/zero_counters.cuh — sets n 32-bit words to 0: the split-K tile counters of
// epilogue/splitk_last.cuh, before the GEMM that counts in them (a workspace may be new memory).
#pragma once
#include "common.cuh"

extern "C" __global__ void __launch_bounds__(256) gemmlab_zero_counters(unsigned* __restrict__ p, int64 n) {
    gemmlab::grid_dependency_wait();
    for (int64 i = (int64)blockIdx.x * blockDim.x + threadIdx.x; i < n; i += (int64)gridDim.x * blockDim.x) p[i] = 0u;
}
