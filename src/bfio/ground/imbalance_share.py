"""The share of a run's busy step time lost to imbalance, from its series or its
totals (issue 44; Section 3's step model ``dt = C + t_l max_g L_g``).

Of a run's busy step time ``sum dt``, :func:`imbalance_share` is the share
spent waiting at the barrier for the most loaded worker,
``sum t_l (max_g L_g - mean_g L_g) / sum dt``; :func:`with_imbalance_share`
adds it, and the part no router can remove (:data:`IMBALANCE_FLOOR`, from the
run's ``imbalance_floor_total``: :func:`bfio.engine.capacity.indivisible_floor`), to a
runs table. The capacity and the floor's kernels are :mod:`bfio.engine.capacity`'s;
these formulas are apart from them so that the tables that read them (the
online, predictor, prefix and step-regime studies') start without numba
(issue 42).
"""

from __future__ import annotations

import numpy as np

from bfio.ground.constants import PaperConstants
from bfio.ground.errors import ConfigError


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


def lost_share(imbalance_total, busy_s, workers, constants: PaperConstants | None = None, token_s=None):
    """The formula of :func:`imbalance_share` on a run's totals: ``t_l
    imbalance_total / G / busy_s``, where ``imbalance_total = sum (G max L - sum L)``
    over the steps and ``busy_s = sum dt`` (scalars or columns, element-wise);
    ``token_s``: the step's cost a KV token when not the paper's ``t_l``
    (:data:`KV_TOKEN_S`)."""
    cost = (constants or PaperConstants()).token_latency_s if token_s is None else token_s
    return cost * imbalance_total / workers / busy_s


#: The run metric (:func:`bfio.sim.result.imbalance_terms`): the step seconds one
#: KV token of the most loaded rank costs (``t_l``; ``a_kv`` with a calibrated step).
KV_TOKEN_S = "kv_token_s"


def imbalance_share_of_runs(runs, constants: PaperConstants | None = None, total: str = "imbalance_total"):
    """:func:`imbalance_share` of every run of a runs table (``imbalance_total``,
    ``makespan_s`` = busy step time, ``workers`` columns; the whole-run totals of
    :func:`bfio.ground.metrics.run_totals`), so tables derive it without rerunning a run;
    ``total`` names another imbalance total on the same scale (the floor,
    ``imbalance_floor_total``). With a :data:`KV_TOKEN_S` column (runs since
    issue 44) each run is read with its own step's cost a KV token: ``t_l`` for
    the paper's, ``a_kv`` for a calibrated step (the share of busy time the most
    loaded rank's extra KV tokens cost; its batch and prefill terms left out,
    so a lower estimate), NaN for independent ranks (no barrier)."""
    busy = runs["makespan_s"].astype(float)
    # the run's own cost a KV token (a_kv with a calibrated step), where the runs record it
    cost = runs[KV_TOKEN_S].astype(float) if KV_TOKEN_S in runs.columns else None
    share = lost_share(runs[total].astype(float), busy, runs["workers"].astype(float), constants, cost)
    return share.where(busy > 0)


#: The columns :func:`with_imbalance_share` adds to a runs table: the share of
#: busy time lost to imbalance and the part of it no router can remove.
IMBALANCE_SHARE = "imbalance_share"
IMBALANCE_FLOOR = "imbalance_floor_share"


def with_imbalance_share(runs):
    """``runs`` with the columns :data:`IMBALANCE_SHARE` (:func:`imbalance_share_of_runs`)
    and :data:`IMBALANCE_FLOOR` (the same formula on ``imbalance_floor_total``,
    :func:`indivisible_floor`), kept as given, or NaN, where the runs lack the
    totals, for the online, predictor and prefix tables."""
    out = runs.copy()
    for column, total in ((IMBALANCE_SHARE, "imbalance_total"), (IMBALANCE_FLOOR, "imbalance_floor_total")):
        if all(c in out.columns for c in (total, "makespan_s", "workers")):
            out[column] = imbalance_share_of_runs(out, total=total)
        elif column not in out.columns:
            out[column] = float("nan")
    return out


__all__ = ["IMBALANCE_FLOOR", "IMBALANCE_SHARE", "KV_TOKEN_S", "imbalance_share", "imbalance_share_of_runs",
           "lost_share", "with_imbalance_share"]
