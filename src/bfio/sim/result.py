"""A finished run's :class:`~bfio.engine.simulation_result.SimulationResult`: the
metrics of Section 6.3 (the paper's measurement window up to the last
admission, whole-run totals, waits, latencies, policy and prefill statistics),
the per-request and per-step frames, the run's configuration and the warnings
about its window."""

from __future__ import annotations

import time

import numpy as np
import pandas as pd

from bfio.engine.capacity import decode_phase, indivisible_floor
from bfio.ground.constants import PaperConstants
from bfio.ground.errors import PolicyError
from bfio.ground.metrics import latency_stats, run_metrics, run_totals, steady_stats, wait_stats, window_metrics
from bfio.engine.prefill import Prefill
from bfio.sim.dispatch import Dispatch
from bfio.sim.engine import DecodeEngine
from bfio.sim.setup import Setup
from bfio.sim.state import ClusterState
from bfio.engine.simulation_result import SimulationResult, window_warnings


def route_timings(route_times: list[float]) -> dict:
    """Count, median, p99 and total seconds of the policy calls (none: empty)."""
    if not route_times:
        return {}
    rt = np.asarray(route_times)
    return {"route_calls": int(rt.size), "route_s_p50": float(np.percentile(rt, 50)),
            "route_s_p99": float(np.percentile(rt, 99)), "route_s_total": float(rt.sum())}


def run_config(run: Setup, overhead: float) -> dict:
    """The run's configuration as the result records it (constants flattened)."""
    c: PaperConstants = run.constants
    config = {"workers": run.workers, "slots": run.slots, "requests": len(run.workload), "seed": run.seed,
              "policy": run.policy.name, "policy_options": run.policy.describe(), "entry": run.entry,
              "dispatch": run.dispatch, "overhead_s": overhead,
              **{k: v for k, v in c.to_dict().items() if k != "overhead_s"}}
    if run.prefill is not None:
        config["prefill"] = run.prefill.to_dict()
    if run.queue_moves != "none":  # runs without moves record what they always did
        config["queue_moves"] = run.queue_moves
    if run.rank_pause != "none":  # runs without pauses record what they always did
        config["rank_pause"] = run.rank_pause
        config["rank_pause_options"] = dict(run.rank_pause_options)
    if run.migration != "none":  # runs without migrations record what they always did
        config["migration"] = run.migration
        config["migration_options"] = dict(run.migration_options)
    if not run.step_model.is_paper:  # the paper's runs record what they always did
        config["step_model"] = {**run.step_model.to_dict(), "coefficients": run.coefficients.to_dict()}
    if run.reference != "none":  # the coefficients and constants above are the pooled rank's
        config["reference"] = {"name": run.reference, "pooled_ranks": run.pooled_ranks}
    return config


def imbalance_terms(run: Setup, arrays: dict, requests: pd.DataFrame, frame: pd.DataFrame) -> dict:
    """What :func:`bfio.ground.imbalance_share.with_imbalance_share` reads beyond the run's totals:
    ``imbalance_floor_total`` (:func:`bfio.engine.capacity.indivisible_floor`) and
    ``kv_token_s``, the step seconds a KV token of the most loaded rank costs
    (the paper's ``t_l``; ``a_kv`` with a calibrated step). Independent ranks
    wait at no barrier, so neither applies there (NaN: a step is one rank's event)."""
    model = run.step_model
    if not model.is_paper and model.barrier == "independent":
        return {"imbalance_floor_total": float("nan"), "kv_token_s": float("nan")}
    floor = indivisible_floor(arrays["sum_load_pre"], *decode_phase(requests, frame), run.workers)
    cost = run.constants.token_latency_s if model.is_paper else run.coefficients.a_kv
    return {"imbalance_floor_total": floor, "kv_token_s": float(cost)}


def assemble(run: Setup, state: ClusterState, engine: DecodeEngine, dispatch: Dispatch, chunked: Prefill | None,
             t_wall: float) -> SimulationResult:
    """The result of a run whose every request finished (else :class:`PolicyError`);
    ``chunked`` is its prefill state (``None``: the paper's step), ``t_wall`` the
    ``time.perf_counter()`` at its start."""
    N = state.requests
    if state.finished < N:
        raise PolicyError(f"simulation stopped with {N - state.finished} of {N} requests unfinished")
    s, o = run.workload.prefill, run.workload.decode
    start, finish, enter_clock = state.start, state.finish, state.enter_clock
    arrays = engine.series.arrays()
    tpot = float(np.mean((finish - start) / o))
    wait_st = (state.start_step - state.enter_step).astype(float)
    wait_sec = start - enter_clock
    metrics = window_metrics(arrays, state.last_admission_step, tpot)
    metrics.update(run_totals(arrays, engine.t_l, engine.p_idle, engine.p_max, engine.gamma))
    metrics.update(wait_stats(wait_st, wait_sec))
    metrics.update(latency_stats(enter_clock, start, finish, o))
    metrics.update(run_metrics(arrays, state.clock, state.idle_s, run.workers, engine.p_idle))
    metrics.update(route_timings(state.route_times))
    metrics.update(run.policy.stats())
    if chunked is not None:
        metrics.update(chunked.metrics(enter_clock, finish, o))
    if run.entry == "arrivals":
        metrics.update(steady_stats(enter_clock, start, finish, o,
                                    None if chunked is None else chunked.first_token))
    if dispatch.preemption is not None:
        metrics.update(dispatch.preemption.metrics())
    if dispatch.moves is not None:
        metrics.update(dispatch.moves.metrics())
    if dispatch.pause is not None:
        metrics.update(dispatch.pause.metrics(state))
    if dispatch.migration is not None:
        metrics.update(dispatch.migration.metrics())
    requests = pd.DataFrame({"prefill": s, "decode": o, "worker": state.worker_of, "start_s": start,
                             "finish_s": finish, "start_step": state.start_step, "finish_step": state.finish_step,
                             "enter_step": state.enter_step, "wait_steps": wait_st, "wait_s": wait_sec,
                             "arrival_s": enter_clock, "tpot_s": (finish - start) / o,
                             "e2e_s": finish - enter_clock, "queue_worker": dispatch.queue_worker})
    if chunked is not None:
        requests["ttft_s"] = chunked.first_token - enter_clock
        requests["cached_tokens"] = chunked.cached
    if dispatch.preemption is not None:
        requests["preemptions"] = dispatch.preemption.times
    if dispatch.moves is not None:
        requests["moves"] = dispatch.moves.times
    if dispatch.pause is not None:
        requests["pauses"] = dispatch.pause.times
    if dispatch.migration is not None:
        requests["migrations"] = dispatch.migration.times
    frame = pd.DataFrame(arrays)
    frame.index = pd.RangeIndex(1, len(frame) + 1, name="step")
    metrics.update(imbalance_terms(run, arrays, requests, frame))
    warns = window_warnings(int(state.last_admission_step), arrays["active"], run.workers, run.slots, run.entry,
                            busy_peak=chunked.busy_peak if chunked is not None else None)
    return SimulationResult(config=run_config(run, engine.overhead), metrics=metrics, steps=int(state.step),
                            window_steps=int(state.last_admission_step), requests=requests, series=frame,
                            loads=engine.series.loads(), wall_s=time.perf_counter() - t_wall, warnings=warns)
