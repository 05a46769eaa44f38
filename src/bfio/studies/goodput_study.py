"""Study: goodput against the model's capacity and the balanced bound (issue 44,
``docs/studies.md``).

For every setting of the config key ``goodput`` (trace, N, G, B), every regime
it runs in (``goodput.regimes``: the paper's step, or a calibrated step with
prefill, KV memory and preemption) and every router of ``goodput.central``
(the central pool) and ``goodput.instant`` (bound at arrival, as the engines'
data-parallel routers), the highest Poisson arrival rate whose runs meet p99
TTFT and p99 TPOT targets (``goodput.slo``), found by bisection
(:func:`bfio.studies.goodput.goodput`) between a small share of the model's capacity
(:func:`bfio.engine.capacity.capacity` of the trace's lengths in the regime) and the
capacity itself. Each seed has its own bisection (one row per router and
seed), so the table gives a goodput's mean over the seeds with its 95% interval
(:mod:`bfio.studies.goodput_summary`). Beside the routers, by the same bisection
on the same seeds and rates, the references of :mod:`bfio.sim.pooled`
(:data:`REFERENCE_ROWS`): the balanced bound (the same runs with the imbalance
removed, no request split; the headroom is measured to it) and the divisible
reference (requests split too). A setting's ``slo`` overrides the
section's targets (a long-context trace is held to MLPerf's long-context
targets, not to the chat ones). Each (setting, regime) is one simulation job,
named ``<setting>_<regime>`` (:func:`plan`).
"""

from __future__ import annotations

import json
from dataclasses import replace

import numpy as np
import pandas as pd

from bfio.engine.capacity import latency_floor, trace_capacity
from bfio.ground.errors import ConfigError
from bfio.studies.goodput import SLO, goodput
from bfio.ground.metrics import action_metrics
from bfio.engine.prefill import PrefillModel
from bfio.runs.run import ACTION_RULES, ArrivalSpec, RunSpec, policy_defaults, resolve_row
from bfio.runs.runner import run_batch
from bfio.step_model import StepModel, from_config
from bfio.studies.registry import Study, register_study
from bfio.studies.online import report_interval
from bfio.policies import check_policy_options
from bfio.sim.pooled import BALANCED_DISPATCH, BALANCED_POLICY
from bfio.studies.goodput_summary import goodput_table
from bfio.studies.report import check_settings


def router_rows(section: dict) -> list[tuple[str, str]]:
    """``(dispatch, row)`` of every router of the section, central first."""
    return [(d, row) for d in ("central", "instant") for row in section.get(d) or []]


#: The regime of a section without ``regimes``: the paper's step loop.
PAPER_REGIME = "paper"


def regimes(section: dict, study: str = "goodput") -> dict[str, dict]:
    """``<study>.regimes`` by name (``{paper: {}}`` when none), each checked: its
    ``step_model`` (:func:`bfio.step_model.from_config`) and ``prefill``
    (:class:`bfio.engine.prefill.PrefillModel`'s fields); errors name the config key."""
    given = section.get("regimes") or [{"name": PAPER_REGIME}]
    out = {}
    for i, regime in enumerate(given):
        name = regime.get("name")
        key = f"{study}.regimes.{i}"
        if not name or name in out:
            raise ConfigError(f"config key '{key}.name': a regime needs a name, once ({name!r})")
        step_model = from_config(regime.get("step_model"), f"{key}.step_model")
        prefill = dict(regime.get("prefill") or {})
        try:
            PrefillModel(**prefill)
        except TypeError:
            unknown = sorted(set(prefill) - set(PrefillModel.__dataclass_fields__))
            raise ConfigError(f"config key '{key}.prefill.{unknown[0]}': not a prefill-model field "
                              f"(its fields: {', '.join(PrefillModel.__dataclass_fields__)})") from None
        except ConfigError as e:
            raise ConfigError(f"config key '{key}.{e}") from None
        out[name] = {"step_model": step_model, "prefill": tuple(sorted(prefill.items()))}
    return out


def plan(config: dict, study: str = "goodput") -> dict:
    """One job per (setting, regime): ``<setting>_<regime>``, the setting with its
    ``regime`` and ``base`` (its name in ``<study>.settings``); a setting's
    ``regimes`` (default: every regime) must name regimes of the section."""
    section = config.get(study) or {}
    names = list(regimes(section, study))
    out = {}
    for name, setting in check_settings(config, study).items():
        chosen = setting.get("regimes") or names
        for regime in chosen:
            if regime not in names:
                raise ConfigError(f"config key '{study}.settings.{name}.regimes': unknown regime {regime!r} "
                                  f"({study}.regimes: {', '.join(names)})")
            run_setting = {k: v for k, v in setting.items() if k != "regimes"}
            out[f"{name}_{regime}"] = {**run_setting, "regime": regime, "base": name}
    return out


def regime_floor(frame: pd.DataFrame, slots: int, regime: dict) -> dict:
    """The p99 TTFT and TPOT of a request alone on an idle rank in ``regime``
    (:func:`bfio.engine.capacity.latency_floor`): targets below them no router meets."""
    step = StepModel.from_items(regime["step_model"])
    prefill = PrefillModel(**dict(regime["prefill"])) if regime["prefill"] else None
    return latency_floor(frame["prefill_tokens"].to_numpy(), frame["decode_tokens"].to_numpy(), slots,
                         coefficients=None if step.is_paper else step.coefficients(),
                         chunk_tokens=prefill.chunk_tokens if prefill is not None else None)


def regime_capacity(frame: pd.DataFrame, workers: int, slots: int, regime: dict):
    """The model's capacity of the trace in ``regime`` (:func:`bfio.engine.capacity.capacity`
    with its calibrated step, prefill model and KV memory)."""
    step = StepModel.from_items(regime["step_model"])
    return trace_capacity(frame, workers, slots, coefficients=None if step.is_paper else step.coefficients(),
                          prefill_model=PrefillModel(**dict(regime["prefill"])) if regime["prefill"] else None)


def setting_slo(setting: dict, section: dict) -> SLO:
    """The latency targets of a setting: the section's ``slo`` (default
    :class:`bfio.studies.goodput.SLO`), each target overridden by the setting's own ``slo``."""
    return SLO(**{**(section.get("slo") or {}), **(setting.get("slo") or {})})


#: The references bisected beside the routers (:mod:`bfio.sim.pooled`), each its own
#: row named as the reference: ``balanced`` (the imbalance removed, no request
#: split: the table's bound) and ``divisible`` (the mean rank alone).
REFERENCE_ROWS = ("balanced", "divisible")


def bisected_rows(section: dict) -> list[tuple[str, str, str]]:
    """``(dispatch, row, reference)`` of every bisection of a setting and seed: the
    routers (:func:`router_rows`), then the references (:data:`REFERENCE_ROWS`)."""
    return [(d, row, "none") for d, row in router_rows(section)] + [
        (BALANCED_DISPATCH, ref, ref) for ref in REFERENCE_ROWS]


def run_actions(run: RunSpec) -> dict:
    """The actions after binding a run takes (issue 45): ``{field: rule}`` of its
    ``queue_moves``, ``rank_pause`` and ``migration`` rules other than ``none``."""
    return {f: getattr(run, f) for f in ACTION_RULES if getattr(run, f) != "none"}


def action_columns(actions: dict, records: list | None, requests: int) -> dict:
    """A router row's action columns (only a row with actions has them, so a study
    without actions writes what it always did): its ``actions`` as JSON and, at its
    goodput (the bisection's highest rate that met the targets; NaN when none
    did), the run's actions per 1,000 requests and wasted tokens
    (:func:`bfio.ground.metrics.action_metrics`, the mean over the probe's runs)."""
    if not records:
        counts = {"actions_per_1k_requests": float("nan"), "wasted_tokens": float("nan")}
    else:
        per_run = [action_metrics(r, requests) for r in records]
        counts = {k: float(np.mean([m[k] for m in per_run])) for k in per_run[0]}
    return {"actions": json.dumps(actions, sort_keys=True), **counts}


def run_goodput(name: str, setting: dict, section: dict, seeds, slots: int, frame: pd.DataFrame, log=None,
                defaults=None) -> pd.DataFrame:
    """One row per router and seed of setting ``name`` in its ``regime`` (the
    paper's when none), and one per reference and seed (:data:`REFERENCE_ROWS`, its
    ``reference`` column naming it): the seed's goodput (requests/s,
    its own bisection), the capacity, their ratio, whether the SLO held at the
    capacity itself, the TTFT metric read and every probe (rate, p99 TTFT and TPOT,
    met) as JSON. Every bisection searches the same rates (from a share of the
    capacity up to it), so a router and the reference are compared on one grid."""
    slo = setting_slo(setting, section)
    regime_name = setting.get("regime", PAPER_REGIME)
    regime = regimes(section)[regime_name]
    slots = int(setting.get("slots", slots))
    cap = regime_capacity(frame, setting["workers"], slots, regime)
    floor = regime_floor(frame, slots, regime)
    variants = section.get("variants") or {}
    out = []
    for dispatch, row, reference in bisected_rows(section):
        policy_row = row if reference == "none" else BALANCED_POLICY

        def spec(seed, arrival=None, dispatch=dispatch, policy_row=policy_row, reference=reference):
            run = RunSpec.make(setting["trace"], setting["requests"], setting["workers"], slots, policy_row, seed,
                               arrival=arrival, dispatch=dispatch, variants=variants, defaults=defaults)
            return replace(run, prefill=regime["prefill"], step_model=regime["step_model"], reference=reference)

        first = spec(seeds[0])
        actions = run_actions(first)
        for seed in seeds:
            wall = [0.0]  # simulation seconds of the seed's probes
            probed = {}  # rate -> the probe's run (its record)

            def run_at(rate, seed=seed, wall=wall, spec=spec, probed=probed):
                run = spec(seed, ArrivalSpec("poisson", rate=float(rate)))
                done = run_batch([run], {setting["trace"]: frame}, show_progress=False, log=log)
                wall[0] += float(done["sim_wall_s"].sum())
                probed[float(rate)] = records = done.to_dict("records")
                return records

            res = goodput(run_at, cap.requests_per_s, slo, rel_tol=section.get("rel_tol", 0.02))
            at_goodput = probed.get(float(res.goodput_rps))
            out.append({"setting": setting.get("base", name), "regime": regime_name, "trace": setting["trace"],
                        "requests": setting["requests"],
                        "workers": setting["workers"], "slots": slots, "row": row, "dispatch": dispatch,
                        "policy": first.policy, "reference": reference,
                        "predictor": first.policy_options.get("predictor", ""),
                        "report_interval": report_interval(first.policy_options),
                        "horizon": float("nan") if first.horizon is None else float(first.horizon), "seed": seed,
                        "goodput_rps": res.goodput_rps, "capacity_rps": res.capacity_rps,
                        "goodput_share": res.share_of_capacity, "at_capacity": res.at_capacity, **floor,
                        "ttft_metric": res.ttft_metric, "ttft_slo_s": slo.ttft_p99_s, "tpot_slo_s": slo.tpot_p99_s,
                        "n_seeds": 1, "sim_wall_s": wall[0],
                        "probes": res.probes_json(),
                        **(action_columns(actions, at_goodput, setting["requests"]) if actions else {})})
            if log is not None:
                log.info("goodput %s %s %s seed %s: %.4g req/s (%.1f%% of capacity %.4g)", name, dispatch, row, seed,
                         res.goodput_rps, 100 * res.share_of_capacity, res.capacity_rps)
    return pd.DataFrame(out)


def validate_section(section: dict, config: dict, key: str = "goodput") -> None:
    """Every router row builds its policy with its dispatch (errors name the
    config key, under ``key``: the section's); at least one router."""
    regimes(section, key)
    rows = router_rows(section)
    if not rows:
        raise ConfigError(f"config key '{key}': needs at least one router in {key}.central or {key}.instant")
    variants = section.get("variants") or {}
    section_key = key
    for dispatch in ("central", "instant"):
        for i, row in enumerate(section.get(dispatch) or []):
            key = f"{section_key}.{dispatch}.{i}"
            try:
                policy, opts = resolve_row(row, variants, defaults=policy_defaults(config))
            except ConfigError as e:
                raise ConfigError(f"config key '{key}': {e}") from None
            check_policy_options(key, policy, opts, dispatch=dispatch)


STUDY = register_study(Study(
    name="goodput", description="goodput within p99 TTFT and TPOT targets, against the model's capacity and the "
                                "balanced bound",
    table="goodput",
    simulate=lambda name, setting, section, seeds, slots, frame, defaults, log: run_goodput(
        name, setting, section, seeds, slots, frame, log=log, defaults=defaults),
    tabulate=goodput_table,
    modules=("studies/goodput_study.py", "studies/goodput.py", "engine/capacity.py"), table_modules=("studies/goodput_summary.py",),
    sim_keys=("central", "instant", "variants", "slo", "rel_tol", "regimes"), validate=validate_section,
    settings_groups=(), plan=plan, builds_on=("online",),
))

__all__ = ["PAPER_REGIME", "REFERENCE_ROWS", "action_columns", "bisected_rows", "run_actions", "plan", "setting_slo", "regime_capacity", "regime_floor", "regimes", "router_rows", "run_goodput", "STUDY"]
