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

from bfio.engine.capacity import trace_capacity
from bfio.ground.errors import ConfigError
from bfio.runs.run import ArrivalSpec, RunSpec, resolve_row
from bfio.runs.runner import run_batch, simulate_run
from bfio.studies.registry import Figure, Study, Table, register_study
from bfio.policies import check_policy_options
from bfio.policies.completion_stream import COMPLETIONS_OPTION
from bfio.studies.online_summary import online_table, row_predictors
from bfio.studies.report import check_settings
from bfio.studies.routers_summary import routers_table
from bfio.traces.registry import trace_specs

#: What an online load is a fraction of (``online.load_basis``): the saturation of
#: backlog runs of ``online.saturation_row`` or the model's capacity (issue 44).
LOAD_BASES = ("saturation", "capacity")
#: The default basis (issue 44): the saturation of FCFS backlog runs over-counts
#: short requests (BurstGPT G=16: 1.18x the capacity), so loads past 0.85 of it
#: were past the capacity of any router.
DEFAULT_LOAD_BASIS = "capacity"


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
                       variants=None, bfio_defaults=None, log=None, defaults=None) -> dict:
    """Saturation throughput of a setting under ``row``: mean over ``seeds`` of
    :func:`saturation_rate` on backlog runs; also tokens/s (paper convention)."""
    per_seed, tokens = [], []
    for seed in seeds:
        run = RunSpec.make(setting["trace"], setting["requests"], setting["workers"], slots, row, seed,
                            arrival="backlog", variants=variants, bfio_defaults=bfio_defaults,
                           defaults=defaults)
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


def completions(options: dict) -> str:
    """What an instant-dispatch router on lagged reports knows of the requests
    finished since the last one (its ``completions`` option,
    :mod:`bfio.policies.completion_stream`): ``reported`` (the default, and for
    every policy without the option) or ``streamed``."""
    return str(options.get("completions") or COMPLETIONS_OPTION.default)


def online_runs(setting: dict, kind: str, saturation_rps: float, study: dict, seeds, slots: int,
                bfio_defaults=None, native_rps: float | None = None,
                defaults=None, capacity_rps: float | None = None) -> tuple[list[RunSpec], list[dict]]:
    """The runs of one setting and, per run, its extra columns (``load``,
    ``offered_rps``, ``saturation_rps``, ``report_interval``).

    ``kind`` is ``poisson`` (one arrival spec per ``study['loads']``) or
    ``replay`` (one per ``setting['time_scales']``; ``native_rps`` is the
    trace's own rate, so the offered load is ``native_rps / time_scale / saturation``).

    ``study['load_basis']``: what a load is a fraction of, ``saturation`` (the
    backlog runs' rate) or ``capacity`` (``capacity_rps``, the model's capacity
    for any router, :func:`bfio.engine.capacity.capacity`; issue 44; the default,
    :data:`DEFAULT_LOAD_BASIS`).
    """
    basis = study.get("load_basis", DEFAULT_LOAD_BASIS)
    if basis not in LOAD_BASES:
        raise ConfigError(f"online.load_basis: expected one of {', '.join(LOAD_BASES)}, got {basis!r}")
    if basis == "capacity":
        if capacity_rps is None or not capacity_rps > 0:
            raise ConfigError(f"online.load_basis: 'capacity' needs the setting's capacity > 0, got {capacity_rps!r}")
        base_rps = float(capacity_rps)
    else:
        base_rps = saturation_rps
    if not saturation_rps > 0:
        raise ConfigError(f"online: saturation throughput must be > 0 requests/s, got {saturation_rps!r}")
    if kind == "poisson":
        arrivals = [(ArrivalSpec("poisson", rate=float(load) * base_rps), float(load))
                    for load in study["loads"]]
    elif kind == "replay":
        if native_rps is None:
            raise ConfigError("online.replay: the trace's native arrival rate is needed")
        arrivals = [(ArrivalSpec("trace", time_scale=float(ts)), native_rps / float(ts) / base_rps)
                    for ts in setting["time_scales"]]
    else:
        raise ConfigError(f"online: setting kind must be poisson or replay, got {kind!r}")
    # written only when the capacity is the basis, so a saturation-based run's columns stay as they were
    basis_columns = {"load_basis": basis, "capacity_rps": base_rps} if basis == "capacity" else {}
    variants = study.get("variants") or {}
    runs, extra = [], []
    for arrival, load in arrivals:
        for dispatch in ("central", "instant"):
            for row in study.get(dispatch) or []:
                for seed in seeds:
                    runs.append(RunSpec.make(setting["trace"], setting.get("requests"), setting["workers"], slots,
                                              row, seed, arrival=arrival, dispatch=dispatch, variants=variants,
                                              bfio_defaults=bfio_defaults, defaults=defaults))
                    extra.append({"load": load, "offered_rps": load * base_rps,
                                  "saturation_rps": saturation_rps, **basis_columns,
                                  "report_interval": report_interval(runs[-1].policy_options),
                                  "completions": completions(runs[-1].policy_options),
                                  # BF-IO's H (RunSpec.horizon), stored so tables and figures label
                                  # rows from it, not from the row's name; NaN for other policies
                                  "horizon": float("nan") if runs[-1].horizon is None else float(runs[-1].horizon)})
    return runs, extra


def run_online(name: str, setting: dict, kind: str, saturation_rps: float, study: dict, seeds, slots: int,
               frame: pd.DataFrame, bfio_defaults=None, log=None, defaults=None,
               capacity_rps: float | None = None) -> pd.DataFrame:
    """Simulate every run of setting ``name``; one row per run with ``setting``,
    ``kind``, ``load``, ``offered_rps``, ``saturation_rps`` and the metrics.
    With the capacity as the load basis and no ``capacity_rps``, the capacity
    is the trace's (:func:`bfio.engine.capacity.trace_capacity` of ``frame``)."""
    native = trace_rate(frame) if kind == "replay" else None
    if capacity_rps is None and study.get("load_basis", DEFAULT_LOAD_BASIS) == "capacity":
        capacity_rps = trace_capacity(frame, setting["workers"], slots).requests_per_s
    runs, extra = online_runs(setting, kind, saturation_rps, study, seeds, slots, bfio_defaults, native_rps=native,
                              defaults=defaults, capacity_rps=capacity_rps)
    out = run_batch(runs, {setting["trace"]: frame}, show_progress=False, log=log)
    out = pd.concat([out, pd.DataFrame(extra)], axis=1)
    out.insert(0, "kind", kind)
    out.insert(0, "setting", name)
    return out


# --------------------------------------------------------------------------- the study protocol

#: The section's lists of settings, by arrival kind.
KINDS = ("poisson", "replay")


def plan(config: dict) -> dict:
    """The settings of ``online.poisson`` and ``online.replay`` by name, each with
    its ``kind`` (names unique, traces known: :func:`bfio.studies.report.check_settings`)."""
    section = config.get("online") or {}
    kind = {s["name"]: k for k in KINDS for s in section.get(k) or []}
    return {name: {**s, "kind": kind[name]} for name, s in check_settings(config, "online", KINDS).items()}


def _prepare(name, setting, section, seeds, slots, frame, defaults, log):
    """The preparatory stage: the setting's saturation throughput (a replay setting
    measures it on ``saturation_requests`` rows)."""
    s = dict(setting)
    if s["kind"] == "replay":
        s["requests"] = s["saturation_requests"]
    sat = measure_saturation(frame, s, seeds, slots, section["saturation_row"], variants=section.get("variants") or {},
                             log=log, defaults=defaults)
    log.info("saturation %.4g requests/s (%.4g tokens/s)", sat["saturation_rps"], sat["saturation_tokens_per_s"])
    return {"setting": name, **sat}


def _simulate(name, setting, section, seeds, slots, frame, defaults, log, prepared):
    kind = setting["kind"]
    keys = ["central", "instant"] + (["loads"] if kind == "poisson" else [])
    study = {**{k: section[k] for k in keys}, "variants": section.get("variants") or {},
             "load_basis": section.get("load_basis", DEFAULT_LOAD_BASIS)}
    run_setting = {k: v for k, v in setting.items() if k != "kind"}
    return run_online(name, run_setting, kind, prepared["saturation_rps"], study, seeds, slots, frame, log=log,
                      defaults=defaults)


def _validate(section: dict, config: dict) -> None:
    """Every row builds its policy (with its dispatch), the reference is a central
    row, and trace replays need an arrival column and never more rows than the
    trace has (known traces pin their row count; extra traces are checked when
    the job reads the file): no silent clipping."""
    bfio = config.get("bfio") or {}
    variants = section.get("variants") or {}
    for dispatch in ("central", "instant"):
        for i, row in enumerate(section.get(dispatch) or []):
            policy, opts = resolve_row(row, variants, bfio)
            check_policy_options(f"online.{dispatch}.{i}", policy, opts, dispatch=dispatch)
    policy, opts = resolve_row(section.get("saturation_row", "fcfs"), variants, bfio)
    check_policy_options("online.saturation_row", policy, opts)
    reference = section.get("reference", "bfio_h40")
    if section.get("instant") and reference not in (section.get("central") or []):
        raise ConfigError(f"config key 'online.reference': '{reference}' is not a central row of the online "
                          f"study (central: {', '.join(section.get('central') or []) or 'none'}); the routers "
                          "table compares every instant row with it")
    rows = set(section.get("central") or []) | set(section.get("instant") or [])
    for i, row in enumerate(section.get("figure_rows") or []):
        if row not in rows:
            raise ConfigError(f"config key 'online.figure_rows.{i}': '{row}' is not a row of the online study "
                              f"(rows: {', '.join(sorted(rows)) or 'none'})")
    specs = trace_specs(config)
    for i, s in enumerate(section.get("replay") or []):
        spec = specs.get(s["trace"])
        if spec is None:
            continue  # reported by bfio.studies.report.check_settings
        if spec.arrival_col is None:
            with_arrivals = sorted(n for n, sp in specs.items() if sp.arrival_col)
            raise ConfigError(f"config key 'online.replay.{i}.trace': trace '{s['trace']}' has no arrival column, "
                              f"so it cannot be replayed (traces with arrival times: {', '.join(with_arrivals)}; "
                              "an extra trace needs 'arrival_col')")
        n = s.get("requests")
        if n is not None and spec.rows is not None and n > spec.rows:
            raise ConfigError(f"config key 'online.replay.{i}.requests': {n} requests, but trace '{s['trace']}' has "
                              f"{spec.rows} rows (a replay uses the trace's own rows, no resampling; null replays "
                              "them all)")


ROUTERS_CAPTION = """Production data-parallel routers (issue 18, ``docs/online.md``): p99 end-to-end
latency of every instant-dispatch row of the online study
({{ config["online"]["instant"] }}), top: over that of the reference
row **{{ config["online"]["reference"] }}** (central pool), paired by
seed (1 = as fast, log scale); second row: in seconds (log scale; black line and
gray band: the reference, mean and 95% CI); third row (when the study has rows with
``completions: streamed``, issue 44): the top row's ratio for the routers that see
finished requests in the output stream (dotted) beside the same routers on
reports alone. Against the interval *k* of the
load reports the router sees (0 = the exact state; ``report_interval``), at the
load closest to {{ config["online"]["figure_load"] }} of saturation in
each setting. Mean over seeds {{ config["seeds"] }} with 95% CI bars."""

LOAD_CAPTION = """Online arrivals (study beyond the paper, ``docs/studies.md``): p99 end-to-end
latency (s, log scale) and whole-run throughput (tokens/s) against the offered
load, i.e. the Poisson arrival rate as a fraction of the cluster's saturation
throughput (requests/s measured by backlog runs of
**{{ config["online"]["saturation_row"] }}**), for loads
{{ config["online"]["loads"] }}. Solid lines: central pool
({{ config["online"]["central"] }}); dashed: instant dispatch to a
worker queue on arrival ({{ config["online"]["instant"] }}). Mean over
seeds {{ config["seeds"] }} with 95% CI bars."""

REPLAY_CAPTION = """Online arrivals, trace replay (study beyond the paper, ``docs/studies.md``):
the trace's own timestamps (a window of rows at a seeded offset), natively and
compressed in time; p50 and p99 end-to-end latency and p99 queue wait (s, log
scale) per policy. The panel title gives the offered load as a fraction of the
saturation throughput. Mean over seeds {{ config["seeds"] }} with 95%
CI bars."""

STUDY = register_study(Study(
    name="online", description="online arrivals, instant dispatch and production routers (docs/online.md)",
    settings_groups=KINDS, plan=plan, prepare=_prepare, prepare_file="saturation_{setting}", simulate=_simulate,
    validate=_validate, sim_keys=("saturation_row", "central", "instant", "loads", "variants", "load_basis"),
    tables=(Table("online", online_table),
            # production routers (issue 18): instant rows, report intervals, vs online.reference
            Table("online_routers", routers_table, when=lambda section: bool(section.get("instant")))),
    figures=(Figure("online_routers", "bfio.figures.online_routers:plot_online_routers", table="online_routers",
                    options=lambda section: {"load": float(section["figure_load"]),
                                             "predictors": row_predictors(section)}, caption=ROUTERS_CAPTION,
                    when=lambda section: bool(section.get("instant")), modules=("figures/online_routers.py",)),
             Figure("online_load", "bfio.figures.online_load:plot_online_load", table="online",
                    options=lambda section: {"rows": section.get("figure_rows"), "predictors": row_predictors(section)},
                    caption=LOAD_CAPTION, when=lambda section: bool(section.get("poisson")),
                    modules=("figures/online_load.py",)),
             Figure("online_replay", "bfio.figures.online_replay:plot_online_replay", table="online",
                    caption=REPLAY_CAPTION, when=lambda section: bool(section.get("replay")),
                    modules=("figures/online_replay.py",))),
    modules=("studies/online.py",), table_modules=("studies/online_summary.py", "studies/routers_summary.py"),
    figure_modules=("figures/online_routers.py", "figures/online_load.py", "figures/online_replay.py")))

__all__ = ["saturation_rate", "measure_saturation", "trace_rate", "report_interval", "completions", "online_runs", "run_online", "plan",
           "STUDY"]
