// tests/host/cuda_host.h — the CUDA built-ins that gemmlab's SIMT kernels use, for compiling
// them as plain C++ on the CPU (tests/test_kernels_host.py): the code under test is the kernels'
// own headers, run thread by thread (a CUDA thread is a std::thread, __syncthreads a barrier of
// the block's); only PTX-level pieces (ptx/cluster.cuh, cp_async.cuh, mbarrier.cuh, smem.cuh,
// sync.cuh, tma.cuh) are stood in for by tests/host/ptx/.
#pragma once
#include <barrier>
#include <cmath>
#include <memory>
#include <vector>

#define __device__
#define __host__
#define __global__
#define __forceinline__ inline
#define __restrict__ __restrict
#define __launch_bounds__(...)
#define __shared__ static  // the blocks run one after another: a static is the running block's

struct alignas(8) float2 { float x, y; };
struct alignas(16) float4 { float x, y, z, w; };
inline float2 make_float2(float x, float y) { return {x, y}; }
inline float4 make_float4(float x, float y, float z, float w) { return {x, y, z, w}; }

struct HostDim3 { unsigned x = 0, y = 0, z = 0; };
inline thread_local HostDim3 threadIdx;  // the harness sets threadIdx.x in each thread
inline HostDim3 blockIdx, blockDim, gridDim;
inline std::barrier<>* host_block_barrier = nullptr;  // the running block's threads
inline void __syncthreads() { host_block_barrier->arrive_and_wait(); }
// The running block's warps, one barrier of 32 threads each (a harness whose kernel calls
// __syncwarp makes them); __syncwarp is the lanes of the caller's warp meeting there.
inline std::vector<std::unique_ptr<std::barrier<>>> host_warp_barriers;
inline void __syncwarp(unsigned = 0xffffffffu) { host_warp_barriers[threadIdx.x / 32]->arrive_and_wait(); }
