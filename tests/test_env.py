"""gemmlab/env.py: environment variables read on every call see os.environ's changes."""
from gemmlab import api, precision


def test_precision_default_follows_the_environment(monkeypatch):
    precision.set_precision(None)
    monkeypatch.delenv("GEMMLAB_PRECISION", raising=False)
    assert precision.get_precision() == "ieee"
    monkeypatch.setenv("GEMMLAB_PRECISION", " TF32x3 ")
    assert precision.get_precision() == "tf32x3"
    monkeypatch.setenv("GEMMLAB_PRECISION", "tf32")
    assert precision.get_precision() == "tf32"
    precision.set_precision("ieee")
    try:
        assert precision.get_precision() == "ieee"   # set_precision wins over the variable
    finally:
        precision.set_precision(None)
    monkeypatch.setenv("GEMMLAB_PRECISION", "fp16")
    try:
        precision.get_precision()
        raise AssertionError("an unknown GEMMLAB_PRECISION must be an error")
    except precision.PrecisionError as e:
        assert "GEMMLAB_PRECISION='fp16'" in str(e)


def test_api_flags_follow_the_environment(monkeypatch):
    monkeypatch.delenv("GEMMLAB_PRINT_CONFIG", raising=False)
    assert not api._env("GEMMLAB_PRINT_CONFIG")
    monkeypatch.setenv("GEMMLAB_PRINT_CONFIG", "1")
    assert api._env("GEMMLAB_PRINT_CONFIG")
