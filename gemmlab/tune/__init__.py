"""Autotuning, which only measures and writes tables: ``gemmlab tune`` (commands.py) times the
shortlist that the runtime's own model ranks over the runtime's own config space
(gemmlab/heuristics/: model.py, space.py) and writes the winners (db.py) into the tables that
``stage="auto"`` reads (gemmlab/heuristics/table.py). It times with gemmlab/bench/timing.py; the
runtime never imports this package."""
