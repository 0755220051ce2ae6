"""GPU tests are marked ``gpu``; without a usable CUDA GPU they are skipped with the reason."""
import os

import pytest


def _gpu_reason():
    try:
        from gemmlab import device
    except Exception as e:  # pragma: no cover - import errors surface in other tests
        return f"gemmlab does not import: {e}"
    if not device.has_gpu():
        return "no CUDA GPU in this machine (GPU tests run on the H200: pytest -m gpu)"
    try:
        import torch  # noqa: F401
    except ImportError:
        return "torch is not installed (GPU tests use torch arrays and cuBLAS)"
    return None


def pytest_collection_modifyitems(config, items):
    reason = _gpu_reason()
    if reason is None:
        return
    skip = pytest.mark.skip(reason=reason)
    for item in items:
        if "gpu" in item.keywords:
            item.add_marker(skip)


@pytest.fixture
def tmp_cache(tmp_path, monkeypatch):
    """A fresh, empty kernel cache directory for this test."""
    d = tmp_path / "cache"
    monkeypatch.setenv("GEMMLAB_CACHE_DIR", str(d))
    return d


def pytest_configure(config):
    os.environ.setdefault("PYTHONHASHSEED", "0")
