"""Metrics of Section 6.3 in the paper convention and the pre-step convention.

Paper convention (``../shared/spec/semantics.md``, "Metrics"): the window is
steps ``1 .. last_admission_step``; imbalance ``G max L' - sum L'`` and power
use the post-completion loads ``L'``; throughput is active tokens over time in
the window; TPOT is the mean of ``(finish_i - start_i) / o_i`` over all
requests; energy is the windowed sum of ``sum_g P(u_g) dt``.

Pre-step convention (the theory's, Eq. (imbalancek)): the same window and
formulas on the loads ``L`` that gate each step. Whole-run totals (no window)
feed the energy theorem check: ``ImbTot``, ``W`` and the synchronized-phase
energy ``E = t_l sum_k Lmax(k) sum_g P(u_g(k))`` (Eq. (E-discrete)).

Online metrics (``docs/online.md``; not in the paper): per-request latencies
from arrival (pool entry in backlog mode) and whole-run metrics over every step
of the run, with no backlog window, in the paper's post-completion convention.
"""

from __future__ import annotations

import numpy as np


def _nanmean(x):
    return float(np.mean(x)) if len(x) else float("nan")


def window_metrics(series: dict, window_steps: int, tpot: float) -> dict:
    """Paper and pre-step metrics from per-step ``series`` over steps ``1..window_steps``."""
    w = slice(0, window_steps)
    dt = series["dt"][w]
    active = series["active"][w]
    time_s = float(np.sum(dt))
    throughput = float(np.sum(active)) / time_s if time_s > 0 else float("nan")
    return {
        "avg_imbalance": _nanmean(series["imbalance_post"][w]),
        "throughput": throughput,
        "tpot": tpot,
        "energy_j": float(np.sum(series["energy_post"][w])),
        "avg_imbalance_pre": _nanmean(series["imbalance_pre"][w]),
        "energy_j_pre": float(np.sum(series["energy_pre"][w])),
        "window_time_s": time_s,
    }


def run_totals(series: dict, token_latency_s: float, p_idle: float, p_max: float, gamma: float) -> dict:
    """Whole-run quantities of Section 5.4 on the gating loads (no window)."""
    lmax = series["max_load_pre"]
    imb_tot = float(np.sum(series["imbalance_pre"]))
    work = float(np.sum(series["sum_load_pre"]))
    e_sync = float(token_latency_s * np.sum(lmax * series["power_sum_pre"]))
    d_gamma = (1.0 - gamma) * (p_max - p_idle)
    correction = e_sync - token_latency_s * (p_max * work + p_idle * imb_tot)
    return {
        "imbalance_total": imb_tot,
        "work_total": work,
        "energy_sync_j": e_sync,
        "energy_correction_j": correction,
        "energy_correction_bound_j": token_latency_s * d_gamma * imb_tot,
        "energy_total_j": float(np.sum(series["energy_pre"])),
        "makespan_s": float(np.sum(series["dt"])),
    }


def wait_stats(wait_steps: np.ndarray, wait_s: np.ndarray) -> dict:
    """p50, p99 and max of per-request wait (pool entry to start), steps and seconds."""
    if len(wait_steps) == 0:
        return {}
    q = lambda x, p: float(np.percentile(x, p))  # noqa: E731
    return {
        "wait_steps_p50": q(wait_steps, 50), "wait_steps_p99": q(wait_steps, 99),
        "wait_steps_max": float(np.max(wait_steps)),
        "wait_s_p50": q(wait_s, 50), "wait_s_p99": q(wait_s, 99), "wait_s_max": float(np.max(wait_s)),
    }


LATENCY_PERCENTILES = (50, 90, 99)


def _summary(prefix: str, x: np.ndarray) -> dict:
    out = {f"{prefix}_p{p}": float(np.percentile(x, p)) for p in LATENCY_PERCENTILES}
    out[f"{prefix}_mean"] = float(np.mean(x))
    return out


def latency_stats(arrival_s: np.ndarray, start_s: np.ndarray, finish_s: np.ndarray, decode: np.ndarray) -> dict:
    """p50/p90/p99 and mean of three per-request latencies (seconds):

    - ``queue_wait_s``: ``start_i - arrival_i``, arrival to the first decode step
      (``arrival_i`` is the pool-entry clock in backlog mode);
    - ``tpot_s``: ``(finish_i - start_i) / o_i``, time per output token
      (``tpot_s_mean`` equals the paper's ``tpot``);
    - ``e2e_s``: ``finish_i - arrival_i`` = queue wait + decode time.
    """
    if len(arrival_s) == 0:
        return {}
    out = _summary("queue_wait_s", start_s - arrival_s)
    out.update(_summary("tpot_s", (finish_s - start_s) / decode))
    out.update(_summary("e2e_s", finish_s - arrival_s))
    return out


#: The share of a run's requests, by arrival, discarded as warm-up before the
#: steady-state latencies (:func:`steady_stats`): an online run starts empty, so
#: its first arrivals see shorter queues than a run in steady state.
WARMUP_SHARE = 0.5
#: The suffix of the steady-state latency keys (``queue_wait_s_p99_steady`` ...).
STEADY = "_steady"


def steady_stats(arrival_s: np.ndarray, start_s: np.ndarray, finish_s: np.ndarray, decode: np.ndarray,
                 first_token_s: np.ndarray | None = None, warmup_share: float = WARMUP_SHARE) -> dict:
    """The p99 latencies of :func:`latency_stats` (and, with the prefill model's
    ``first_token_s``, the p99 TTFT and decode TPOT of :meth:`bfio.engine.prefill.Prefill.metrics`)
    over the requests that arrive after the first ``warmup_share`` of them (by
    arrival time, ties by id), keys suffixed :data:`STEADY`, plus
    ``warmup_requests`` (how many were discarded) and ``steady_from_s`` (the
    first kept arrival). A run whose latencies over this second part agree with
    those over all requests is in steady state; a growing queue shows as a
    higher p99 here (issue 44)."""
    n = len(arrival_s)
    skip = int(np.floor(warmup_share * n))
    if n == 0 or skip >= n:
        return {}
    keep = np.argsort(arrival_s, kind="stable")[skip:]
    a, s, f, o = arrival_s[keep], start_s[keep], finish_s[keep], decode[keep]
    p99 = lambda x: float(np.percentile(x, 99)) if x.size else float("nan")  # noqa: E731
    out = {"queue_wait_s_p99" + STEADY: p99(s - a), "tpot_s_p99" + STEADY: p99((f - s) / o),
           "e2e_s_p99" + STEADY: p99(f - a), "warmup_requests": skip, "steady_from_s": float(a.min())}
    if first_token_s is not None:
        first = first_token_s[keep]
        multi = o > 1
        out["ttft_s_p99" + STEADY] = p99(first - a)
        out["tpot_decode_s_p99" + STEADY] = p99((f[multi] - first[multi]) / (o[multi] - 1))
    return out


def run_metrics(series: dict, end_clock: float, idle_s: float, workers: int, p_idle: float) -> dict:
    """Whole-run metrics, every step counted (no backlog window), paper's
    post-completion convention:

    - ``avg_imbalance_run``: mean over all steps of ``G max L' - sum L'``;
    - ``throughput_run``: generated tokens (``sum_i o_i``) / ``makespan_run_s``;
    - ``makespan_run_s``: clock at the last completion, from 0, including the
      idle gaps the clock jumped over waiting for arrivals (``idle_s_run``);
    - ``energy_j_run``: step energies of all steps plus ``G P_idle`` times the
      idle gaps (every worker idles at ``P_idle`` while the cluster is empty).
    """
    tokens = float(np.sum(series["active"]))
    makespan = float(end_clock)
    return {
        "avg_imbalance_run": _nanmean(series["imbalance_post"]),
        "throughput_run": tokens / makespan if makespan > 0 else float("nan"),
        "energy_j_run": float(np.sum(series["energy_post"])) + workers * p_idle * float(idle_s),
        "makespan_run_s": makespan,
        "idle_s_run": float(idle_s),
    }


#: A run's counts of its actions after binding (issue 45), by the metric each
#: part reports: queued requests moved (:mod:`bfio.sim.moves`), ranks paused
#: (:mod:`bfio.sim.pause`), running requests migrated and queued ones re-bound by a
#: migration rule (:mod:`bfio.sim.migration`).
ACTION_COUNTS = ("queue_move_count", "rank_pauses", "migrations", "migration_queue_moves")
#: The tokens an action computes or sends again: a migrated request's prompt and
#: output prefilled again, or its KV transferred (:mod:`bfio.sim.transfer`).
WASTED_TOKENS = ("migration_recomputed_tokens", "migration_transfer_tokens")


def action_metrics(metrics: dict, requests: int) -> dict:
    """A run's actions per 1,000 requests (the sum of :data:`ACTION_COUNTS`) and its
    wasted tokens (the sum of :data:`WASTED_TOKENS`); a metric the run lacks (its
    action was off) or reports as NaN counts 0."""
    def total(keys):
        values = [metrics.get(k) for k in keys]
        return sum(float(v) for v in values if v is not None and v == v)
    return {"actions_per_1k_requests": 1000.0 * total(ACTION_COUNTS) / max(int(requests), 1),
            "wasted_tokens": total(WASTED_TOKENS)}
