// gemmlab/kernels/ptx/wgmma.cuh — Hopper warpgroup MMA (sm_90a): shared-memory matrix
// descriptors, the fence / commit / wait protocol, and the m64nNk8 TF32 operations
// (ptx/wgmma_tf32_ops.cuh, generated). PTX ISA: "Asynchronous Warpgroup Level Matrix
// Instructions" and "Matrix Descriptor".
#pragma once
#include "ptx/wgmma_tf32_ops.cuh"

namespace gemmlab {
namespace wgmma {

// The 64-bit descriptor of a K-major operand tile in shared memory with the 128-byte swizzle:
// rows of 128 bytes (32 tf32 values of K), grouped in atoms of 8 rows (1024 bytes, 1024-byte
// aligned, which is what TMA's SWIZZLE_128B writes for a {32, rows} box).
//   bits  0-13: start address >> 4        bits 16-29: leading-byte offset >> 4 (unused: K-major, swizzled)
//   bits 32-45: stride-byte offset >> 4 (1024: from one 8-row atom to the next)
//   bits 49-51: base offset (0: atoms are 1024-byte aligned)   bits 62-63: swizzle (1 = 128B)
// One k8 step inside the 128-byte row moves the start address by 32 bytes (descriptor + 2).
__device__ __forceinline__ unsigned long long desc_k_major_sw128(unsigned smem_addr) {
    return (static_cast<unsigned long long>((smem_addr & 0x3FFFFu) >> 4)) |
           (1ull << 16) |                       // leading-byte offset 16 B (ignored here)
           (static_cast<unsigned long long>(1024 >> 4) << 32) |
           (1ull << 62);
}
static constexpr unsigned long long DESC_K8_STEP = 32 >> 4;  // 8 tf32 along K, in 16-byte units

// Before the first wgmma of a batch, and after any ordinary write of its accumulator registers.
__device__ __forceinline__ void fence() { asm volatile("wgmma.fence.sync.aligned;\n" ::: "memory"); }

// Close the wgmmas issued since the last commit into one group.
__device__ __forceinline__ void commit() { asm volatile("wgmma.commit_group.sync.aligned;\n" ::: "memory"); }

// Wait until at most PENDING committed groups are still running.
template <int PENDING>
__device__ __forceinline__ void wait() {
    asm volatile("wgmma.wait_group.sync.aligned %0;\n" ::"n"(PENDING) : "memory");
}

// Pin accumulator registers at this point of the program: the compiler must not move their
// ordinary reads or writes across a wgmma fence/wait (the asm above names no registers).
template <int COUNT>
__device__ __forceinline__ void fence_operands(float (&d)[COUNT]) {
#pragma unroll
    for (int i = 0; i < COUNT; ++i) asm volatile("" : "+f"(d[i])::"memory");
}

}  // namespace wgmma
}  // namespace gemmlab
