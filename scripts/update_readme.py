"""Regenerate the README's results section from results/h200/ (never typed by hand).

    python3 scripts/update_readme.py
"""
from __future__ import annotations

import json
import re
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from gemmlab.bench import report  # noqa: E402

RES = ROOT / "results" / "h200"
BEGIN, END = "<!-- results:begin -->", "<!-- results:end -->"


def ladder_section(path: Path, title: str) -> list[str]:
    if not path.is_file():
        return []
    doc = report.load(path)
    rel = path.relative_to(ROOT)
    return [f"### {title}", "", f"From `{rel}` (`gemmlab report {rel} --markdown`):", "",
            report.markdown(doc).rstrip(), ""]


def bank_section() -> list[str]:
    p = RES / "bank_probe.json"
    if not p.is_file():
        return []
    d = json.loads(p.read_text())
    s = d["summary"]
    lines = ["### Shared-memory wavefronts: the notes' table against the H200", "",
             f"From `results/h200/bank_probe.json` (micro-kernel per pattern, ncu `--clock-control none`, "
             f"{s['measured']} patterns; the model's `notes` rules agree on {s['agree']['notes']}, its "
             f"`hardware` rules on {s['agree']['hardware']}). Wavefronts per warp instruction, A + B fragment "
             "loads, notes configuration (000 §8.4–8.5):", "",
             "| layout | notes (A, B, sum) | measured on the H200 |", "| --- | --- | --- |"]
    for name, row in s["notes_table"].items():
        lines.append(f"| {name} | {row['notes'][0]} + {row['notes'][1]} = {row['notes'][2]} | "
                     f"{row['measured'][0]:g} + {row['measured'][1]:g} = {row['measured'][2]:g} |")
    lines += ["", "The hardware disagrees with the notes on Z-order: its B load takes 4 wavefronts, not 2, "
              "so the model follows the hardware by default (`GEMMLAB_BANK_MODEL=notes` reproduces the notes).", ""]
    return lines


def ncu_section() -> list[str]:
    files = sorted(RES.glob("ncu_stages*.json"))
    if not files:
        return []
    p = files[-1]
    d = json.loads(p.read_text())
    size = d.get("provenance", {}).get("size") or (d["rows"][0].get("size") if d["rows"] else "?")
    lines = [f"### Hardware counters per stage ({size}³)", "",
             f"From `{p.relative_to(ROOT)}` (`scripts/ncu_stages.py`, ncu `--clock-control none`):", "",
             "| stage | shared ld wavefronts / inst | shared st wavefronts / inst | FMA pipe active | issue active | top stalls (per issued instruction) |",
             "| --- | ---: | ---: | ---: | ---: | --- |"]
    for r in d["rows"]:
        if "error" in r:
            lines.append(f"| {r['stage']} | ncu failed | | | | |")
            continue
        stalls = ", ".join(f"{k} {v:.2f}" for k, v in r["stalls_per_issue"].items() if k != "selected")
        stalls = ", ".join(stalls.split(", ")[:3])
        lines.append(f"| {r['stage']} | {r['smem_ld_wavefronts_per_inst'] or 0:.2f} | "
                     f"{r['smem_st_wavefronts_per_inst'] or 0:.2f} | {r['fma_pipe_active_pct']:.1f}% | "
                     f"{r['issue_active_pct']:.1f}% | {stalls} |")
    return lines + [""]


def sweep_auto_section() -> list[str]:
    path = RES / "sweep-auto" / "sweep.json"
    if not path.is_file():
        return []
    doc = report.load(path)
    rel = path.relative_to(ROOT)
    png = path.with_suffix(".png")
    lines = ["### stage=\"auto\" (tuned dispatch) against cuBLAS and Triton, by shape", "",
             f"From `{rel}` (`gemmlab sweep --suite all`; `gemmlab report {rel} --markdown`). Kernel time "
             "(CUDA events around the plan's launches: split-K's reduce and any repacking included), L2 flushed:", "",
             report.markdown(doc).rstrip(), ""]
    if png.is_file():
        lines += [f"![sweep-auto]({png.relative_to(ROOT)})", ""]
    return lines


def overhead_section() -> list[str]:
    path = RES / "overhead" / "overhead.json"
    if not path.is_file():
        return []
    from gemmlab.bench import overhead

    doc = json.loads(path.read_text())
    rel = path.relative_to(ROOT)
    return ["### Host time per call", "", f"From `{rel}` (`gemmlab bench --overhead`):", "", "```",
            overhead.plain(doc).rstrip(), "```", ""]


def main() -> int:
    parts = ["## Results on the H200", ""]
    parts += sweep_auto_section() + overhead_section()
    parts += ladder_section(RES / "ladder-4096" / "ladder.json", "The ladder at 4096³")
    parts += ladder_section(RES / "ladder-8192" / "ladder.json", "The ladder at 8192³")
    sweep = RES / "sweep" / "ladder.png"
    if sweep.is_file():
        sweep_json = RES / "sweep" / "ladder.json"
        commit = (report.load(sweep_json)["provenance"].get("git") or {}).get("commit")
        parts += ["### TFLOPS against size", "", f"![sweep]({sweep.relative_to(ROOT)})", "",
                  f"(`{sweep_json.relative_to(ROOT)}`, commit {commit})", ""]
    parts += bank_section() + ncu_section()
    readme = ROOT / "README.md"
    text = readme.read_text()
    new = re.sub(re.escape(BEGIN) + ".*?" + re.escape(END), BEGIN + "\n" + "\n".join(parts) + "\n" + END,
                 text, flags=re.S)
    readme.write_text(new)
    return 0


if __name__ == "__main__":
    sys.exit(main())
