"""What a stage spec is.

A stage is two files of the same name: ``kernels/sNN_name.cuh`` (device code, a struct template
with BLOCK_M, BLOCK_N, THREADS and ``static __device__ void run(const GemmArgs&, int64 row0,
int64 col0, unsigned char* smem)``) and ``stages/sNN_name.py`` (this spec: parameters,
constraints, launch geometry, template instantiation, expected SASS). The module defines
``STAGE = SomeSpec()``; the registry finds it by file name, nothing else needs editing.
"""
from __future__ import annotations

import math
from dataclasses import dataclass, field

from ..errors import ConfigError


@dataclass(frozen=True)
class Problem:
    """One GEMM as the kernel sees it: D (M x N, row-major, ld ``ldd``) = alpha A B + beta D.

    Strides are in elements. ``a_rs``/``a_cs`` are A's row and column strides (A[m, k] at
    m*a_rs + k*a_cs); likewise B (K x N). Pointers are device addresses (0 when unknown, e.g.
    when only compiling).
    """

    M: int
    N: int
    K: int
    a_rs: int
    a_cs: int
    b_rs: int
    b_cs: int
    ldd: int
    batch: int = 1
    a_bs: int = 0
    b_bs: int = 0
    d_bs: int = 0
    a_ptr: int = 0
    b_ptr: int = 0
    d_ptr: int = 0
    alpha: float = 1.0
    beta: float = 0.0
    # Split-K: ``splits`` slices of ``k_split`` (a multiple of 32) along K, slice s writing its
    # partial product at D + s * d_ss (blockIdx.y); 1 slice is the plain problem.
    splits: int = 1
    k_split: int = 0
    d_ss: int = 0

    @staticmethod
    def dense(M, N, K, layout="nn", batch=1, **kw) -> "Problem":
        """A contiguous problem; layout letters say whether A and B are 'n' (row-major) or 't'."""
        a_rs, a_cs = (K, 1) if layout[0] == "n" else (1, M)
        b_rs, b_cs = (N, 1) if layout[1] == "n" else (1, K)
        return Problem(M, N, K, a_rs, a_cs, b_rs, b_cs, N, batch, M * K, K * N, M * N, **kw)

    # A is "K-major" (row-major, K contiguous) or "M-major" (column-major, M contiguous).
    @property
    def a_k_major(self) -> bool:
        return self.a_cs == 1

    @property
    def b_n_major(self) -> bool:
        return self.b_cs == 1

    def aligned(self, floats: int = 4) -> bool:
        """Every A, B and D row start is aligned to ``floats`` elements (16 bytes for 4), with the
        unit-stride dimension as the vector dimension, for every batch."""
        bytes_ = 4 * floats
        if any(p % bytes_ for p in (self.a_ptr, self.b_ptr, self.d_ptr)):
            return False
        lead_a = self.a_rs if self.a_cs == 1 else self.a_cs if self.a_rs == 1 else None
        lead_b = self.b_rs if self.b_cs == 1 else self.b_cs if self.b_rs == 1 else None
        if lead_a is None or lead_b is None:
            return False
        return all(s % floats == 0 for s in (lead_a, lead_b, self.ldd, self.a_bs, self.b_bs, self.d_bs))


def k_slices(K: int, split_k: int) -> tuple[int, int]:
    """(k_split, slices): split-K as the plan runs it. Slices are whole multiples of 32 (so every
    stage's K tiles, and s11's TMA boxes, end at a slice boundary); asking for ``split_k`` gives
    ceil(K / k_split) slices, which can be fewer. No split: (K, 1)."""
    if split_k <= 1 or K <= 0:
        return K, 1
    k_split = -(-(-(-K // split_k)) // 32) * 32
    return k_split, -(-K // k_split)


@dataclass(frozen=True)
class Param:
    name: str
    default: int
    doc: str = ""
    choices: tuple = ()


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

    def threads(self, cfg: dict) -> int:
        raise NotImplementedError

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
        parts += [f"{_short(k)}{v}" for k, v in cfg.items()]
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

    def operand_ready(self, problem: "Problem", which: str) -> bool:
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
