"""Generality study (issue 6): the paper's comparison on every trace.

For each trace, cluster size ``G`` and arrival case, FCFS, JSQ (tokens and
requests) and BF-IO (``H = 0`` and ``H = 40``) run over the config's seeds, and
the table reports BF-IO's paired effect over FCFS with 95% intervals
(:func:`bfio.studies.paired_effect`). Config: the ``generality`` key
(``docs/generality.md``).

Arrival cases (the ``case`` column):

- ``backlog``: the paper's convention; ``N = requests_per_slot * G * B``
  requests drawn with replacement; metrics over the paper's window (steps up
  to the last admission): ``avg_imbalance``, ``throughput``, ``energy_j``;
- ``replay_x<s>``: the trace's own rows at their timestamps times ``s``
  (``s = 1``: the native load);
- ``replay_load<r>``: the time scale chosen so the offered request rate is
  ``r`` times the cluster's saturation rate, measured as FCFS's backlog
  throughput of the same trace and ``G`` (requests/s = tokens/s over the
  trace's mean decode length). ``r > 1`` overloads FCFS.

Replays run a seeded contiguous window of ``min(requests_per_slot * G * B,
max_fraction * rows, max_requests)`` rows (no resampling, so the window is
capped below the trace length and the seeds see different windows; the cap
bounds the cost of native-time replays, whose step count grows with the
replayed wall-clock span); their metrics cover the
whole run (``avg_imbalance_run``, ``throughput_run``, ``energy_j_run``
including idle power while the cluster waits for arrivals).

The table's energy is per generated token (J/token: the energy of the measured
span over the tokens generated in it), so a policy that generates more tokens
in the paper's window is not charged for it.
"""

from __future__ import annotations

import math

import numpy as np
import pandas as pd

from bfio.ground.errors import ConfigError
from bfio.runs.run import ArrivalSpec, RunSpec
from bfio.runs.runner import run_batch
from bfio.studies.registry import Figure, Study, Table, register_study
from bfio.studies.generality_report import generality_tabulate
from bfio.traces.registry import trace_specs

#: Per arrival mode: the metric columns behind the table's unified metrics.
MODE_METRICS = {
    "backlog": {"imbalance": "avg_imbalance", "throughput": "throughput", "energy": "energy_j",
                "span": "window_time_s"},
    "trace": {"imbalance": "avg_imbalance_run", "throughput": "throughput_run", "energy": "energy_j_run",
              "span": "makespan_run_s"},
}
ARRIVAL_JOBS = ("backlog", "replay")


# --------------------------------------------------------------------------- sizes and loads

def study_slots(study: dict, config: dict) -> int:
    return int(study.get("slots") or config.get("slots", 72))


def backlog_requests(workers: int, slots: int, per_slot: float) -> int:
    """``N = requests_per_slot * G * B`` (at least 1)."""
    return max(1, int(round(per_slot * workers * slots)))


def replay_requests(workers: int, slots: int, per_slot: float, rows: int, max_fraction: float,
                    max_requests: int | None = None) -> int:
    """Rows of one replay: ``min(requests_per_slot G B, max_fraction rows, max_requests)`` (at least 1)."""
    n = min(backlog_requests(workers, slots, per_slot), int(math.floor(max_fraction * rows)))
    if max_requests is not None:
        n = min(n, int(max_requests))
    return max(1, n)


def native_rate(frame: pd.DataFrame) -> float:
    """The trace's own request rate (rows / time span, requests/s)."""
    if "arrival_s" not in frame:
        raise ConfigError("generality.replay: the trace has no arrival times")
    a = frame["arrival_s"].to_numpy(dtype=float)
    span = float(a.max() - a.min())
    if not span > 0:
        raise ConfigError("generality.replay: the trace's arrival times span no time")
    return len(a) / span


def saturation_rps(backlog_runs: pd.DataFrame, row: str, mean_decode: float) -> float:
    """Saturation request rate of the cluster: ``row``'s backlog throughput
    (tokens/s, mean over seeds) over the trace's mean decode length."""
    sub = backlog_runs[backlog_runs["row"] == row]
    if sub.empty:
        raise ConfigError(f"generality.baseline: no backlog runs of row '{row}' to measure the saturation rate")
    return float(sub["throughput"].mean()) / float(mean_decode)


def replay_cases(study: dict, rate: float, sat_rps: float) -> list[tuple[str, ArrivalSpec, float]]:
    """``(case, arrival, offered load)`` of every replay: fixed time scales, then
    loads relative to the saturation rate (converted to time scales)."""
    replay = study.get("replay", {})
    out = []
    for s in replay.get("time_scales", []):
        out.append((f"replay_x{s:g}", ArrivalSpec("trace", time_scale=float(s)), rate / (float(s) * sat_rps)))
    for load in replay.get("loads", []):
        scale = rate / (float(load) * sat_rps)
        out.append((f"replay_load{load:g}", ArrivalSpec("trace", time_scale=scale), float(load)))
    return out


# --------------------------------------------------------------------------- running

def _unify(df: pd.DataFrame) -> pd.DataFrame:
    """Add ``imbalance``, ``throughput_tps``, ``energy_per_token_j`` and
    ``slot_util`` from each run's mode-specific metrics."""
    df = df.copy()
    for col in ("imbalance", "throughput_tps", "energy_j_span", "span_s"):
        df[col] = np.nan
    for mode, cols in MODE_METRICS.items():
        m = df["arrival_mode"] == mode if mode == "trace" else df["arrival_mode"] != "trace"
        if not m.any():
            continue
        df.loc[m, "imbalance"] = df.loc[m, cols["imbalance"]]
        df.loc[m, "throughput_tps"] = df.loc[m, cols["throughput"]]
        df.loc[m, "energy_j_span"] = df.loc[m, cols["energy"]]
        df.loc[m, "span_s"] = df.loc[m, cols["span"]]
    tokens = df["throughput_tps"] * df["span_s"]
    df["energy_per_token_j"] = df["energy_j_span"] / tokens
    steps = np.where(df["arrival_mode"] == "trace", df["steps"], df["window_steps"])
    df["slot_util"] = tokens / (df["workers"] * df["slots"] * steps * 1.0)
    return df


def generality_runs(trace: str, workers: int, arrival: str, study: dict, seeds, slots: int, frame: pd.DataFrame,
                    backlog_runs: pd.DataFrame | None = None, bfio_defaults: dict | None = None,
                    defaults: dict | None = None):
    """``[(case, offered load, RunSpec), ...]`` of one job (trace, G, arrival job);
    ``defaults``: the config's per-policy options (:func:`bfio.runs.run.policy_defaults`)."""
    rows, k = list(study["rows"]), float(study["requests_per_slot"])
    if arrival == "backlog":
        n = backlog_requests(workers, slots, k)
        return [("backlog", float("nan"), RunSpec.make(trace, n, workers, slots, row, seed, "backlog",
                                                        bfio_defaults=bfio_defaults, defaults=defaults))
                for row in rows for seed in seeds]
    if arrival != "replay":
        raise ConfigError(f"arrival: expected one of {', '.join(ARRIVAL_JOBS)}, got {arrival!r}")
    if backlog_runs is None:
        raise ConfigError("generality.replay: needs the backlog runs of the same trace and G (saturation rate)")
    rate = native_rate(frame)
    sat = saturation_rps(backlog_runs, study["baseline"], float(frame["decode_tokens"].mean()))
    n = replay_requests(workers, slots, k, len(frame), float(study["replay"]["max_fraction"]),
                        study["replay"].get("max_requests"))
    return [(case, load, RunSpec.make(trace, n, workers, slots, row, seed, spec, bfio_defaults=bfio_defaults,
                                               defaults=defaults))
            for case, spec, load in replay_cases(study, rate, sat) for row in rows for seed in seeds]


def run_generality(trace: str, workers: int, arrival: str, study: dict, seeds, slots: int, frame: pd.DataFrame,
                   backlog_runs: pd.DataFrame | None = None, bfio_defaults: dict | None = None,
                   log=None, defaults: dict | None = None) -> pd.DataFrame:
    """Run one job of the study; one row per run with ``case``, ``offered_load``
    and the unified metrics (see :func:`_unify`)."""
    planned = generality_runs(trace, workers, arrival, study, seeds, slots, frame, backlog_runs, bfio_defaults,
                              defaults)
    df = run_batch([r for _, _, r in planned], {trace: frame}, show_progress=False, log=log)
    df.insert(0, "case", [c for c, _, _ in planned])
    df.insert(1, "offered_load", [x for _, x, _ in planned])
    return _unify(df)


# --------------------------------------------------------------------------- the study protocol

def setting_name(trace: str, workers: int, arrival: str) -> str:
    return f"{trace}_g{int(workers)}_{arrival}"


def plan(config: dict) -> dict:
    """The study's jobs as settings, by name: a backlog job per trace and G, then
    (when the section has replay cases) a replay job per trace with arrival
    times and G; ``slots``: the section's, when it sets one."""
    gen = config.get("generality") or {}
    traces, workers = list(gen.get("traces") or []), [int(g) for g in gen.get("workers") or []]
    replay = gen.get("replay") or {}
    specs = trace_specs(config) if traces else {}
    replay_traces = [t for t in traces if (replay.get("time_scales") or replay.get("loads"))
                     and specs.get(t) is not None and specs[t].arrival_col]
    extra = {"slots": int(gen["slots"])} if gen.get("slots") else {}
    out = {}
    for arrival, names in (("backlog", traces), ("replay", replay_traces)):
        for t in names:
            for g in workers:
                out[setting_name(t, g, arrival)] = {"trace": t, "workers": g, "arrival": arrival, **extra}
    return out


def _simulate(name, setting, section, seeds, slots, frame, defaults, log, prior=None):
    backlog = None
    if setting["arrival"] == "replay":
        backlog = (prior or {})[setting_name(setting["trace"], setting["workers"], "backlog")]
    return run_generality(setting["trace"], int(setting["workers"]), setting["arrival"], section, seeds, slots,
                          frame, backlog_runs=backlog, log=log, defaults=defaults)


def _validate(section: dict, config: dict) -> None:
    rows = section["rows"]
    for key in ("baseline", "targets"):
        vals = section[key] if isinstance(section[key], list) else [section[key]]
        missing = [r for r in vals if r not in rows]
        if missing:
            raise ConfigError(f"config key 'generality.{key}': {missing} not in 'generality.rows' "
                              f"({', '.join(rows)})")
    if section["baseline"] in section["targets"]:
        raise ConfigError(f"config key 'generality.targets': contains the baseline '{section['baseline']}'")


TABLE_CAPTION = """Generality table (``docs/generality.md``): per trace, arrival case and G, the
imbalance ratio FCFS / BF-IO, throughput gain and energy-per-token saving of
BF-IO over FCFS, paired by seed with 95% intervals over seeds
{{ config["seeds"] }}, with the trace's mean prompt and decode
lengths and the offered load."""

GENERALITY_CAPTION = """Generality across traces (study beyond the paper, ``docs/generality.md``):
BF-IO ({{ config["generality"]["targets"][0] }}) against
{{ config["generality"]["baseline"] }} on every trace of
{{ config["generality"]["traces"] }} at
G = {{ config["generality"]["workers"] }}: imbalance ratio (top, log
scale), throughput gain (middle) and energy-per-token saving (bottom). Left:
backlog (the paper's saturated convention, N = k G B with
k = {{ config["generality"]["requests_per_slot"] }}); right: the
trace's own timestamps (native, and loads relative to the FCFS saturation
rate). Paired by seed, mean over seeds {{ config["seeds"] }} with 95%
interval bars."""

STUDY = register_study(Study(
    name="generality", description="the same comparison on every trace, backlog and trace replay (docs/generality.md)",
    settings_groups=(), plan=plan,
    run_file=lambda name, s: f"{s['trace']}/g{int(s['workers'])}_{s['arrival']}",
    needs=lambda name, s: [setting_name(s["trace"], s["workers"], "backlog")] if s["arrival"] == "replay" else [],
    simulate=_simulate, merged_runs=True, validate=_validate,
    sim_keys=("rows", "requests_per_slot", "baseline", "replay"),
    tables=(Table("generality", generality_tabulate, caption=TABLE_CAPTION),),
    table_inputs=lambda config: [f"results/traces/{t}.stats.json" for t in config["generality"]["traces"]],
    figures=(Figure("generality", plot="bfio.figures.generality:plot_generality",
                    # the figure shows the first target
                    options=lambda section: {"target": section["targets"][0]},
                    caption=GENERALITY_CAPTION),),
    modules=("studies/generality.py",), table_modules=("studies/generality_report.py",),
    figure_modules=("figures/generality.py",),
))

__all__ = ["MODE_METRICS", "ARRIVAL_JOBS", "study_slots", "backlog_requests", "replay_requests", "native_rate",
           "saturation_rps", "replay_cases", "generality_runs", "run_generality", "setting_name", "plan",
           "STUDY"]
