"""Hardware counters for each stage's real kernel (H200, ncu --clock-control none).

    python3 scripts/ncu_stages.py --size 2048 --stages s07,s08a,... --out results/h200/ncu_stages.json

For every stage: one launch at N³ (nn, aligned, alpha 1, beta 0) profiled by ncu with the
shared-memory wavefront and instruction counters (wavefronts per shared load / store
instruction, 000 §8), FMA-pipe utilisation and the warp stall reasons per issued instruction.
One ncu process per stage, so one failure loses one row.
"""
from __future__ import annotations

import argparse
import csv
import io
import json
import os
import shutil
import subprocess
import sys

METRICS = [
    "l1tex__data_pipe_lsu_wavefronts_mem_shared_op_ld.sum",
    "smsp__sass_inst_executed_op_shared_ld.sum",
    "l1tex__data_pipe_lsu_wavefronts_mem_shared_op_st.sum",
    "smsp__sass_inst_executed_op_shared_st.sum",
    "l1tex__data_bank_conflicts_pipe_lsu_mem_shared_op_ld.sum",
    "l1tex__data_bank_conflicts_pipe_lsu_mem_shared_op_st.sum",
    "sm__pipe_fma_cycles_active.avg.pct_of_peak_sustained_active",
    "sm__inst_executed_pipe_fma.avg.pct_of_peak_sustained_active",
    "smsp__issue_active.avg.pct_of_peak_sustained_active",
    "sm__warps_active.avg.pct_of_peak_sustained_active",
    "gpu__time_duration.sum",
    "sm__cycles_elapsed.avg.per_second",
]
STALLS = "regex:smsp__average_warps_issue_stalled_.*_per_issue_active\\.ratio"


def run_one(stage: str, n: int) -> None:
    import torch

    import gemmlab

    torch.backends.cuda.matmul.allow_tf32 = False
    a = torch.rand(n, n, device="cuda") - 0.5
    b = torch.rand(n, n, device="cuda") - 0.5
    out = torch.empty(n, n, device="cuda")
    gemmlab.gemm(a, b, out=out, stage=stage)
    torch.cuda.synchronize()


def parse_csv(text: str) -> dict:
    """ncu --csv (one row per metric) -> {metric: float} for the profiled kernel."""
    start = text.find('"ID"')
    if start < 0:
        raise ValueError("no CSV table in ncu output")
    rows = list(csv.DictReader(io.StringIO(text[start:])))
    out, kernel = {}, None
    for r in rows:
        kernel = kernel or r.get("Kernel Name")
        v = (r.get("Metric Value") or "").replace(",", "")
        try:
            out[r["Metric Name"]] = float(v)
        except (ValueError, KeyError):
            continue
    out["_kernel"] = kernel
    return out


def profile(stage: str, n: int, ncu: str) -> dict:
    cmd = [ncu, "--clock-control", "none", "--csv", "--metrics", ",".join(METRICS + [STALLS]),
           "-k", "regex:^gemmlab_s", "-c", "1", sys.executable, __file__, "--run-one", stage, "--size", str(n)]
    r = subprocess.run(cmd, capture_output=True, text=True, timeout=600)
    if r.returncode != 0:
        return {"stage": stage, "error": (r.stderr or r.stdout)[-2000:]}
    m = parse_csv(r.stdout)
    row = {"stage": stage, "kernel": m.pop("_kernel"), "size": n}

    def ratio(a, b):
        return m[a] / m[b] if m.get(b) else None

    row["smem_ld_wavefronts_per_inst"] = ratio(METRICS[0], METRICS[1])
    row["smem_st_wavefronts_per_inst"] = ratio(METRICS[2], METRICS[3])
    row["fma_pipe_active_pct"] = m.get(METRICS[6])
    row["fma_inst_pct"] = m.get(METRICS[7])
    row["issue_active_pct"] = m.get(METRICS[8])
    row["warps_active_pct"] = m.get(METRICS[9])
    dur = m.get("gpu__time_duration.sum")
    if dur:
        row["duration_ns"] = dur
        row["tflops_under_ncu"] = 2 * n ** 3 / dur / 1e3
    stalls = {k.split("issue_stalled_")[1].split("_per_issue")[0]: v for k, v in m.items()
              if k.startswith("smsp__average_warps_issue_stalled_")}
    row["stalls_per_issue"] = dict(sorted(stalls.items(), key=lambda kv: -kv[1]))
    row["raw"] = {k: v for k, v in m.items() if not k.startswith("smsp__average_warps_issue_stalled_")}
    return row


def main() -> int:
    p = argparse.ArgumentParser()
    p.add_argument("--stages", default="s05,s06,s07,s08a,s08b,s08c,s08d,s09,s10,s11")
    p.add_argument("--size", type=int, default=2048)
    p.add_argument("--out")
    p.add_argument("--run-one")
    args = p.parse_args()
    if args.run_one:
        run_one(args.run_one, args.size)
        return 0
    ncu = shutil.which("ncu") or "/usr/local/cuda/bin/ncu"
    if not os.access(ncu, os.X_OK):
        print("ncu not found", file=sys.stderr)
        return 2
    from gemmlab.stages import all_stages

    have = {s.id for s in all_stages()}
    rows = []
    for st in [s for s in args.stages.split(",") if s in have]:
        row = profile(st, args.size, ncu)
        rows.append(row)
        if "error" in row:
            print(f"{st}: ncu failed: {row['error'][-300:]}", flush=True)
            continue
        top = ", ".join(f"{k} {v:.2f}" for k, v in list(row["stalls_per_issue"].items())[:4])
        print(f"{st:5} ld {row['smem_ld_wavefronts_per_inst'] or 0:5.2f} st {row['smem_st_wavefronts_per_inst'] or 0:5.2f} "
              f"wavefronts/inst | FMA pipe {row['fma_pipe_active_pct'] or 0:5.1f}% issue {row['issue_active_pct'] or 0:5.1f}% "
              f"| stalls: {top} | {row['kernel'][:60]}", flush=True)
    if args.out:
        os.makedirs(os.path.dirname(os.path.abspath(args.out)), exist_ok=True)
        from gemmlab.bench.provenance import git_state

        prov = {"git": git_state(), "ncu": subprocess.run([ncu, "--version"], capture_output=True, text=True).stdout.strip()[-60:],
                "gpu": subprocess.run(["nvidia-smi", "--query-gpu=name,driver_version", "--format=csv,noheader"],
                                      capture_output=True, text=True).stdout.strip(), "size": args.size}
        with open(args.out, "w") as f:
            json.dump({"provenance": prov, "method": "ncu --clock-control none, one launch per stage, nn, alpha 1 beta 0",
                       "metrics": METRICS + [STALLS], "rows": rows}, f, indent=1)
    return 0


if __name__ == "__main__":
    sys.exit(main())
