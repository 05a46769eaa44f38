"""The pipeline's experiments: validating the config, expanding its lists into
simulation runs, preparing traces and running one simulation.

A run is identified by ``(trace, requests, workers, slots, row, seed)`` where
``row`` is the paper's row key (``fcfs``, ``jsq_tokens``, ``bfio_h40``, see
:func:`bfio.paper.row_key`). Its outputs live under
``results/runs/<RunSpec.path>/``; experiments that contain the same run (Table 1
and the H sweep share G=256, N=80,000 LongBench runs) share its job. The
Snakemake workflow (``Snakefile``, ``workflow/rules``) is a thin layer over
these functions.
"""

from __future__ import annotations

import contextlib
import copy
import json
import logging
import math
import os
import re
import sys
import tempfile
import time
import traceback
from pathlib import Path

import numpy as np
import pandas as pd

from bfio.download import fetch as download_trace  # noqa: F401  (re-export: fetching lives in bfio.download)
from bfio.errors import BfioError, ChecksumError, ConfigError, TraceError
from bfio.fingerprint import code_fingerprint  # noqa: F401  (the workflow's rerun triggers)
from bfio.paper import TABLE_SETTINGS, parse_bfio_row, row_key
from bfio.progress import log_progress
from bfio.run import RunSpec, baselines
from bfio.traces import KNOWN_TRACES, TRACE_ALIASES, TraceSpec, load_trace, sha256_of


def __getattr__(name: str):
    # ``BASELINES`` reads the registry on every access (a policy registered
    # after this module was imported is a baseline too)
    if name == "BASELINES":
        return baselines()
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


#: Metrics aggregated in tables: paper convention first, then the pre-step twins.
METRICS = ("avg_imbalance", "throughput", "tpot", "energy_j", "avg_imbalance_pre", "energy_j_pre")

log = logging.getLogger("bfio.pipeline")


# --------------------------------------------------------------------------- runs

def experiment_rows(exp: dict) -> list[str]:
    """Row keys of an experiment: its baselines, ``bfio_h<H>`` per horizon, then
    ``bfio_h<H>_literal`` (the paper-literal objective) per ``literal_horizons``."""
    return (list(exp.get("baselines", [])) + [row_key("bfio", int(h)) for h in exp.get("horizons", [])]
            + [row_key("bfio", int(h), "paper-literal") for h in exp.get("literal_horizons", [])])


def experiment_runs(config: dict, name: str) -> list[RunSpec]:
    """Every run of experiment ``name``: rows x workers x seeds (config order)."""
    exp = config["experiments"][name]
    slots = int(exp.get("slots", config.get("slots", 72)))
    return [RunSpec(exp["trace"], int(exp["requests"]), int(g), slots, row, int(seed))
            for row in experiment_rows(exp) for g in exp["workers"] for seed in config["seeds"]]


def all_runs(config: dict) -> list[RunSpec]:
    """Distinct runs over all experiments (shared runs appear once), sorted."""
    return sorted({r for name in config["experiments"] for r in experiment_runs(config, name)})


def reference_seed(config: dict) -> int:
    return int(config["seeds"][0])


def trajectory_runs(config: dict) -> dict[str, list[RunSpec]]:
    """experiment -> runs (reference seed, first G) whose load matrices are recorded."""
    return figure_runs(config, "trajectories")


def figure_runs(config: dict, key: str) -> dict[str, list[RunSpec]]:
    """experiment -> runs (reference seed, first G) named by the ``figures`` mapping ``key``."""
    out = {}
    for name, rows in config.get("figures", {}).get(key, {}).items():
        if name not in config["experiments"]:
            continue
        exp = config["experiments"][name]
        slots = int(exp.get("slots", config.get("slots", 72)))
        out[name] = [RunSpec(exp["trace"], int(exp["requests"]), int(exp["workers"][0]), slots, row,
                             reference_seed(config)) for row in rows]
    return out


# --------------------------------------------------------------------------- code

#: Package sources a simulation's result depends on (see :func:`code_fingerprint`).
SIMULATION_SOURCES = ("constants.py", "kernels.py", "metrics.py", "power.py", "simulator.py", "workload.py",
                      "predictors.py", "policies", "solvers", "run.py")


# --------------------------------------------------------------------------- config

def _default_filling_validator():
    import jsonschema

    base = jsonschema.Draft7Validator

    def set_defaults(validator, properties, instance, schema):
        if isinstance(instance, dict):
            for prop, sub in properties.items():
                if "default" in sub and prop not in instance:
                    instance[prop] = copy.deepcopy(sub["default"])
        yield from base.VALIDATORS["properties"](validator, properties, instance, schema)

    return jsonschema.validators.extend(base, {"properties": set_defaults})


def _key_path(error) -> str:
    parts = [str(p) for p in error.absolute_path]
    if error.validator == "required":
        m = re.match(r"'([^']+)' is a required property", error.message)
        if m:
            parts.append(m.group(1))
    if error.validator == "additionalProperties":
        m = re.search(r"\('([^']+)'", error.message)
        if m:
            parts.append(m.group(1))
    return ".".join(parts) or "<top level>"


def validate_config(config: dict, schema) -> dict:
    """Validate ``config`` against the pipeline schema (a dict or a YAML path),
    fill in defaults (in place, also returned) and check cross-references.

    Raises :class:`~bfio.errors.ConfigError` whose message starts with the
    dotted key at fault, e.g. ``config key 'experiments.table1.requests': ...``.
    """
    if not isinstance(schema, dict):
        import yaml
        with open(schema) as f:
            schema = yaml.safe_load(f)
    schema = _registry_enums(schema)
    # snakemake --config download=false passes the string 'false' (download=False the bool)
    if isinstance(config.get("download"), str) and config["download"].lower() in ("true", "false"):
        config["download"] = config["download"].lower() == "true"
    figs = config.get("figures") if isinstance(config.get("figures"), dict) else {}
    explicit_figures = {k: figs[k] for k in ("horizon_sweep", "worker_sweep") if k in figs}
    validator_cls = _default_filling_validator()
    validator = validator_cls(schema)
    # Fill defaults first (iter_errors runs the properties hook), then report
    # the first error in document order.
    errors = sorted(validator.iter_errors(config), key=lambda e: [str(p) for p in e.absolute_path])
    if errors:
        e = errors[0]
        raise ConfigError(f"config key '{_key_path(e)}': {e.message}")
    _check_references(config)
    for key, name in explicit_figures.items():
        if name is not None and name not in config["experiments"]:
            raise ConfigError(f"config key 'figures.{key}': '{name}' is not an experiment (experiments: "
                              f"{', '.join(config['experiments']) or 'none'}); name one, or null for no figure")
    _check_policies(config)
    _check_online_replay(config)
    return config


def _registry_enums(schema: dict) -> dict:
    """A copy of ``schema`` whose predictor, solver and objective enums come from
    the package registries (:data:`bfio.predictors.PREDICTORS`,
    :data:`bfio.solvers.SOLVERS`, :data:`bfio.solvers.objective.OBJECTIVES`), and
    whose policy names come from the policy registry (the experiments' baseline
    enum, :func:`bfio.policies.baselines`, and the row pattern,
    :func:`bfio.policies.row_pattern`), so the schema never lists them twice."""
    from bfio.policies import baselines as registry_baselines
    from bfio.policies import row_pattern
    from bfio.predictors import PREDICTORS
    from bfio.solvers import SOLVERS
    from bfio.solvers.objective import OBJECTIVES

    schema = copy.deepcopy(schema)
    defs = schema.get("definitions", {})
    if "row" in defs:
        defs["row"]["pattern"] = row_pattern()
    base = defs.get("experiment", {}).get("properties", {}).get("baselines", {}).get("items")
    if base is not None:
        base["enum"] = list(registry_baselines())
    props = schema.get("properties", {})
    bfio = props.get("bfio", {}).get("properties", {})
    if "objective" in bfio:
        bfio["objective"]["enum"] = list(OBJECTIVES)
    if "predictor" in bfio:
        bfio["predictor"]["enum"] = list(PREDICTORS)
    if "solver" in bfio:
        bfio["solver"]["enum"] = list(SOLVERS)
    pred = props.get("predictor_study", {}).get("properties", {}).get("predictors", {}).get("items")
    if pred is not None:
        pred["enum"] = list(PREDICTORS)
    return schema


def _build_policy(key: str, policy: str, options: dict, dispatch: str | None = None) -> None:
    """Build ``policy`` with ``options`` as a job would, so the policy's own
    checks run when the config loads; errors name ``key`` (and the option)."""
    from bfio.policies import available, make_policy

    if policy not in available():
        raise ConfigError(f"config key '{key}': unknown policy '{policy}' (available: {', '.join(available())})")
    try:
        pol = make_policy(policy, **options)
    except TypeError as e:
        bad = [k for k in options if f"'{k}'" in str(e)]
        where = f"{key}.{bad[0]}" if bad else key
        raise ConfigError(f"config key '{where}': not an option of policy '{policy}' ({e})") from None
    except ConfigError as e:
        opt = str(e).split(":", 1)[0]
        where = f"{key}.{opt}" if opt in options else key
        raise ConfigError(f"config key '{where}': {e}") from None
    if dispatch is not None and dispatch not in getattr(pol, "dispatch_modes", ("central",)):
        raise ConfigError(f"config key '{key}': policy '{policy}' does not support {dispatch} dispatch "
                          f"(it supports: {', '.join(pol.dispatch_modes)})")


def _check_policies(config: dict) -> None:
    """The BF-IO options, every study variant and every study row build a policy."""
    from bfio.run import resolve_row

    bfio = config.get("bfio") or {}
    _build_policy("bfio", "bfio", dict(bfio))
    for study in ("online", "predictor_study", "starvation"):
        section = config.get(study) or {}
        variants = section.get("variants") or {}
        for label in variants:
            try:
                policy, opts = resolve_row(label, variants, bfio)
            except ConfigError as e:
                raise ConfigError(f"config key '{study}.variants.{label}': {e}") from None
            _build_policy(f"{study}.variants.{label}", policy, opts)
    online = config.get("online") or {}
    if online.get("poisson") or online.get("replay"):
        variants = online.get("variants") or {}
        for dispatch in ("central", "instant"):
            for i, row in enumerate(online.get(dispatch) or []):
                policy, opts = resolve_row(row, variants, bfio)
                _build_policy(f"online.{dispatch}.{i}", policy, opts, dispatch=dispatch)
        policy, opts = resolve_row(online.get("saturation_row", "fcfs"), variants, bfio)
        _build_policy("online.saturation_row", policy, opts)
        reference = online.get("reference", "bfio_h40")
        if online.get("instant") and reference not in (online.get("central") or []):
            raise ConfigError(f"config key 'online.reference': '{reference}' is not a central row of the online "
                              f"study (central: {', '.join(online.get('central') or []) or 'none'}); the routers "
                              "table compares every instant row with it")


def _check_online_replay(config: dict) -> None:
    """Trace replays need an arrival column, and never more rows than the trace
    has (known traces pin their row count; extra traces are checked when the
    job reads the file): no silent clipping."""
    specs = trace_specs(config)
    for i, s in enumerate((config.get("online") or {}).get("replay") or []):
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


#: Where a named run (config key ``run_name``) writes everything: its own
#: working directory, so the default run's results/, figures/ and logs/ are
#: never touched.
NAMED_RUN_DIR = "runs"
_RUN_NAME_RE = re.compile(r"^[a-z][a-z0-9_]*$")


def named_run(config: dict, user_config: dict | None, cwd=None) -> str | None:
    """Apply a *named run*: if the user's own configuration (the merged
    ``--configfile`` files and ``--config`` values, Snakemake's
    ``overwrite_config``) sets ``run_name``, it **replaces** the workflow's
    default config (``config/config.yaml``) instead of extending it: ``config``
    becomes a copy of ``user_config`` (in place; keys it does not set take the
    schema defaults). Relative paths (``data_dir``, ``download_dir``,
    ``extra_traces.*.path``) are made absolute against ``cwd`` (the directory
    snakemake was started in). Returns the run's working directory,
    ``runs/<run_name>`` under ``cwd``, or ``None`` (no named run; ``config``
    untouched).

    Raises :class:`~bfio.errors.ConfigError` for a malformed ``run_name``.
    """
    name = (user_config or {}).get("run_name")
    if name is None:
        if config.get("run_name") is not None:
            raise ConfigError("config key 'run_name': set it in your own config file (--configfile), "
                              "not in config/config.yaml; a named run replaces the default config")
        return None
    if not isinstance(name, str) or not _RUN_NAME_RE.match(name):
        raise ConfigError(f"config key 'run_name': {name!r} is not a lowercase identifier "
                          "(letters, digits, '_', starting with a letter), e.g. 'mytrace'")
    cwd = Path(cwd if cwd is not None else Path.cwd()).resolve()
    new = copy.deepcopy(user_config)

    def absolute(p):
        return str(p) if Path(p).is_absolute() else str(cwd / p)

    for key, default in (("data_dir", "../shared/data"), ("download_dir", "resources/traces")):
        new[key] = absolute(new.get(key, default))
    for entry in (new.get("extra_traces") or {}).values():
        if isinstance(entry, dict) and "path" in entry:
            entry["path"] = absolute(entry["path"])
    config.clear()
    config.update(new)
    return str(cwd / NAMED_RUN_DIR / name)


def trace_specs(config: dict) -> dict[str, TraceSpec]:
    """Every trace name the config may use: :data:`~bfio.traces.KNOWN_TRACES`
    plus the ``extra_traces`` entries (``relpath`` is the configured path)."""
    out = dict(KNOWN_TRACES)
    for name, e in (config.get("extra_traces") or {}).items():
        out[name] = TraceSpec(name, str(e["path"]), e.get("sha256"), e["prefill_col"], e["decode_col"],
                              e.get("arrival_col"), description=e.get("description") or f"extra trace {e['path']}")
    return out


def _trace_references(config: dict):
    """``(dotted config key, trace name)`` of every place a trace is named."""
    for i, t in enumerate(config.get("traces", [])):
        yield f"traces.{i}", t
    for name, exp in config.get("experiments", {}).items():
        yield f"experiments.{name}.trace", exp["trace"]
    for i, t in enumerate(config.get("figures", {}).get("distributions", [])):
        yield f"figures.distributions.{i}", t
    for i, t in enumerate(config.get("generality", {}).get("traces", [])):
        yield f"generality.traces.{i}", t
    for study in ("online", "predictor_study", "starvation"):
        for group, settings in (config.get(study) or {}).items():
            items = settings.items() if isinstance(settings, dict) else enumerate(settings) \
                if isinstance(settings, list) else ()
            for key, s in items:
                if isinstance(s, dict) and "trace" in s:
                    yield f"{study}.{group}.{key}.trace", s["trace"]


def _check_traces(config: dict) -> None:
    for name in config.get("extra_traces") or {}:
        if name in KNOWN_TRACES or name in TRACE_ALIASES:
            raise ConfigError(f"config key 'extra_traces.{name}': '{name}' is already a known trace; "
                              "choose another name")
    names = trace_specs(config)
    for key, t in _trace_references(config):
        if t not in names:
            raise ConfigError(f"config key '{key}': unknown trace '{t}' (known: {', '.join(KNOWN_TRACES)}; "
                              "define others under 'extra_traces')")
    gen = config.get("generality") or {}
    if gen.get("traces"):
        rows = gen["rows"]
        for key in ("baseline", "targets"):
            vals = gen[key] if isinstance(gen[key], list) else [gen[key]]
            missing = [r for r in vals if r not in rows]
            if missing:
                raise ConfigError(f"config key 'generality.{key}': {missing} not in 'generality.rows' "
                                  f"({', '.join(rows)})")
        if gen["baseline"] in gen["targets"]:
            raise ConfigError(f"config key 'generality.targets': contains the baseline '{gen['baseline']}'")


def _check_references(config: dict) -> None:
    _check_traces(config)
    exps = config.get("experiments", {})
    for name, exp in exps.items():
        if not experiment_rows(exp):
            raise ConfigError(f"config key 'experiments.{name}': no baselines and no horizons, nothing to run")
        if exp["trace"] not in config["traces"]:
            raise ConfigError(f"config key 'experiments.{name}.trace': '{exp['trace']}' is not listed in "
                              f"'traces' ({', '.join(config['traces'])})")
        table = exp.get("paper_table")
        if table and table not in TABLE_SETTINGS:
            raise ConfigError(f"config key 'experiments.{name}.paper_table': unknown table '{table}'")
    figs = config.get("figures", {})
    for key in ("trajectories", "power"):
        for name, rows in figs.get(key, {}).items():
            if name not in exps:
                continue  # figure for an experiment this config does not run: skipped
            missing = [r for r in rows if r not in experiment_rows(exps[name])]
            if missing:
                raise ConfigError(f"config key 'figures.{key}.{name}': rows {missing} are not rows of "
                                  f"experiment '{name}' ({', '.join(experiment_rows(exps[name]))})")
    for t in figs.get("distributions", []):
        if t not in config["traces"]:
            raise ConfigError(f"config key 'figures.distributions': '{t}' is not listed in 'traces'")
    ws = figs.get("worker_sweep")
    if ws in exps:
        rows = experiment_rows(exps[ws])
        for key in ("worker_sweep_baseline", "worker_sweep_target"):
            if figs.get(key) not in rows:
                raise ConfigError(f"config key 'figures.{key}': '{figs.get(key)}' is not a row of "
                                  f"experiment '{ws}' ({', '.join(rows)})")


# --------------------------------------------------------------------------- traces

def trace_file(name: str, data_dir) -> Path:
    """Where trace ``name`` is expected under ``data_dir``."""
    return Path(data_dir) / KNOWN_TRACES[name].relpath


#: Values of the config key ``download`` and what they mean (see :func:`download_mode`).
DOWNLOAD_MODES = {"auto": "auto", True: "always", False: "never"}


def download_mode(config: dict) -> str:
    """The config key ``download`` as ``'auto'`` (default: fetch a public trace
    missing from ``data_dir`` into ``download_dir``), ``'always'`` (``true``:
    read every public trace from ``download_dir``, fetching it there) or
    ``'never'`` (``false``: fetch nothing; offline machines, CI)."""
    value = config.get("download", "auto")
    for key, mode in DOWNLOAD_MODES.items():
        if value is key or (isinstance(value, str) and value == key):
            return mode
    raise ConfigError(f"config key 'download': {value!r} is not one of auto, true, false")


def used_traces(config: dict) -> list[str]:
    """Every trace name the config uses (``traces``, experiments, figures,
    studies, the objective study), in order of first use, without repeats."""
    names = [t for _, t in _trace_references(config)]
    obj = config.get("objective_study") or {}
    for part in ("choose", "confirm"):
        names += list((obj.get(part) or {}).get("traces") or [])
    return list(dict.fromkeys(names))


def known_trace_path(name: str, config: dict) -> Path | None:
    """Where the pipeline reads known trace ``name``, or ``None`` when it cannot.

    ``download: auto``: ``data_dir/<relpath>`` if the file is there, else (a
    trace with a public source) ``download_dir/<relpath>``, fetched by rule
    ``download_trace`` unless already there. ``true``: ``download_dir`` for
    every trace with a public source. ``false``: ``data_dir``, else a file
    already in ``download_dir`` (copied or fetched earlier); nothing is
    fetched. A trace without a public source is read from ``data_dir`` only."""
    spec = KNOWN_TRACES[name]
    mode = download_mode(config)
    local = Path(config["data_dir"]) / spec.relpath
    fetched = Path(config["download_dir"]) / spec.relpath
    if spec.url and mode == "always":
        return fetched
    if local.exists():
        return local
    if spec.url and (mode == "auto" or fetched.exists()):
        return fetched
    return None


def unavailable_traces(config: dict) -> list[str]:
    """Known traces the config uses that :func:`known_trace_path` cannot place."""
    return [t for t in used_traces(config) if t in KNOWN_TRACES and known_trace_path(t, config) is None]


def drop_traces(config: dict, names) -> list[str]:
    """Remove traces ``names`` from ``config`` (in place): from ``traces``,
    ``figures.distributions``, ``generality.traces`` and the objective study's
    trace lists, and every experiment or study setting reading one of them.
    Returns the dotted keys that changed (for the log line)."""
    names = set(names)
    changed = []

    def prune(container, key, where):
        items = container.get(key) if isinstance(container, dict) else None
        if isinstance(items, list) and names & set(items):
            container[key] = [t for t in items if t not in names]
            changed.append(where)

    prune(config, "traces", "traces")
    prune(config.get("figures") or {}, "distributions", "figures.distributions")
    prune(config.get("generality") or {}, "traces", "generality.traces")
    obj = config.get("objective_study") or {}
    for part in ("choose", "confirm"):
        prune(obj.get(part) or {}, "traces", f"objective_study.{part}.traces")
    for name in [n for n, exp in (config.get("experiments") or {}).items() if exp.get("trace") in names]:
        del config["experiments"][name]
        changed.append(f"experiments.{name}")
    for study in ("online", "predictor_study", "starvation"):
        section = config.get(study) or {}
        for group, settings in section.items():
            if isinstance(settings, list) and any(isinstance(s, dict) and s.get("trace") in names
                                                  for s in settings):
                section[group] = [s for s in settings if not (isinstance(s, dict) and s.get("trace") in names)]
                changed.append(f"{study}.{group}")
    return changed


def skip_unavailable_traces(config: dict) -> str | None:
    """With ``download`` auto or true: drop from ``config`` (in place) the
    traces it uses that are absent from ``data_dir`` and have no public source
    (derived locally), and return the one log line saying which and why
    (``None`` when nothing is dropped). With ``download: false`` nothing is
    dropped: the workflow stops instead (:func:`missing_traces_message`)."""
    if download_mode(config) == "never":
        return None
    names = unavailable_traces(config)
    if not names:
        return None
    changed = drop_traces(config, names)
    return (f"bfio: skipping trace{'s' if len(names) > 1 else ''} {', '.join(names)}: not in data_dir "
            f"{config['data_dir']} and without a public download source (derived locally); dropped from "
            f"{', '.join(changed)}")


def missing_traces_message(names, config: dict) -> str:
    """Why the workflow stops when ``download: false`` and traces are missing:
    every missing trace, its file, and the two ways to provide them."""
    data_dir = Path(config["data_dir"])
    lines = [f"{len(names)} trace{'s' if len(names) > 1 else ''} the config uses "
             f"{'are' if len(names) > 1 else 'is'} missing from data_dir {data_dir} (absolute: "
             f"{data_dir.resolve()}), and download is off (download: false):"]
    for name in names:
        spec = KNOWN_TRACES[name]
        src = f"public source {spec.url}" if spec.url else "no public source: derived locally"
        lines.append(f"  - {name}: {spec.relpath} ({src})")
    lines += ["Provide them in one of two ways:",
              "  1. point the config key 'data_dir' at a directory holding these files (e.g. a copy of the "
              "project's trace directory): snakemake --config data_dir=/path/to/data",
              f"  2. let the workflow fetch the public ones from their pinned sources into "
              f"{config['download_dir']} (sha256-verified): snakemake --config download=auto (the default); "
              "traces without a public source are then skipped."]
    return "\n".join(lines)


def missing_trace_message(name: str, data_dir, download_dir: str = "resources/traces") -> str:
    """The message the workflow stops with when one trace it needs is neither
    present nor downloadable."""
    spec = KNOWN_TRACES[name]
    path = Path(data_dir) / spec.relpath
    lines = [f"Trace '{name}' is missing: expected file {path} (absolute: {path.resolve()}).",
             "Provide it in one of two ways:",
             f"  1. put the file there, or point the config key 'data_dir' at a directory holding "
             f"'{spec.relpath}' (e.g. snakemake --config data_dir=/path/to/data);"]
    if spec.url:
        lines.append(f"  2. let the workflow download it from its pinned public source ({spec.url}, sha256 "
                     f"{spec.sha256[:12]}...) into {download_dir}: snakemake --config download=auto "
                     "(the default).")
    else:
        lines.append(f"  2. this trace has no public download source pinned by the project (it is derived "
                     f"locally); otherwise drop '{name}' from the config key 'traces' (and from any experiment, "
                     "figure or study using it).")
    return "\n".join(lines)


# --------------------------------------------------------------------------- trace tables

def _quantiles(x: np.ndarray) -> dict:
    x = np.asarray(x, dtype=float)
    return {"mean": float(x.mean()), "std": float(x.std(ddof=1)) if x.size > 1 else 0.0,
            "min": float(x.min()), "p50": float(np.percentile(x, 50)), "p90": float(np.percentile(x, 90)),
            "p99": float(np.percentile(x, 99)), "max": float(x.max())}


def trace_stats(frame: pd.DataFrame) -> dict:
    """Summary statistics of a canonical trace table."""
    out = {"rows": int(len(frame)),
           "prefill_tokens": _quantiles(frame["prefill_tokens"]),
           "decode_tokens": _quantiles(frame["decode_tokens"])}
    if "arrival_s" in frame:
        a = frame["arrival_s"].to_numpy(dtype=float)
        span = float(a.max() - a.min())
        out["arrival_s"] = {"span": span, "rate_per_s": float(len(a) / span) if span > 0 else float("nan")}
    return out


def prepare_trace(name: str, source, out_table, out_stats, spec: TraceSpec | None = None) -> dict:
    """Verify ``source`` against trace ``name``'s pinned sha256, validate every
    row and write the canonical table (parquet) and its statistics (JSON).

    ``spec`` describes a trace the project does not know (``extra_traces``, see
    :func:`trace_specs`); its sha256 is verified only when pinned."""
    spec = spec or KNOWN_TRACES[name]
    source = Path(source)
    if not source.exists():
        raise TraceError(source, "file does not exist")
    digest = sha256_of(source)
    if spec.sha256 and digest != spec.sha256:
        where = "" if name in KNOWN_TRACES else f" (config key 'extra_traces.{name}.sha256')"
        raise ChecksumError(source, f"sha256 is {digest}, expected {spec.sha256} for trace '{name}'{where}")
    trace = load_trace(str(source), prefill_col=spec.prefill_col, decode_col=spec.decode_col,
                       arrival_col=spec.arrival_col, verify=False)
    frame = trace.to_frame()
    with atomic_path(out_table) as tmp:
        frame.to_parquet(tmp, index=False)
    stats = {"trace": name, "description": spec.description, "source": str(source), "sha256": digest,
             "url": spec.url, "columns": {"prefill_tokens": spec.prefill_col, "decode_tokens": spec.decode_col,
                                         "arrival_s": spec.arrival_col},
             **trace_stats(frame)}
    write_json(stats, out_stats)
    return stats


def read_trace_table(path) -> pd.DataFrame:
    try:
        frame = pd.read_parquet(path)
    except Exception as e:  # pyarrow raises its own types on truncated files
        raise TraceError(path, f"cannot read canonical trace table ({type(e).__name__}: {e}); delete it and "
                               "rerun its job") from None
    missing = {"prefill_tokens", "decode_tokens"} - set(frame.columns)
    if missing:
        raise TraceError(path, f"canonical trace table lacks columns {sorted(missing)}")
    return frame


# --------------------------------------------------------------------------- running

def _jsonable(x):
    if isinstance(x, dict):
        return {str(k): _jsonable(v) for k, v in x.items()}
    if isinstance(x, (list, tuple)):
        return [_jsonable(v) for v in x]
    if isinstance(x, np.integer):
        return int(x)
    if isinstance(x, np.floating):
        x = float(x)
    if isinstance(x, float) and not math.isfinite(x):
        return None
    if isinstance(x, np.ndarray):
        return _jsonable(x.tolist())
    return x


@contextlib.contextmanager
def atomic_path(path):
    """Yield a temporary path beside ``path``; on success it is renamed over
    ``path`` (``os.replace``, atomic on one file system), on failure removed.
    A killed job leaves no truncated output that a rerun would take as done."""
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    fd, name = tempfile.mkstemp(dir=path.parent, prefix=f".{path.name}.", suffix=".tmp" + "".join(path.suffixes))
    os.close(fd)
    tmp = Path(name)
    try:
        yield tmp
        os.replace(tmp, path)
    finally:
        if tmp.exists():
            tmp.unlink()


def write_json(obj, path) -> None:
    """``obj`` as JSON at ``path``, written atomically (temp file, then rename)."""
    text = json.dumps(_jsonable(obj), indent=1, sort_keys=True) + "\n"
    with atomic_path(path) as tmp:
        tmp.write_text(text)


def run_one(spec: RunSpec, trace_table, summary_path, series_path, loads_path=None,
            bfio_options: dict | None = None) -> dict:
    """Draw the workload of ``spec``, simulate it and write its summary (JSON),
    per-step series (parquet) and, if ``loads_path`` is given, the ``(steps, G)``
    gating-load matrix (``.npy``). Returns the summary."""
    from bfio.run import simulate_run

    spec = spec.with_bfio_defaults(bfio_options)
    frame = read_trace_table(trace_table)
    t0 = time.perf_counter()
    result = simulate_run(spec, frame, record_loads=loads_path is not None)
    summary = {**result.summary(), "run": spec.path, "trace": spec.trace, "row": spec.row,
               "horizon": spec.horizon, "objective": (parse_bfio_row(spec.row) or (None, None))[1],
               "policy_name": spec.policy, "sim_wall_s": time.perf_counter() - t0}
    for w in result.warnings:
        log.warning("run %s: %s", spec.path, w)
    series = result.series.reset_index()
    with atomic_path(series_path) as tmp:
        series.to_parquet(tmp, index=False)
    if loads_path is not None:
        with atomic_path(loads_path) as tmp, open(tmp, "wb") as f:
            np.save(f, result.loads if result.loads is not None else np.zeros((0, spec.workers)))
    write_json(summary, summary_path)  # last: the summary marks a complete run
    log.info("run %s: %d steps, %.2f s", spec.path, result.steps, result.wall_s)
    return summary


def read_summary(path) -> dict:
    """A run summary; a missing, truncated or non-object file raises
    :class:`~bfio.errors.BfioError` naming it (delete it and rerun)."""
    try:
        with open(path) as f:
            data = json.load(f)
    except json.JSONDecodeError as e:
        raise BfioError(f"file {path}: not valid JSON ({e.msg} at line {e.lineno} column {e.colno}); the run "
                        "summary is truncated or corrupt: delete it and rerun its job") from None
    except (OSError, UnicodeDecodeError) as e:
        raise BfioError(f"file {path}: cannot read run summary ({e})") from None
    if not isinstance(data, dict):
        raise BfioError(f"file {path}: run summary is a {type(data).__name__}, expected a JSON object")
    return data


def collect_runs(paths, experiment: str | None = None) -> pd.DataFrame:
    """One row per run summary (flat columns; ``policy_options`` kept as JSON text)."""
    rows = []
    for p in paths:
        s = read_summary(p)
        s = {k: (json.dumps(v, sort_keys=True) if isinstance(v, (dict, list)) else v) for k, v in s.items()}
        if experiment is not None:
            s["experiment"] = experiment
        rows.append(s)
    frame = pd.DataFrame(rows)
    if "horizon" in frame:
        frame["horizon"] = frame["horizon"].astype("Int64")
    return frame


# --------------------------------------------------------------------------- scripts

#: Seconds between two progress lines in a pipeline job's log.
PROGRESS_LOG_EVERY_S = 30.0


@contextlib.contextmanager
def script_log(path, name: str = "bfio"):
    """Send logging, stdout and stderr of a pipeline script to ``path`` (its
    Snakemake ``log:``); a failure is written there with its traceback."""
    Path(path).parent.mkdir(parents=True, exist_ok=True)
    with open(path, "w") as f:
        handler = logging.StreamHandler(f)
        handler.setFormatter(logging.Formatter("%(asctime)s %(levelname)s %(name)s: %(message)s"))
        root = logging.getLogger()
        root.addHandler(handler)
        root.setLevel(logging.INFO)
        old_out, old_err = sys.stdout, sys.stderr
        sys.stdout = sys.stderr = f
        t0 = time.perf_counter()
        try:
            # every progress bar of the job (simulations, study batches) logs
            # "done/total, elapsed, ETA" here at least every 30 s
            with log_progress(logging.getLogger(name), every_s=PROGRESS_LOG_EVERY_S):
                yield logging.getLogger(name)
            logging.getLogger(name).info("done in %.2f s", time.perf_counter() - t0)
        except BaseException:
            traceback.print_exc(file=f)
            f.flush()
            raise
        finally:
            sys.stdout, sys.stderr = old_out, old_err
            root.removeHandler(handler)


__all__ = ["trace_specs", "code_fingerprint", "SIMULATION_SOURCES", "experiment_rows", "experiment_runs", "all_runs", "trajectory_runs",
           "figure_runs", "reference_seed", "validate_config", "named_run", "NAMED_RUN_DIR", "missing_trace_message", "download_trace",
           "download_mode", "used_traces", "known_trace_path", "unavailable_traces", "drop_traces",
           "skip_unavailable_traces", "missing_traces_message",
           "prepare_trace", "trace_stats", "run_one", "collect_runs", "read_summary", "write_json",
           "script_log", "METRICS"]
