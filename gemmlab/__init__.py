"""gemmlab: the FP32 GEMM optimization ladder as real software.

    import gemmlab
    out = gemmlab.matmul(a, b)
    out = gemmlab.gemm(a, b, c, alpha=0.5, beta=3.0, stage="s07")
    for s in gemmlab.stages(): print(s.id, s.name, s.adds)
"""
__version__ = "0.1.0"

from .api import gemm, gemm_batched, matmul  # noqa: E402
from .errors import ArgumentError, ArgumentTypeError, CompileError, ConfigError, GemmlabError, NoGPUError  # noqa: E402,E501
from .precision import PRECISIONS, PrecisionError, get_precision, set_precision  # noqa: E402
from .stages import StageSpec as _StageSpec  # noqa: E402


def stages():
    """The ordered stage specs: ``.id``, ``.name``, ``.adds``, ``.notes``, ``.default_config``."""
    from .stages import all_stages

    return all_stages()


Config = dict  # a stage config is a plain {name: int} mapping; see stage.default_config


def __getattr__(name):
    # gemmlab.torch_ops (torch.ops.gemmlab.*), gemmlab.nn (nn.Linear) and gemmlab.torch
    # (enable/disable) need torch: they are imported on first use, so ``import gemmlab`` works
    # without torch.
    if name in ("torch_ops", "nn", "torch"):
        import importlib

        return importlib.import_module(f".{name}", __name__)
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


__all__ = ["gemm", "gemm_batched", "matmul", "stages", "Config", "set_precision", "get_precision", "PRECISIONS",
           "PrecisionError", "ArgumentError", "ArgumentTypeError",
           "CompileError", "ConfigError", "GemmlabError", "NoGPUError", "__version__"]
