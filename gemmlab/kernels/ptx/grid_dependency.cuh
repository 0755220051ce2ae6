// gemmlab/kernels/ptx/grid_dependency.cuh — programmatic dependent launch (sm_90, PTX
// griddepcontrol). A plan's kernels after the first are launched with the
// PROGRAMMATIC_STREAM_SERIALIZATION attribute (gemmlab/plan.py, jit/launch.py): the driver may
// launch such a grid before the previous one in the stream has finished, as that grid's blocks
// exit, so the launch overlaps the previous kernel's tail instead of following its completion. The
// price: the grid must not touch memory the previous one writes or reads before griddepcontrol.wait,
// which returns once that grid has completed and its writes are visible. So every gemmlab kernel
// calls grid_dependency_wait() first, before any global memory access. Without the attribute (a
// plan's first kernel, or GEMMLAB_PDL=0) it is a no-op; before sm_90 it is not compiled, and the
// host never sets the attribute for such a kernel.
//
// No kernel triggers its successor early (griddepcontrol.launch_dependents): measured on the H200,
// a trigger at the start of the copy let the GEMM's blocks be placed on the SMs while the copy
// still ran, unevenly, and tiles of 2-3 blocks per SM with less than a full wave ran up to 1.6x
// slower (s11 64x64 after the repack copy at 777x555x333: 24.8 -> 40.7 us;
// results/h200/logs/pdl-probe-early-trigger.txt). The implicit trigger, at each block's exit,
// keeps the placement of a plain launch; the wait alone gained 0.6-3.1 us a call on every plan
// measured (results/h200/logs/pdl-probe.txt).
#pragma once

namespace gemmlab {

__device__ __forceinline__ void grid_dependency_wait() {
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 900
    asm volatile("griddepcontrol.wait;\n" ::: "memory");
#endif
}

}  // namespace gemmlab
