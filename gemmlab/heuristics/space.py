"""The config space the tuner searches and the heuristic ranks (notes 001: autotuning over the
constraint-filtered configs; the best differs per GPU and shape).

A *candidate* is (stage id, config overrides, relative efficiency): the efficiency is the share
of an SM's FFMA peak one resident set of blocks reaches in the steady state, the heuristic's
only per-config number (heuristics/model.py). Its defaults are estimates from the H200 ladder (s11's
default 128x256 tile: 49.2 of 66 TFLOPS = 0.75) scaled by the main-loop FFMA share and the warps
per SM of each tile; ``gemmlab tune`` measures instead of trusting them. Every config here is
checked against its stage's constraints by the tests, compiles for sm_90 with no local memory,
and says in ``min_blocks`` how many blocks share an SM.
"""
from __future__ import annotations

import functools
from dataclasses import dataclass, field

SPLITS = (1, 2, 3, 4, 6, 8, 12, 16, 24, 32, 48, 64, 96, 128, 192, 256)


@dataclass(frozen=True)
class Candidate:
    stage: str
    overrides: dict = field(default_factory=dict, hash=False, compare=False)
    efficiency: float = 0.5
    label: str = ""
    # "m" / "n": a tile for a decode-sized M / N only (the model ranks it where that dimension is at
    # most SMALL_DIM_MAX); "": any shape. Its efficiency was fitted there (small_m_probe.py) and says
    # nothing about wide problems: the 128x32 tile won the waves model at 777x555x333 and measured
    # 0.75x cuBLAS where 64x64 gives 0.85x.
    small: str = ""

    def spec(self):
        from ..stages import get

        return get(self.stage)

    def config(self) -> dict:
        return dict(self._config)

    @functools.cached_property
    def _config(self) -> dict:
        """The stage's full config for the overrides, resolved once per candidate (the model asks
        for a candidate's tile and blocks per SM on every prediction); read only: ``config`` copies."""
        return _resolved(self.stage, tuple(sorted(self.overrides.items())))

    def blocks_per_sm(self) -> int:
        return self._config.get("min_blocks", 1)

    def tile(self) -> tuple[int, int]:
        cfg = self._config
        return cfg["block_m"], cfg["block_n"]


@functools.lru_cache(maxsize=None)
def _resolved(stage: str, overrides: tuple) -> dict:
    """The stage's full config for these overrides, checked once (the heuristic asks for every
    candidate's tile and blocks per SM many times per ranking)."""
    from ..stages import get

    return get(stage).config(dict(overrides))


SMALL_DIM_MAX = 128


def _c(stage, eff, label, small="", **kw):
    return Candidate(stage, kw, eff, label, small)


def applies(cand: Candidate, M: int, N: int) -> bool:
    """Whether the model ranks ``cand`` for an M x N output (its ``small`` restriction)."""
    return (not cand.small or (cand.small == "m" and M <= SMALL_DIM_MAX)
            or (cand.small == "n" and N <= SMALL_DIM_MAX))


# Hopper (TMA) tiles, largest first. Efficiencies: see the module docstring.
SM90 = (
    _c("s11", 0.75, "128x256 w64x64 (default)"),
    _c("s11", 0.76, "128x256 w64x64 ku4", k_unroll=4),  # measured: +1-3% over the default (tune, 2026-12-01)
    _c("s11", 0.755, "128x256 w64x64 ku8", k_unroll=8),
    _c("s11", 0.74, "128x256 w64x64 bk16 s8", block_k=16, stages=8),
    _c("s11", 0.72, "256x128 w64x64", block_m=256, block_n=128, warp_m=64, warp_n=64),
    _c("s11", 0.73, "256x128 w64x64 ku4", block_m=256, block_n=128, warp_m=64, warp_n=64, k_unroll=4),
    _c("s11", 0.62, "128x128 w32x64 x2", block_m=128, block_n=128, warp_m=32, warp_n=64, stages=3, min_blocks=2),
    _c("s11", 0.66, "128x128 w64x64 s3 x2", block_m=128, block_n=128, warp_m=64, warp_n=64, stages=3,
       min_blocks=2),
    _c("s11", 0.60, "128x128 w64x64", block_m=128, block_n=128, warp_m=64, warp_n=64),
    _c("s11", 0.62, "64x256 w32x64", block_m=64, block_n=256, warp_m=32, warp_n=64),
    # Mid tiles, several blocks per SM (cuBLAS's choice at 1e9-1e10 FLOP): efficiencies measured,
    # 0.76 x (128x256 ku4 time) / (tile time) at 4096^3 on the H200 (scripts/small_tile_probe.py,
    # results/h200/logs/small-tile-probe.txt: 2772 us against 64x64 x3 3479, 64x128 x2 3038,
    # 128x128 w64x64 bk16 ku1 x2 3093, 128x64 w64x32 bk16 ku1 x3 3101, 64x128 bk16 ku1 x3
    # 3282-3327, 128x128 w32x64 x2 3374, 128x64 w32x32 x2 3450-3475). The estimates they replace
    # (0.48-0.58) kept the tuner from ever timing them; block_k 16 and k_unroll 1 hold fragments
    # for 4 k, so three blocks fit. Four or five blocks of 64x64 (register-capped) ran slower than
    # three: 3677-3686 and 3857-3899 us.
    _c("s11", 0.69, "64x128 w32x64 x2", block_m=64, block_n=128, warp_m=32, warp_n=64, min_blocks=2),
    _c("s11", 0.64, "64x128 w32x64 bk16 ku1 x3", block_m=64, block_n=128, warp_m=32, warp_n=64, block_k=16,
       k_unroll=1, min_blocks=3),
    _c("s11", 0.68, "128x128 w64x64 bk16 ku1 x2", block_m=128, block_n=128, warp_m=64, warp_n=64, block_k=16,
       k_unroll=1, min_blocks=2),
    _c("s11", 0.68, "128x64 w64x32 bk16 ku1 x3", block_m=128, block_n=64, warp_m=64, warp_n=32, block_k=16,
       k_unroll=1, min_blocks=3),
    _c("s11", 0.61, "128x64 w32x32 x2", block_m=128, block_n=64, warp_m=32, warp_n=32, min_blocks=2),
    _c("s11", 0.61, "64x64 w32x32 x3", block_m=64, block_n=64, warp_m=32, warp_n=32, min_blocks=3),
    # 32x64 x4: 0.30 until 2026-12-07 (an estimate). It ran faster than that on small problems, where
    # its four blocks an SM fill the GPU that 64x64 x3 or 128x32 leave part empty: at 0.40, on fresh
    # random shapes (scripts/model_variant_probe.py --random 120, seeds 52-54, variant eff32x64_40,
    # H100 running the H200 table's plans, results/h100/logs/6e0b2d3/eff32x64-seed5*.txt) the 57
    # plans it changes ran 1.24x faster (geometric mean; worst 0.925, 160x773x588 tt), and auto
    # against cuBLAS over the 120 shapes of each seed rose 0.931 -> 0.960, 0.929 -> 0.964, 0.931 ->
    # 0.964 (rule written before the run: docs/dispatch.md, "Small batched GEMMs").
    _c("s11", 0.40, "32x64 w16x32 x4", block_m=32, block_n=64, warp_m=16, warp_n=32, min_blocks=4),
    # Decode-sized M (17-128): 32-row tiles with 16x64 warps (4x8 outputs per thread). H200,
    # scripts/small_m_probe.py (results/h200/logs/small-m-probe.txt), against the best of the tiles
    # above at the same shape: 24x4096x4096 48.2-48.4 us against 70.2 (s10 64x256 split 8), nt
    # 50.4 against 72.6; 80x5120x5120 155.1 against 176.3 (three 32-row tiles, 96 rows, against two
    # of 64, 128 rows); at M = 40-64, where a 64-row tile wastes no more, 2-4% slower than 64x128
    # x2. Efficiencies fitted so that the model picks the measured-fastest tile family on all
    # seven probe shapes (M = 24, 40, 64, 80, 112, 56 pick 32, 64, 64, 32, 64, 64 rows); refitted
    # (x1.1) when the mid tiles above were raised to their measured values, which keeps those picks.
    _c("s11", 0.54, "32x256 w16x64 s3 x2", small="m", block_m=32, block_n=256, warp_m=16, warp_n=64, stages=3,
       min_blocks=2),
    _c("s11", 0.47, "32x128 w16x64 x2", small="m", block_m=32, block_n=128, warp_m=16, warp_n=64, min_blocks=2),
    _c("s11", 0.47, "32x256 w16x64", small="m", block_m=32, block_n=256, warp_m=16, warp_n=64),
    # Decode-sized N (17-128, M large): tiles 32-64 columns wide (PROBE_SIDE=n scripts/small_m_probe.py,
    # results/h200/logs/small-n-probe.txt): 4096x24x4096 50.6 / 44.0 us (nn / tn) against 76.3 /
    # 69.4 (s10 128x64 split 8), 5120x80x5120 154.3 / 133.5 against 180.6 / 169.9, 4096x64x8192
    # 115.6 / 106.0 against 129.3 / 116.1. 256x64 was within 3% of the fastest on 12 of 12 runs
    # where it fits; efficiencies fitted as for the 32-row tiles (6 of 7 shapes pick the measured
    # family; 2048x128x8192 keeps 256x128 split 16, 4% slower than 256x64 split 8); refitted with
    # the mid tiles as for the 32-row tiles.
    _c("s11", 0.69, "256x64 w32x64", small="n", block_m=256, block_n=64, warp_m=32, warp_n=64),
    _c("s11", 0.52, "128x32 w32x32 x2", small="n", block_m=128, block_n=32, warp_m=32, warp_n=32,
       min_blocks=2),
    _c("s11", 0.50, "256x32 w32x32", small="n", block_m=256, block_n=32, warp_m=32, warp_n=32),
)

# Ampere-class (cp.async) tiles: used where TMA cannot run (compute capability 8.x, or operands
# TMA cannot describe and that are not repacked).
SM80 = (
    _c("s10", 0.70, "128x256 w64x64 (default)"),
    _c("s10", 0.60, "128x128 w32x64 x2", block_m=128, block_n=128, warp_m=32, warp_n=64, stages=3, min_blocks=2),
    _c("s10", 0.55, "64x128 w32x64 x2", block_m=64, block_n=128, warp_m=32, warp_n=64, stages=3, min_blocks=2),
    _c("s10", 0.45, "64x64 w32x32 x3", block_m=64, block_n=64, warp_m=32, warp_n=32, stages=3, min_blocks=3),
    _c("s10", 0.28, "32x64 w16x32 x4", block_m=32, block_n=64, warp_m=16, warp_n=32, stages=3, min_blocks=4),
)

# Older GPUs: the classic ladder's best config.
FALLBACK = (_c("s09", 0.6, "s09 default"),)


def candidates(cc: int) -> tuple:
    """The candidates for a GPU of compute capability ``cc`` (x10)."""
    if cc >= 90:
        return SM90
    if cc >= 80:
        return SM80
    return FALLBACK


def candidate_for(stage: str, config: dict, cc: int = 90) -> Candidate:
    """The space's candidate whose full config is ``config`` (with its efficiency estimate), else
    one made for it with the median efficiency of the candidates for compute capability ``cc``
    (a tuned table may hold configs the space does not list)."""
    full = tuple(sorted(config.items()))
    for c in SM90 + SM80 + FALLBACK:
        if c.stage == stage:
            try:
                if tuple(sorted(c.config().items())) == full:
                    return c
            except Exception:  # an illegal space entry: the tests say so
                continue
    effs = sorted(c.efficiency for c in candidates(cc))
    return Candidate(stage, dict(config), effs[len(effs) // 2], "tuned config")
