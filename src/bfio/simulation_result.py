"""What one simulation produces (Sections 3, 6.3): the per-step records
(:data:`SERIES_FIELDS`, grown in :class:`StepSeries`), the
:class:`SimulationResult` and the warnings about its measurement window
(:func:`window_warnings`). The step loop that fills them is
:func:`bfio.simulator.simulate`.
"""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np
import pandas as pd

from bfio.ground.limits import MIN_WINDOW_STEPS

SERIES_FIELDS = ("clock", "dt", "active", "completions", "imbalance_post", "imbalance_pre",
                 "energy_post", "energy_pre", "power_mean_post", "power_mean_pre",
                 "max_load_pre", "sum_load_pre", "power_sum_pre")


@dataclass
class SimulationResult:
    """Outcome of one simulation.

    ``metrics`` holds the paper-convention metrics (``avg_imbalance``,
    ``throughput`` tokens/s, ``tpot`` s/token, ``energy_j``), their pre-step
    twins (``avg_imbalance_pre``, ``energy_j_pre``), whole-run totals, wait
    statistics, per-request latency percentiles (``queue_wait_s_*``, ``tpot_s_*``,
    ``e2e_s_*``), whole-run metrics without the backlog window
    (``avg_imbalance_run``, ``throughput_run``, ``energy_j_run``, see
    :mod:`bfio.ground.metrics`) and policy statistics. ``requests`` has one row per
    request (worker, arrival, start/finish clock and step, wait, TPOT, end-to-end
    latency; ``queue_worker`` is the worker bound at arrival with instant
    dispatch, -1 otherwise). ``series`` has one row per step
    (index = step ``k`` from 1). ``loads`` is the ``(steps, G)`` array of gating
    loads when requested.
    """

    config: dict
    metrics: dict
    steps: int
    window_steps: int
    requests: pd.DataFrame
    series: pd.DataFrame
    loads: np.ndarray | None = None
    wall_s: float = 0.0
    warnings: list = field(default_factory=list)

    def summary(self) -> dict:
        """Flat JSON-ready summary: config, metrics, step counts, wall time and
        ``warnings`` (a list of messages, empty when the run is sound)."""
        out = {**self.metrics, "steps": self.steps, "window_steps": self.window_steps,
               "wall_s": self.wall_s, "warnings": list(self.warnings)}
        out.update({k: v for k, v in self.config.items() if k not in out})
        return out


class StepSeries:
    """Per-step records: one row per field of :data:`SERIES_FIELDS` (the order of
    ``bfio.engine.kernels.S_*``) in a ``(fields, capacity)`` buffer that grows by
    doubling, plus the ``(capacity, G)`` gating loads when ``record_loads``."""

    def __init__(self, workers: int, record_loads: bool, capacity: int = 1024):
        self.n = 0
        self.buf = np.zeros((len(SERIES_FIELDS), capacity))
        self.load_rows = np.zeros((capacity if record_loads else 1, workers), dtype=np.int64)
        self.record_loads = record_loads

    def reserve(self) -> None:
        """Make room for at least one more row."""
        if self.n < self.buf.shape[1]:
            return
        self.buf = np.concatenate([self.buf, np.zeros_like(self.buf)], axis=1)
        if self.record_loads:
            self.load_rows = np.concatenate([self.load_rows, np.zeros_like(self.load_rows)])

    def arrays(self) -> dict:
        return {f: self.buf[j, : self.n].copy() for j, f in enumerate(SERIES_FIELDS)}

    def loads(self) -> np.ndarray | None:
        return self.load_rows[: self.n].copy() if self.record_loads and self.n else None


WHOLE_RUN_METRICS = "avg_imbalance_run, throughput_run, energy_j_run"


def window_warnings(window_steps: int, active: np.ndarray, workers: int, slots: int,
                    entry: str, busy_peak: int | None = None) -> list[str]:
    """Why the paper-convention metrics of a run may not mean what they say: a
    measurement window (steps 1..last admission) shorter than
    :data:`~bfio.ground.limits.MIN_WINDOW_STEPS` steps, or (backlog mode) a pool that
    never filled the cluster's ``G * B`` slots. ``busy_peak``: the most slots
    seated in a step, prefilling or decoding (the prefill model's; its series'
    ``active`` counts output tokens); otherwise the series' ``active``."""
    out = []
    if window_steps < MIN_WINDOW_STEPS:
        what = "empty (no admission after step 0)" if window_steps == 0 else \
            f"only {window_steps} step{'s' if window_steps > 1 else ''}"
        out.append(f"measurement window is {what}, shorter than {MIN_WINDOW_STEPS} steps: the paper-convention "
                   f"metrics (avg_imbalance, throughput, energy_j) are undefined or unrepresentative; use the "
                   f"whole-run metrics ({WHOLE_RUN_METRICS}) or more requests")
    busiest = busy_peak if busy_peak is not None else int(active.max()) if active.size else 0
    if entry == "backlog" and busiest < workers * slots:
        what = " (prefilling or decoding)" if busy_peak is not None else ""
        out.append(f"the cluster was never full: at most {busiest:,} of G * B = {workers * slots:,} slots were "
                   f"busy{what} (too few requests for {workers} workers); use the whole-run metrics "
                   f"({WHOLE_RUN_METRICS}) or more requests")
    return out
