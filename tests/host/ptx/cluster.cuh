// tests/host/ptx/cluster.cuh — stands in for gemmlab/kernels/ptx/cluster.cuh on the CPU: a
// cluster's CTAs are host_smem[rank] (each CTA's shared memory, from address 0), and a
// shared::cluster address is rank << 24 | the address in that CTA.
#pragma once

namespace gemmlab {
namespace async {

inline unsigned host_rank = 0;
inline unsigned char* host_smem[8] = {};

inline unsigned cluster_ctarank() { return host_rank; }
inline void cluster_sync() {}
inline unsigned cluster_map(unsigned addr, unsigned rank) { return rank << 24 | addr; }
inline float4 ld_cluster_v4(unsigned addr) {
    return *reinterpret_cast<const float4*>(host_smem[addr >> 24] + (addr & 0xffffffu));
}

}  // namespace async
}  // namespace gemmlab
