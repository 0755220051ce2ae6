"""Every argument error of the API, raised before anything runs, with a message naming the
argument. Uses stand-in arrays (``__cuda_array_interface__``), so no GPU is needed."""
import numpy as np
import pytest

import gemmlab
from gemmlab.errors import ConfigError, NoGPUError
from gemmlab import device
from fakes import FakeArray


def mats(M=4, N=5, K=3):
    return FakeArray((M, K)), FakeArray((K, N)), FakeArray((M, N))


def test_wrong_dtype_names_the_argument():
    a, b, _ = mats()
    with pytest.raises(TypeError, match=r"^a: dtype '<f8'"):
        gemmlab.gemm(FakeArray((4, 3), typestr="<f8"), b)
    with pytest.raises(TypeError, match=r"^b: dtype '<f2'"):
        gemmlab.gemm(a, FakeArray((3, 5), typestr="<f2"))


def test_host_arrays_are_refused():
    a, b, _ = mats()
    with pytest.raises(ValueError, match=r"^a: a host array \(ndarray\)"):
        gemmlab.gemm(np.zeros((4, 3), np.float32), b)
    with pytest.raises(ValueError, match=r"^b: a host array"):
        gemmlab.gemm(a, np.zeros((3, 5), np.float32))


def test_not_an_array():
    a, _, _ = mats()
    with pytest.raises(TypeError, match=r"^b: list is not an array"):
        gemmlab.gemm(a, [[1.0]])


def test_wrong_rank():
    a, b, _ = mats()
    with pytest.raises(ValueError, match=r"^a: rank 3 .* gemm takes 2-D"):
        gemmlab.gemm(FakeArray((2, 4, 3)), b)
    with pytest.raises(ValueError, match=r"^b: rank 2 .* gemm_batched takes 3-D"):
        gemmlab.gemm_batched(FakeArray((2, 4, 3)), b)


def test_shape_mismatch():
    a, _, _ = mats()
    with pytest.raises(ValueError, match=r"shape mismatch: a is 4x3 but b is 7x5"):
        gemmlab.gemm(a, FakeArray((7, 5)))
    with pytest.raises(ValueError, match=r"shape mismatch: a has batch 2, b has batch 3"):
        gemmlab.gemm_batched(FakeArray((2, 4, 3)), FakeArray((3, 3, 5)))


def test_c_and_out_shapes():
    a, b, _ = mats()
    with pytest.raises(ValueError, match=r"^c: shape \(5, 4\), expected \(4, 5\)"):
        gemmlab.gemm(a, b, FakeArray((5, 4)), beta=1.0)
    with pytest.raises(ValueError, match=r"^out: shape \(4, 6\), expected \(4, 5\)"):
        gemmlab.gemm(a, b, out=FakeArray((4, 6)))


def test_mixed_devices():
    a, b, _ = mats()
    with pytest.raises(ValueError, match=r"mixed devices: a on cuda:0, b on cuda:1"):
        gemmlab.gemm(a, FakeArray((3, 5), device=1), out=FakeArray((4, 5)))
    with pytest.raises(ValueError, match=r"mixed devices: .*out on cuda:2"):
        gemmlab.gemm(a, b, out=FakeArray((4, 5), device=2))


def test_unknown_stage_and_bad_config():
    a, b, c = mats()
    with pytest.raises(ConfigError, match=r"unknown stage 'fastest'"):
        gemmlab.gemm(a, b, out=c, stage="fastest")
    with pytest.raises(ConfigError, match=r"stage s01: unknown config key 'tile'"):
        gemmlab.gemm(a, b, out=c, stage="s01", config={"tile": 3})
    with pytest.raises(ConfigError, match=r"stage s01: config .* not legal: block_n must be a multiple of 32"):
        gemmlab.gemm(a, b, out=c, stage="s01", config={"block_n": 40})
    with pytest.raises(ConfigError, match=r"stage: 7 is not a stage id"):
        gemmlab.gemm(a, b, out=c, stage=7)


def test_out_overlapping_inputs_is_refused():
    buf = FakeArray((100,))
    a = buf.view((4, 3), (3, 1), offset=0)
    b = FakeArray((3, 5))
    out = buf.view((4, 5), (5, 1), offset=6)  # starts inside a
    with pytest.raises(ValueError, match=r"out overlaps a"):
        gemmlab.gemm(a, b, out=out)
    out_b = FakeArray((4, 5), ptr=b.ptr)
    with pytest.raises(ValueError, match=r"out overlaps b"):
        gemmlab.gemm(FakeArray((4, 3)), b, out=out_b)


def test_out_partly_overlapping_c_is_refused():
    buf = FakeArray((100,))
    c = buf.view((4, 5), (5, 1), offset=0)
    out = buf.view((4, 5), (5, 1), offset=2)
    a, b = FakeArray((4, 3)), FakeArray((3, 5))
    with pytest.raises(ValueError, match=r"out overlaps c without being c"):
        gemmlab.gemm(a, b, c, beta=1.0, out=out)


def test_out_with_unusable_strides_is_refused():
    a, b, _ = mats()
    out = FakeArray((4, 5), strides=(10, 2))
    with pytest.raises(ValueError, match=r"out: strides .* neither row- nor column-major"):
        gemmlab.gemm(a, b, out=out)


def test_readonly_out_is_refused():
    a, b, _ = mats()
    with pytest.raises(ValueError, match=r"out: read-only"):
        gemmlab.gemm(a, b, out=FakeArray((4, 5), readonly=True))


def test_batched_out_overlapping_itself_is_refused():
    a, b = FakeArray((3, 4, 2)), FakeArray((3, 2, 5))
    out = FakeArray((3, 4, 5), strides=(5, 5, 1))  # batch stride smaller than one matrix
    with pytest.raises(ValueError, match=r"batches overlap"):
        gemmlab.gemm_batched(a, b, out=out)


def test_generic_arrays_need_out():
    a, b, _ = mats()
    with pytest.raises(gemmlab.GemmlabError, match=r"out= is required"):
        gemmlab.gemm(a, b)


def test_bad_scalars():
    a, b, c = mats()
    with pytest.raises(TypeError, match=r"alpha, beta: numbers expected"):
        gemmlab.gemm(a, b, out=c, alpha="two")


def test_zero_size_returns_without_touching_the_gpu():
    a, b = FakeArray((0, 3)), FakeArray((3, 5))
    out = FakeArray((0, 5))
    assert gemmlab.gemm(a, b, out=out) is out


@pytest.mark.skipif(device.has_gpu(), reason="checks the no-GPU message")
def test_valid_call_without_gpu_says_so():
    a, b, c = mats()
    with pytest.raises(NoGPUError, match="no CUDA GPU"):
        gemmlab.gemm(a, b, out=c, stage="s01")


# ---- inputs a newcomer tries first; every error catchable as GemmlabError ------------------------

class OnlyInterface:
    """Nothing but ``__cuda_array_interface__`` (no .shape, no .ndim): the README says these work."""

    def __init__(self, shape, ptr):
        self.__cuda_array_interface__ = {"shape": shape, "typestr": "<f4", "data": (ptr, False), "version": 3}


def test_a_list_as_a_names_the_argument():
    b = FakeArray((3, 5))
    for fn in (gemmlab.matmul, gemmlab.gemm, gemmlab.gemm_batched):
        with pytest.raises(gemmlab.ArgumentTypeError, match=r"^a: list is not an array gemmlab understands"):
            fn([[1.0, 2.0, 3.0]], b)
    with pytest.raises(TypeError):          # still a TypeError for code that catches those
        gemmlab.matmul([[1.0]], b)


def test_an_object_with_only_the_interface_gets_to_the_real_checks(monkeypatch):
    a, b = OnlyInterface((4, 3), 1 << 40), OnlyInterface((3, 5), 2 << 40)
    with pytest.raises(gemmlab.ArgumentError, match=r"out= is required"):
        gemmlab.matmul(a, b)
    with pytest.raises(gemmlab.ArgumentError, match=r"shape mismatch: a is 4x3 but b is 5x3"):
        gemmlab.matmul(a, OnlyInterface((5, 3), 3 << 40), out=OnlyInterface((4, 3), 4 << 40))
    with pytest.raises(gemmlab.ArgumentTypeError, match=r"^b: its __cuda_array_interface__ lacks 'shape'"):
        class Broken:
            __cuda_array_interface__ = {"typestr": "<f4"}
        gemmlab.matmul(a, Broken(), out=OnlyInterface((4, 5), 4 << 40))


def test_out_without_a_gpu_is_no_gpu_error(monkeypatch):
    """The pointers' device is asked of the driver only after every other check, and without a
    GPU that is NoGPUError, not a failure to load libcuda."""
    monkeypatch.setattr(device, "has_gpu", lambda: False)
    a, b, out = OnlyInterface((4, 3), 1 << 40), OnlyInterface((3, 5), 2 << 40), OnlyInterface((4, 5), 3 << 40)
    for call in (lambda: gemmlab.matmul(a, b, out=out), lambda: gemmlab.gemm(a, b, out=out)):
        with pytest.raises(NoGPUError, match=r"^no CUDA GPU is available"):
            call()
    with pytest.raises(gemmlab.ArgumentError, match=r"out overlaps a"):  # argument errors still come first
        gemmlab.gemm(a, b, out=OnlyInterface((4, 5), 1 << 40))


@pytest.mark.parametrize("call, kind", [
    (lambda a, b, c: gemmlab.gemm(FakeArray((4, 3), typestr="<f8"), b), TypeError),
    (lambda a, b, c: gemmlab.gemm(np.zeros((4, 3), np.float32), b), ValueError),
    (lambda a, b, c: gemmlab.gemm(a, FakeArray((7, 5))), ValueError),
    (lambda a, b, c: gemmlab.gemm(FakeArray((2, 4, 3)), b), ValueError),
    (lambda a, b, c: gemmlab.gemm(a, b, out=FakeArray((4, 5), readonly=True)), ValueError),
    (lambda a, b, c: gemmlab.gemm(a, b, out=c, alpha="two"), TypeError),
    (lambda a, b, c: gemmlab.gemm(a, b, out=c, stage="fastest"), ValueError),
    (lambda a, b, c: gemmlab.gemm(a, b, out=c, stage="s01", config={"tile": 3}), ValueError),
    (lambda a, b, c: gemmlab.gemm(a, b, out=c, config={"split_k": 0}), ValueError),
    (lambda a, b, c: gemmlab.gemm(a, b), ValueError),
    (lambda a, b, c: gemmlab.gemm(a, b, out=c, stream=object()), TypeError),
])
def test_every_argument_error_is_a_gemmlab_error(call, kind, monkeypatch):
    monkeypatch.setattr(device, "has_gpu", lambda: False)
    a, b, c = mats()
    with pytest.raises(gemmlab.GemmlabError) as e:
        call(a, b, c)
    assert isinstance(e.value, kind), type(e.value).__mro__
    assert isinstance(e.value, (gemmlab.ArgumentError, gemmlab.ArgumentTypeError, NoGPUError)), type(e.value)
