"""Studies built on single runs: replays, comparisons, sweeps, grids, aggregation, transcript replay.

A study calls :func:`prunesim.runner.run_one` (or reads result files) and
reduces many runs to figures. It may import every layer below the command
line; nothing in the model, the observers or the policies imports it.
"""
