"""Issue 42, "Figures a reader can read": every figure function, drawn on small
synthetic inputs shaped like the pipeline's worst cases (17 routers, 9
admission rules, 3 error models with 4 reference predictors, 6 theory drifts,
2 seeds whose t-intervals run through 0, keys with underscores), must give

- at most 8 series in any panel;
- a title naming the setting (trace, G, N, B, seeds, or the theory grid);
- no raw key (``bfio_h40_instant``, ``mooncake_x0_5``, ``speculative_per_request``)
  and no pull-request number (``#49204``) in a legend, a title or a tick label;
- no error bar or band below 0 on an axis of a non-negative quantity.

The checks are written here, independent of :mod:`bfio.figures.style`, so the
test reads the drawn figure as a reader would and fails on figures drawn
without the registry (the code before issue 42 fails most cases). It also
checks that ``figures/README.md`` lists every figure and carries the
registry's glossary of series names.
"""

from __future__ import annotations

import inspect
import re
from pathlib import Path

import matplotlib

matplotlib.use("Agg")

import matplotlib.pyplot as plt
import numpy as np
import pandas as pd
import pytest

from matplotlib.collections import LineCollection, PolyCollection
from matplotlib.lines import Line2D
from matplotlib.patches import Rectangle

REPO = Path(__file__).resolve().parents[1]
MAX_SERIES = 8
#: A raw key outside math text: an identifier with an underscore, or a PR number.
RAW_KEY = re.compile(r"[A-Za-z0-9]_[A-Za-z0-9]|#\d+")
#: An axis label with one of these words measures a signed quantity (a change, a gain,
#: a saving): its bars may go below 0. Every other quantity drawn is non-negative.
SIGNED = ("change", "gain", "saving", "reduction", "difference")
RNG = np.random.default_rng(42)


# --------------------------------------------------------------------------- the checks

def _colour(artist):
    for g in ("get_color", "get_facecolor", "get_edgecolor"):
        if hasattr(artist, g):
            try:
                rgba = matplotlib.colors.to_rgba_array(getattr(artist, g)())
            except (TypeError, ValueError):
                continue
            if rgba.size:
                return tuple(np.round(rgba[0, :3], 3))
    return None


def _is_axis_line(ax, line) -> bool:
    """A line across the panel (axhline, axvline) without a label: a zero or unit guide."""
    return line.get_transform() in (ax.get_xaxis_transform(), ax.get_yaxis_transform())


def series_count(ax) -> int:
    """What a reader must tell apart in ``ax``: one per distinct legend label of its
    data artists, plus one per colour of its unlabelled data artists that no
    labelled one has (16 worker lines in one colour: one; error bar caps: their line's)."""
    labelled, unlabelled = {}, set()
    in_containers = set()
    for cont in ax.containers:
        kids = [a for a in cont.get_children() if a is not None]
        in_containers |= {id(a) for a in kids}
        lab = cont.get_label()
        if lab and not lab.startswith("_"):
            labelled.setdefault(lab, _colour(kids[0]) if kids else None)
        else:
            unlabelled |= {_colour(a) for a in kids}
    artists = [a for a in ax.lines + ax.collections + ax.patches if id(a) not in in_containers and a.get_visible()]
    for a in artists:
        lab = a.get_label()
        if isinstance(a, Line2D) and str(a.get_linestyle()) in ("None", "none") and a.get_marker() in ("_", "|"):
            continue  # caps
        if lab and not lab.startswith("_"):
            labelled.setdefault(lab, _colour(a))
        elif not (isinstance(a, Line2D) and _is_axis_line(ax, a)):
            unlabelled.add(_colour(a))
    return len(labelled) + len(unlabelled - set(labelled.values()) - {None})


def texts_read(fig) -> list[tuple[str, str]]:
    """(where, text) of every legend entry, title and tick label a reader sees."""
    fig.canvas.draw()
    out = [("suptitle", fig._suptitle.get_text())] if fig._suptitle is not None else []
    legends = list(fig.legends) + [ax.get_legend() for ax in fig.axes if ax.get_legend() is not None]
    out += [("legend", t.get_text()) for leg in legends for t in leg.get_texts()]
    for ax in fig.axes:
        if not ax.get_visible():
            continue
        out.append(("title", ax.get_title()))
        out += [("tick", t.get_text()) for t in ax.get_xticklabels() + ax.get_yticklabels()]
    return [(w, t) for w, t in out if t.strip()]


def raw_keys(fig) -> list[str]:
    bad = []
    for where, text in texts_read(fig):
        plain = re.sub(r"\$[^$]*\$", "", text)
        if RAW_KEY.search(plain):
            bad.append(f"{where}: {text!r}")
    return bad


def titles(fig) -> str:
    parts = [fig._suptitle.get_text()] if fig._suptitle is not None else []
    parts += [ax.get_title() for ax in fig.axes if ax.get_visible()]
    return "\n".join(p for p in parts if p)


def _nonneg(label: str) -> bool:
    return bool(label) and not any(w in label.lower() for w in SIGNED)


def below_zero(fig) -> list[str]:
    """Error bars, bands and spans under 0 on an axis whose label names a
    non-negative quantity (a latency, a throughput, an imbalance, a rate, a ratio)."""
    bad = []
    for k, ax in enumerate(fig.axes):
        if not ax.get_visible():
            continue
        checks = [(1, ax.get_ylabel()), (0, ax.get_xlabel())]
        for coll in ax.collections:
            if isinstance(coll, LineCollection):  # error bars: a bar's extent is along the axis it varies on
                for seg in coll.get_segments():
                    seg = np.asarray(seg, dtype=float)
                    if len(seg) < 2:
                        continue
                    for dim, label in checks:
                        v = seg[:, dim]
                        if np.ptp(v) > 0 and _nonneg(label) and np.nanmin(v) < -1e-9 * max(1.0, np.nanmax(np.abs(v))):
                            bad.append(f"axes {k} error bar down to {np.nanmin(v):.3g} on {label!r}")
            elif isinstance(coll, PolyCollection) and coll.get_transform() == ax.transData:  # fill_between bands
                pts = [p.vertices for p in coll.get_paths() if len(p.vertices)]
                v = np.concatenate(pts)[:, 1] if pts else np.zeros(0)
                v = v[np.isfinite(v)]
                if _nonneg(ax.get_ylabel()) and v.size and v.min() < -1e-9 * max(1.0, np.abs(v).max()):
                    bad.append(f"axes {k} band down to {v.min():.3g} on {ax.get_ylabel()!r}")
        for patch in ax.patches:  # axhspan
            if isinstance(patch, Rectangle) and patch.get_transform() == ax.get_yaxis_transform():
                if _nonneg(ax.get_ylabel()) and patch.get_y() < 0:
                    bad.append(f"axes {k} span down to {patch.get_y():.3g} on {ax.get_ylabel()!r}")
    return bad


def readable(fig, setting: list[str]) -> list[str]:
    """Everything this file asks of a figure, as failures (empty: readable)."""
    fails = []
    for k, ax in enumerate(fig.axes):
        if ax.get_visible() and ax.axison:
            n = series_count(ax)
            if n > MAX_SERIES:
                fails.append(f"axes {k} ({ax.get_title()[:40]!r}): {n} series")
    text = titles(fig)
    if not text.strip():
        fails.append("no title")
    fails += [f"title does not name {s!r}" for s in setting if s not in text]
    fails += [f"raw key in {b}" for b in raw_keys(fig)]
    fails += below_zero(fig)
    return fails


def draw(fn, *args, **kw):
    """``fn`` with the keywords it takes (an older signature lacks some)."""
    params = inspect.signature(fn).parameters
    return fn(*args, **{k: v for k, v in kw.items() if k in params})


# --------------------------------------------------------------------------- synthetic inputs

def ci(rec: dict, metric: str, mean: float, half: float, n: int = 2) -> dict:
    """``metric``'s mean and t-interval (half width ``half``) over ``n`` seeds."""
    rec.update({f"{metric}_mean": mean, f"{metric}_ci_lo": mean - half, f"{metric}_ci_hi": mean + half,
                "n_seeds": n})
    return rec


def experiment_summary(rows, workers=(256,), trace="longbench"):
    """A ``<experiment>_summary`` table with 2 seeds, wide intervals through 0."""
    recs = []
    for row in rows:
        h = int(row.split("_h")[1].split("_")[0]) if row.startswith("bfio_h") else None
        for g in workers:
            rec = {"row": row, "workers": g, "trace": trace, "requests": 80000, "slots": 72, "ref_seed": 42,
                   "horizon": h, "effective_horizon": None if h is None else min(h, 13)}
            for m, v in (("avg_imbalance", 3e8), ("throughput", 5e3), ("tpot", 2.0), ("energy_j", 2.5e7)):
                v = v * (0.5 if h is not None and m != "throughput" else 1.0) * (1 + g / 1000)
                rec[m] = v
                ci(rec, m, v, 1.5 * v)
            recs.append(rec)
    return pd.DataFrame(recs)


ONLINE_ROWS = [("fcfs", "central", "fcfs"), ("jsq_tokens", "central", "jsq_tokens"), ("bfio_h0", "central", "bfio"),
               ("bfio_h40", "central", "bfio"), ("bfio_h40_aging200", "central", "bfio"),
               ("bfio_h40_drain100", "central", "bfio"), ("bfio_h40_instant", "instant", "bfio")] + [
    (p, "instant", p) for p in ("vllm_dp", "vllm_token_lb", "sglang_total_requests", "sglang_total_tokens",
                                "round_robin", "least_tokens", "power_of_two", "vllm_dp_rotating", "vllm_dp_kv",
                                "atom_least_requests")]


def online_table(loads=(0.5, 0.8, 0.9, 1.05), intervals=True):
    """The online table as the study writes it: 17 exact-state rows per load, 2 seeds, and
    (``intervals``) four routers on lagging reports."""
    recs = []
    for setting, trace, g in (("burstgpt_g16", "burstgpt", 16), ("azure_code_g16", "azure_code", 16)):
        for load in loads:
            for k, (row, dispatch, policy) in enumerate(ONLINE_ROWS):
                for ri in ((0, 10, 50) if intervals and policy in ("vllm_dp", "sglang_total_tokens") else (0,)):
                    rec = {"setting": setting, "trace": trace, "requests": 20000, "workers": g, "slots": 72,
                           "arrival_mode": "poisson", "load": load, "time_scale": np.nan, "dispatch": dispatch,
                           "row": row if not ri else f"{row}_r{ri}", "policy": policy, "report_interval": ri,
                           "horizon": 40.0 if policy == "bfio" and "h40" in row else (0.0 if row == "bfio_h0"
                                                                                    else np.nan)}
                    e2e = 3 + load * (1 + 0.1 * k) + 0.01 * ri
                    ci(rec, "e2e_s_p99", e2e, 4.0)
                    ci(rec, "e2e_s_p50", e2e / 3, 2.0)
                    ci(rec, "queue_wait_s_p99", 0.01 * (1 + k), 0.05)
                    ci(rec, "throughput_run", 2e4 * load, 3e4)
                    recs.append(rec)
    # a replay of trace timestamps
    for row, dispatch, policy in ONLINE_ROWS:
        rec = {"setting": "azure_conv_g8", "trace": "azure_conv", "requests": 4000, "workers": 8, "slots": 72,
               "arrival_mode": "trace", "load": 0.8, "time_scale": 0.035, "dispatch": dispatch, "row": row,
               "policy": policy, "report_interval": 0, "horizon": 40.0 if "h40" in row else np.nan}
        for m, v in (("e2e_s_p99", 6.0), ("e2e_s_p50", 1.5), ("queue_wait_s_p99", 0.01), ("throughput_run", 3e3)):
            ci(rec, m, v, 2 * v)
        recs.append(rec)
    return pd.DataFrame(recs)


def routers_table():
    """The routers table: the central BF-IO reference and every instant row, paired ratios."""
    t = online_table(loads=(0.95,))
    t = t[(t["dispatch"] == "instant") | (t["row"] == "bfio_h40")].copy()
    t["role"] = np.where(t["dispatch"] == "instant", "instant", "reference")
    t["label"] = t["row"]
    t["reference"] = "bfio_h40"
    for i in t.index:
        ci_rec = ci({}, "vs_reference", 1.0 + 0.05 * (i % 7), 0.4)
        for k, v in ci_rec.items():
            t.loc[i, k] = v
    return t


def predictors_table():
    recs = []
    for setting, trace, g in (("longbench_g256", "longbench", 256), ("burstgpt_g16", "burstgpt", 16)):
        def rec(row, predictor, noise, remaining, imb, horizon=40.0):
            r = {"setting": setting, "trace": trace, "requests": 20000, "workers": g, "slots": 72, "row": row,
                 "predictor": predictor, "noise": noise, "remaining": remaining, "horizon": horizon}
            ci(r, "avg_imbalance", 1e6 * imb, 3e6)
            ci(r, "throughput", 3e4, 5e4)
            ci(r, "imbalance_vs_oracle_pct", 100 * (imb - 1), 150.0)
            return r
        recs += [rec("fcfs", "-", np.nan, "-", 30.0, np.nan), rec("bfio_h40", "oracle", np.nan, "-", 1.0)]
        for model, levels in (("noisy", (0.25, 0.5, 1.0)), ("lognormal", (0.25, 0.5, 1.0)),
                              ("bucket", (0.9, 0.7, 0.5))):
            for lv in levels:
                for reading in ("posterior", "paper"):
                    recs.append(rec(f"{model}_{lv}_{reading}", model, lv, reading, 1.2 + lv))
        recs += [rec(f"pred_{p}", p, np.nan, "-", 2.0) for p in ("empirical", "geometric", "prompt_survival", "none")]
    return pd.DataFrame(recs)


def starvation_table():
    rules = ["free", "fifo", "aging:20", "aging:50", "aging:200", "aging:1000", "drain:50", "drain:100", "drain:200"]
    recs = []
    for setting, trace, g, horizons in (("longbench_g256", "longbench", 256, (0, 40)),
                                        ("burstgpt_g16", "burstgpt", 16, (0, 20))):
        rows = [("fcfs", np.nan, "-")] + [(f"bfio_h{h}_{a.replace(':', '')}", h, a) for h in horizons for a in rules]
        for k, (row, h, adm) in enumerate(rows):
            rec = {"setting": setting, "trace": trace, "requests": 80000, "workers": g, "slots": 72, "row": row,
                   "horizon": h, "admission": adm}
            ci(rec, "wait_s_p99", 1.0 + k, 5.0)
            ci(rec, "wait_s_max", 10.0 + k, 30.0)
            ci(rec, "throughput", 9e4, 2e5)
            recs.append(rec)
    return pd.DataFrame(recs)


def generality_table():
    recs = []
    for trace, case in (("burstgpt", "backlog"), ("azure_code", "backlog"), ("azure_code", "replay_x0.05")):
        for g in (16, 64):
            rec = {"trace": trace, "case": case, "workers": g, "requests": 2 * g * 72, "slots": 72,
                   "rows_per_slot": 2.0, "n_seeds": 2}
            for m, v, lo, hi in (("imb_ratio", 5.0, 0.5, 50.0), ("thr_gain_pct", 10.0, -60.0, 80.0),
                                 ("energy_saving_pct", -5.0, -80.0, 70.0)):
                rec.update({f"{m}_bfio_h40": v, f"{m}_bfio_h40_lo": lo, f"{m}_bfio_h40_hi": hi})
            recs.append(rec)
    return pd.DataFrame(recs)


PREFIX_SETTINGS = {
    "mooncake_x0_5": {"workload": "trace", "trace": "mooncake", "requests": 2000, "workers": 8, "time_scale": 0.5},
    "grpo_n64_closed": {"workload": "grpo", "trace": "azure_conv", "workers": 8, "groups": 4, "group_size": 64,
                        "turns": 4, "think_time_s": 2.0, "closed_loop": True},
}


def prefix_table():
    recs = []
    for setting, s in PREFIX_SETTINGS.items():
        for k, row in enumerate(("cache_first", "tpu_least_loaded", "sglang_prefix_match", "sgl_cache_aware",
                                 "sglang_total_tokens", "vllm_dp", "bfio")):
            rec = {"setting": setting, "workload": s["workload"], "row": row}
            ci(rec, "cache_hit_rate", 0.05 + 0.02 * k, 0.3)
            ci(rec, "ttft_s_p99", 1.0 + 0.1 * k, 3.0)
            ci(rec, "throughput_run", 1200.0, 3000.0)
            recs.append(rec)
    return pd.DataFrame(recs)


def step_regime_table():
    recs = []
    for setting, trace in (("burstgpt_g16", "burstgpt"), ("longbench_v1_g16", "longbench_v1")):
        for regime in ("paper", "beta=0", "beta=0.0002"):
            for row, dispatch, policy in (("fcfs", "central", "fcfs"), ("jsq_tokens", "central", "jsq_tokens"),
                                          ("bfio_h20", "central", "bfio"), ("vllm_dp", "instant", "vllm_dp"),
                                          ("sglang_total_tokens", "instant", "sglang_total_tokens"),
                                          ("bfio_h20_instant", "instant", "bfio")):
                recs.append({"setting": setting, "regime": regime, "trace": trace, "requests": 5000, "workers": 16,
                             "slots": 72, "load": 0.8, "dispatch": dispatch, "row": row, "policy": policy,
                             "report_interval": 0, "vs_best": 1.0 + RNG.uniform(0, 1), "n_seeds": 2})
    return pd.DataFrame(recs)


def choose_runs():
    recs = []
    for trace in ("azure_code", "sharegpt_10k"):
        for seed in (42, 1):
            for nr in ("predicted", "persist"):
                for d in (1.0, 0.9, 0.8, 0.7, 0.6, 0.5, 0.4, 0.3):
                    for h in (0, 10, 40, 100):
                        if h == 0 and (d != 1.0 or nr != "predicted"):
                            continue
                        recs.append({"trace": trace, "workers": 64, "slots": 72, "seed": seed, "horizon": h,
                                     "discount": d, "new_requests": nr, "avg_imbalance": 1e6 * (1 + d * h / 100),
                                     "throughput": 1e5 * (1 + 0.001 * d * h)})
    return pd.DataFrame(recs)


def confirm_table():
    recs = []
    for trace in ("azure_conv", "sharegpt_10k"):
        for g in (16, 256):
            for h in (20, 100):
                for name in ("default", "paper-literal"):
                    recs.append(ci({"trace": trace, "workers": g, "horizon": h, "objective_name": name},
                                   "imbalance_ratio", 1.5, 2.0))
    return pd.DataFrame(recs)


def theory_cells(key: str, names) -> pd.DataFrame:
    recs = []
    for name in names:
        for p in (0.1,):
            for B in (8, 32, 128):
                for G in (4, 16, 64):
                    rate = 0.1 * np.sqrt(B * np.log(G))
                    iir = 20 * rate
                    recs.append({key: name, "dist": "uniform" if key != "dist" else name, "p": p, "B": B, "G": G,
                                 "s_max": 100, "samples": 400, "rate": rate, "iir": iir, "iir_se": 3 * iir,
                                 "lemma1_max_gap": 50.0, "gap_ratio": 0.1, "gap_bf_se": 2.0, "gap_bound": 1000.0,
                                 "snap_mean": 60.0, "snap_mean_theory": 59.5, "snap_mean_se": 100.0,
                                 "snap_var": 900.0, "snap_var_theory": 923.0, "snap_var_se": 2000.0})
    return pd.DataFrame(recs)


def theory_fits(key: str) -> pd.DataFrame:
    return pd.DataFrame([{key: "all", "y": "iir", "c_fit": 25.0}])


def energy_saving_frames():
    recs = []
    for power in ("A100", "A100_gamma0.5", "H100_illustrative"):
        for G in (2, 16, 256):
            recs.append({"model": "slot_geometric", "dist": "uniform", "drift": "one", "B": 32, "p": 0.1,
                         "power": power, "G": G, "saving": 0.05, "bound": 0.03, "bound_limit_eta": 0.04})
    corollary = pd.DataFrame({"power": ["A100", "A100_gamma0.5", "H100_illustrative"], "limit": [0.5, 0.4, 0.3]})
    return pd.DataFrame(recs), corollary


# --------------------------------------------------------------------------- the figures

def _theory(monkeypatch, fn, *args):
    """A theory figure (its functions save and close): the figure they save."""
    import bfio.theory.figures as tf

    caught = []
    monkeypatch.setattr(tf, "save", lambda fig, stem: caught.append(fig) or [])
    fn(*args, "unused")
    return caught[0]


def _figures(monkeypatch):
    """name -> (figure, what its title must name)."""
    from bfio.figures.decode_geometric import plot_decode_geometric
    from bfio.figures.discount_reach import plot_discount_reach
    from bfio.figures.distributions import plot_distributions
    from bfio.figures.energy_vs_workers import plot_energy_vs_workers
    from bfio.figures.generality import plot_generality
    from bfio.figures.horizon_sweep import plot_horizon_sweep
    from bfio.figures.load_trajectories import plot_load_trajectories
    from bfio.figures.objective_study import plot_objective_study
    from bfio.figures.online_load import plot_online_load
    from bfio.figures.online_replay import plot_online_replay
    from bfio.figures.online_routers import plot_online_routers
    from bfio.figures.power_timeseries import plot_power_timeseries
    from bfio.figures.predictor_noise import plot_predictor_noise
    from bfio.figures.prefix_tradeoff import plot_prefix_tradeoff
    from bfio.figures.starvation import plot_starvation
    from bfio.figures.step_regime import plot_step_regime
    from bfio.figures.summary_bars import plot_summary_bars
    from bfio.figures.worker_sweep import plot_worker_sweep
    import bfio.theory.figures as tf

    setting = {"trace": "longbench", "workers": 256, "requests": 80000, "slots": 72, "seed": 42}
    t = np.arange(200.0)
    loads = RNG.integers(1e6, 3e7, size=(200, 32))
    frame = pd.DataFrame({"prefill_tokens": RNG.integers(1, 10**5, 2000), "decode_tokens": RNG.integers(1, 400, 2000)})
    energy = pd.DataFrame({"workers": [16, 32, 48], "baseline": "fcfs", "target": "bfio_h40",
                           "energy_j_baseline_mean": [3.3e7, 3.2e7, 3.1e7],
                           "energy_j_target_mean": [2.9e7, 2.5e7, 2.2e7], "reduction_pct_mean": [12.0, 20.0, 30.0],
                           "reduction_pct_ci_lo": [-40.0, -30, -20], "reduction_pct_ci_hi": [64.0, 70, 80],
                           "n_seeds": 2})
    drifts = ["zero", "one", "periodic", "random", "speculative", "speculative_per_request"]
    esav, corollary = energy_saving_frames()
    long_setting = ["LongBench", "G = 256", "N = 80,000", "B = 72"]
    return {
        "distributions": (lambda: plot_distributions(frame, "azure_code"), ["Azure code", "N = 2,000"]),
        "decode_geometric": (lambda: plot_decode_geometric({"azure_code": RNG.geometric(0.02, 3000),
                                                            "sharegpt_10k": RNG.geometric(0.01, 3000)}),
                             ["Azure code", "ShareGPT"]),
        "load_trajectories": (lambda: draw(plot_load_trajectories, [(r, loads, t) for r in
                                                                    ("fcfs", "jsq_tokens", "bfio_h0", "bfio_h40")],
                                           sample=16, title="Table 1", setting=setting), long_setting + ["seed 42"]),
        "power_timeseries": (lambda: draw(plot_power_timeseries, [(r, t, 300 + t, 2.9e7, 150.0)
                                                                  for r in ("fcfs", "bfio_h40")],
                                          title="Table 1", setting=setting), long_setting + ["seed 42"]),
        "horizon_sweep": (lambda: plot_horizon_sweep(experiment_summary(
            ["fcfs", "jsq_tokens"] + [f"bfio_h{h}" for h in (0, 20, 40)] + ["bfio_h20_literal", "bfio_h40_literal"])),
            long_setting + ["2 seeds"]),
        "worker_sweep": (lambda: plot_worker_sweep(experiment_summary(["fcfs", "bfio_h40"], workers=(16, 64, 256)),
                                                   rows=["fcfs", "bfio_h40"]), ["LongBench", "N = 80,000", "B = 72",
                                                                                "2 seeds"]),
        "energy_vs_workers": (lambda: draw(plot_energy_vs_workers, energy,
                                           setting={"trace": "longbench", "requests": 80000, "slots": 72}),
                              ["LongBench", "N = 80,000", "B = 72", "2 seeds"]),
        "discount_reach": (lambda: plot_discount_reach(choose_runs()), ["G = 64", "B = 72", "2 seeds", "H = 100"]),
        "objective_study": (lambda: plot_objective_study(choose_runs(), confirm_table()),
                            ["Azure code", "G = 64", "2 seeds"]),
        "online_load": (lambda: plot_online_load(online_table()), ["BurstGPT", "G = 16", "N = 20,000", "B = 72",
                                                                   "2 seeds"]),
        "online_routers": (lambda: plot_online_routers(routers_table()), ["BurstGPT", "G = 16", "N = 20,000",
                                                                         "B = 72", "2 seeds"]),
        "online_replay": (lambda: plot_online_replay(online_table()), ["Azure conversation", "G = 8", "N = 4,000"]),
        "predictor_noise": (lambda: plot_predictor_noise(predictors_table()), ["LongBench", "G = 256", "N = 20,000",
                                                                               "2 seeds"]),
        "starvation": (lambda: plot_starvation(starvation_table()), long_setting + ["2 seeds", "H = 40"]),
        "generality": (lambda: plot_generality(generality_table()), ["B = 72", "2 seeds"]),
        "prefix_tradeoff": (lambda: draw(plot_prefix_tradeoff, prefix_table(), settings=PREFIX_SETTINGS),
                            ["Mooncake", "G = 8", "2 seeds"]),
        "step_regime": (lambda: plot_step_regime(step_regime_table()), ["BurstGPT", "G = 16", "N = 5,000", "B = 72",
                                                                        "2 seeds"]),
        "summary_bars": (lambda: plot_summary_bars(experiment_summary(["fcfs", "jsq_tokens", "bfio_h40",
                                                                       "bfio_h40_literal"]), "avg_imbalance"),
                         long_setting + ["2 seeds"]),
        "theory/thm1_iir": (lambda: _theory(monkeypatch, tf.thm1_iir, theory_cells("dist", ["uniform", "two_point"]),
                                            theory_fits("dist")), ["B = 8-128", "G = 4-64"]),
        "theory/thm2_iir": (lambda: _theory(monkeypatch, tf.slot_iir, theory_cells("dist", ["uniform", "two_point",
                                                                                            "longbench"]),
                                            theory_fits("dist"), "dist", "Theorem 2"), ["p = 0.1", "B = 8-128"]),
        "theory/thm3_iir": (lambda: _theory(monkeypatch, tf.slot_iir, theory_cells("drift", drifts),
                                            theory_fits("drift"), "drift", "Theorem 3"),
                            ["p = 0.1", "B = 8-128", "G = 4-64"]),
        "theory/thm2_snapshot": (lambda: _theory(monkeypatch, tf.thm2_snapshot, theory_cells("dist", ["uniform"])),
                                 ["p = 0.1"]),
        "theory/thm3_gap": (lambda: _theory(monkeypatch, tf.gap_figure, theory_cells("drift", drifts), "drift",
                                            "Theorem 3: BF-IO long-run average gap"), ["p = 0.1", "B = 8-128"]),
        "theory/energy_saving_vs_G": (lambda: _theory(monkeypatch, tf.energy_vs_G, esav, corollary,
                                                      {"distribution": "uniform", "B": 32, "p": 0.1}),
                                      ["B = 32", "p = 0.1"]),
    }


FIGURES = ["distributions", "decode_geometric", "load_trajectories", "power_timeseries", "horizon_sweep",
           "worker_sweep", "energy_vs_workers", "discount_reach", "objective_study", "online_load", "online_routers",
           "online_replay", "predictor_noise", "starvation", "generality", "prefix_tradeoff", "step_regime",
           "summary_bars", "theory/thm1_iir", "theory/thm2_iir", "theory/thm3_iir", "theory/thm2_snapshot",
           "theory/thm3_gap", "theory/energy_saving_vs_G"]


@pytest.mark.parametrize("name", FIGURES)
def test_figure_is_readable(name, monkeypatch):
    make, setting = _figures(monkeypatch)[name]
    fig = make()
    try:
        fails = readable(fig, setting)
    finally:
        plt.close(fig)
    assert not fails, f"{name}: " + "; ".join(fails[:12])


# --------------------------------------------------------------------------- the checks can fail

def test_the_checks_find_what_a_reader_cannot_read():
    """Each check fails on a figure made to break it: 9 series, a raw key, no
    title, a t-interval through 0 on a throughput axis."""
    fig, ax = plt.subplots()
    for k in range(9):
        ax.plot([0, 1], [k, k + 1], label=f"series {k}")
    ax.errorbar([0.5], [3.0], yerr=[5.0], label="bfio_h40_instant")
    ax.fill_between([0, 1], [-1, -1], [1, 1], color="0.8")
    ax.set_ylabel("throughput (tokens/s)")
    ax.legend()
    fails = readable(fig, ["BurstGPT"])
    assert any("11 series" in f for f in fails), fails  # 9 lines, the error bar, the band
    assert any("no title" in f for f in fails) and any("BurstGPT" in f for f in fails), fails
    assert any("raw key" in f and "bfio_h40_instant" in f for f in fails), fails
    assert any("error bar down to -2" in f for f in fails) and any("band down to -1" in f for f in fails), fails
    plt.close(fig)
    fig, ax = plt.subplots()  # a signed quantity may go below 0; a PR number may not be shown
    ax.errorbar([0.5], [3.0], yerr=[5.0], label="vLLM DP (#49204)")
    ax.set_ylabel("throughput gain (%)")
    ax.set_title("BurstGPT")
    ax.legend()
    fails = readable(fig, ["BurstGPT"])
    assert fails == ["raw key in legend: 'vLLM DP (#49204)'"], fails
    plt.close(fig)


# --------------------------------------------------------------------------- the README

def undescribed_study_figures(studies, names: set[str]) -> list[str]:
    """The study figures with neither a row in figures/README.md (``names``) nor a
    caption of their own (``Figure.caption``, the report's; the README's row
    ``<study figure>`` stands for those), so a new study's figure is described once."""
    return [f.name for s in studies for f in s.figures if f.name not in names and not f.caption.strip()]


def test_a_study_figure_needs_a_row_or_its_caption():
    from bfio.studies.registry import Figure, Study

    def study(caption):
        return Study(name="s", description="s", generic=False, figures=(Figure("mine", "m:f", None, caption),))

    assert undescribed_study_figures([study("")], {"online_load"}) == ["mine"]
    assert undescribed_study_figures([study("")], {"mine"}) == []
    assert undescribed_study_figures([study("Mine, by G.")], set()) == []


def test_readme_lists_every_figure_and_defines_every_series_name():
    """``figures/README.md`` has a row for every figure the pipeline draws (the
    paper's, every registered study's, the theory's) and, verbatim, the
    registry's glossary of series names (a label is written once: in
    :data:`bfio.figures.style.SERIES`)."""
    from bfio.figures.style import glossary_markdown
    from bfio.studies.registry import studies

    readme = (REPO / "figures" / "README.md").read_text()
    rows = {m.group(1) for m in re.finditer(r"^\| `([^`]+)`", readme, re.M)}
    names = set(re.findall(r"`([A-Za-z0-9_/<>]+)`", "\n".join(ln for ln in readme.splitlines() if ln.startswith("| `"))))
    paper = ["distributions_<trace>", "decode_geometric", "load_trajectories_table1", "power_timeseries_table1",
             "horizon_sweep", "worker_sweep", "energy_vs_workers"]
    theory = ["theory/thm1_iir", "theory/thm2_iir", "theory/thm3_iir", "theory/thm2_snapshot", "theory/thm2_gap",
              "theory/thm3_gap", "theory/energy_saving_vs_G"]
    missing = [f for f in paper + theory if f not in names] + undescribed_study_figures(studies().values(), names)
    assert rows and not missing, f"figures/README.md lists no row for {missing}"
    assert glossary_markdown() in readme, "figures/README.md: the series glossary differs from the registry's " \
                                          "(paste bfio.figures.style.glossary_markdown())"


def test_online_routers_draws_bfio_with_and_without_the_oracle_as_two_series():
    """Issue 44's equal information: two instant BF-IO rows that differ only in
    the predictor their variant names are two series (not one line through two
    points at k = 0), the oracle-free one labelled with its predictor and hollow."""
    from bfio.figures.online_routers import plot_online_routers

    t = routers_table()
    extra = t[t["row"] == "bfio_h40_instant"].copy()
    assert len(extra), "the table has an instant BF-IO row"
    extra["row"] = extra["label"] = "bfio_h40_instant_ps"
    t = pd.concat([t, extra], ignore_index=True)
    fig = plot_online_routers(t, predictors={"bfio_h40_instant_ps": "prompt_survival"})
    labels = [x.get_text() for x in fig.legends[0].get_texts()]
    bfio = [lab for lab in labels if lab.startswith("BF-IO (H=40), instant")]
    assert len(bfio) == 2 and any("survival" in lab for lab in bfio), labels
    mixed = plot_online_routers(t)  # without the mapping the two rows are one router: one legend entry
    assert sum(x.get_text().startswith("BF-IO (H=40), instant") for x in mixed.legends[0].get_texts()) == 1


def test_online_routers_draws_streamed_completions_in_a_panel_row_of_their_own():
    """Issue 44: rows with ``completions: streamed`` get a panel row of their own
    (the main panels keep their series, within MAX_SERIES), each dotted beside its
    router's line on reports alone, said in the legend."""
    from bfio.figures.checks import crowded_panels
    from bfio.figures.online_routers import plot_online_routers

    t = routers_table()
    t["completions"] = "reported"
    lagged = t[(t["dispatch"] == "instant") & (t["report_interval"] > 0)]
    assert len(lagged), "the table has a lagged row"
    extra = lagged[lagged["policy"] == lagged["policy"].iloc[0]].copy()
    extra["row"] = extra["label"] = extra["row"] + "_streamed"
    extra["completions"] = "streamed"
    plain = plot_online_routers(t)
    fig = plot_online_routers(pd.concat([t, extra], ignore_index=True))
    per_row = len(plain.axes) // 2
    assert len(fig.axes) == 3 * per_row  # one more panel row
    texts = [x.get_text() for x in fig.legends[0].get_texts()]
    assert sum(x.endswith("completions streamed") for x in texts) == 1, texts
    top = fig.axes[0].get_legend_handles_labels()[1]
    assert not any(x.endswith("completions streamed") for x in top)  # not in the main panels
    handles, labels = fig.axes[2 * per_row].get_legend_handles_labels()
    handle = handles[next(i for i, x in enumerate(labels) if x.endswith("completions streamed"))]
    line = handle.lines[0] if hasattr(handle, "lines") else handle  # errorbar container: its data line
    assert line.get_linestyle() == ":"
    assert crowded_panels(fig) == []


def test_the_theory_figure_job_draws_every_theory_figure(tmp_path):
    """Issue 42: one job draws every theory figure (bfio.theory.figures.draw_all), each
    of FIGURES as PDF and PNG, the files the pipeline's rule theory_figures lists."""
    import bfio.theory.figures as tf

    esav, corollary = energy_saving_frames()
    drifts = ["zero", "one", "periodic"]
    cells = {"thm1": theory_cells("dist", ["uniform", "two_point"]), "thm2": theory_cells("dist", ["uniform"]),
             "thm3": theory_cells("drift", drifts)}
    fits = {"thm1": theory_fits("dist"), "thm2": theory_fits("dist"), "thm3": theory_fits("drift")}
    written = tf.draw_all(cells, fits, esav, corollary, {"distribution": "uniform", "B": 32, "p": 0.1}, tmp_path)
    expected = sorted(str(tmp_path / f"{name}.{ext}") for name in tf.FIGURES for ext in ("pdf", "png"))
    assert sorted(written) == expected and sorted(map(str, tmp_path.iterdir())) == expected
