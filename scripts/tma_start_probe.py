"""Does a TMA tile box load when its innermost start is not 16-byte aligned? (s11's row-group
experiment issued box j at dim-0 coordinate j·ld + inner0, 4-byte aligned only. H100, 2026-12-06: it
does not, the load faults (results/h100/logs/tma-start-probe.txt), and the experiment was removed;
its code: gemmlab/kernels/copy/row_groups.cuh at commit a53f429; docs/stages/s10-s11.md, row groups.)

One block loads one 8 x 32 float box of a 64 x 64 row-major tensor (16-byte aligned base and
rows) at dim-0 coordinate C, then copies it out; the output is checked against the tensor. Each C
runs in its own process (a fault poisons the CUDA context):

    python3 scripts/tma_start_probe.py            # C = 0, 4, 1, 2, 3 -> one line each
    python3 scripts/tma_start_probe.py --one C    # a single load (what the line above runs)
"""
import subprocess
import sys

SOURCE = r"""
#include "common.cuh"
#include "ptx/mbarrier.cuh"
#include "ptx/smem.cuh"
#include "ptx/tma.cuh"
extern "C" __global__ void tma_start_probe(const __grid_constant__ gemmlab::async::TmaDescriptor map, int c0,
                                           float* out) {
    __shared__ alignas(1024) float tile[8 * 32];
    __shared__ alignas(8) unsigned long long bar;
    using namespace gemmlab::async;
    const unsigned b = smem_address(&bar);
    if (threadIdx.x == 0) {
        mbarrier_init(b, 1);
        fence_barrier_init();
    }
    __syncthreads();
    if (threadIdx.x == 0) {
        mbarrier_arrive_expect_tx(b, sizeof(tile));
        tma_load_3d(smem_address(tile), &map, b, c0, 0, 0);
    }
    mbarrier_wait(b, 0);
    for (int i = threadIdx.x; i < 8 * 32; i += blockDim.x) out[i] = tile[i];
}
"""


def one(c0: int) -> str:
    import numpy as np
    import torch

    from gemmlab.jit import compiler, launch
    from gemmlab.stages.tensor_map import TensorMapDescriptor

    x = torch.arange(64 * 64, dtype=torch.float32, device="cuda").reshape(64, 64)
    out = torch.full((8, 32), -1.0, device="cuda")
    ck = compiler.compile_cubin(SOURCE, "tma_start_probe", "sm_90a")
    fn, ctx = launch.function(ck, 0, 0)
    desc = TensorMapDescriptor((1, 64, 64), (64 * 64, 64, 1), (1, 8, 32))
    desc.encode(x.data_ptr())
    params = launch.ParamBuffer([desc, "i32", "ptr"], [None, np.int32(c0), out.data_ptr()])
    try:
        launch.launch_raw(fn, ctx, (1, 1, 1), 128, 0, torch.cuda.current_stream().cuda_stream, params)
        torch.cuda.synchronize()
    except Exception as e:  # noqa: BLE001 - the probe reports what the hardware did
        return f"C={c0} ({4 * c0 % 16} bytes past 16): FAULT {type(e).__name__}: {str(e).splitlines()[0][:120]}"
    want = torch.zeros(8, 32, device="cuda")
    cols = torch.arange(32, device="cuda") + c0
    inside = cols < 64
    want[:, inside] = x[:8, cols[inside]]
    ok = bool(torch.equal(out, want))
    return f"C={c0} ({4 * c0 % 16} bytes past 16): {'loads, correct' if ok else 'loads, WRONG data'}"


def main():
    if "--one" in sys.argv:
        print(one(int(sys.argv[sys.argv.index("--one") + 1])), flush=True)
        return
    for c0 in (0, 4, 1, 2, 3):
        r = subprocess.run([sys.executable, __file__, "--one", str(c0)], capture_output=True, text=True, timeout=120)
        lines = [ln for ln in r.stdout.splitlines() if ln.startswith("C=")]
        print(lines[-1] if lines else f"C={c0}: no result (rc {r.returncode}) {r.stderr.strip().splitlines()[-1:]}",
              flush=True)


if __name__ == "__main__":
    main()
