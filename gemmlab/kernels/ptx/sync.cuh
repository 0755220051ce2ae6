// gemmlab/kernels/ptx/sync.cuh — named barriers (a subset of a block's warps meets) and setmaxnreg
// (a warpgroup hands registers to another: sm_90a).
#pragma once

namespace gemmlab {
namespace async {

// Named barrier `id` (1..15; 0 is __syncthreads) for `threads` threads (a multiple of 32): lets a
// subset of warps, e.g. the consumers of a warp-specialized kernel, synchronise among themselves.
__device__ __forceinline__ void named_barrier_sync(int id, int threads) {
    asm volatile("bar.sync %0, %1;\n" ::"r"(id), "r"(threads) : "memory");
}

// Arrive at named barrier `id` without waiting (bar.arrive): the warps that bar.sync on it wait
// until `threads` threads in all have arrived or synced.
__device__ __forceinline__ void named_barrier_arrive(int id, int threads) {
    asm volatile("bar.arrive %0, %1;\n" ::"r"(id), "r"(threads) : "memory");
}

// setmaxnreg (sm_90a): the executing warpgroup's per-thread register limit becomes N, registers
// going to / coming from the block's pool (.inc waits until the pool has them). Every warp of the
// warpgroup executes it, converged; the warpgroup must synchronise between two of them.
template <int N>
__device__ __forceinline__ void setmaxnreg_inc() {
    static_assert(N % 8 == 0 && N >= 24 && N <= 256, "setmaxnreg: a multiple of 8 in 24..256");
#if defined(__CUDA_ARCH_FEAT_SM90_ALL)
    asm volatile("setmaxnreg.inc.sync.aligned.u32 %0;\n" ::"n"(N));
#endif
}
template <int N>
__device__ __forceinline__ void setmaxnreg_dec() {
    static_assert(N % 8 == 0 && N >= 24 && N <= 256, "setmaxnreg: a multiple of 8 in 24..256");
#if defined(__CUDA_ARCH_FEAT_SM90_ALL)
    asm volatile("setmaxnreg.dec.sync.aligned.u32 %0;\n" ::"n"(N));
#endif
}

}  // namespace async
}  // namespace gemmlab
