"""Autotuning: the config space of the fast stages (space.py), the waves/occupancy heuristic for
untuned GPUs and shapes (model.py), the persistent tuning database (db.py) and ``gemmlab tune``
(commands.py). ``gemmlab.dispatch`` reads the database and falls back to the heuristic."""
