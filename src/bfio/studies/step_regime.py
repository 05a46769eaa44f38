"""Study: does the ranking of routers survive a physical step? (issue 44, ``docs/studies.md``)

The paper's step is ``dt = C + t_l max_g L_g``: only the most loaded worker's KV
counts. A data-parallel attention step on a GPU (``docs/step_model.md``) also
pays each rank's batch, and, where CUDA graphs or SGLang's
``DpPaddingMode.MAX_LEN`` pad every rank's batch to the largest, a term
``beta max_g n_g`` that grows towards a MoE deployment's. For every setting of
the config key ``step_regime`` this study runs every router of
``step_regime.central`` and ``step_regime.instant`` with Poisson arrivals at
``load`` times the capacity of each step regime (:func:`bfio.engine.capacity.capacity`
of the regime: the paper's step, then the calibrated step of
``step_regime.step_model`` at each ``beta`` of ``step_regime.betas``), every
seed. The table ranks the routers per regime by p99 end-to-end latency; the
figure (:mod:`bfio.figures.step_regime`) draws each router's p99 over the best
router's, regime by regime.
"""

from __future__ import annotations

from dataclasses import replace

import pandas as pd

from bfio.ground.errors import ConfigError
from bfio.runs.run import ArrivalSpec, RunSpec
from bfio.runs.runner import run_batch
from bfio.step_model import from_config
from bfio.studies.goodput_study import regime_capacity, router_rows, validate_section as validate_routers
from bfio.studies.online import report_interval
from bfio.studies.registry import Study, register_study
from bfio.studies.step_regime_summary import step_regime_table

#: The first regime of every setting: the paper's step.
PAPER = "paper"


def step_regimes(section: dict) -> list[dict]:
    """The regimes of the section, in order: the paper's step, then the calibrated
    step of ``step_model`` at each ``beta`` (``name`` ``beta=<value>``, ``beta``,
    the ``step_model`` pairs and no prefill); errors name the config key."""
    base = {k: v for k, v in (section.get("step_model") or {}).items() if k != "beta"}
    betas = section.get("betas") or []
    out = [{"name": PAPER, "beta": float("nan"), "step_model": (), "prefill": ()}]
    for i, beta in enumerate(betas):
        step_model = from_config({**base, "step_model": "calibrated", "beta": float(beta)},
                                 f"step_regime.betas.{i}")
        out.append({"name": f"beta={float(beta):g}", "beta": float(beta), "step_model": step_model, "prefill": ()})
    return out


def run_step_regime(name: str, setting: dict, section: dict, seeds, slots: int, frame: pd.DataFrame, log=None,
                    defaults=None) -> pd.DataFrame:
    """One row per (regime, router, seed) of setting ``name``: the run's metrics,
    its ``regime``, ``beta``, the regime's ``capacity_rps`` and the ``offered_rps``."""
    load = float(section.get("load", 0.8))
    if not load > 0:
        raise ConfigError(f"config key 'step_regime.load': must be > 0 (a fraction of the capacity), got {load!r}")
    slots = int(setting.get("slots", slots))
    variants = section.get("variants") or {}
    frames = []
    for regime in step_regimes(section):
        cap = regime_capacity(frame, setting["workers"], slots, regime).requests_per_s
        rate = load * cap
        runs = [replace(RunSpec.make(setting["trace"], setting["requests"], setting["workers"], slots, row, seed,
                                     arrival=ArrivalSpec("poisson", rate=rate), dispatch=dispatch,
                                     variants=variants, defaults=defaults),
                        step_model=regime["step_model"], prefill=regime["prefill"])
                for dispatch, row in router_rows(section) for seed in seeds]
        done = run_batch(runs, {setting["trace"]: frame}, show_progress=False, log=log)
        done.insert(0, "regime", regime["name"])
        done["beta"] = regime["beta"]
        done["capacity_rps"] = cap
        done["offered_rps"] = rate
        done["load"] = load
        done["report_interval"] = [report_interval(r.policy_options) for r in runs]
        done["horizon"] = [float("nan") if r.horizon is None else float(r.horizon) for r in runs]
        frames.append(done)
        if log is not None:
            log.info("step regime %s %s: capacity %.4g req/s, offered %.4g", name, regime["name"], cap, rate)
    out = pd.concat(frames, ignore_index=True)
    out.insert(0, "setting", name)
    return out


def validate_section(section: dict, config: dict) -> None:
    """The regimes build (step-model options checked) and the routers resolve."""
    step_regimes(section)
    validate_routers({**section, "regimes": None}, config)


STUDY = register_study(Study(
    name="step_regime", description="router ranking under the paper's and a calibrated step, as beta grows",
    table="step_regime", figure="step_regime",
    simulate=lambda name, setting, section, seeds, slots, frame, defaults, log: run_step_regime(
        name, setting, section, seeds, slots, frame, log=log, defaults=defaults),
    tabulate=step_regime_table, plot="bfio.figures.step_regime:plot_step_regime",
    modules=("studies/step_regime.py", "studies/goodput_study.py", "engine/capacity.py", "step_model", "engine/step_time.py"),
    table_modules=("studies/step_regime_summary.py",), figure_modules=("figures/step_regime.py",),
    sim_keys=("central", "instant", "variants", "load", "betas", "step_model"), validate=validate_section,
    builds_on=("goodput", "online"),
    caption="""Router ranking under the paper's step and a calibrated step (issue 44,
``docs/studies.md``): each router's p99 end-to-end latency over the best router's in
the same regime, Poisson arrivals at {{ config["step_regime"]["load"] }} of each
regime's capacity, mean over seeds {{ config["seeds"] }}; regimes: the paper's
step, then the calibrated step at each padded-batch coefficient beta.""",
))

__all__ = ["PAPER", "run_step_regime", "step_regimes", "validate_section", "STUDY"]
