"""gemmlab bench --overhead without a GPU: the timing loop (fake clock), the ratios, a whole run with
the GPU parts replaced by CPU stand-ins, the table, overhead.json, and the command line."""
import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from gemmlab.bench import overhead, timing

ROOT = Path(__file__).resolve().parents[1]


class FakeClock:
    """perf_counter stand-in: each call to fn() takes ``call`` seconds, each sync ``sync``."""

    def __init__(self, call=2e-6, sync=5e-6):
        self.t = 0.0
        self.call, self.sync_cost = call, sync
        self.syncs = 0
        self.calls = 0

    def __call__(self):
        return self.t

    def fn(self):
        self.calls += 1
        self.t += self.call

    def sync(self):
        self.syncs += 1
        self.t += self.sync_cost


def test_time_calls_host_and_end_to_end():
    c = FakeClock(call=2e-6, sync=500e-6)
    host, e2e = overhead.time_calls(c.fn, 500, c.sync, c)
    assert c.calls == 500 and c.syncs == 2                       # one before the loop, one after
    assert host == pytest.approx(2e-6)
    assert e2e == pytest.approx(2e-6 + 500e-6 / 500)             # the final sync spread over the calls
    with pytest.raises(ValueError):
        overhead.time_calls(c.fn, 0, c.sync, c)


def test_measure_calls_warms_up_then_takes_medians():
    c = FakeClock(call=3e-6, sync=100e-6)
    r = overhead.measure_calls(c.fn, calls=100, repeats=5, warmup=7, sync=c.sync, clock=c)
    assert c.calls == 7 + 5 * 100
    assert r["repeats"] == 5 and len(r["host_us_runs"]) == 5 and r["calls"] == 100 and r["warmup"] == 7
    assert r["host_us"] == pytest.approx(3.0)
    assert r["e2e_us"] == pytest.approx(3.0 + 1.0)


def test_measure_interleaved_times_the_calls_in_turns():
    """Every run visits each call once, in order (a slow stretch of the host falls on all of them);
    each call's context is held around its own runs; a call that raises is reported and dropped."""
    c = FakeClock(call=2e-6, sync=10e-6)
    order, entered = [], []

    def call(name, cost):
        def fn():
            c.fn()
            c.t += cost - c.call
            order.append(name)
        return fn

    class Ctx:
        def __init__(self, name):
            self.name = name

        def __enter__(self):
            entered.append(self.name)

        def __exit__(self, *exc):
            entered.append("/" + self.name)

    def broken():
        raise RuntimeError("no kernel")

    res = overhead.measure_interleaved([(call("a", 2e-6), None), (call("b", 5e-6), lambda: Ctx("b")), (broken, None)],
                                       calls=4, repeats=3, warmup=2, sync=c.sync, clock=c, rewarm=1)
    assert res[0]["host_us"] == pytest.approx(2.0) and res[1]["host_us"] == pytest.approx(5.0)
    assert res[0]["repeats"] == res[1]["repeats"] == 3 and len(res[1]["e2e_us_runs"]) == 3
    assert res[2] == {"error": "RuntimeError: no kernel"}
    # warm-up (2 each), then 3 turns of (1 re-warm + 4 timed) for a, then for b
    assert order == ["a"] * 2 + ["b"] * 2 + (["a"] * 5 + ["b"] * 5) * 3
    assert entered == ["b", "/b"] * 4          # the warm-up and each of the three runs


def test_add_ratios_per_size_against_torch_mm():
    rows = [{"size": 64, "call": "gemmlab.matmul", "host_us": 10.0, "e2e_us": 12.0},
            {"size": 64, "call": "torch.mm", "host_us": 5.0, "e2e_us": 6.0},
            {"size": 256, "call": "gemmlab.matmul", "host_us": 10.0, "e2e_us": 30.0},
            {"size": 256, "call": "torch.mm", "host_us": None, "e2e_us": None},     # failed baseline
            {"size": 1024, "call": "gemmlab.matmul", "host_us": None, "e2e_us": None}]
    overhead.add_ratios(rows)
    assert rows[0]["vs_torch_host"] == 2.0 and rows[0]["vs_torch_e2e"] == 2.0
    assert rows[1]["vs_torch_host"] == 1.0
    assert rows[2]["vs_torch_host"] is None and rows[4]["vs_torch_e2e"] is None


@pytest.fixture
def cpu_run(monkeypatch):
    """overhead.run with every GPU part replaced: CPU operands and calls, a no-op synchronize,
    a fixed event timing; one of the calls computes the wrong product."""
    torch = pytest.importorskip("torch")
    from gemmlab import device

    class Info:
        name, arch, sms = "FakeGPU", "sm_90", 132

        def as_dict(self):
            return {"name": self.name, "arch": self.arch}

    monkeypatch.setattr(device, "info", lambda index=0: Info())
    for name in ("set_device", "synchronize", "empty_cache"):
        monkeypatch.setattr(torch.cuda, name, lambda *a, **k: None)

    def operands(n, dev, seed):
        g = torch.Generator().manual_seed(seed)
        a = torch.rand((n, n), generator=g) - 0.5
        b = torch.rand((n, n), generator=g) - 0.5
        return a, b, a.double() @ b.double(), torch.empty(n, n), torch.empty(n, n)

    entered = []

    class Context:
        def __enter__(self):
            entered.append("in")

        def __exit__(self, *exc):
            entered.append("out")

    def candidates(a, b, out_g, out_t):
        return [("gemmlab.matmul", lambda: a @ b, None),
                ("gemmlab.matmul(out=)", lambda: torch.mm(a, b, out=out_g).mul_(2), None),   # wrong
                ("torch.ops.gemmlab.mm", lambda: a @ b, None),
                ("torch.mm [gemmlab.torch.enable()]", lambda: entered[-1] == "in" and a @ b, Context),
                ("torch.mm", lambda: torch.mm(a, b), None),
                ("torch.mm(out=)", lambda: torch.mm(a, b, out=out_t), None),
                ("torch.ops.gemmlab.mm [dispatch only]", lambda: a @ b, None),
                ("custom_op wrapper [previous design]", lambda: a @ b, None),
                ("gemmlab.matmul [operands move]", lambda: a @ b, None),
                ("torch.ops.gemmlab.mm [operands move]", lambda: a @ b, None),
                ("torch.mm [operands move]", lambda: torch.mm(a, b), None)]

    times = {"n": 0}

    def measure(launch, policy, flush, read_clock=None):
        times["n"] += 1
        launch()
        ms = {1: 2.0, 2: 1.9, 3: 1.98}[times["n"]]        # api, torch.mm, kernel alone
        return timing.Timing(times_ms=[ms] * 3, reps=3)

    monkeypatch.setattr(overhead, "_operands", operands)
    monkeypatch.setattr(overhead, "_candidates", candidates)
    monkeypatch.setattr(overhead, "_api_calls", lambda a, b, og, ot: [
        ("api", lambda: torch.mm(a, b, out=og), og), ("torch_mm", lambda: torch.mm(a, b, out=ot), ot)])
    monkeypatch.setattr(overhead, "kernel_only_launch", lambda a, b, out: (lambda: torch.mm(a, b, out=out), None))
    monkeypatch.setattr(timing, "L2Flush", lambda *a, **k: (lambda: None))
    monkeypatch.setattr(timing, "measure", measure)
    settings = overhead.Settings(sizes=(8, 16), calls=20, repeats=3, warmup=2, api_size=32)
    return overhead.run(settings, progress=open(os.devnull, "w"))


def test_a_run_with_cpu_stand_ins(cpu_run, tmp_path):
    doc = cpu_run
    assert doc["schema"] == overhead.SCHEMA and doc["kind"] == "overhead"
    assert doc["provenance"]["gpu"] == {"name": "FakeGPU", "arch": "sm_90"}
    rows = doc["rows"]
    assert [(r["size"], r["call"]) for r in rows] == [(n, c) for n in (8, 16) for c in overhead.CALLS]
    for r in rows:
        if r["call"] == "gemmlab.matmul(out=)":          # the wrong one: checked, not timed
            assert not r["correct"] and r["host_us"] is None and "not timed" in r["error"]
            assert r["vs_torch_host"] is None
        else:
            assert r["correct"] and r["rel_error"] < 1e-6
            assert r["host_us"] > 0 and r["e2e_us"] >= r["host_us"] and len(r["e2e_us_runs"]) == 3
            assert r["vs_torch_host"] is not None
    assert all(r["vs_torch_host"] == 1.0 for r in rows if r["call"] == "torch.mm")
    targets, = doc["targets"]
    assert targets["call"] == "torch.ops.gemmlab.mm" and targets["size"] == 64 and targets["met"] is None  # no 64³
    assert set(overhead.CALLS) >= {"torch.ops.gemmlab.mm", "torch.mm [gemmlab.torch.enable()]",
                                   "torch.ops.gemmlab.mm [dispatch only]", "custom_op wrapper [previous design]"}
    api = doc["api_vs_kernel"]
    assert api["size"] == 32 and api["api"]["time_ms"] == 2.0 and api["torch_mm"]["time_ms"] == 1.9
    assert api["api_vs_torch"] == pytest.approx(2.0 / 1.9)
    assert api["api_vs_kernel"] == pytest.approx(2.0 / 1.98) and api["within_target"] is True
    assert overhead.failed(doc) == ["8³ gemmlab.matmul(out=)", "16³ gemmlab.matmul(out=)"]

    text = overhead.plain(doc)
    assert "host µs/call" in text and "e2e µs/call" in text and "host / torch.mm" in text
    assert "FAIL" in text and "torch.ops.gemmlab.mm" in text
    assert "api_vs_kernel at 32³" in text and "within 2%" in text

    path = overhead.write(doc, tmp_path / "o")
    assert path.name == "overhead.json"
    back = json.loads(path.read_text())
    assert back["rows"][0]["call"] == "gemmlab.matmul" and "git" in back["provenance"]


def test_check_targets():
    rows = [{"size": 64, "call": "torch.ops.gemmlab.mm", "host_us": 15.0},
            {"size": 64, "call": "torch.mm", "host_us": 12.0},
            {"size": 256, "call": "torch.ops.gemmlab.mm", "host_us": 30.0},
            {"size": 256, "call": "torch.mm", "host_us": 12.0}]
    overhead.add_ratios(rows)
    t, = overhead.check_targets(rows)
    assert t["value"] == pytest.approx(1.25) and t["met"] is True and t["target"] == 1.3
    rows[0]["host_us"] = 16.0
    overhead.add_ratios(rows)
    assert overhead.check_targets(rows)[0]["met"] is False
    assert "target: torch.ops.gemmlab.mm at 64³" in overhead.plain({"rows": rows, "targets": overhead.check_targets(rows)})


def test_api_line_without_the_kernel_alone():
    r = {"size": 4096, "api": {"time_ms": 2.8}, "torch_mm": {"time_ms": 2.7}, "kernel": None,
         "api_vs_torch": 2.8 / 2.7, "kernel_note": "not there yet", "errors": []}
    line = overhead._api_line(r)
    assert "2.8000 ms" in line and "x1.037" in line and "kernel alone: — (not there yet)" in line


# ---- command line --------------------------------------------------------------------------------

def gemmlab(*args):
    env = dict(os.environ, PYTHONPATH=str(ROOT), CUDA_VISIBLE_DEVICES="")
    return subprocess.run([sys.executable, "-m", "gemmlab", *args], cwd=ROOT, env=env,
                          capture_output=True, text=True, timeout=300)


def test_overhead_without_a_gpu_exits_2_with_one_line(tmp_path):
    r = gemmlab("bench", "--overhead", "--out", str(tmp_path / "never"))
    assert r.returncode == 2, r.stderr
    lines = r.stderr.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("gemmlab: no CUDA GPU is available")
    assert not (tmp_path / "never").exists()


@pytest.mark.parametrize("args,msg", [
    (("bench",), "bench needs M N K (or --overhead)"),
    (("bench", "64", "64", "64", "--sizes", "64"), "--sizes: only with --overhead"),
    (("bench", "64", "64", "64", "--calls", "10", "--api-size", "0"), "--calls, --api-size: only with --overhead"),
    (("bench", "--overhead", "64", "64", "64"), "takes no M N K"),
    (("bench", "--overhead", "--sizes", "64,x"), "--sizes:"),
    (("bench", "--overhead", "--calls", "0"), "--calls 0: must be >= 1"),
])
def test_overhead_argument_errors(args, msg):
    r = gemmlab(*args)
    assert r.returncode == 2, (r.returncode, r.stderr)  # a bad argument, as everywhere (argparse's status)
    assert msg in r.stderr and len(r.stderr.strip().splitlines()) == 1


def test_overhead_help_and_import_without_torch():
    r = gemmlab("bench", "--help")
    for opt in ("--overhead", "--sizes", "--calls", "--repeats", "--api-size"):
        assert opt in r.stdout
    code = ("import sys\nimport gemmlab.bench.overhead, gemmlab.bench.commands\n"
            "print('torch' in sys.modules)\n")
    r = subprocess.run([sys.executable, "-c", code], cwd=ROOT, capture_output=True, text=True,
                       env=dict(os.environ, PYTHONPATH=str(ROOT)), timeout=120)
    assert r.returncode == 0 and r.stdout.strip() == "False", r.stderr
