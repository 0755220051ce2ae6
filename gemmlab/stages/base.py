"""What a stage spec is.

A stage is two files of the same name: ``kernels/sNN_name.cuh`` (device code, a struct template
with BLOCK_M, BLOCK_N, THREADS and ``static __device__ void run(const GemmArgs&, int64 row0,
int64 col0, unsigned char* smem)``) and ``stages/sNN_name.py`` (this spec: parameters,
constraints, launch geometry, template instantiation, expected SASS). The module defines
``STAGE = SomeSpec()``; the registry finds it by file name, nothing else needs editing.

The problem a spec is asked about, and every layout fact about its operands, is
gemmlab/problem.py's (re-exported here as ``Problem``).
"""
from __future__ import annotations

import math
from dataclasses import dataclass, field

from ..errors import ConfigError
from ..problem import Problem, k_slices  # noqa: F401  (re-exported: gemmlab.stages.base.Problem is documented)

CLUSTER_MIN_CC = 90  # thread block clusters (cluster_slices): compute capability 9.0 and later


@dataclass(frozen=True)
class Param:
    name: str
    default: int
    doc: str = ""
    choices: tuple = ()
    # False: the kernel name leaves the parameter out at its default (a knob added later, so that
    # the default kernels keep their names: recorded profiles and documented SASS still match).
    named_at_default: bool = True


REG_FILE = 65536  # 32-bit registers per SM (sm_70 and later): a thread has REG_FILE / (threads x blocks)


@dataclass
class StageSpec:
    """Base class: subclasses set the class attributes and override the geometry methods."""

    id: str = ""
    name: str = ""
    adds: str = ""
    notes: str = ""
    params: tuple = ()                 # tuple[Param]
    sass: tuple = ()                   # opcodes that must appear in the aligned (fast) instantiation
    sass_scalar: tuple = ()            # opcodes that must appear in the scalar instantiation
    aligned_path: bool = False         # True: has a float4 (16-byte) instantiation plus a scalar one
    min_cc: int = 70                   # lowest compute capability that can run it (x10: 90 = sm_90)
    expected_pct_cublas: tuple | None = None  # (low, high) % of cuBLAS, notes 000 §12.2
    extra: dict = field(default_factory=dict)
    # Class attributes (not fields): what a subclass declares about its arithmetic and operands.
    precision = "ieee"          # "ieee" (FP32 FFMA), "tf32" (tensor cores, 10-bit inputs) or "tf32x3"
    operands_k_major = False    # True: both operands must reach the kernel K-major and TMA-aligned
                                # (operand_ready); the plan transposes or copies them first

    # ---- configuration -------------------------------------------------------------------
    @property
    def header(self) -> str:
        return f"{self.id}_{self.name}.cuh"

    @property
    def default_config(self) -> dict:
        return {p.name: p.default for p in self.params}

    def config(self, overrides: dict | None = None) -> dict:
        """Defaults with ``overrides`` applied; raises ConfigError naming the bad key or rule."""
        cfg = self.default_config
        for k, v in (overrides or {}).items():
            if k not in cfg:
                raise ConfigError(f"stage {self.id}: unknown config key {k!r}; it has {sorted(cfg)}")
            try:
                iv = int(v)
            except (TypeError, ValueError):
                raise ConfigError(f"stage {self.id}: config {k}={v!r} is not an integer") from None
            if iv != v and not isinstance(v, str):
                raise ConfigError(f"stage {self.id}: config {k}={v!r} is not an integer")
            cfg[k] = iv
        problems = self.constraints(cfg)
        if problems:
            raise ConfigError(f"stage {self.id}: config {cfg} is not legal: " + "; ".join(problems))
        return cfg

    def constraints(self, cfg: dict) -> list[str]:
        """Messages for every rule ``cfg`` breaks (empty when legal). Repeated as static_assert."""
        return []

    # ---- geometry ------------------------------------------------------------------------
    def block_tile(self, cfg: dict) -> tuple[int, int]:
        return cfg["block_m"], cfg["block_n"]

    def tiles(self, cfg: dict, M: int, N: int, batch: int = 1) -> int:
        """Output tiles of an M x N problem (times ``batch``): the blocks of one slice of K, and
        the clusters of a split added in a cluster (``cluster_slices``)."""
        bm, bn = self.block_tile(cfg)
        return -(-M // bm) * -(-N // bn) * batch

    def threads(self, cfg: dict) -> int:
        raise NotImplementedError

    def launch_threads(self, cfg: dict, variant: dict) -> int:
        """Threads per block of one instantiation (a variant may change it: s12's RS path)."""
        return self.threads(cfg)

    def smem_bytes(self, cfg: dict, variant: dict) -> int:
        return 0

    def min_blocks_per_sm(self, cfg: dict) -> int:
        return 1

    def group_m(self, cfg: dict) -> int:
        return cfg.get("group_m", 1)

    def compile_arch(self, cfg: dict, arch: str) -> str:
        """The target to compile for on a device of ``arch`` (e.g. "sm_90a" for sm_90-only features)."""
        return arch

    # ---- instantiation -------------------------------------------------------------------
    def variants(self, cfg: dict) -> list[dict]:
        """Every instantiation this config can produce (CI compiles them all)."""
        if self.aligned_path:
            return [{"vec": 1}, {"vec": 0}]
        return [{}]

    def variant(self, cfg: dict, problem: Problem) -> dict:
        """The instantiation that runs ``problem``."""
        if self.aligned_path:
            return {"vec": int(problem.aligned(4))}
        return {}

    def template(self, cfg: dict, variant: dict) -> str:
        raise NotImplementedError

    def kernel_name(self, cfg: dict, variant: dict) -> str:
        parts = [f"gemmlab_{self.id}_{self.name}"]
        quiet = {p.name: p.default for p in self.params if not p.named_at_default}
        parts += [f"{_short(k)}{v}" for k, v in cfg.items() if k not in quiet or v != quiet[k]]
        if "vec" in variant:
            parts.append("f4" if variant["vec"] else "scalar")
        parts += [f"{_short(k)}{int(v)}" for k, v in variant.items() if k != "vec"]
        return "_".join(parts)

    def check_problem(self, cfg: dict, problem: Problem) -> None:
        """Raise ConfigError if this stage cannot run ``problem`` (default: every shape works)."""

    def fallback(self, cfg: dict, problem: Problem):
        """(other spec, its config) that runs ``problem`` instead, or None. E.g. TMA needs 16-byte
        strides; without them s11 hands the problem to s10. Reports name the kernel that ran."""
        return None

    def fallback_config(self, cfg: dict):
        """(spec, config) that runs a problem this stage hands on (``fallback``); itself if it
        hands on none. The waves model asks it for unaligned problems."""
        return self, cfg

    # ---- split-K inside the kernel ------------------------------------------------------------
    def cluster_slices(self, cfg: dict, splits: int, forced: bool = False, clusters: int = 0,
                       sms: int = 0) -> bool:
        """Whether this stage adds ``splits`` slices of K of a tile inside one thread block cluster
        (no workspace, no reduce kernel; the plan then sends the slices with d_ss = 0): by
        default where that measured faster than the workspace path (which may depend on the
        grid: ``clusters`` it launches, one per tile, on a GPU of ``sms`` SMs), ``forced``
        wherever the kernel can (config ``cluster_reduce=1``). Only on ``CLUSTER_MIN_CC`` and
        later: the plan and the waves model ask there only."""
        return False

    def stream_k_blocks(self, cfg: dict, problem: Problem, sms: int) -> int:
        """Blocks of a stream-K grid for ``problem`` on a GPU of ``sms`` SMs (kernels/epilogue/
        stream_k.cuh: as many as it holds at once, at most one per K tile of the problem), or 0
        where this stage has no stream-K schedule or cannot run the problem with one."""
        return 0

    def kernel_attributes(self, cfg: dict, variant: dict) -> str:
        """C++ attributes of the generated kernel (e.g. ``__cluster_dims__``)."""
        return ""

    # Extra kernel parameters after the common ones, e.g. TMA descriptors:
    # list of C++ declarations, the names passed on to Stage::run, and their values at launch.
    def extra_params(self, cfg: dict, variant: dict) -> list[tuple[str, str]]:
        return []

    def extra_args(self, cfg: dict, variant: dict, problem: Problem) -> list:
        return []

    # ---- shared-memory addressing (for analysis/banks.py and `gemmlab explain`) ----------
    def smem_accesses(self, cfg: dict) -> dict:
        """The real shared-memory addressing of this stage's kernel, for the bank model.

        Returns {"a_load": [...], "b_load": [...], "a_store": [...], "b_store": [...]}: for each
        kind, the list of warp-level shared-memory instructions of that kind that warp 0 issues
        in one BK step of the main loop (loads) or one tile store (stores). Each instruction is
        (width_bytes, addresses) with ``addresses`` the 32 byte addresses of the lanes (None for
        an inactive lane), ``width_bytes`` 4, 8 or 16. Stages without shared memory return {}.
        """
        return {}

    # ---- reporting -----------------------------------------------------------------------
    def describe(self) -> dict:
        return {"id": self.id, "name": self.name, "adds": self.adds, "notes": self.notes,
                "precision": self.precision}

    def operand_ready(self, problem: "Problem", which: str, cfg: dict | None = None) -> bool:
        """For ``operands_k_major`` stages: whether operand ``which`` can be used as it is."""
        return True

    def grid(self, cfg: dict, problem: Problem) -> tuple[int, int, int]:
        bm, bn = self.block_tile(cfg)
        tiles = math.ceil(problem.M / bm) * math.ceil(problem.N / bn)
        return (tiles, problem.splits, min(problem.batch, 65535))


def _short(key: str) -> str:
    """block_m -> bm, warp_n -> wn, thread_m -> tm, stages -> stages."""
    if "_" in key:
        return "".join(w[0] for w in key.split("_"))
    return key
