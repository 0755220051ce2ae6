"""The SASS inspector: resources and mix per kernel, the main loop by its back edge, .reuse and
register-bank conflicts (000 §11, 002), on hand-written SASS and on a register-tiled test kernel."""
import json
import subprocess
import sys

import pytest

from gemmlab.analysis import sass
from gemmlab.analysis.sass import Insn
from gemmlab.jit import compile_cubin

# A register-tiled kernel with a real main loop: per K tile of 8, each thread reads 8 A and 8 B
# values per k and does an 8x8 outer product (000 §5.3); the K loop sits inside a batch loop.
REGTILE = r'''
extern "C" __global__ void __launch_bounds__(256) gemmlab_test_regtile(
        const float* __restrict__ A, const float* __restrict__ B, float* __restrict__ C, int K, int batches) {
    __shared__ float As[8][128];
    __shared__ float Bs[8][128];
    const int tid = threadIdx.x;
    const int row = (tid / 16) * 8, col = (tid % 16) * 8;
    for (int b = 0; b < batches; ++b) {
        float acc[8][8] = {};
        for (int k0 = 0; k0 < K; k0 += 8) {
            for (int i = tid; i < 8 * 128; i += 256) {
                As[i / 128][i % 128] = A[(size_t)b * K * 128 + (size_t)(k0 + i / 128) * 128 + i % 128];
                Bs[i / 128][i % 128] = B[(size_t)b * K * 128 + (size_t)(k0 + i / 128) * 128 + i % 128];
            }
            __syncthreads();
#pragma unroll
            for (int k = 0; k < 8; ++k) {
                float a[8], bb[8];
#pragma unroll
                for (int i = 0; i < 8; ++i) { a[i] = As[k][row + i]; bb[i] = Bs[k][col + i]; }
#pragma unroll
                for (int i = 0; i < 8; ++i)
#pragma unroll
                    for (int j = 0; j < 8; ++j) acc[i][j] += a[i] * bb[j];
            }
            __syncthreads();
        }
#pragma unroll
        for (int i = 0; i < 8; ++i)
#pragma unroll
            for (int j = 0; j < 8; ++j) C[(size_t)b * 128 * 128 + (row + i) * 128 + col + j] = acc[i][j];
    }
}

extern "C" __global__ void gemmlab_test_other(float* x) { x[threadIdx.x] += 1.0f; }
'''


@pytest.fixture(scope="module")
def regtile():
    return compile_cubin(REGTILE, "gemmlab_test_regtile", "sm_90").cubin


def test_resources_and_functions_are_per_kernel(regtile):
    res = sass.all_resources(regtile)
    assert set(res) == {"gemmlab_test_regtile", "gemmlab_test_other"}
    r = sass.resources(regtile, "gemmlab_test_regtile")
    # sm_90 cubins count the 1 KB the driver reserves per block in their static shared size
    assert r["shared_bytes"] == 2 * 8 * 128 * 4 + 1024 and r["local_bytes"] == 0
    r80 = sass.resources(compile_cubin(REGTILE, "gemmlab_test_regtile", "sm_80").cubin, "gemmlab_test_regtile")
    assert r80["shared_bytes"] == 2 * 8 * 128 * 4
    assert 64 < r["registers"] <= 255            # 64 accumulators at least
    fns = sass.functions(regtile)
    assert not any(x.op.startswith("FFMA") for x in fns["gemmlab_test_other"])
    with pytest.raises(KeyError, match="not in the cubin"):
        sass.resources(regtile, "nope")


def test_main_loop_is_the_k_loop_not_the_batch_loop(regtile):
    ins = sass.instructions(regtile, "gemmlab_test_regtile")
    assert len(sass.loops(ins)) >= 3                                 # copy loop, K loop, batch loop
    body = sass.main_loop(ins)
    ops = [x.op for x in body]
    assert sum(op.startswith("FFMA") for op in ops) == 8 * 8 * 8     # BK x TM x TN per K tile
    assert sum(sass.classify(op) == "LDS.128" for op in ops) == 8 * 4  # 2 A + 2 B float4 per k
    assert any(op.startswith("BAR") for op in ops)
    assert not any(op.startswith("STG") for op in ops)               # the epilogue is outside
    info = sass.inspect(regtile, "gemmlab_test_regtile")
    assert info["main_loop_ffma"] == 512
    assert 0.5 < info["main_loop_ffma_share"] < 1.0
    assert info["mix"]["FFMA"] == 512 and info["mix"]["LDS.128"] == 32
    assert 0.0 < info["reuse_share"] < 1.0                           # nvcc marks some operands
    assert info["register_stats_scope"] == "main loop"


def test_stage_cubins_hold_gemmlab_copy_and_it_is_left_out():
    from gemmlab.api import kernel_for
    from gemmlab.stages import get

    spec = get("s01")
    ck = kernel_for(spec, spec.default_config, {}, "sm_90")
    assert "gemmlab_copy" in sass.all_resources(ck.cubin)
    own = sass.instructions(ck.cubin, ck.name)
    assert sass.instructions(ck.cubin) == own                        # default: the stage's kernel
    assert len(own) < sum(len(v) for v in sass.functions(ck.cubin).values())
    info = sass.inspect(ck.cubin, ck.name)
    assert info["kernel"] == ck.name
    # s01's K loop is unrolled `unroll` times: one FFMA and two loads per k in the main loop
    unroll = spec.default_config["unroll"]
    assert info["main_loop_ffma"] == unroll and info["main_loop_mix"]["LDG"] == 2 * unroll


def test_mix_classes():
    cases = {"LDS": "LDS", "LDS.U": "LDS", "LDS.U.128": "LDS.128", "LDS.128": "LDS.128", "LDS.64": "LDS.64",
             "LDSM.16.M88.4": "LDSM", "STS.128": "STS.128", "STS": "STS", "LDG.E": "LDG",
             "LDG.E.CONSTANT": "LDG", "LDG.E.128": "LDG.E.128", "LDG.E.128.CONSTANT": "LDG.E.128",
             "LDG.E.64": "LDG.E.64", "STG.E": "STG", "STG.E.64": "STG.E.64", "STG.E.128": "STG.E.128",
             "LDGSTS.E.BYPASS.LTC128B.128": "LDGSTS", "UTMALDG.2D": "UTMALDG",
             "SYNCS.ARRIVE.TRANS64.RED.A1T0": "SYNCS", "BAR.SYNC.DEFER_BLOCKING": "BAR", "FFMA.FTZ": "FFMA",
             "IMAD.MOV.U32": "IMAD", "LDL.LU": "LDL", "MUFU.RCP": None}
    for op, want in cases.items():
        assert sass.classify(op) == want, op
    ins = [Insn(0, "LDS.U.128", "R4, [R2]", ""), Insn(16, "LDS.U.128", "R8, [R2+0x10]", "")]
    assert sass.has_opcode(ins, "LDS.128") and not sass.has_opcode(ins, "LDS")
    assert sass.mix(ins) == {"LDS.128": 2, "total": 2}


def _ins(text):
    """Hand-written SASS lines 'OP operands' -> Insn list at 16-byte steps."""
    out = []
    for i, line in enumerate(text.strip().splitlines()):
        op, _, rest = line.strip().partition(" ")
        out.append(Insn(16 * i, op, rest.strip(), ""))
    return out


def test_reuse_share_and_reuse_cache_hits():
    ins = _ins("""
        FFMA R1, R2.reuse, R3, R1
        FFMA R4, R2.reuse, R5, R4
        FFMA R6, R2, R7.reuse, R6
        FFMA R8, R9, R7, R8
    """)
    st = sass.ffma_register_stats(ins)
    assert st["ffma"] == 4 and st["ffma_source_registers"] == 12
    assert st["reuse_share"] == pytest.approx(3 / 12)
    # slot 0 R2 is served twice from the cache; R7 flagged in slot 1 is read next in slot 1: served
    assert st["reuse_hit_share"] == pytest.approx(3 / 12)
    # a different slot or an instruction in between breaks the chain
    ins2 = _ins("""
        FFMA R1, R2.reuse, R3, R1
        IADD3 R10, R11, R12, RZ
        FFMA R4, R2, R5, R4
        FFMA R6, R7, R2, R6
    """)
    assert sass.ffma_register_stats(ins2)["reuse_hit_share"] == 0.0


def test_reuse_cache_of_one_entry_per_slot_and_bank():
    """cuBLAS's FFMA order (two B registers of different banks flagged in turn in slot 1): one
    entry a slot serves only A's second use; one a slot and bank also serves B's from the third
    FFMA on. A register of the other bank leaves an entry alone; one of the same bank read
    without the flag takes it out."""
    ins = _ins("""
        FFMA R45, R82.reuse, R74.reuse, R45
        FFMA R49, R82, R75.reuse, R49
        FFMA R44, R83.reuse, R74.reuse, R44
        FFMA R48, R83, R75.reuse, R48
    """)
    assert sass.ffma_register_stats(ins, banks=2)["reuse_hit_share"] == pytest.approx(2 / 12)
    per_bank = sass.ffma_register_stats(ins, banks=2, reuse_per_bank=True)
    assert per_bank["reuse_hit_share"] == pytest.approx(4 / 12)
    # the 1st (R82, R74 in bank 0) and the 2nd (R75, R49 in bank 1) conflict; once both B registers
    # are cached, the 3rd reads R83 and R44 (banks 1, 0) and the 4th R48 alone
    assert per_bank["reg_bank_conflicts"] == 2
    evicted = _ins("""
        FFMA R1, R2, R4.reuse, R1
        FFMA R3, R2, R6, R3
        FFMA R5, R2, R4, R5
    """)
    assert sass.ffma_register_stats(evicted, banks=2, reuse_per_bank=True)["reuse_hit_share"] == 0.0


def test_register_bank_conflicts():
    ins = _ins("""
        FFMA R0, R4, R8, R0
        FFMA R1, R5, R10, R1
        FFMA R2, R6, R6, R2
        FFMA R3, R7, c[0x0][0x10], R11
        FFMA R12, R16.reuse, R20, R24
        FFMA R13, R16, R20, R28
        FFMA R14, -R5, |R9|, R13
    """)
    st = sass.ffma_register_stats(ins)
    # 1: R4, R8, R0 all bank 0 -> 2 extra reads; 2: R5, R10, R1 -> banks 1, 2, 1 -> 1 extra;
    # 3: R6 twice is one read, R2 bank 2 with R6 -> 1 extra; 4: constant operand, R7/R11 bank 3 -> 1;
    # 5: R16, R20, R24 all bank 0 -> 2; 6: R16 from the reuse cache, R20, R28 bank 0 -> 1;
    # 7: R5, R9, R13 all bank 1 (modifiers do not change the register) -> 2
    assert st["reg_bank_conflicts"] == 7
    assert st["reg_bank_conflict_cycles"] == 2 + 1 + 1 + 1 + 2 + 1 + 2
    clean = _ins("FFMA R0, R1, R2, R3\nFFMA R4, R5.reuse, R6, R7\nFFMA R8, R5, R6, R8")
    assert sass.ffma_register_stats(clean)["reg_bank_conflicts"] == 0


def test_main_loop_choice_on_hand_written_loops():
    # an outer loop (0x00..0xa0) around an inner loop (0x20..0x60); a remainder loop (0xb0..0xd0)
    ins = _ins("""
        IADD3 R1, R1, 0x1, RZ
        NOP
        FFMA R2, R3, R4, R2
        FFMA R5, R3, R4, R5
        ISETP.NE.AND P0, PT, R1, RZ, PT
        NOP
        BRA 0x20
        FFMA R9, R3, R4, R9
        STG.E desc[UR4][R10.64], R2
        NOP
        BRA 0x0
        FFMA R6, R3, R4, R6
        BRA 0xb0
    """)
    body = sass.main_loop(ins)
    assert (body[0].addr, body[-1].addr) == (0x20, 0x60)
    # two versions of the K loop (0x10..0x40, 0x60..0x90) inside a batch loop that holds more
    # FFMAs than either, and a loop 0x30..0xd0 that overlaps the first version and encloses the second
    ins = _ins("""
        NOP
        FFMA R2, R3, R4, R2
        FFMA R5, R3, R4, R5
        IADD3 R1, R1, 0x1, RZ
        BRA 0x10
        NOP
        FFMA R2, R3, R4, R2
        FFMA R5, R3, R4, R5
        FFMA R6, R3, R4, R6
        BRA 0x60
        FFMA R7, R3, R4, R7
        STG.E desc[UR4][R10.64], R2
        FFMA R8, R3, R4, R8
        BRA 0x30
        BRA 0x0
    """)
    body = sass.main_loop(ins)
    assert (body[0].addr, body[-1].addr) == (0x60, 0x90)
    assert sass.main_loop(_ins("FFMA R0, R1, R2, R0\nEXIT")) == []
    st = sass.main_loop_stats(_ins("FFMA R0, R1, R2, R0\nEXIT"))
    assert st["main_loop_ffma_share"] == 0.0 and st["register_stats_scope"] == "whole kernel"


def test_k_loop_is_the_loop_around_the_main_loop():
    """sass.k_loop: the innermost loop around the main loop (a K step's copies and barriers), or the
    main loop where none holds it; a spill in either is paid every K step."""
    # a K loop (0x00..0x90) with a copy, a spill and an inner FFMA loop (0x30..0x50), inside a
    # batch loop (0x00..0xb0)
    ins = _ins("""
        LDGSTS.E [R20], desc[UR4][R22.64]
        LDL R30, [R1+0x8]
        BAR.SYNC.DEFER_BLOCKING 0x0
        FFMA R2, R3, R4, R2
        FFMA R5, R3, R4, R5
        BRA 0x30
        STL [R1+0x8], R30
        NOP
        NOP
        BRA 0x0
        NOP
        BRA 0x0
    """)
    body = sass.k_loop(ins)
    assert (body[0].addr, body[-1].addr) == (0x0, 0x90)
    assert sass.opcodes(body).get("LDL") == 1 and sass.opcodes(body).get("STL") == 1
    assert sass.opcodes(sass.main_loop(ins)).get("LDL") is None
    one = _ins("FFMA R2, R3, R4, R2\nLDL R30, [R1+0x8]\nBRA 0x0\nEXIT")  # the main loop is the K loop
    assert sass.k_loop(one) == sass.main_loop(one) and len(sass.k_loop(one)) == 3
    assert sass.k_loop(_ins("FFMA R0, R1, R2, R0\nEXIT")) == []
    # a main loop with its barrier is the K step, inside an outer loop too (s10's carried loop)
    carried = _ins("MOV R9, RZ\nBAR.SYNC.DEFER_BLOCKING 0x0\nFFMA R2, R3, R4, R2\nBRA 0x10\nSTG.E [R6], R2\nBRA 0x0\nEXIT")
    assert [x.addr for x in sass.k_loop(carried)] == [0x10, 0x20, 0x30] == [x.addr for x in sass.main_loop(carried)]


def test_sass_command_json_fields():
    out = subprocess.run([sys.executable, "-m", "gemmlab", "sass", "s01", "--json"], capture_output=True,
                         text=True, check=True).stdout
    r = json.loads(out)
    for k in ("stage", "arch", "kernel", "registers", "shared_bytes", "local_bytes", "mix",
              "main_loop_ffma_share", "reuse_share", "reg_bank_conflicts"):
        assert k in r, k
    assert r["stage"] == "s01" and r["arch"] == "sm_90" and r["kernel"].startswith("gemmlab_s01_naive")
    assert r["mix"]["FFMA"] >= 4 and r["local_bytes"] == 0
    assert 0 < r["main_loop_ffma_share"] < 0.5
    text = subprocess.run([sys.executable, "-m", "gemmlab", "sass", "s01"], capture_output=True, text=True,
                          check=True).stdout
    assert "main loop" in text and "register-bank conflicts" in text
