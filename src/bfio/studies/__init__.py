"""Studies beyond the paper (issue 6): online arrivals, instant dispatch,
production baselines, oracle-free predictors, starvation and the same study on
every trace.

A study is a list of :class:`~bfio.runs.run.RunSpec` (one simulation
each: trace, N, G, B, policy row, arrival mode, dispatch, seed) executed in
batches by :func:`~bfio.runs.runner.run_batch`, aggregated over seeds with
95% Student-t intervals by :mod:`bfio.studies.aggregate`.
"""

from bfio.studies.aggregate import paired_effect, summarize_runs

__all__ = ["summarize_runs", "paired_effect"]
