"""Every registered stage compiles for sm_90 (and sm_80 where it can run there) in every
instantiation, with no local memory, and shows the SASS that proves its mechanism."""
import pytest

import gemmlab
from gemmlab.analysis import sass
from gemmlab.api import kernel_for
from gemmlab.errors import ConfigError
from gemmlab.stages import all_stages, get
from script_loader import load_script

STAGES = all_stages()


def _cases():
    for spec in STAGES:
        cfg = spec.default_config
        for arch in ("sm_90", "sm_80"):
            if int(arch[3:]) < spec.min_cc:
                continue
            for i, variant in enumerate(spec.variants(cfg)):
                yield pytest.param(spec.id, arch, i, id=f"{spec.id}-{arch}-{spec.kernel_name(cfg, variant)[len('gemmlab_'):]}")


def test_registry_order_and_fields():
    ids = [s.id for s in STAGES]
    assert ids[0] == "s01"
    assert ids == sorted(ids, key=lambda i: (i == "tuned", i))
    for s in STAGES:
        assert s.name and s.adds and s.notes, s.id
        assert s.header == f"{s.id}_{s.name}.cuh"
        assert [x.id for x in gemmlab.stages()] == ids
        assert get(s.id) is s and get(s.name) is s


@pytest.mark.parametrize("stage_id,arch,index", list(_cases()))
def test_stage_compiles_without_spills_and_shows_its_sass(stage_id, arch, index):
    spec = get(stage_id)
    cfg = spec.default_config
    variants = spec.variants(cfg)
    variant = variants[index]
    ck = kernel_for(spec, cfg, variant, arch)
    res = sass.resources(ck.cubin)
    assert res["local_bytes"] == 0, f"{ck.name} uses {res['local_bytes']} B of local memory (spills)"
    insns = sass.instructions(ck.cubin)
    assert not sass.has_opcode(insns, "LDL") and not sass.has_opcode(insns, "STL"), f"{ck.name} spills"
    if arch == "sm_90":
        if index == 0:
            wanted = spec.sass
        elif index == len(variants) - 1 and spec.aligned_path:
            wanted = spec.sass_scalar
        else:
            wanted = ()
        missing = [op for op in wanted if not sass.has_opcode(insns, op)]
        assert not missing, f"{ck.name}: declared SASS {missing} not found; mix {sass.mix(insns)}"
        assert sass.has_opcode(insns, "FFMA")
    assert_waits_before_global_memory(sass.instructions(ck.cubin, ck.name), arch, ck.name)


GLOBAL_OPS = ("LDG", "STG", "LDGSTS", "UTMALDG", "UTMASTG", "UTMAPF", "UBLKCP", "RED", "ATOMG")


def assert_waits_before_global_memory(insns, arch, name):
    """A plan launches its later kernels as programmatic dependents (kernels/ptx/grid_dependency.cuh):
    on sm_90 the kernel's first instruction that touches global memory must come after
    griddepcontrol.wait (ACQBULK), and no launch_dependents (PREEXIT: an early trigger, which
    placed the next kernel's blocks unevenly); before sm_90 the wait is not compiled (and the host
    never launches such a kernel as a dependent)."""
    ops = [i.op.split(".")[0] for i in insns]
    first_global = next((k for k, op in enumerate(ops) if op in GLOBAL_OPS), len(ops))
    if int(arch[3:5]) >= 90:
        assert "ACQBULK" in ops[:first_global], f"{name}: global memory touched before griddepcontrol.wait"
    assert "PREEXIT" not in ops, f"{name}: griddepcontrol.launch_dependents (an early trigger)"
    if int(arch[3:5]) < 90:
        assert "ACQBULK" not in ops, name


@pytest.mark.parametrize("stage_id", [s.id for s in STAGES])
def test_config_errors_name_the_problem(stage_id):
    spec = get(stage_id)
    with pytest.raises(ConfigError, match="unknown config key 'no_such_param'"):
        spec.config({"no_such_param": 1})
    if spec.params:
        p = spec.params[0]
        with pytest.raises(ConfigError, match="not an integer"):
            spec.config({p.name: "x"})
    assert spec.config() == spec.default_config
    assert spec.constraints(spec.default_config) == []


def test_unknown_stage_lists_the_known_ones():
    with pytest.raises(ConfigError, match="unknown stage 's99'.*s01"):
        get("s99")


def test_s01_block_constraint_is_enforced():
    spec = get("s01")
    with pytest.raises(ConfigError, match="multiple of 32"):
        spec.config({"block_n": 48})
    with pytest.raises(ConfigError, match="32..1024"):
        spec.config({"block_m": 64, "block_n": 32})


@pytest.mark.parametrize("stage_id", [s.id for s in STAGES])
def test_separate_c_variant_compiles_without_spills(stage_id):
    """The variant for a c that is not the output (GEMMLAB_SEPARATE_C: the epilogue reads C with
    its own strides) compiles for sm_90 without local memory, and is a kernel of its own."""
    spec = get(stage_id)
    cfg = spec.default_config
    variant = spec.variants(cfg)[0]
    ck = kernel_for(spec, cfg, {**variant, "sep_c": 1}, "sm_90")
    assert ck.name.endswith("_sc1"), ck.name
    res = sass.resources(ck.cubin)
    assert res["local_bytes"] == 0, f"{ck.name} uses {res['local_bytes']} B of local memory (spills)"
    plain = kernel_for(spec, cfg, variant, "sm_90")
    assert plain.cubin != ck.cubin


@pytest.mark.parametrize("tile", [(128, 256, 64, 64), (64, 256, 32, 64)], ids=["128x256", "64x256"])
@pytest.mark.parametrize("a_k_major,b_n_major", [(1, 1), (1, 0), (0, 1), (0, 0)], ids=["nn", "nt", "tn", "tt"])
def test_separate_c_epilogue_of_the_large_s11_tiles_keeps_registers(tile, a_k_major, b_n_major):
    """The separate-c epilogue holds two rows of C in registers (mma/warp_tile.cuh store_with_c):
    on the tiles the runtime picks most (a linear layer's bias goes through them), in every
    operand layout, it compiles without local memory and within the 255 registers a thread has."""
    spec = get("s11")
    bm, bn, wm, wn = tile
    cfg = spec.config({"block_m": bm, "block_n": bn, "warp_m": wm, "warp_n": wn, "k_unroll": 4 if bm == 128 else 2})
    variant = {"a_k_major": a_k_major, "b_n_major": b_n_major, "sep_c": 1}
    res = sass.resources(kernel_for(spec, cfg, variant, "sm_90").cubin)
    assert res["local_bytes"] == 0, res
    assert res["registers"] <= 255, res


def _space_cases():
    from gemmlab.heuristics import space

    for cand in space.SM90:
        yield pytest.param(cand, id=cand.label)


@pytest.mark.parametrize("cand", list(_space_cases()))
def test_every_tuner_config_compiles_for_sm90_without_spills(cand):
    """What heuristics/space.py promises of each config: its first (fast-path) variant compiles
    for sm_90 with no local memory, within the registers its min_blocks asks for."""
    spec = cand.spec()
    cfg = cand.config()
    ck = kernel_for(spec, cfg, spec.variants(cfg)[0], "sm_90")
    res = sass.resources(ck.cubin)
    assert res["local_bytes"] == 0, f"{ck.name} uses {res['local_bytes']} B of local memory (spills)"
    assert res["registers"] * spec.threads(cfg) * cand.blocks_per_sm() <= 65536, (ck.name, res["registers"])


# The s10 stand-ins that spilled in their K loop on unaligned problems at split 1 (NVRTC 13.0,
# scripts/s10_spill_scan.py, 2026-12-04) before their edge blocks moved inside the operands
# (s11_tma.STAND_IN_EDGE_SHIFT, 2026-12-05): 128x64 w32x32 x2's fragment prefetch at 128 registers,
# and 64x64 x3 in nt (K-major fragments of both operands; four more nt tiles spilled until their
# stand-in took one block an SM fewer: s11_tma.NT_STAND_IN_FEWER_BLOCKS, measured in
# scripts/s10_spill_probe.py, whose cases these are). With the edge blocks moved none spills.
S10_K_LOOP_SPILLS_BEFORE_EDGE_SHIFT = {
    "nn": {"128x64 w32x32 x2"},
    "nt": {"64x64 w32x32 x3"},
    "tn": {"128x64 w32x32 x2"},
    "tt": set(),
}


@pytest.mark.parametrize("layout", ["nn", "nt", "tn", "tt"])
def test_the_s10_stand_ins_of_unaligned_problems_do_not_spill(layout):
    """Every tile of the space as s10 runs it for an unaligned problem of this layout (4-byte
    copies, the edge blocks moved inside, split 1): no local loads or stores in the K loop, so
    that a kernel change that adds a spill to the unaligned path shows. The cubin's local size
    stays 0 for such spills (they go to the stack frame), so this reads the SASS."""
    from gemmlab.stages import s11_tma

    assert s11_tma.STAND_IN_EDGE_SHIFT
    scan = load_script("s10_spill_scan")
    spilling = set()
    for label, _, splits, spec, cfg, variant in scan.instantiations((layout,)):
        assert cfg.get("edge_shift") == 1, (label, cfg)
        if splits == 1 and scan.spills(spec, cfg, variant)["loop"]:
            spilling.add(label)
    assert spilling == set()


def test_the_nt_stand_ins_with_a_swizzled_do_not_spill(monkeypatch):
    """s11_tma.STAND_IN_A_SWIZZLE (off until timed): every tile's nt stand-in on 4-byte copies takes
    a_swizzle 1 and keeps its K loop free of local loads and stores (the swizzle's per-group XOR
    costs registers: 128x64 w32x32 at 2 blocks an SM spills 80 bytes with it, a block the nt
    stand-in does not keep)."""
    from gemmlab.stages import s11_tma

    monkeypatch.setattr(s11_tma, "STAND_IN_A_SWIZZLE", True)
    scan = load_script("s10_spill_scan")
    spilling = set()
    for label, _, splits, spec, cfg, variant in scan.instantiations(("nt",)):
        assert cfg.get("a_swizzle") == 1, (label, cfg)
        if splits == 1 and scan.spills(spec, cfg, variant)["loop"]:
            spilling.add(label)
    assert spilling == set()


@pytest.mark.parametrize("layout", ["nn", "tn", "tt"])
def test_the_stand_ins_at_block_k_16_do_not_spill(monkeypatch, layout):
    """s11_tma.STAND_IN_BLOCK_K16 (on since 2026-12-06): the stand-ins on 4-byte copies of nn, tn and
    tt whose tile has K tiles of 32 take 16 in 4 stages where s10 allows it (32x256 w16x64 does not:
    its transposing copy), and their K loops stay free of local loads and stores."""
    from gemmlab.stages import s11_tma

    def legal_at_16(cfg):
        try:
            get("s10").config({**cfg, "block_k": 16, "stages": 4, "k_unroll": min(cfg["k_unroll"], 4)})
        except ConfigError:
            return False
        return True

    scan = load_script("s10_spill_scan")
    monkeypatch.setattr(s11_tma, "STAND_IN_BLOCK_K16", False)
    before = {label: cfg["block_k"] for label, _, splits, _, cfg, _ in scan.instantiations((layout,)) if splits == 1}
    monkeypatch.setattr(s11_tma, "STAND_IN_BLOCK_K16", True)
    spilling, moved = set(), 0
    for label, _, splits, spec, cfg, variant in scan.instantiations((layout,)):
        assert cfg["block_k"] <= 16 or not legal_at_16(cfg), (label, cfg)
        if splits == 1:
            moved += before[label] == 32
            if scan.spills(spec, cfg, variant)["loop"]:
                spilling.add(label)
    assert moved > 0 and spilling == set()


def test_the_s10_spill_probe_cases_are_runnable():
    """scripts/s10_spill_probe.py (for the H200) on the CPU: each case is a K-loop spill the set
    above held (or a cluster split of one), every alternative is a legal s10 config that keeps
    the tile, and every shape is unaligned in the case's layout, so that s10's 4-byte path runs."""
    from gemmlab.problem import Problem

    probe = load_script("s10_spill_probe")
    for label, lay, split, alts, shapes in probe.CASES:
        assert split > 1 or label in S10_K_LOOP_SPILLS_BEFORE_EDGE_SHIFT[lay] or lay == "nt", (label, lay)
        spec, configs = probe.builds(label, alts)
        assert spec.id == "s10" and len(configs) == 1 + len(alts)
        assert len({(c["block_m"], c["block_n"]) for c in configs.values()}) == 1
        for M, N, K, b in shapes:
            p = Problem.dense(M, N, K, lay, b, a_ptr=1 << 40, b_ptr=2 << 40, d_ptr=3 << 40)
            assert not p.operands_aligned() and spec.variant(configs["as is"], p)["vec"] == 0, (M, N, K, lay)
