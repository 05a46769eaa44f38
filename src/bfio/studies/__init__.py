"""Studies beyond the paper (issue 6): online arrivals, instant dispatch,
production baselines, oracle-free predictors, starvation and the same study on
every trace.

A study is a list of :class:`~bfio.studies.runs.StudyRun` (one simulation
each: trace, N, G, B, policy row, arrival mode, dispatch, seed) executed in
batches by :func:`~bfio.studies.runs.run_batch`, aggregated over seeds with
95% Student-t intervals by :mod:`bfio.studies.aggregate`.
"""

from bfio.studies.aggregate import paired_effect, summarize_runs
from bfio.studies.runs import ArrivalSpec, StudyRun, resolve_row, run_batch, run_study

__all__ = ["ArrivalSpec", "StudyRun", "resolve_row", "run_study", "run_batch", "summarize_runs",
           "paired_effect"]
