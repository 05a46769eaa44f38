"""Objective study: BF-IO's discount ``delta`` and new-request model (issue 11).

Eq. (IO) as printed (``paper-literal``: ``delta = 1``, new requests persist over
the window) gets worse as the window ``H`` grows; the spec's revision
(``../shared/spec/semantics.md``, "BF-IO") adds the discount ``delta^h`` and
lets new requests finish at their predicted decode length. This study chooses
the project's default on traces *other than the paper's two* (the paper's
tables are the test, not the training set), in two stages:

1. **choose** (config ``objective_study.choose``): every ``delta`` of
   ``discounts`` x new-request model of ``new_requests`` x ``H`` of
   ``horizons`` on every trace of ``traces``, ``G = workers``, backlog of
   ``N = requests_per_slot G B``, over ``seeds`` (``horizons`` must hold 0).
   Each run's imbalance is divided by that of BF-IO with ``H = 0`` on the same
   trace and seed (the same program under every setting); a setting's score is
   the mean of that ratio over traces, seeds and ``H > 0`` (lower is better:
   below 1, looking ahead helps). :func:`bfio.studies.objective_scores.recommend` picks the lowest score among
   the settings whose mean throughput ratio is within
   ``max_throughput_cost_pct`` of the best.
2. **confirm** (``objective_study.confirm``): the recommended setting and
   ``paper-literal`` at every ``G`` of ``workers`` and ``H`` of ``horizons``
   over ``seeds`` (paired by seed; 95% intervals in the table).

Row labels: ``d<delta>_<model>_h<H>`` (e.g. ``d0.8_predicted_h40``).
"""

from __future__ import annotations

import pandas as pd

from bfio.lookahead.discount import OBJECTIVES, check_discount, check_new_requests
from bfio.runs.run import RunSpec
from bfio.runs.runner import run_batch
from bfio.studies.objective_scores import recommendation
from bfio.studies.objective_summary import objective_table
from bfio.studies.registry import Figure, Product, Study, Table, register_study

def label(discount: float, new_requests: str, horizon: int) -> str:
    return f"d{float(discount):g}_{new_requests}_h{int(horizon)}"


def variant(discount: float, new_requests: str, horizon: int) -> dict:
    return {"policy": "bfio", "horizon": int(horizon), "discount": check_discount(discount),
            "new_requests": check_new_requests(new_requests)}


def choose_variants(choose: dict) -> dict:
    """Label -> BF-IO variant for the choose grid (``H = 0`` once per model: the
    discount does not act on a single offset)."""
    out = {}
    for nr in choose["new_requests"]:
        for H in choose["horizons"]:
            for d in ([1.0] if int(H) == 0 else choose["discounts"]):
                out[label(d, nr, H)] = variant(d, nr, H)
    return out


def confirm_variants(confirm: dict, chosen: dict) -> dict:
    """The chosen setting and ``paper-literal`` at every horizon of ``confirm``."""
    lit = OBJECTIVES["paper-literal"]
    out = {}
    for H in confirm["horizons"]:
        for name, s in (("default", chosen), ("paper-literal", lit)):
            v = variant(s["discount"], s["new_requests"], H)
            v["objective_name"] = name
            out[label(s["discount"], s["new_requests"], H)] = v
    return out


def _runs(trace, requests, workers, slots, variants, seeds, bfio_defaults, defaults=None):
    return [RunSpec.make(trace, requests, workers, slots, row, seed, variants=variants,
                          bfio_defaults=bfio_defaults, defaults=defaults)
            for row in variants for seed in seeds]


def _strip(variants: dict) -> dict:
    return {k: {kk: vv for kk, vv in v.items() if kk != "objective_name"} for k, v in variants.items()}


def run_objective_runs(trace: str, frame: pd.DataFrame, workers: int, slots: int, per_slot: float,
                       variants: dict, seeds, bfio_defaults=None, log=None, defaults=None) -> pd.DataFrame:
    """Simulate every variant on ``trace`` at ``G = workers``; one row per run with
    ``discount``, ``new_requests``, ``horizon`` (the options the run's policy resolved)
    and ``objective_name`` (if given); ``defaults``: the config's per-policy options."""
    requests = max(1, int(round(per_slot * workers * slots)))
    runs = _runs(trace, requests, workers, slots, _strip(variants), seeds, bfio_defaults, defaults)
    out = run_batch(runs, {trace: frame}, show_progress=False, log=log)
    # the study's columns are the runs' resolved options (what the policy ran with), and the
    # objective's name (a label of the study, not an option)
    resolved = [run.resolved_options for run in runs]
    cols = pd.DataFrame([{"discount": float(v["discount"]), "new_requests": str(v["new_requests"]),
                          "horizon": int(v["horizon"]),
                          **({"objective_name": variants[run.row]["objective_name"]}
                             if "objective_name" in variants[run.row] else {})}
                         for run, v in zip(runs, resolved)])
    return pd.concat([out, cols], axis=1)


# --------------------------------------------------------------------------- the study protocol
# Its stages on the generic study rules (bfio.studies.registry): the choose jobs
# (one setting per trace) -> two products of their runs (choose.csv, and
# recommendation.json, which every confirm job needs) -> the confirm jobs (one
# setting per trace and G) -> the table (the confirm runs and both products) ->
# two figures (the table and choose.csv; choose.csv alone).

def _is_choose(name, setting) -> bool:
    return setting["stage"] == "choose"


def _is_confirm(name, setting) -> bool:
    return setting["stage"] == "confirm"


def plan(config: dict) -> dict:
    """The study's jobs as settings, by name (= their runs file): ``choose_<trace>``
    for every choose trace, then ``confirm_<trace>_g<G>`` for every confirm trace
    and G (none without choose traces). Each carries its stage's config, so a
    choose job reruns only when ``choose`` changes."""
    section = config.get("objective_study") or {}
    choose, confirm = section.get("choose") or {}, section.get("confirm") or {}
    if not choose.get("traces"):
        return {}
    out = {f"choose_{t}": {"stage": "choose", "trace": t, "choose": choose} for t in choose["traces"]}
    for t in confirm.get("traces") or []:
        for g in confirm.get("workers") or []:
            out[f"confirm_{t}_g{int(g)}"] = {"stage": "confirm", "trace": t, "workers": int(g), "confirm": confirm}
    return out


def _simulate(name, setting, section, seeds, slots, frame, defaults, log, prior=None):
    if setting["stage"] == "choose":
        choose = setting["choose"]
        return run_objective_runs(setting["trace"], frame, int(choose["workers"]), slots,
                                  float(choose["requests_per_slot"]), choose_variants(choose), list(choose["seeds"]),
                                  log=log, defaults=defaults)
    confirm = setting["confirm"]
    return run_objective_runs(setting["trace"], frame, int(setting["workers"]), slots,
                              float(confirm["requests_per_slot"]),
                              confirm_variants(confirm, prior["recommendation.json"]), seeds, log=log,
                              defaults=defaults)


STUDY_CAPTION = """BF-IO objective study (issue 11). Left: for every offset discount delta and new-request model, the
mean over traces other than the paper's two (seeds, H > 0) of the imbalance divided by the best
imbalance of its cell; 1 means best everywhere. Right: the paired ratio paper-literal / default
imbalance against the lookahead H, with 95% intervals over seeds (above 1: the default balances
better)."""

REACH_CAPTION = """How far ahead should BF-IO look? For each trace of the objective study's grid and each offset
discount delta, BF-IO at the grid's longest window H (new requests with their predicted lifetime)
relative to the same trace and seed at H = 0, against the lookahead's reach (the window's total
weight, about 1 / (1 - delta) steps; delta = 1 weighs all H + 1 offsets). Thin lines: traces (colour
and marker); thick line: mean over traces and seeds with its 95% interval (bootstrap). Dashed: the
library's default discount and its effective window H_eff."""

STUDY = register_study(Study(
    name="objective_study", description="BF-IO's objective: discount and new-request model (docs/bfio.md)",
    directory="objective", settings_groups=(), plan=plan, sim_keys=(), simulate=_simulate,
    run_file=lambda name, setting: name,
    needs=lambda name, setting: ["recommendation.json"] if setting["stage"] == "confirm" else [],
    products=(Product("choose.csv", settings=_is_choose),
              Product("recommendation.json", make=recommendation, settings=_is_choose)),
    tables=(Table("objective", objective_table, settings=_is_confirm,
                  products=(("choose", "choose.csv"), ("recommendation", "recommendation.json"))),),
    figures=(Figure("objective_study", "bfio.figures.objective_study:plot_study_figure", table="objective",
                    products=(("choose", "choose.csv"),), caption=STUDY_CAPTION,
                    modules=("figures/objective_study.py",)),
             Figure("discount_reach", "bfio.figures.discount_reach:plot_discount_reach", table=None,
                    products=(("choose", "choose.csv"),), caption=REACH_CAPTION,
                    modules=("figures/discount_reach.py",))),
    modules=("studies/objective_study.py", "studies/objective_scores.py"), table_modules=("studies/objective_summary.py",),
    figure_modules=("figures/objective_study.py", "figures/discount_reach.py")))

__all__ = ["label", "variant", "choose_variants", "confirm_variants", "run_objective_runs", "plan", "STUDY"]
