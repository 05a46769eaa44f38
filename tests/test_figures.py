"""Figure functions on synthetic data: they draw, label axes with units and
save PDF + PNG; the geometric fit recovers its parameter."""

from __future__ import annotations

import matplotlib

matplotlib.use("Agg")

import numpy as np
import pandas as pd
import pytest

from bfio.figures import save
from bfio.figures.decode_geometric import caption_text, fit_geometric, fit_table, plot_decode_geometric
from bfio.figures.distributions import plot_distributions
from bfio.figures.energy_vs_workers import plot_energy_vs_workers
from bfio.figures.horizon_sweep import plot_horizon_sweep
from bfio.figures.load_trajectories import plot_load_trajectories, sample_workers
from bfio.figures.power_timeseries import plot_power_timeseries
from bfio.figures.style import non_gray_artists, scale_for, text_overlaps
from bfio.figures.worker_sweep import plot_worker_sweep

RNG = np.random.default_rng(0)


def labelled(fig):
    """Every visible axes has x and y labels, and every label states a unit in parentheses."""
    for ax in fig.axes:
        if not ax.get_visible() or ax.get_label() == "<colorbar>":
            continue
        twin = ax.get_xlabel() == "" and any(o is not ax and o.bbox.bounds == ax.bbox.bounds for o in fig.axes)
        for lab in ((ax.get_ylabel(),) if twin else (ax.get_xlabel(), ax.get_ylabel())):
            assert lab and "(" in lab and ")" in lab, f"axis label without unit: {lab!r}"
    return True


def grayscale(fig):
    """The pipeline's rule (docs/pipeline.md): every figure is grayscale."""
    bad = non_gray_artists(fig)
    assert not bad, f"coloured elements: {bad[:5]}"
    return True


def legend_clear_of_axes(fig):
    """No legend inside a panel, and the figure's legends overlap no panel."""
    fig.canvas.draw()
    renderer = fig.canvas.get_renderer()
    for ax in fig.axes:
        assert ax.get_legend() is None, f"legend inside panel {ax.get_title()!r}"
    for leg in fig.legends:
        box = leg.get_window_extent(renderer)
        for ax in fig.axes:
            if ax.get_visible():
                assert not box.overlaps(ax.get_window_extent(renderer)), f"legend overlaps {ax.get_title()!r}"
    return True


def check_saves(fig, tmp_path, name="f"):
    overlaps = text_overlaps(fig)  # issue 31 item 4: every figure a reader can read
    assert not overlaps, f"overlapping text: {overlaps[:6]}"
    pdf, png = tmp_path / f"{name}.pdf", tmp_path / f"{name}.png"
    save(fig, pdf, png)
    assert pdf.read_bytes()[:5] == b"%PDF-" and png.read_bytes()[:4] == b"\x89PNG"


def summary_frame(rows, workers=(256,), seeds=3):
    recs = []
    for row in rows:
        for g in workers:
            base = {"avg_imbalance": 3e8 * (1 + g / 100), "throughput": 5e3 + g, "tpot": 2.0, "energy_j": 2.5e7}
            if row.startswith("bfio_h"):
                base = {k: v * (0.5 if k != "throughput" else 1.5) for k, v in base.items()}
            rec = {"row": row, "workers": g, "n_seeds": seeds, "ref_seed": 42,
                   "horizon": int(row[6:]) if row.startswith("bfio_h") else None}
            for m, v in base.items():
                rec.update({m: v, f"{m}_mean": v * 1.01, f"{m}_ci_lo": v * 0.95, f"{m}_ci_hi": v * 1.07})
            recs.append(rec)
    return pd.DataFrame(recs)


def test_fit_geometric_recovers_p():
    o = RNG.geometric(0.03, size=50_000)
    fit = fit_geometric(o)
    assert fit["p"] == pytest.approx(0.03, rel=0.03)
    assert fit["ks"] < 0.01 and fit["tv"] < 0.05
    point = fit_geometric(np.full(1000, 20))
    assert point["p"] == pytest.approx(0.05) and point["ks"] > 0.5
    with pytest.raises(ValueError):
        fit_geometric(np.array([0, 1]))


def test_decode_geometric_figure_and_caption(tmp_path):
    decodes = {"a": RNG.geometric(0.02, 3000), "b": RNG.integers(1, 500, 3000), "c": RNG.geometric(0.1, 500)}
    fits = fit_table(decodes)
    assert list(fits["trace"]) == ["a", "b", "c"]
    fig = plot_decode_geometric(decodes, fits)
    assert labelled(fig) and grayscale(fig)
    check_saves(fig, tmp_path)
    cap = caption_text("Template text.", fits)
    assert cap.startswith("Template text.") and "list-table" in cap and "KS distance" in cap
    assert f"{fits['p'].iloc[0]:.4g}" in cap


def test_distributions(tmp_path):
    frame = pd.DataFrame({"prefill_tokens": RNG.integers(1, 10**6, 2000), "decode_tokens": RNG.integers(1, 400, 2000)})
    fig = plot_distributions(frame, "synthetic")
    assert labelled(fig) and len(fig.axes) == 2 and grayscale(fig)
    check_saves(fig, tmp_path)


def test_load_trajectories(tmp_path):
    steps, G = 200, 64
    t = np.cumsum(np.full(steps, 0.5))
    panels = [(name, RNG.integers(1e6, 3e7, size=(steps, G)), t) for name in ("FCFS", "JSQ", "BF-IO (H=0)",
                                                                               "BF-IO (H=40)")]
    fig = plot_load_trajectories(panels, sample=16, seed=0, title="synthetic")
    assert labelled(fig) and grayscale(fig) and legend_clear_of_axes(fig)
    assert len(fig.legends) == 1 and "min-max" in fig.legends[0].get_texts()[0].get_text()
    assert len(fig.axes[0].lines) == 16
    assert "M tokens" in fig.axes[0].get_ylabel()
    check_saves(fig, tmp_path)
    assert np.array_equal(sample_workers(64, 16, 0), sample_workers(64, 16, 0))
    assert len(set(sample_workers(64, 16, 0))) == 16 and len(sample_workers(8, 16, 0)) == 8


def test_power_timeseries(tmp_path):
    t = np.linspace(0, 100, 300)
    curves = [("FCFS", t, 300 + 30 * np.sin(t), 29.1e6, 60.0), ("BF-IO (H=40)", t * 0.7, np.full(300, 398.0), 20.9e6,
                                                                  40.0)]
    fig = plot_power_timeseries(curves, title="synthetic")
    assert labelled(fig) and grayscale(fig)
    labels = [line.get_label() for line in fig.axes[0].get_lines()]
    assert any("29.1 MJ" in lab for lab in labels) and any("20.9 MJ" in lab for lab in labels)
    check_saves(fig, tmp_path)


def test_horizon_sweep(tmp_path):
    summary = summary_frame(["fcfs", "jsq_tokens"] + [f"bfio_h{h}" for h in range(0, 101, 20)])
    fig = plot_horizon_sweep(summary)
    assert labelled(fig) and len(fig.axes) == 4 and grayscale(fig)
    assert all("horizon H" in ax.get_xlabel() for ax in fig.axes)
    check_saves(fig, tmp_path)
    # no BF-IO rows: still draws
    check_saves(plot_horizon_sweep(summary_frame(["fcfs"])), tmp_path, "empty")


def test_horizon_sweep_marks_the_effective_window_and_logs_a_wide_panel(tmp_path):
    """Issue 31 items 2 and 4: H_eff drawn where H goes beyond it; baselines 100x above
    BF-IO put the imbalance panel on a log axis; the figure has a title."""
    summary = summary_frame(["fcfs"] + [f"bfio_h{h}" for h in (0, 10, 20, 40)])
    summary["effective_horizon"] = summary["horizon"].clip(upper=13)
    bf = summary["row"].str.startswith("bfio")
    for c in ("avg_imbalance", "avg_imbalance_mean", "avg_imbalance_ci_lo", "avg_imbalance_ci_hi"):
        summary.loc[bf, c] = summary.loc[bf, c] / 200
    fig = plot_horizon_sweep(summary)
    marks = [ln for ln in fig.axes[0].get_lines() if "H_eff = 13" in ln.get_label()]
    assert len(marks) == 1 and set(marks[0].get_xdata()) == {13}
    assert fig.axes[0].get_yscale() == "log" and fig.axes[1].get_yscale() == "linear"
    assert fig._suptitle is not None and fig._suptitle.get_text()
    summary["effective_horizon"] = summary["horizon"]  # no cut-off: no mark
    assert not any("H_eff" in ln.get_label() for ln in plot_horizon_sweep(summary).axes[0].get_lines())
    check_saves(fig, tmp_path)


def test_worker_sweep_and_energy(tmp_path):
    summary = summary_frame(["fcfs", "bfio_h40"], workers=(16, 32, 48))
    fig = plot_worker_sweep(summary, rows=["fcfs", "bfio_h40"])
    assert labelled(fig) and len(fig.axes) == 2 and grayscale(fig)
    check_saves(fig, tmp_path)
    energy = pd.DataFrame({"workers": [16, 32, 48], "baseline": "fcfs", "target": "bfio_h40",
                           "energy_j_baseline_mean": [3.3e7, 3.2e7, 3.1e7], "energy_j_target_mean": [2.9e7, 2.5e7, 2.2e7],
                           "reduction_pct_mean": [12.0, 20.0, 30.0], "reduction_pct_ci_lo": [10.0, 18, 28],
                           "reduction_pct_ci_hi": [14.0, 22, 32], "n_seeds": 5})
    fig = plot_energy_vs_workers(energy)
    assert labelled(fig) and len(fig.axes) == 2 and grayscale(fig)  # second axis for the reduction
    assert "%" in fig.axes[1].get_ylabel() and "MJ" in fig.axes[0].get_ylabel()
    check_saves(fig, tmp_path, "energy")


def test_grayscale_styles_differ_without_colour():
    from bfio.figures.style import LINE_STYLES
    keys = {(str(s["linestyle"]), s["marker"]) for s in LINE_STYLES}
    assert len(keys) == len(LINE_STYLES)
    for s in LINE_STYLES:
        assert 0.0 <= float(s["color"]) <= 1.0  # gray levels only


def test_scale_for():
    assert scale_for([3.2e7], "tokens") == (1e6, "M tokens")
    assert scale_for([2.9e7], "J") == (1e6, "MJ")
    assert scale_for([396e3], "J") == (1e3, "kJ")
    assert scale_for([12.0], "tokens")[0] == 1.0


# --------------------------------------------------------------------------- online_load (issue 13)

def online_summary(identical=(("bfio_h40_aging200", "central", "bfio_h40"), ("least_tokens", "instant", "jsq_tokens"))):
    """An online summary (as bfio.studies.online_summary.summarize_online writes it) with
    latencies between 5 and 9 s (within one decade) and two series identical to another."""
    rng = np.random.default_rng(3)
    rows = []
    keys = [("fcfs", "central"), ("jsq_tokens", "central"), ("bfio_h40", "central"), ("vllm_dp", "instant")]
    for setting in ("burstgpt_g16", "longbench_g64"):
        for load in (0.5, 0.8, 0.95, 1.1):
            recs = {}
            for row, dispatch in keys:
                e2e, thr = rng.uniform(5, 9), rng.uniform(2e4, 6e4)
                recs[row] = {"e2e_s_p99": e2e, "throughput_run": thr}
                rows.append(_online_rec(setting, load, row, dispatch, e2e, thr))
            for row, dispatch, same_as in identical:
                rows.append(_online_rec(setting, load, row, dispatch, recs[same_as]["e2e_s_p99"],
                                        recs[same_as]["throughput_run"]))
    return pd.DataFrame(rows)


def _online_rec(setting, load, row, dispatch, e2e, thr):
    rec = {"setting": setting, "trace": setting.split("_")[0], "workers": int(setting.split("_g")[1]),
           "arrival_mode": "poisson", "load": load, "dispatch": dispatch, "row": row, "n_seeds": 5}
    for m, v in (("e2e_s_p99", e2e), ("throughput_run", thr)):
        rec.update({f"{m}_mean": v, f"{m}_ci_lo": v * 0.97, f"{m}_ci_hi": v * 1.03})
    return rec


def series_distinct(fig):
    """Issue 31 items 3-4: the lines of a many-series figure differ in colour
    (colour-blind palette) and in marker, so each stays legible in grayscale too."""
    seen = {}
    for ax in fig.axes:
        for handle, label in zip(*ax.get_legend_handles_labels()):
            line = handle.lines[0] if hasattr(handle, "lines") else handle  # errorbar container: its data line
            if hasattr(line, "get_marker") and line.get_marker() not in (None, "None", ""):
                seen.setdefault(label, (str(line.get_color()), line.get_marker()))
    styles = list(seen.values())
    assert len(styles) >= 2, f"no series found in the legend: {seen}"
    assert len(set(c for c, _ in styles)) == len(styles), f"two series share a colour: {seen}"
    assert len(set(m for _, m in styles)) == len(styles), f"two series share a marker: {seen}"
    assert all(c not in ("0.0", "black", "k") for c, _ in styles) or len(styles) == 1
    return True


def test_online_load_marks_identical_series_colour_blind_safe_plain_ticks(tmp_path):
    from bfio.figures.online_load import coincident_groups, plot_online_load

    summary = online_summary()
    fig = plot_online_load(summary)
    assert labelled(fig) and series_distinct(fig)
    labels = [t.get_text() for t in fig.legends[0].get_texts()]
    # every series is visible: the two duplicates share their twin's entry, named "A = B"
    assert len(labels) == 4
    assert any("BF-IO (H=40) (central) = BF-IO (H=40, aging:200) (central)" == lab for lab in labels), labels
    assert any("JSQ (central) = least tokens (instant)" == lab for lab in labels), labels
    assert "identical" in fig._suptitle.get_text()
    # plain tick labels on the log axis, no 5x10^0
    fig.canvas.draw()
    ticks = [t.get_text() for ax in fig.axes if ax.get_yscale() == "log"
             for t in ax.get_yticklabels(minor=True) + ax.get_yticklabels()]
    assert any(t.strip() for t in ticks)
    assert not any("times" in t or "10^" in t or "mathdefault{10" in t or "e-" in t or "e+" in t for t in ticks), ticks
    assert {"5", "6", "7", "8", "9"} & set(ticks), ticks   # the 5-9 s panel labels its minor ticks plainly
    ylabels = [ax.get_ylabel() for ax in fig.axes]
    assert not any(") (" in y for y in ylabels), ylabels
    assert legend_clear_of_axes(fig)
    check_saves(fig, tmp_path, "online_load")
    # different results are never merged
    distinct = online_summary(identical=())
    keys = list(dict.fromkeys(zip(distinct["row"], distinct["dispatch"])))
    assert all(len(g) == 1 for g in coincident_groups(distinct, keys, ["e2e_s_p99", "throughput_run"]))


def test_same_figure_saves_byte_identical_files(tmp_path):
    """Figures carry no creation date, so the same data give the same bytes
    (reruns and ``python -m bfio.results_diff`` compare figures exactly)."""
    import time

    from bfio.figures.style import figure

    paths = []
    for k in range(2):
        fig, axes = figure()
        axes[0][0].plot([0, 1, 2], [3, 1, 2], label="x")
        paths.append((tmp_path / f"a{k}.pdf", tmp_path / f"a{k}.png"))
        save(fig, *paths[-1])
        time.sleep(1.1)  # a creation date would now differ by a second
    for a, b in zip(*paths):
        assert a.read_bytes() == b.read_bytes(), a.name


def _choose_grid(discounts=(1.0, 0.9, 0.7, 0.6, 0.5), traces=("a", "b"), seeds=(42, 1)):
    recs = []
    for t in traces:
        for s in seeds:
            for d in discounts:
                for H in (0, 40):
                    if H == 0 and d != 1.0:
                        continue
                    recs.append({"trace": t, "seed": s, "discount": d, "horizon": H, "new_requests": "predicted",
                                 "avg_imbalance": 1e6 if H == 0 else 1e6 * (0.4 + 0.5 * d),
                                 "throughput": 1e5 if H == 0 else 1e5 * (1 + 0.01 * d)})
    return pd.DataFrame(recs)


def test_discount_reach(tmp_path):
    """Issue 31 item 2: imbalance and throughput against the lookahead's reach, relative to H = 0."""
    from bfio.figures.discount_reach import plot_discount_reach, reach, reach_frame

    assert reach(1.0, 40) == 41 and reach(0.5, 100) == pytest.approx(2.0)
    frame = reach_frame(_choose_grid())
    assert set(frame["discount"]) == {1.0, 0.9, 0.7, 0.6, 0.5} and (frame["horizon"] == 40).all()
    one = frame[(frame["discount"] == 1.0) & (frame["trace"] == "a") & (frame["seed"] == 42)]
    assert one["imbalance_ratio"].iloc[0] == pytest.approx(0.9)
    assert one["throughput_gain_pct"].iloc[0] == pytest.approx(1.0)
    fig = plot_discount_reach(_choose_grid())
    assert labelled(fig) and len(fig.axes) == 2 and all(ax.get_xscale() == "log" for ax in fig.axes)
    labels = [t.get_text() for leg in fig.legends for t in leg.get_texts()]
    assert any("default discount" in lab for lab in labels) and any("95% CI" in lab for lab in labels)
    check_saves(fig, tmp_path)
    a, b = tmp_path / "a.png", tmp_path / "b.png"
    save(plot_discount_reach(_choose_grid()), a)
    save(plot_discount_reach(_choose_grid()), b)
    assert a.read_bytes() == b.read_bytes()  # the bootstrap interval is seeded
    check_saves(plot_discount_reach(_choose_grid().assign(new_requests="persist")), tmp_path, "empty")


def test_text_overlaps_finds_what_a_reader_cannot_read():
    """The check itself can fail: colliding tick labels, a label over another panel."""
    import matplotlib.pyplot as plt

    fig, ax = plt.subplots(figsize=(2, 2))
    ax.set_xticks(range(8), [f"a long tick label {i}" for i in range(8)])
    ax.set_xlabel("x (unit)")
    assert any("tick" in o for o in text_overlaps(fig))
    plt.close(fig)
    fig, axes = plt.subplots(1, 2, figsize=(4, 2))
    axes[1].set_ylabel("a y label pushed into the left panel (unit)", labelpad=60)
    assert any("plotting area of axes 0" in o for o in text_overlaps(fig))
    plt.close(fig)
    fig, ax = plt.subplots(figsize=(4, 3))
    ax.set_xlabel("x (unit)")
    ax.set_ylabel("y (unit)")
    assert text_overlaps(fig) == []
    plt.close(fig)
