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
   below 1, looking ahead helps). :func:`recommend` picks the lowest score among
   the settings whose mean throughput ratio is within
   ``max_throughput_cost_pct`` of the best.
2. **confirm** (``objective_study.confirm``): the recommended setting and
   ``paper-literal`` at every ``G`` of ``workers`` and ``H`` of ``horizons``
   over ``seeds`` (paired by seed; 95% intervals in the table).

Row labels: ``d<delta>_<model>_h<H>`` (e.g. ``d0.8_predicted_h40``).
"""

from __future__ import annotations

import numpy as np
import pandas as pd

from bfio.errors import ConfigError
from bfio.discount import OBJECTIVES, check_discount, check_new_requests
from bfio.run import RunSpec
from bfio.runner import run_batch
from bfio.studies.registry import Figure, Product, Study, Table, register_study
from bfio.studies.aggregate import paired_effect, summarize_runs
from bfio.studies.report import ci_cell, fmt

KEY_COLUMNS = ("discount", "new_requests")


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


def scores(runs: pd.DataFrame) -> pd.DataFrame:
    """Per setting (``discount``, ``new_requests``): the mean over cells (trace,
    workers, seed, ``H > 0``) of imbalance and throughput relative to BF-IO with
    ``H = 0`` on the same trace, ``G`` and seed (the same program under every
    setting), and the worst plateau ratio (imbalance at the largest ``H`` over
    the setting's best ``H``, per trace and seed)."""
    if not (runs["horizon"] == 0).any():
        raise ConfigError("objective_study.choose.horizons: needs 0 (the H = 0 runs are the reference)")
    key = ["trace", "workers", "seed"]
    h0 = runs[runs["horizon"] == 0].groupby(key)[["avg_imbalance", "throughput"]].mean().add_suffix("_h0")
    df = runs[runs["horizon"] > 0].join(h0, on=key)
    df["imbalance_ratio"] = df["avg_imbalance"] / df["avg_imbalance_h0"]
    df["throughput_ratio"] = df["throughput"] / df["throughput_h0"]
    out = df.groupby(list(KEY_COLUMNS)).agg(imbalance_score=("imbalance_ratio", "mean"),
                                           throughput_score=("throughput_ratio", "mean"),
                                           runs=("imbalance_ratio", "size")).reset_index()
    hmax = df["horizon"].max()
    g = df.groupby([*KEY_COLUMNS, *key])
    best = g["avg_imbalance"].min()
    last = df[df["horizon"] == hmax].set_index([*KEY_COLUMNS, *key])["avg_imbalance"]
    plateau = (last / best.reindex(last.index)).groupby(list(KEY_COLUMNS)).max().rename("plateau_worst")
    out = out.merge(plateau.reset_index(), on=list(KEY_COLUMNS), how="left")
    return out.sort_values("imbalance_score", kind="mergesort").reset_index(drop=True)


def recommend(runs: pd.DataFrame, max_throughput_cost_pct: float = 1.0) -> dict:
    """The lowest imbalance score among settings within ``max_throughput_cost_pct``
    of the best throughput score (ties: the larger discount, then ``predicted``)."""
    sc = scores(runs)
    ok = sc[sc["throughput_score"] >= sc["throughput_score"].max() * (1 - max_throughput_cost_pct / 100)]
    ok = ok.sort_values(["imbalance_score", "discount"], ascending=[True, False], kind="mergesort")
    top = ok.iloc[0]
    return {"discount": float(top["discount"]), "new_requests": str(top["new_requests"]),
            "imbalance_score": float(top["imbalance_score"]), "throughput_score": float(top["throughput_score"]),
            "plateau_worst": float(top["plateau_worst"]) if np.isfinite(top["plateau_worst"]) else None,
            "settings_compared": int(len(sc)), "max_throughput_cost_pct": float(max_throughput_cost_pct)}


def summarize_confirm(runs: pd.DataFrame) -> pd.DataFrame:
    """Per (trace, G, H, objective): mean [95% CI] of imbalance, throughput, TPOT and
    energy over seeds, plus the paired (by seed) imbalance ratio paper-literal /
    default (> 1: the default balances better) and throughput gain of the default
    (:func:`bfio.studies.aggregate.paired_effect`)."""
    by = ["trace", "workers", "horizon"]
    metrics = ["avg_imbalance", "throughput", "tpot", "energy_j"]
    summ = summarize_runs(runs, [*by, "objective_name", "discount", "new_requests"], metrics)
    by_objective = runs.assign(row=runs["objective_name"])
    pairs = None
    for name, metric, effect in (("imbalance_ratio", "avg_imbalance", "ratio"),
                                 ("throughput_gain_pct", "throughput", "gain_pct")):
        eff = paired_effect(by_objective, by, "paper-literal", "default", metric, effect)
        eff = eff[[*by, f"{effect}_mean", f"{effect}_ci_lo", f"{effect}_ci_hi", "n_seeds"]].rename(
            columns={f"{effect}_{k}": f"{name}_{k}" for k in ("mean", "ci_lo", "ci_hi")} | {"n_seeds": "n_pairs"})
        pairs = eff if pairs is None else pairs.merge(eff.drop(columns="n_pairs"), on=by)
    return summ.merge(pairs, on=by, how="left").sort_values(
        [*by, "objective_name"], kind="mergesort").reset_index(drop=True)


def objective_markdown(scored: pd.DataFrame, rec: dict, confirm: pd.DataFrame, title: str) -> str:
    """The study's Markdown: the choose-stage scores and the confirm table."""
    default = OBJECTIVES["default"]
    same = rec["discount"] == default["discount"] and rec["new_requests"] == default["new_requests"]
    mine = scored[(scored["discount"] == default["discount"]) & (scored["new_requests"] == default["new_requests"])]
    if same:
        versus = ", the same)."
    elif len(mine):
        d = mine.iloc[0]
        versus = (f", which scores {d['imbalance_score']:.3f} / {d['throughput_score']:.4f}, "
                  f"{100 * (d['imbalance_score'] / rec['imbalance_score'] - 1):+.1f}% on imbalance: the library "
                  "keeps its default unless the study's choice is clearly better, docs/bfio.md \"Objective study\").")
    else:
        versus = "; the grid does not hold it)."
    lines = [f"# {title}", "",
             f"Recommended: discount {rec['discount']:g}, new requests `{rec['new_requests']}` "
             f"(imbalance score {rec['imbalance_score']:.3f}, throughput score {rec['throughput_score']:.4f}; "
             f"{rec['settings_compared']} settings compared; the library default is "
             f"{default['discount']:g} / `{default['new_requests']}`" + versus, "",
             "## Choose: mean over traces, seeds and H > 0, relative to BF-IO H = 0 (below 1: lookahead helps)", ""]
    recs = [{"discount": f"{r.discount:g}", "new requests": r.new_requests,
             "imbalance / H=0 (mean)": f"{r.imbalance_score:.3f}",
             "throughput / H=0 (mean)": f"{r.throughput_score:.4f}",
             "imbalance at largest H / best H (worst)": fmt(r.plateau_worst), "runs": int(r.runs)}
            for r in scored.itertuples()]
    lines += [(pd.DataFrame(recs).to_markdown(index=False) if recs else "(no rows)"), ""]
    lines += ["## Confirm: default vs paper-literal (mean [95% CI] over seeds)", ""]
    crec = []
    for r in confirm.to_dict("records"):
        crec.append({"trace": r["trace"], "G": int(r["workers"]), "H": int(r["horizon"]),
                     "objective": r["objective_name"], "imbalance": ci_cell(r, "avg_imbalance"),
                     "throughput (tok/s)": ci_cell(r, "throughput"), "TPOT (s)": ci_cell(r, "tpot"),
                     "literal / default imbalance": ci_cell(r, "imbalance_ratio") if r["objective_name"] == "default"
                     else "", "n": int(r["n_seeds"])})
    lines += [(pd.DataFrame(crec).to_markdown(index=False) if crec else "(no rows)"), ""]
    return "\n".join(lines)


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


def _recommendation(runs: pd.DataFrame, section: dict) -> dict:
    return recommend(runs, float(section["choose"]["max_throughput_cost_pct"]))


def _table(runs, section, settings, choose, recommendation):
    confirm = summarize_confirm(runs)
    return confirm, objective_markdown(scores(choose), recommendation, confirm, section["description"])


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
              Product("recommendation.json", make=_recommendation, settings=_is_choose)),
    tables=(Table("objective", _table, settings=_is_confirm,
                  products=(("choose", "choose.csv"), ("recommendation", "recommendation.json"))),),
    figures=(Figure("objective_study", "bfio.figures.objective_study:plot_study_figure", table="objective",
                    products=(("choose", "choose.csv"),), caption=STUDY_CAPTION,
                    modules=("figures/objective_study.py",)),
             Figure("discount_reach", "bfio.figures.discount_reach:plot_discount_reach", table=None,
                    products=(("choose", "choose.csv"),), caption=REACH_CAPTION,
                    modules=("figures/discount_reach.py",))),
    modules=("studies/objective_study.py",),
    figure_modules=("figures/objective_study.py", "figures/discount_reach.py")))

__all__ = ["label", "variant", "choose_variants", "confirm_variants", "run_objective_runs", "scores", "recommend",
           "summarize_confirm", "objective_markdown", "plan", "STUDY"]
