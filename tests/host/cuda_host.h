// tests/host/cuda_host.h — the CUDA built-ins that gemmlab's epilogue code uses, for compiling it
// as plain C++ on the CPU (tests/test_epilogue_host.py): the code under test is the kernels'
// own headers, run thread by thread; only PTX-level pieces (ptx/cluster.cuh) are stood in for by
// tests/host/ptx/.
#pragma once
#include <cmath>

#define __device__
#define __host__
#define __global__
#define __forceinline__ inline
#define __restrict__ __restrict
#define __launch_bounds__(...)

struct alignas(8) float2 { float x, y; };
struct alignas(16) float4 { float x, y, z, w; };
inline float2 make_float2(float x, float y) { return {x, y}; }
inline float4 make_float4(float x, float y, float z, float w) { return {x, y, z, w}; }

struct HostDim3 { unsigned x = 0, y = 0, z = 0; };
inline HostDim3 threadIdx, blockIdx, blockDim, gridDim;  // the harness sets threadIdx.x per thread
