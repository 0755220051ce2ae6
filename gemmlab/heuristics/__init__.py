"""The runtime's choices: everything ``stage="auto"`` decides, as plain functions of a problem.

- ``space.py``: the config space (candidate tiles per GPU class, with efficiency estimates);
- ``model.py``: the waves / cost model with split-K that ranks the space;
- ``table.py``: the tuned tables (load, validate, bucket lookup, nearest neighbours);
- ``skinny.py``: the skinny kernel's rule and choice (M or N <= 16);
- ``tensor_core.py``: s12 / s13 for precision "tf32" / "tf32x3";
- ``choice.py``: ``choose`` (the order of the steps) and ``should_repack``.

Read by the runtime (gemmlab/dispatch.py, which adds the device's facts) and by the tuner
(gemmlab/tune/, which ranks the same space with the same model and writes the tables this
package reads); nothing here imports the tuner, the benchmarks or the analysis.
"""
from .choice import choose, nearest_choice, should_repack, should_transpose_a
from .model import Gpu

__all__ = ["Gpu", "choose", "nearest_choice", "should_repack", "should_transpose_a"]
