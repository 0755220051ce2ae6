"""The benchmark harness: timing method, baselines (cuBLAS through torch and CuPy, Triton), the
ladder runner, reports (plain text, markdown, CUTLASS-style CSV), plots and provenance.

Nothing here imports torch, CuPy or Triton at module level: reports, CSV, plots and the JSON
schema work from a recorded ``ladder.json`` on a machine without a GPU. docs/benchmark.md
describes the method and every field of ``ladder.json``. ``suites.py`` holds the shape suites and
the shape syntax that ``gemmlab sweep`` and ``gemmlab tune`` share. This package never imports
the tuner (which times with it) and the runtime never imports this package.
"""
