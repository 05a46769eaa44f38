"""The goodput study's table (issue 44): per setting, every router's goodput,
its share of the model's capacity and the headroom it leaves to the capacity
and to the balanced (pooled) reference (:mod:`bfio.sim.pooled`), best first.

Kept apart from :mod:`bfio.studies.goodput_study` so the workflow reruns only
the table, never the bisections, when this code changes.
"""

from __future__ import annotations

import json

import numpy as np
import pandas as pd

from bfio.ground.metrics import STEADY, WARMUP_SHARE
from bfio.studies.goodput import GoodputResult, ahead
from bfio.studies.report import fmt, markdown_table
from bfio.policies.names import KV_WAYS, actions_label
from bfio.studies.online_summary import policy_label
from bfio.runs.tables import mean_ci
from bfio.runs.run import variant_actions


#: The columns that name one router's row of a section (its seeds are aggregated).
ROUTER = ["setting", "regime", "row", "dispatch"]


def summarize_goodput(runs: pd.DataFrame) -> pd.DataFrame:
    """One row per router and reference (:mod:`bfio.sim.pooled`) and section, the
    references first, then the routers, best mean goodput first: ``goodput_rps``
    the mean over the seeds' own bisections, with its 95% Student-t interval
    (``goodput_ci_lo``/``_hi``, :func:`bfio.runs.tables.mean_ci`; NaN below two seeds)
    and ``n_seeds``; ``at_capacity`` when every seed held the targets at the
    capacity; ``headroom_rps`` (capacity minus the mean goodput), the balanced
    bound's columns (:func:`with_bound`) and ``vs_best_pct`` (the mean against the
    section's best router's, %; NaN on a reference's row).
    Runs written before per-seed bisections (no ``seed`` column: one pooled row
    per router) keep their row, with no interval."""
    out = runs.copy()
    if "regime" not in out.columns:  # runs written before the regimes: the paper's step
        out["regime"] = "paper"
    if "reference" not in out.columns:  # runs written before the balanced reference: routers only
        out["reference"] = "none"
    if "predictor" not in out.columns:
        out["predictor"] = ""
    out["predictor"] = out["predictor"].fillna("")
    if "seed" in out.columns:
        rows = []
        for _, grp in out.groupby(ROUTER, sort=False):
            m, lo, hi, n = mean_ci(grp["goodput_rps"])
            first = grp.iloc[0].to_dict()
            rows.append({**first, "goodput_rps": m, "goodput_ci_lo": lo, "goodput_ci_hi": hi, "n_seeds": n,
                         "goodput_share": m / first["capacity_rps"], "at_capacity": bool(grp["at_capacity"].all()),
                         "seeds": json.dumps([int(x) for x in grp["seed"]]),
                         "seed_goodput_rps": json.dumps([float(x) for x in grp["goodput_rps"]]),
                         **({"seed_brackets": json.dumps([GoodputResult.of_probes(p, c).bracket for p, c in
                                                          zip(grp["probes"], grp["capacity_rps"])])}
                            if "probes" in grp.columns else {}),
                         "sim_wall_s": float(grp["sim_wall_s"].sum()),
                         **{c: float(grp[c].mean()) for c in ACTION_COLUMNS if c in grp.columns}})
        out = pd.DataFrame(rows).drop(columns=["seed", "probes"])
    else:
        out["goodput_ci_lo"] = out["goodput_ci_hi"] = float("nan")
    # capacity minus goodput; a goodput at the capacity leaves none (not a float's residue, 2e-13)
    room = out["capacity_rps"] - out["goodput_rps"]
    out["headroom_rps"] = room.where(room > 1e-9 * out["capacity_rps"], 0.0)
    out = with_bound(out)
    routers = out["goodput_rps"].where(~is_reference(out))
    best = routers.groupby([out[k] for k in SECTION]).transform("max")
    out["vs_best_pct"] = [100.0 * (g / b - 1.0) if b > 0 and not ref else float("nan")
                          for g, b, ref in zip(out["goodput_rps"], best, is_reference(out))]
    order = {s: i for i, s in enumerate(dict.fromkeys(zip(out["setting"], out["regime"])))}
    out["_s"] = [order[k] for k in zip(out["setting"], out["regime"])]
    # the bound first, then the other references, then the routers
    out["_b"] = np.where(is_reference(out, BOUND), 0, np.where(is_reference(out), 1, 2))
    out = out.sort_values(["_s", "_b", "goodput_rps"], ascending=[True, True, False], kind="stable")
    return out.drop(columns=["_s", "_b"]).reset_index(drop=True)


def is_reference(frame: pd.DataFrame, name: str | None = None) -> pd.Series:
    """Which rows are a reference's (``reference`` not ``none``; ``name``: that one's,
    e.g. :data:`BOUND`), not a router's."""
    if "reference" not in frame.columns:
        return pd.Series(False, index=frame.index)
    return frame["reference"] == name if name else frame["reference"].fillna("none") != "none"


def _seed_goodputs(r) -> dict:
    """A summary row's goodput per seed (``seeds``, ``seed_goodput_rps``), or ``{}``."""
    if not isinstance(r.get("seed_goodput_rps"), str) or not isinstance(r.get("seeds"), str):
        return {}
    return dict(zip(json.loads(r["seeds"]), json.loads(r["seed_goodput_rps"])))


def _seed_brackets(r) -> dict:
    """A summary row's bisection bracket per seed (``seeds``, ``seed_brackets``:
    :attr:`bfio.studies.goodput.GoodputResult.bracket`), or ``{}``."""
    if not isinstance(r.get("seed_brackets"), str) or not isinstance(r.get("seeds"), str):
        return {}
    return dict(zip(json.loads(r["seeds"]), map(tuple, json.loads(r["seed_brackets"]))))


def seeds_ahead(r, best) -> tuple[int, int]:
    """On how many of the seeds both rows ran row ``r`` is ahead of row ``best`` beyond
    both bisections' brackets (:func:`bfio.studies.goodput.ahead`: it met the targets
    at a rate where ``best`` failed them), and how many seeds that is;
    ``(0, 0)`` for runs without probes."""
    ours, theirs = _seed_brackets(r), _seed_brackets(best)
    common = [seed for seed in ours if seed in theirs]
    return sum(ahead(ours[seed], theirs[seed]) for seed in common), len(common)


def with_bound(summary: pd.DataFrame) -> pd.DataFrame:
    """Each router row with its section's balanced reference (NaN without one, and on
    the reference's own row): ``balanced_rps`` (its mean goodput),
    ``headroom_balanced_rps`` (that less the router's mean goodput; below 0 the
    router is above the reference) and ``seeds_above_bound`` (the seeds on which
    the router's goodput exceeds the reference's on the same seed: the reference
    is checked, not assumed, :mod:`bfio.sim.pooled`)."""
    out = summary.copy()
    out["balanced_rps"] = out["headroom_balanced_rps"] = out["seeds_above_bound"] = float("nan")
    for _, b in out[is_reference(out, BOUND)].iterrows():
        here = (out["setting"] == b["setting"]) & (out["regime"] == b["regime"]) & ~is_reference(out)
        bound_seeds = _seed_goodputs(b)
        out.loc[here, "balanced_rps"] = b["goodput_rps"]
        room = b["goodput_rps"] - out.loc[here, "goodput_rps"]
        out.loc[here, "headroom_balanced_rps"] = room.where(room.abs() > 1e-9 * b["capacity_rps"], 0.0)
        out.loc[here, "seeds_above_bound"] = [
            sum(g > bound_seeds[k] for k, g in _seed_goodputs(r).items() if k in bound_seeds) if bound_seeds
            else float("nan") for _, r in out[here].iterrows()]
    return out


#: A table section: one setting in one regime.
SECTION = ["setting", "regime"]
#: The policy whose goodput the table compares with the production routers.
SUBJECT = "bfio"
#: The ``reference`` of the rows the headroom is measured to: the balanced bound
#: (:mod:`bfio.sim.pooled`; the study also bisects ``divisible``, shown beside it).
BOUND = "balanced"


def _paired_shares(bfio, best, top: dict | float) -> tuple[float, float, int]:
    """The share ``(bfio - best) / (top - best)`` per seed (``top`` a bound per seed,
    or one number), over the seeds where ``top`` leaves the router some headroom:
    ``(lo, hi, seeds)`` of its 95% interval (:func:`bfio.runs.tables.mean_ci`)."""
    ours, theirs = _seed_goodputs(bfio), _seed_goodputs(best)
    shares = []
    for seed, r in theirs.items():
        t = top.get(seed, float("nan")) if isinstance(top, dict) else top
        if seed in ours and t - r > 0:
            shares.append((ours[seed] - r) / (t - r))
    _, lo, hi, n = mean_ci(shares)
    return lo, hi, n


def _share(bfio_rps: float, best_rps: float, top: float) -> float:
    room = top - best_rps
    return (bfio_rps - best_rps) / room if room > 0 else float("nan")


def headroom_recovered(grp: pd.DataFrame) -> dict:
    """In one section: the best production router (an instant row that is not
    :data:`SUBJECT`; best by mean goodput), the best :data:`SUBJECT` row and the
    share of the headroom the production router leaves that BF-IO recovers,
    ``(bfio - best) / (top - best)`` on the means (NaN when the router leaves
    none), with ``top`` the capacity (``recovered``) and, when the section has
    it, the balanced reference's goodput (``recovered_bound``; ``bound`` its row).
    With per-seed goodputs also each share's 95% interval over the seeds, paired
    seed by seed (``recovered_ci``, ``recovered_bound_ci``; the seeds where the
    top leaves the router no headroom are left out: ``bound_seeds`` counts the
    others)."""
    routers = grp[~is_reference(grp)]
    prod = routers[(routers["dispatch"] == "instant") & (routers["policy"] != SUBJECT)]
    ours = routers[routers["policy"] == SUBJECT]
    if prod.empty or ours.empty:
        return {}
    best = prod.loc[prod["goodput_rps"].idxmax()]
    bfio = ours.loc[ours["goodput_rps"].idxmax()]
    cap = float(best["capacity_rps"])
    nan2 = (float("nan"), float("nan"))
    rec = {"best_router": best, "bfio": bfio, "recovered": _share(bfio["goodput_rps"], best["goodput_rps"], cap),
           "recovered_ci": _paired_shares(bfio, best, cap)[:2], "bound": None, "recovered_bound": float("nan"),
           "recovered_bound_ci": nan2, "bound_seeds": 0}
    bound = grp[is_reference(grp, BOUND)]
    if not bound.empty:
        b = bound.iloc[0]
        lo, hi, n = _paired_shares(bfio, best, _seed_goodputs(b))
        rec.update(bound=b, recovered_bound=_share(bfio["goodput_rps"], best["goodput_rps"], float(b["goodput_rps"])),
                   recovered_bound_ci=(lo, hi), bound_seeds=n)
    return rec


#: The references' row labels (:mod:`bfio.sim.pooled`).
REFERENCE_LABELS = {BOUND: "balanced bound: G x B slots pooled, FCFS, step at the mean rank, no request split",
                    "divisible": "divisible reference: the same, requests split over ranks (the mean rank alone)"}


def row_label(r) -> str:
    """A row's label: the router's (:func:`bfio.studies.online_summary.policy_label`)
    with its actions after binding (:func:`bfio.policies.names.actions_label`), or a
    reference's (:data:`REFERENCE_LABELS`)."""
    ref = r.get("reference")
    if isinstance(ref, str) and ref in REFERENCE_LABELS:
        return REFERENCE_LABELS[ref]
    label = policy_label(r["row"], r["dispatch"], r.get("report_interval", 0), r.get("policy"), r.get("horizon"),
                         predictor=r.get("predictor") or None)
    actions = r.get("actions")
    if isinstance(actions, str) and actions:
        label += " " + actions_label(json.loads(actions))
    return label


#: The columns a row with actions after binding has (:func:`bfio.studies.goodput_study.action_columns`),
#: at its goodput, averaged over the seeds; a table without them has no such column.
ACTION_COLUMNS = ("actions_per_1k_requests", "wasted_tokens")


def _action_cells(grp: pd.DataFrame) -> list[tuple]:
    """The table's action columns when a row of ``grp`` takes actions (else none)."""
    if "actions" not in grp.columns or not grp["actions"].map(lambda a: isinstance(a, str) and a != "").any():
        return []

    def cell(column, digits):
        return lambda r: "" if not isinstance(r.get("actions"), str) or r[column] != r[column] else \
            f"{r[column]:,.{digits}f}"
    return [("actions per 1,000 requests at its goodput", cell("actions_per_1k_requests", 1)),
            ("wasted tokens at its goodput", cell("wasted_tokens", 0))]


def _goodput_cell(r) -> str:
    """``mean [lo, hi]`` (95%), or the mean alone below two seeds."""
    lo, hi = r.get("goodput_ci_lo", float("nan")), r.get("goodput_ci_hi", float("nan"))
    if lo == lo and hi == hi:
        return f"{fmt(r['goodput_rps'])} [{fmt(max(lo, 0.0))}, {fmt(hi)}]"
    return fmt(r["goodput_rps"])


def _ttft_words(grp: pd.DataFrame) -> str:
    """What a section's runs read as TTFT (their ``ttft_metric``)."""
    key = str(grp["ttft_metric"].iloc[0])
    words = ("p99 queue wait (this step loop has no prefill: the first token comes with the first decode step)"
             if key.startswith("queue_wait_s_p99") else "p99 TTFT of the prefill model")
    if key.endswith(STEADY):
        words += (f", over the requests arriving after the first {100 * WARMUP_SHARE:g}% of a run (discarded as "
                  "warm-up: a run starts empty)")
    return words


def _pct(share: float, ci: tuple[float, float]) -> str:
    """``55% [40%, 70%]`` (the interval when there is one), ``n/a`` for NaN."""
    if share != share:
        return "n/a (no headroom)"
    lo, hi = ci
    return f"{100 * share:.0f}%" + (f" [{100 * lo:.0f}%, {100 * hi:.0f}%]" if lo == lo else "")


def _recovered_words(rec: dict) -> str:
    """What BF-IO recovers of the best router's headroom: to the balanced bound
    (when the section has one) and to the capacity."""
    cap = f"{_pct(rec['recovered'], rec['recovered_ci'])} of its headroom to the capacity"
    if rec["bound"] is None:
        return f"recovering {cap} (95% interval over the seeds, paired)."
    return (f"recovering {_pct(rec['recovered_bound'], rec['recovered_bound_ci'])} of the headroom it leaves to the "
            f"balanced bound ({rec['bound_seeds']} seeds with headroom) and {cap} (95% intervals over the seeds, "
            "paired).")


def _bound_words(grp: pd.DataFrame) -> list[str]:
    """The section's balanced bound, the divisible reference beside it and, checked
    per seed, the router runs above the bound."""
    bound = grp[is_reference(grp, BOUND)]
    if bound.empty:
        return []
    routers = grp[~is_reference(grp)]
    above = routers["seeds_above_bound"].fillna(0)
    pairs = int(routers["n_seeds"].sum())
    words = (f"Balanced bound (`bfio.sim.pooled`: the cluster's slots, KV memory and prefill budget pooled, the step "
             f"charged at the mean rank with no request split, FCFS): {_goodput_cell(bound.iloc[0])} req/s")
    divisible = grp[is_reference(grp, "divisible")]
    if not divisible.empty:
        words += (f"; with requests split over ranks (the mean rank alone) {_goodput_cell(divisible.iloc[0])} "
                  "(any difference is the barrier waiting for one request's chunk or KV: the model's, not routing's)")
    words += ". "
    if above.sum() == 0:
        words += f"No router's goodput exceeds the bound on any seed ({pairs} router runs checked)."
    else:
        names = ", ".join(f"{row_label(r)} ({int(k)})" for (_, r), k in zip(routers.iterrows(), above) if k)
        words += (f"**Exceeded** on {int(above.sum())} of {pairs} router runs (seeds above it: {names}): there "
                  "it is a reference, not a bound.")
    return [words, ""]


def _unresolved(rec: dict, rel_tol: float | None) -> bool:
    """Whether the best production router's headroom to the balanced bound (on the means)
    is below one bisection bracket (``rel_tol`` of the capacity): shares of it are then
    the brackets' noise, not a measurement."""
    if not rec or rec["bound"] is None or not rel_tol:
        return False
    best = rec["best_router"]
    return float(rec["bound"]["goodput_rps"]) - float(best["goodput_rps"]) < rel_tol * float(best["capacity_rps"])


def _recovered_cell(r, rec: dict, rel_tol: float | None = None) -> str:
    """A router row's share of the best production router's headroom to the balanced
    bound, on the means (``+12%``: it recovers 12%; blank without a bound or headroom,
    or with less headroom than one bracket, :func:`_unresolved`)."""
    if not rec or rec["bound"] is None or r.get("reference") in REFERENCE_LABELS or _unresolved(rec, rel_tol):
        return ""
    share = _share(r["goodput_rps"], rec["best_router"]["goodput_rps"], float(rec["bound"]["goodput_rps"]))
    return "" if share != share else f"{100 * share:+.0f}%"


def _ahead_cell(r, rec: dict) -> str:
    """A BF-IO row's seeds ahead of the best production router beyond the brackets
    (:func:`seeds_ahead`, ``3 of 5``; blank for other rows or without probes)."""
    if not rec or r.get("policy") != SUBJECT:
        return ""
    k, n = seeds_ahead(r, rec["best_router"])
    return f"{k} of {n}" if n else ""


def _section(grp: pd.DataFrame, rel_tol: float | None = None) -> list[str]:
    """One section's lines: the title, targets, latency floor, bound, headroom sentence and table."""
    r0 = grp.iloc[0]
    lines = [f"## {r0['setting']}, {r0['regime']} regime: {r0['trace']}, G={int(r0['workers'])}, "
             f"B={int(r0['slots'])}, N={int(r0['requests']):,}, {int(grp['n_seeds'].max())} seeds; capacity "
             f"{fmt(r0['capacity_rps'])} req/s", "",
             f"Targets: p99 TTFT <= {r0['ttft_slo_s']:g} s, p99 TPOT <= {r0['tpot_slo_s']:g} s. "
             f"TTFT read as the {_ttft_words(grp)}.", ""]
    if "ttft_floor_s" in grp.columns:
        beyond = [f"p99 {m} {r0[f'{k}_floor_s']:.3g} s" for m, k, slo in (("TTFT", "ttft", "ttft_slo_s"),
                                                                           ("TPOT", "tpot", "tpot_slo_s"))
                  if r0[f"{k}_floor_s"] > r0[slo]]
        lines += [f"A request alone on an idle rank: p99 TTFT {r0['ttft_floor_s']:.3g} s, p99 TPOT "
                  f"{r0['tpot_floor_s']:.3g} s (`bfio.engine.capacity.latency_floor`)"
                  + (f"; {' and '.join(beyond)} exceed the targets, so no router has any goodput here."
                     if beyond else "."), ""]
    lines += _bound_words(grp)
    rec = headroom_recovered(grp)
    if rec and not (grp.loc[~is_reference(grp), "goodput_rps"] > 0).any():
        lines += ["No router has any goodput here.", ""]
    elif rec:
        best = rec["best_router"]
        lines += [f"Best production router: {row_label(best)}, {fmt(best['goodput_rps'])} req/s; best BF-IO row: "
                  f"{row_label(rec['bfio'])}, {fmt(rec['bfio']['goodput_rps'])} req/s, "
                  + (f"the best router within one bisection bracket ({100 * rel_tol:g}% of the capacity) of the "
                     "balanced bound: what BF-IO recovers of that headroom is not resolved."
                     if _unresolved(rec, rel_tol) else _recovered_words(rec))
                  if best["headroom_rps"] > 0 else
                  f"Best production router: {row_label(best)}, at the capacity (no headroom).", ""]
    return lines + [markdown_table(grp.to_dict("records"), [
        ("router", row_label), ("goodput (req/s) [95%]", _goodput_cell),
        ("recovered (of the best router's headroom to the bound)", lambda r: _recovered_cell(r, rec, rel_tol)),
        ("share of capacity", lambda r: f"{100 * r['goodput_share']:.1f}%"),
        ("headroom to capacity (req/s)", lambda r: fmt(r["headroom_rps"])),
        ("headroom to balanced bound (req/s)", lambda r: "" if r["headroom_balanced_rps"] != r["headroom_balanced_rps"]
         else fmt(r["headroom_balanced_rps"])),
        ("seeds above the bound", lambda r: "" if r["seeds_above_bound"] != r["seeds_above_bound"]
         else str(int(r["seeds_above_bound"]))),
        ("vs best router", lambda r: "" if r.get("reference") in REFERENCE_LABELS else
         f"{r['vs_best_pct']:+.1f}%" if r["vs_best_pct"] == r["vs_best_pct"] else "n/a (no router has goodput)"),
        ("seeds ahead of the best router, beyond the brackets", lambda r: _ahead_cell(r, rec)),
        ("at capacity", lambda r: "yes" if r["at_capacity"] else "no"), *_action_cells(grp)]), ""]


def goodput_markdown(summary: pd.DataFrame, settings: dict, title: str = "Goodput", rel_tol: float | None = None) -> str:
    lines = [f"# {title}", ""]
    if len(summary):
        per_seed = "goodput_ci_lo" in summary.columns and summary["goodput_ci_lo"].notna().any()
        how = ("each seed its own bisection; the table gives the mean over the seeds with its 95% Student-t "
               "interval" if per_seed else "the means over the seeds of each run's p99")
        lines += ["Goodput: the highest Poisson arrival rate (requests/s) whose runs meet the section's p99 TTFT "
                  f"and p99 TPOT targets ({how}; what TTFT is read as is said per section), by bisection up to the "
                  "model's capacity (every slot busy, every worker at the mean load: no router sustains more; it "
                  "ignores the targets). The *balanced bound* is the goodput of the same runs with the imbalance "
                  "removed (one pool of the cluster's slots, KV memory and prefill budget, its step charged as if "
                  "every rank held the mean load but no request were split, FCFS), by the same bisection on the "
                  "same rates: it respects the targets, and each seed's router runs are checked against it "
                  "(`bfio.sim.pooled`, `docs/studies.md`); the *divisible reference* splits requests too (the mean "
                  "rank alone). *at capacity*: the targets held at the capacity itself (every seed), so the "
                  "runs there are a transient."
                  + (f" The bisection stops at a bracket of {100 * rel_tol:g}% of the capacity: smaller differences "
                     "between routers are not resolved." if rel_tol else ""), ""]
    for _, grp in summary.groupby(SECTION, sort=False):
        lines += _section(grp, rel_tol)
    return "\n".join(lines)


def with_kv_ways(runs: pd.DataFrame, section: dict) -> pd.DataFrame:
    """``runs`` with each migrating row's KV way (option ``kv`` of its migration rule,
    as ``section['variants']`` declares it, else the rules' default) in its ``actions``
    (key ``kv``), so that rows differing only in it are told apart
    (:func:`bfio.policies.names.actions_label`)."""
    if "actions" not in runs.columns:
        return runs
    variants = section.get("variants") or {}

    def way(row: str, actions) -> object:
        if not isinstance(actions, str) or not actions:
            return actions
        declared = json.loads(actions)
        if declared.get("migration", "none") == "none":
            return actions
        options = dict(variant_actions(row, variants).get("migration_options", ()))
        return json.dumps({**declared, "kv": options.get("kv", KV_WAYS[0])}, sort_keys=True)
    return runs.assign(actions=[way(r, a) for r, a in zip(runs["row"], runs["actions"])])


def goodput_table(runs: pd.DataFrame, section: dict, settings: dict):
    """The goodput table: the runs summarized (:func:`summarize_goodput`; each
    migration's KV way named, :func:`with_kv_ways`) and its Markdown."""
    summary = summarize_goodput(with_kv_ways(runs, section))
    return summary, goodput_markdown(summary, settings, section["description"], rel_tol=section.get("rel_tol"))


__all__ = ["BOUND", "REFERENCE_LABELS", "ROUTER", "SECTION", "SUBJECT", "goodput_markdown", "goodput_table",
           "headroom_recovered", "is_reference", "row_label", "summarize_goodput", "with_bound", "with_kv_ways"]

