// gemmlab/kernels/ptx/cluster.cuh — thread block clusters (sm_90): the CTA's rank in its cluster,
// the cluster-wide barrier, and loads from another CTA's shared memory (distributed shared memory).
#pragma once

namespace gemmlab {
namespace async {

// This CTA's rank in its cluster (0 .. cluster size - 1).
__device__ __forceinline__ unsigned cluster_ctarank() {
    unsigned r;
    asm volatile("mov.u32 %0, %%cluster_ctarank;\n" : "=r"(r));
    return r;
}

// Every thread of every CTA of the cluster meets here (not .aligned: threads may arrive from
// divergent code). The arrive releases this thread's shared-memory writes, the wait acquires
// every other thread's, so after it a CTA may read what the others wrote into their own shared
// memory.
__device__ __forceinline__ void cluster_sync() {
    asm volatile("barrier.cluster.arrive.release;\n" ::: "memory");
    asm volatile("barrier.cluster.wait.acquire;\n" ::: "memory");
}

// The address of `addr` (a shared::cta address of this CTA) in the shared memory of cluster CTA `rank`.
__device__ __forceinline__ unsigned cluster_map(unsigned addr, unsigned rank) {
    unsigned out;
    asm volatile("mapa.shared::cluster.u32 %0, %1, %2;\n" : "=r"(out) : "r"(addr), "r"(rank));
    return out;
}

// 16 bytes from a shared::cluster address (cluster_map's result; 16-byte aligned).
__device__ __forceinline__ float4 ld_cluster_v4(unsigned addr) {
    float4 v;
    asm volatile("ld.shared::cluster.v4.f32 {%0, %1, %2, %3}, [%4];\n"
                 : "=f"(v.x), "=f"(v.y), "=f"(v.z), "=f"(v.w)
                 : "r"(addr)
                 : "memory");
    return v;
}

}  // namespace async
}  // namespace gemmlab
