"""The shared-memory bank model (000 §8.1–8.5): the rules, the notes' table, every stage's own
addressing."""
import pytest

from gemmlab.analysis import banks
from gemmlab.stages import all_stages


def lanes(f):
    return [f(i) for i in range(32)]


# ---- the rules of §8.1-8.2 -------------------------------------------------------------------
@pytest.mark.parametrize("model", banks.MODELS)
def test_32bit_rules(model):
    wf = lambda addrs: banks.wavefronts(4, addrs, model)  # noqa: E731
    assert wf(lanes(lambda i: 4 * i)) == 1                 # 32 banks, one word each
    assert wf(lanes(lambda i: 0)) == 1                     # broadcast
    assert wf(lanes(lambda i: 4 * (i // 4))) == 1          # groups of 4 lanes share a word
    assert wf(lanes(lambda i: 8 * i)) == 2                 # stride 2 words: 2-way
    assert wf(lanes(lambda i: 128 * i)) == 32              # all in bank 0, 32 words
    assert wf(lanes(lambda i: 128 * (i % 2))) == 2         # two words of bank 0
    assert wf(lanes(lambda i: 4 * i if i < 16 else None)) == 1
    assert wf([None] * 32) == 0
    # bank conflict is about words, not bytes: 33-float rows (padding) make a column read conflict-free
    assert wf(lanes(lambda i: 4 * 33 * i)) == 1
    assert wf(lanes(lambda i: 4 * 32 * i)) == 32


@pytest.mark.parametrize("model", banks.MODELS)
def test_64_and_128_bit_split_into_half_and_quarter_warps(model):
    # 64-bit: two half-warps, each 16 x 8 B = 128 B: 2 wavefronts when conflict-free
    assert banks.wavefronts(8, lanes(lambda i: 8 * i), model) == 2
    assert banks.wavefronts(8, lanes(lambda i: 16 * i), model) == 4      # 2-way in each half
    # 128-bit: four quarter-warps of 8 x 16 B
    assert banks.wavefronts(16, lanes(lambda i: 16 * i), model) == 4
    assert banks.wavefronts(16, lanes(lambda i: 32 * i), model) == 8     # 2-way in each quarter
    # conflicts only count inside a phase: lanes 0 and 8 on bank 0 do not conflict for 128-bit
    a = banks.analyse(16, lanes(lambda i: 16 * (i % 8) + 128 * (i // 8)), model)
    assert a.wavefronts == 4 and a.ideal == 4
    # ... but do for 32-bit (one phase)
    assert banks.wavefronts(4, lanes(lambda i: 4 * (i % 8) + 128 * (i // 8)), model) == 4


def test_uniform_pairs_merge_quarter_warps():
    # condition A (i == i^1) and condition B (i == i^2): four quarter-warp requests become two
    xor1 = lanes(lambda i: 16 * (i // 2))
    xor2 = lanes(lambda i: 16 * ((i >> 2) * 2 + (i & 1)))
    assert banks.pair_rule(xor1, 1) and not banks.pair_rule(xor1, 2)
    assert banks.pair_rule(xor2, 2) and not banks.pair_rule(xor2, 1)
    for model in banks.MODELS:
        assert banks.analyse(16, xor1, model).merged == "xor1"
        assert banks.analyse(16, xor2, model).merged == "xor2"
        assert banks.wavefronts(16, xor1, model) == 2
        assert banks.wavefronts(16, xor2, model) == 2
        assert banks.wavefronts(16, [0] * 32, model) == 2              # uniform: 4 -> 2 requests
        # the forum's counter-example: tid % 4 * 16 meets neither rule -> 4
        assert banks.wavefronts(16, lanes(lambda i: 16 * (i % 4)), model) == 4
    # an inactive lane satisfies the rule
    one_off = lanes(lambda i: None if i == 5 else 16 * (i // 2))
    assert banks.pair_rule(one_off, 1)
    # stores never merge
    assert banks.wavefronts(16, xor1, "notes", "store") == 4


def test_models_differ_where_merged_quarter_warps_conflict():
    # i^1 pairs; quarter-warps 0 and 1 use the same banks at different words
    addrs = lanes(lambda i: 16 * ((i % 8) // 2) + 256 * (i // 8))
    assert banks.wavefronts(16, addrs, "notes") == 2          # the notes: the pair costs its larger half
    assert banks.wavefronts(16, addrs, "hardware") == 4       # one half-warp phase: 2-way conflict
    # 64-bit uniform pairs: the notes keep two half-warps, the hardware reading packs them
    pairs64 = lanes(lambda i: 8 * (i // 2))
    assert banks.wavefronts(8, pairs64, "notes") == 2
    assert banks.wavefronts(8, pairs64, "hardware") == 1


def test_stores_count_words_once():
    assert banks.wavefronts(4, [0] * 32, op="store") == 1
    assert banks.wavefronts(4, lanes(lambda i: 8 * i), op="store") == 2
    assert banks.wavefronts(16, lanes(lambda i: 16 * i), op="store") == 4


def test_bad_input_is_refused_with_a_reason():
    with pytest.raises(ValueError, match="aligned"):
        banks.wavefronts(16, lanes(lambda i: 4 * i))
    with pytest.raises(ValueError, match="32 lanes"):
        banks.wavefronts(4, [0] * 16)
    with pytest.raises(ValueError, match="width"):
        banks.wavefronts(12, [0] * 32)
    with pytest.raises(ValueError, match="bank model"):
        banks.wavefronts(4, [0] * 32, "guess")


# ---- the notes' table (§8.4-8.5) --------------------------------------------------------------
def test_notes_table_10_6_6_4_6():
    t = banks.reference_table("notes")
    assert [t[p]["total"] for p in ("rowmajor", "padding", "swizzle", "zorder", "split4x4")] == [10, 6, 6, 4, 6]
    assert (t["rowmajor"]["a"], t["rowmajor"]["b"]) == (2, 8)          # §8.4: 2 + 8
    for name, (a, b) in banks.NOTES_TABLE.items():
        assert (t[name]["a"], t[name]["b"]) == (a, b), name


def test_notes_table_holds_at_every_k():
    for k in range(8):
        for name, (a, b) in banks.NOTES_TABLE.items():
            p = banks.reference_pattern(name, k)
            assert banks.analyse_kind(p["a_load"], model="notes")["wavefronts"] == a, (name, k)
            assert banks.analyse_kind(p["b_load"], model="notes")["wavefronts"] == b, (name, k)


def test_reference_patterns_match_the_notes_walkthrough():
    p = banks.reference_pattern("rowmajor")
    width, b = p["b_load"][0]
    base = b[0]
    # §8.4 table: lanes 0..7 read B[0:4], B[8:12], ..., B[56:60]
    assert [(x - base) // 4 for x in b[:8]] == [0, 8, 16, 24, 32, 40, 48, 56]
    a = banks.analyse(width, b)
    assert a.worst_bank[1] == 0 and [lane for lane, _ in a.worst_bank[2]] == [0, 4]   # lanes 0 and 4, bank 0
    # A: the 8 lanes of a quarter-warp read one float4; condition A merges
    ra = banks.analyse(*p["a_load"][0])
    assert len(set(p["a_load"][0][1][:8])) == 1 and ra.merged == "xor1"
    # Z-order (§8.5 scheme 3): xor 1 keeps the column (B shared), xor 2 keeps the row (A shared)
    z = banks.reference_pattern("zorder")
    assert banks.analyse(*z["a_load"][0]).merged == "xor2"
    assert banks.analyse(*z["b_load"][0]).merged == "xor1"


def test_literal_schemes_1_and_2_leave_b_at_8():
    # Padding or swizzling As alone cannot change the B read: the notes' 4 needs the fix on Bs too.
    t = banks.reference_table("notes", literal=True)
    assert (t["padding"]["a"], t["padding"]["b"]) == (2, 8)
    assert (t["swizzle"]["a"], t["swizzle"]["b"]) == (2, 8)


def test_hardware_reading_of_zorder():
    t = banks.reference_table("hardware")
    assert [t[p]["total"] for p in ("rowmajor", "padding", "swizzle", "zorder", "split4x4")] == [10, 6, 6, 6, 6]


# ---- every registered stage's own addressing --------------------------------------------------
STAGES = all_stages()


@pytest.mark.parametrize("stage_id", [s.id for s in STAGES])
def test_stage_addressing_is_well_formed(stage_id):
    spec = next(s for s in STAGES if s.id == stage_id)
    acc = spec.smem_accesses(spec.default_config) or {}
    assert set(acc) <= set(banks.KINDS), f"{stage_id}: unknown kinds {set(acc) - set(banks.KINDS)}"
    res = banks.stage_smem(spec, spec.default_config)
    if not acc:
        assert res == {}
        return
    for kind in banks.KINDS:
        for width, addrs in acc.get(kind) or []:
            assert width in (4, 8, 16) and len(addrs) == 32
        r = res[kind]
        if r["instructions"]:
            assert r["wavefronts"] >= r["ideal"] >= 1


@pytest.mark.parametrize("stage_id", [s for s in banks.STAGE_PATTERN if s in {x.id for x in STAGES}])
def test_stage_counts_are_set_against_the_notes(stage_id):
    """The ladder's bank stages either give the notes' counts, or explain says so and why."""
    from gemmlab.analysis import explain

    r = explain.report(stage_id)
    nc = r["smem_notes"]
    assert nc is not None and nc["pattern"] == banks.STAGE_PATTERN[stage_id]
    if stage_id == "s07":
        # s07 uses the notes' baseline addressing: 4x8 row-major lanes, As transposed, LDS.128
        assert (nc["model"]["a_load"], nc["model"]["b_load"]) == (2, 8)
    if not nc["agrees"]:
        assert nc["why"]["a_load"] and nc["why"]["b_load"]
