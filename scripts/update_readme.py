"""Regenerate what the README and docs show from the code and the results (never typed by hand).

    python3 scripts/update_readme.py             # the results section and every example block
    python3 scripts/update_readme.py --examples  # the example blocks only
    python3 scripts/update_readme.py --check     # exit 1 if an example block is out of date

- The README's results section (between ``<!-- results:begin -->`` and ``<!-- results:end -->``)
  comes from results/h200/.
- Example blocks, in README.md and docs/*.md, hold what a command prints (no GPU needed)::

      <!-- example: gemmlab sass s11 -->
      ```
      ... the command's output, written here by this script ...
      ```
      <!-- example:end -->

  ``2>&1`` after the command shows stderr too (an error message); ``| fields K1,K2`` after a
  ``--json`` command shows only those top-level fields, floats to 4 significant digits.
  tests/test_docs_examples.py runs every block's command and fails when the text differs.
"""
from __future__ import annotations

import contextlib
import io
import json
import re
import shlex
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


def sweep_sections() -> list[str]:
    """The newest stage="auto" sweeps: the issue-16 and issue-9 suites, the held-out shapes and our
    own held-back ones (in no table) and the training model's GEMMs, each against cuBLAS in the same run."""
    groups = [
        ("stage=\"auto\" on the issue-16 suite (73 entries: every layout, 12 strided-batched), against cuBLAS",
         [("sweep-wide", None)], "gemmlab sweep --suite wide --baselines cublas"),
        ("stage=\"auto\" on the issue-9 suite, against cuBLAS (newest run)", [("sweep-ieee", "nn")],
         "gemmlab sweep --suite issue9 --baselines cublas"),
        ("stage=\"auto\" on held-out shapes (in no shipped table), against cuBLAS",
         [("sweep-heldout/nn", "nn"), ("sweep-heldout/nt", "nt"), ("sweep-heldout/tt", "tt")], "gemmlab sweep --suite heldout --layout L --baselines cublas"),
        ("stage=\"auto\" on our own held-back shapes (in no table; nothing tuned in their buckets), against cuBLAS",
         [("sweep-own", None)], "gemmlab sweep --suite own --baselines cublas"),
        ("stage=\"auto\" on the training model's GEMMs (forward nt, dX nn, dW tn), against cuBLAS",
         [("sweep-transformer/nt", "nt"), ("sweep-transformer/nn", "nn"), ("sweep-transformer/tn", "tn")],
         "gemmlab sweep --suite transformer --layout L --baselines cublas"),
    ]
    lines = []
    for title, subs, cmd in groups:
        docs = [(RES / sub / "sweep.json", lay) for sub, lay in subs if (RES / sub / "sweep.json").is_file()]
        if not docs:
            continue
        lines += [f"### {title}", "", f"`{cmd}` (`results/h200/{subs[0][0].split('/')[0]}/`); kernel time, L2 flushed:", ""]
        for path, _ in docs:
            lines += [report.markdown(report.load(path)).rstrip(), ""]
    return lines


def sweep_precision_section() -> list[str]:
    """stage="auto" at precision="tf32x3" over the suite (gemmlab sweep --precision tf32x3)."""
    path = RES / "sweep-tf32x3" / "sweep.json"
    if not path.is_file():
        return []
    doc = report.load(path)
    rel = path.relative_to(ROOT)
    return ["### precision=\"tf32x3\": FP32-accurate tensor cores against cuBLAS FP32, by shape", "",
            f"From `{rel}` (`gemmlab sweep --suite issue9 --precision tf32x3`; times end to end: the hi/lo "
            "split pre-pass included; every row checked against float64 with the FP32 tolerance first):", "",
            report.markdown(doc).rstrip(), ""]


def accuracy_section() -> list[str]:
    lines = []
    for name in ("tf32x3_accuracy-2048.json", "tf32x3_accuracy.json"):
        path = RES / "tf32x3" / name
        if not path.is_file():
            continue
        doc = json.loads(path.read_text())
        rel = path.relative_to(ROOT)
        cols = [c for c in ("cublas_fp32", "s11_ieee", "s13_pk32", "s13_pk64", "s13_pk128", "s13_pk256")
                if c in doc["rows"][0]]
        size = doc["size"]
        lines += [f"### 3xTF32 accuracy against float64, {size}x{size} outputs", "",
                  f"From `{rel}` (`scripts/tf32x3_accuracy.py`, commit {doc.get('commit') or 'not recorded'}; "
                  "relative Frobenius error; s13 at several `promote_k`, with its default `split_partials=1`"
                  + ("; the accuracy contract test's size" if size == 2048 else
                     "; cuBLAS splits K at this size, which is very accurate on positive data") + "):", "",
                  "| K | data | " + " | ".join(cols) + " |", "| ---: | --- | " + " | ".join("---:" for _ in cols) + " |"]
        for r in doc["rows"]:
            lines.append(f"| {r['K']} | {r['data']} | " + " | ".join(f"{r[c]:.2g}" for c in cols) + " |")
        lines.append("")
    return lines


def training_section() -> list[str]:
    from gemmlab.bench import training

    out = []
    for sub, title in (("training", "TransformerEncoder training step (d_model 512)"),
                       ("training-2048-tf32x3", "Larger FP32 model (d_model 2048) with precision=\"tf32x3\"")):
        path = RES / sub / "training.json"
        if not path.is_file():
            continue
        doc = json.loads(path.read_text())
        rel = path.relative_to(ROOT)
        out += [f"### {title}", "", f"From `{rel}` (`python -m gemmlab.bench.training`):", "", "```",
                training.plain(doc).rstrip(), "```", ""]
    return out


def profile_section() -> list[str]:
    docs = []
    for path in sorted((RES / "profile").glob("profile-*.json")):
        d = json.loads(path.read_text())
        docs.extend(d if isinstance(d, list) else d.get("results", [d]))
    if not docs:
        return []
    from gemmlab.analysis import profile

    first = json.loads(sorted((RES / "profile").glob("profile-*.json"))[0].read_text())
    prov = first.get("provenance", {}) if isinstance(first, dict) else {}
    commit = (prov.get("git") or {}).get("commit") or "not recorded"
    s13 = next((r for r in docs if r.get("stage") == "s13" and r.get("config")), None)
    pk = f" s13 ran with promote_k={s13['config'].get('promote_k')} then." if s13 else ""
    return ["### The models against the hardware counters (gemmlab profile)", "",
            f"From `results/h200/profile/` (`gemmlab profile --all --size 2048,4096`, commit {commit}; ncu, clocks "
            "not locked; the kernel alone, without s12/s13's operand pre-passes; TC: tensor pipe, derived from the "
            f"FLOPs, ncu's time and clock where ncu has no counter).{pk} What the misses mean: docs/models.md.", "",
            profile.format_markdown(docs).rstrip(), ""]


def overhead_section() -> list[str]:
    path = RES / "overhead" / "overhead.json"
    if not path.is_file():
        return []
    from gemmlab.bench import overhead

    doc = json.loads(path.read_text())
    rel = path.relative_to(ROOT)
    return ["### Host time per call", "", f"From `{rel}` (`gemmlab bench --overhead`):", "", "```",
            overhead.plain(doc).rstrip(), "```", ""]


# ---- example blocks ----------------------------------------------------------------------------

EXAMPLE = re.compile(r"(?P<head><!-- example: (?P<cmd>.+?) -->\n)(?P<body>.*?)(?P<tail><!-- example:end -->)", re.S)
EXAMPLE_FILES = ("README.md", "docs/**/*.md")


def _rounded(x):
    if isinstance(x, float):
        return float(f"{x:.4g}")
    if isinstance(x, dict):
        return {k: _rounded(v) for k, v in x.items()}
    if isinstance(x, list):
        return [_rounded(v) for v in x]
    return x


def run_gemmlab(argv: list[str], stderr: bool = False) -> str:
    """What ``gemmlab ARGV`` prints (stdout, and stderr after it when asked), run in this process."""
    from gemmlab import cli

    out, err = io.StringIO(), io.StringIO()
    with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
        try:
            cli.main(argv)
        except SystemExit:
            pass
    return out.getvalue() + (err.getvalue() if stderr else "")


def example_text(cmd: str) -> str:
    """The fenced block an example's command produces."""
    command, _, filt = (part.strip() for part in cmd.partition("|"))
    argv = shlex.split(command)
    stderr = argv[-1:] == ["2>&1"]
    if stderr:
        argv = argv[:-1]
    if argv[:1] != ["gemmlab"]:
        raise ValueError(f"example {cmd!r}: the command must start with gemmlab")
    text = run_gemmlab(argv[1:], stderr)
    if filt:
        name, _, arg = filt.partition(" ")
        if name != "fields":
            raise ValueError(f"example {cmd!r}: the only filter is '| fields K1,K2,...'")
        doc = json.loads(text)
        keys = [k.strip() for k in arg.split(",") if k.strip()]
        missing = [k for k in keys if k not in doc]
        if missing:
            raise ValueError(f"example {cmd!r}: no field(s) {', '.join(missing)} in the output")
        text = "{" + ",\n ".join(f"{json.dumps(k)}: {json.dumps(_rounded(doc[k]))}" for k in keys) + "}\n"
    lang = "json" if "--json" in argv else ""
    return f"```{lang}\n{text.rstrip()}\n```\n"


def example_files() -> list[Path]:
    files = []
    for pattern in EXAMPLE_FILES:
        files += sorted(ROOT.glob(pattern))
    return files


def update_examples(path: Path, check: bool = False) -> list[str]:
    """Rewrite the example blocks of ``path`` (or, with ``check``, only list the stale ones)."""
    text = path.read_text()
    stale = []

    def fill(m):
        want = example_text(m.group("cmd"))
        if m.group("body") != want:
            stale.append(f"{path.relative_to(ROOT)}: {m.group('cmd')}")
        return m.group("head") + want + m.group("tail")

    new = EXAMPLE.sub(fill, text)
    if not check and new != text:
        path.write_text(new)
    return stale


def examples(check: bool = False) -> list[str]:
    stale = []
    for path in example_files():
        stale += update_examples(path, check)
    return stale


def main(argv=None) -> int:
    args = sys.argv[1:] if argv is None else argv
    if "--check" in args:
        stale = examples(check=True)
        for line in stale:
            print(f"stale example: {line} (python3 scripts/update_readme.py --examples)", file=sys.stderr)
        return 1 if stale else 0
    if "--examples" not in args:
        results_section()
    for line in examples():
        print(f"updated {line}", file=sys.stderr)
    return 0


def results_section() -> None:
    parts = ["## Results on the H200", ""]
    parts += sweep_sections() + sweep_auto_section() + sweep_precision_section() + accuracy_section()
    parts += overhead_section()
    parts += training_section()
    parts += ladder_section(RES / "ladder-4096" / "ladder.json", "The ladder at 4096³")
    parts += ladder_section(RES / "ladder-8192" / "ladder.json", "The ladder at 8192³")
    parts += ladder_section(RES / "ladder-tc-4096" / "ladder.json",
                            "The tensor-core rungs at 4096³ (s12 tf32, s13 tf32x3; auto at ieee and tf32x3)")
    parts += ladder_section(RES / "ladder-tc-8192" / "ladder.json", "The tensor-core rungs at 8192³")
    sweep = RES / "sweep" / "ladder.png"
    if sweep.is_file():
        sweep_json = RES / "sweep" / "ladder.json"
        commit = (report.load(sweep_json)["provenance"].get("git") or {}).get("commit")
        parts += ["### TFLOPS against size", "", f"![sweep]({sweep.relative_to(ROOT)})", "",
                  f"(`{sweep_json.relative_to(ROOT)}`, commit {commit})", ""]
    parts += bank_section() + ncu_section() + profile_section()
    readme = ROOT / "README.md"
    text = readme.read_text()
    new = re.sub(re.escape(BEGIN) + ".*?" + re.escape(END), BEGIN + "\n" + "\n".join(parts) + "\n" + END,
                 text, flags=re.S)
    readme.write_text(new)


if __name__ == "__main__":
    sys.exit(main())
