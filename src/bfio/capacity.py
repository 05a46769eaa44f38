"""The model's request capacity and the step time any router loses to imbalance (issue 44).

Two router-independent quantities of Section 3's step model
``dt = C + t_l max_g L_g`` (Eq. (workload): ``L_g = sum_{i in A_g} (s_i + tau_i)``):

- :func:`capacity`: the highest request rate the cluster sustains, for *any*
  router, with every slot busy and every worker equally loaded. A request of
  prompt ``s`` and decode ``o`` holds a slot for ``o`` steps with loads
  ``s, s + 1, ..., s + o - 1`` (its work ``W = o s + o (o - 1) / 2``), so at full
  occupancy a slot's mean load is ``E[W] / E[o]``, a balanced step lasts
  ``C + t_l B E[W] / E[o]`` and ``G B / E[o]`` requests finish per step. Loads
  scaled to it are loads of the model, not of one router's backlog runs (the
  online study's saturation measures FCFS's, whose window over-counts short
  requests).
- :func:`imbalance_share`: of a run's busy step time ``sum dt``, the share spent
  waiting at the barrier for the most loaded worker,
  ``sum t_l (max_g L_g - mean_g L_g) / sum dt``; a perfectly balanced router
  would not spend it. The summed pre-step loads are the workload's total work
  whatever the router, so this is the headroom a router can gain on a run
  (bounded below by the indivisibility of requests, not modelled here).
"""

from __future__ import annotations

from dataclasses import asdict, dataclass

import numpy as np

from bfio.constants import PaperConstants
from bfio.errors import ConfigError


@dataclass(frozen=True)
class Capacity:
    """The model's capacity for a workload on ``workers`` x ``slots``
    (:func:`capacity`): ``requests_per_s`` and ``tokens_per_s`` (generated),
    the balanced full step ``step_s``, the mean decode length ``mean_decode``
    and a busy slot's mean load ``slot_load`` (``E[W] / E[o]``, tokens)."""

    requests_per_s: float
    tokens_per_s: float
    step_s: float
    mean_decode: float
    slot_load: float

    def to_dict(self) -> dict:
        return asdict(self)


def request_work(prefill: np.ndarray, decode: np.ndarray) -> np.ndarray:
    """Each request's work ``W = o s + o (o - 1) / 2``: the sum of its loads
    ``s + tau`` over the ``o`` steps it decodes (``tau = 0 .. o - 1``, the
    pre-step loads that gate the barrier)."""
    s = np.asarray(prefill, dtype=np.float64)
    o = np.asarray(decode, dtype=np.float64)
    return o * s + o * (o - 1.0) / 2.0


def capacity(prefill, decode, workers: int, slots: int, constants: PaperConstants | None = None) -> Capacity:
    """The request capacity of ``workers`` x ``slots`` for requests drawn like
    ``(prefill, decode)`` under the paper's step model (``constants``; the
    paper's by default): every slot busy, every worker at the mean load. No
    router sustains a higher rate in this model (the barrier step can only be
    longer than the balanced one)."""
    s = np.asarray(prefill)
    o = np.asarray(decode)
    if s.shape != o.shape or s.size == 0:
        raise ConfigError(f"capacity: prefill and decode must be non-empty and of one length, got {s.shape} "
                          f"and {o.shape}")
    if workers < 1 or slots < 1:
        raise ConfigError(f"capacity: workers and slots must be >= 1, got {workers} and {slots}")
    if (o < 1).any() or (s < 0).any():
        raise ConfigError("capacity: decode lengths must be >= 1 and prompt lengths >= 0")
    c = constants or PaperConstants()
    mean_o = float(np.mean(o))
    slot_load = float(np.mean(request_work(s, o))) / mean_o
    step = c.overhead(slots) + c.token_latency_s * slots * slot_load
    rps = workers * slots / (mean_o * step)
    return Capacity(requests_per_s=rps, tokens_per_s=rps * mean_o, step_s=step, mean_decode=mean_o,
                    slot_load=slot_load)


def trace_capacity(frame, workers: int, slots: int, constants: PaperConstants | None = None) -> Capacity:
    """:func:`capacity` of a canonical trace table (``prefill_tokens``,
    ``decode_tokens``): the capacity for requests drawn from the trace."""
    return capacity(frame["prefill_tokens"].to_numpy(), frame["decode_tokens"].to_numpy(), workers, slots,
                    constants)


def imbalance_share(series, workers: int, constants: PaperConstants | None = None) -> float:
    """The share of busy step time lost to imbalance in a run's per-step
    ``series`` (a :attr:`bfio.simulator.SimulationResult.series` frame, or a
    mapping with ``dt`` and ``imbalance_pre``): ``sum t_l (max L - mean L) /
    sum dt``, where ``imbalance_pre = G max L - sum L`` on the pre-step (gating)
    loads. NaN for a run without steps."""
    if workers < 1:
        raise ConfigError(f"imbalance_share: workers must be >= 1, got {workers}")
    busy = float(np.asarray(series["dt"], dtype=np.float64).sum())
    if busy <= 0:
        return float("nan")
    return float(lost_share(np.asarray(series["imbalance_pre"], dtype=np.float64).sum(), busy, workers, constants))


def lost_share(imbalance_total, busy_s, workers, constants: PaperConstants | None = None):
    """The formula of :func:`imbalance_share` on a run's totals: ``t_l
    imbalance_total / G / busy_s``, where ``imbalance_total = sum (G max L - sum L)``
    over the steps and ``busy_s = sum dt`` (scalars or columns, element-wise)."""
    c = constants or PaperConstants()
    return c.token_latency_s * imbalance_total / workers / busy_s


def imbalance_share_of_runs(runs, constants: PaperConstants | None = None):
    """:func:`imbalance_share` of every run of a runs table (``imbalance_total``,
    ``makespan_s`` = busy step time, ``workers`` columns; the whole-run totals of
    :func:`bfio.metrics.run_totals`), so tables derive it without rerunning a run."""
    busy = runs["makespan_s"].astype(float)
    share = lost_share(runs["imbalance_total"].astype(float), busy, runs["workers"].astype(float), constants)
    return share.where(busy > 0)


#: The column :func:`with_imbalance_share` adds to a runs table.
IMBALANCE_SHARE = "imbalance_share"


def with_imbalance_share(runs):
    """``runs`` with the column :data:`IMBALANCE_SHARE` (:func:`imbalance_share_of_runs`;
    kept as given, or NaN, where the runs lack the totals), for the online, predictor
    and prefix tables."""
    out = runs.copy()
    if all(c in out.columns for c in ("imbalance_total", "makespan_s", "workers")):
        out[IMBALANCE_SHARE] = imbalance_share_of_runs(out)
    elif IMBALANCE_SHARE not in out.columns:
        out[IMBALANCE_SHARE] = float("nan")
    return out


__all__ = ["Capacity", "IMBALANCE_SHARE", "capacity", "imbalance_share", "imbalance_share_of_runs", "lost_share",
           "request_work", "trace_capacity", "with_imbalance_share"]
