"""Study 1: online arrivals against production routers (issue 6).

For every setting (trace, N, G, B) of the config key ``online``:

1. :func:`measure_saturation` measures the cluster's saturation throughput in
   requests/s: backlog runs (the paper's pool of ``4 G`` kept full, so the
   cluster is never idle for want of requests) under ``online.saturation_row``;
   the rate is the number of requests finished inside the paper's metric window
   over the window's duration, averaged over the seeds.
2. :func:`online_runs` lists the simulations: Poisson arrivals at every load in
   ``online.loads`` (rate = load x saturation) for the ``poisson`` settings, or
   the trace's own timestamps for the ``replay`` settings (one run per
   ``time_scales`` entry; < 1 compresses time); each under every row of
   ``online.central`` (central pool, dispatch when a slot frees) and of
   ``online.instant`` (dispatch to a worker's queue at arrival; rows may be
   ``variants`` with a ``report_interval``, the production routers seeing load
   reports that lag, issue 18); every seed.
3. :func:`bfio.studies.online_summary.summarize_online` aggregates per (setting,
   load, dispatch, row) with 95% t intervals over seeds.
"""

from __future__ import annotations

import numpy as np
import pandas as pd

from bfio.errors import ConfigError
from bfio.run import ArrivalSpec, RunSpec, run_batch, simulate_run
from bfio.studies.registry import Study, register_study

def saturation_rate(result, requests: int) -> float:
    """Requests/s of a backlog run: requests finished within the metric window
    (steps ``1..window_steps``) over the window's duration; the whole run
    (``requests / makespan``) when the window is empty."""
    done = int((result.requests["finish_step"] <= result.window_steps).sum())
    window_s = float(result.metrics.get("window_time_s", 0.0))
    if result.window_steps > 0 and window_s > 0 and done > 0:
        return done / window_s
    return requests / float(result.metrics["makespan_s"])


def measure_saturation(frame: pd.DataFrame, setting: dict, seeds, slots: int, row: str,
                       variants=None, bfio_defaults=None, log=None) -> dict:
    """Saturation throughput of a setting under ``row``: mean over ``seeds`` of
    :func:`saturation_rate` on backlog runs; also tokens/s (paper convention)."""
    per_seed, tokens = [], []
    for seed in seeds:
        run = RunSpec.make(setting["trace"], setting["requests"], setting["workers"], slots, row, seed,
                            arrival="backlog", variants=variants, bfio_defaults=bfio_defaults)
        result = simulate_run(run, frame)
        per_seed.append(saturation_rate(result, len(result.requests)))
        tokens.append(float(result.metrics["throughput"]))
        if log is not None:
            log.info("saturation %s G=%d %s seed=%d: %.4g req/s", run.trace, run.workers, row, seed, per_seed[-1])
    return {"trace": setting["trace"], "requests": int(setting["requests"]), "workers": int(setting["workers"]),
            "slots": int(slots), "row": row, "seeds": [int(s) for s in seeds],
            "saturation_rps": float(np.mean(per_seed)), "saturation_rps_per_seed": per_seed,
            "saturation_tokens_per_s": float(np.mean(tokens))}


def trace_rate(frame: pd.DataFrame) -> float:
    """Mean arrival rate (requests/s) of a trace table with ``arrival_s``."""
    if "arrival_s" not in frame:
        raise ConfigError("online.replay: the trace has no arrival times (no arrival column), so it cannot be "
                          "replayed; use a trace with arrival times or a poisson setting")
    a = frame["arrival_s"].to_numpy(dtype=float)
    span = float(a.max() - a.min())
    if not span > 0:
        raise ConfigError("online.replay: the trace's arrival times span no time")
    return len(a) / span


def report_interval(options: dict) -> int:
    """Steps between the load reports an instant-dispatch router sees (its
    ``report_interval`` option, :class:`bfio.policies.base.InstantPolicy`); 0 =
    exact state, and for every policy without the option."""
    return int(options.get("report_interval", 0) or 0)


def online_runs(setting: dict, kind: str, saturation_rps: float, study: dict, seeds, slots: int,
                bfio_defaults=None, native_rps: float | None = None) -> tuple[list[RunSpec], list[dict]]:
    """The runs of one setting and, per run, its extra columns (``load``,
    ``offered_rps``, ``saturation_rps``, ``report_interval``).

    ``kind`` is ``poisson`` (one arrival spec per ``study['loads']``) or
    ``replay`` (one per ``setting['time_scales']``; ``native_rps`` is the
    trace's own rate, so the offered load is ``native_rps / time_scale / saturation``).
    """
    if not saturation_rps > 0:
        raise ConfigError(f"online: saturation throughput must be > 0 requests/s, got {saturation_rps!r}")
    if kind == "poisson":
        arrivals = [(ArrivalSpec("poisson", rate=float(load) * saturation_rps), float(load))
                    for load in study["loads"]]
    elif kind == "replay":
        if native_rps is None:
            raise ConfigError("online.replay: the trace's native arrival rate is needed")
        arrivals = [(ArrivalSpec("trace", time_scale=float(ts)), native_rps / float(ts) / saturation_rps)
                    for ts in setting["time_scales"]]
    else:
        raise ConfigError(f"online: setting kind must be poisson or replay, got {kind!r}")
    variants = study.get("variants") or {}
    runs, extra = [], []
    for arrival, load in arrivals:
        for dispatch in ("central", "instant"):
            for row in study.get(dispatch) or []:
                for seed in seeds:
                    runs.append(RunSpec.make(setting["trace"], setting.get("requests"), setting["workers"], slots,
                                              row, seed, arrival=arrival, dispatch=dispatch, variants=variants,
                                              bfio_defaults=bfio_defaults))
                    extra.append({"load": load, "offered_rps": load * saturation_rps,
                                  "saturation_rps": saturation_rps,
                                  "report_interval": report_interval(runs[-1].policy_options)})
    return runs, extra


def run_online(name: str, setting: dict, kind: str, saturation_rps: float, study: dict, seeds, slots: int,
               frame: pd.DataFrame, bfio_defaults=None, log=None) -> pd.DataFrame:
    """Simulate every run of setting ``name``; one row per run with ``setting``,
    ``kind``, ``load``, ``offered_rps``, ``saturation_rps`` and the metrics."""
    native = trace_rate(frame) if kind == "replay" else None
    runs, extra = online_runs(setting, kind, saturation_rps, study, seeds, slots, bfio_defaults, native_rps=native)
    out = run_batch(runs, {setting["trace"]: frame}, show_progress=False, log=log)
    out = pd.concat([out, pd.DataFrame(extra)], axis=1)
    out.insert(0, "kind", kind)
    out.insert(0, "setting", name)
    return out


STUDY = register_study(Study(
    name="online", description="online arrivals, instant dispatch and production routers (docs/online.md)",
    settings_groups=("poisson", "replay"), generic=False,
    modules=("studies/online.py", "studies/online_summary.py", "studies/routers_summary.py")))

__all__ = ["saturation_rate", "measure_saturation", "trace_rate", "report_interval", "online_runs", "run_online", "STUDY"]
