"""How far ahead should BF-IO look? Imbalance and throughput against the
lookahead's reach ``1 / (1 - delta)`` (issue 31, item 2; docs/bfio.md).

The discount ``delta`` weighs offset ``h`` of the window by ``delta^h``
(:func:`bfio.solvers.objective.offset_weights`): its *reach*, the total weight
``sum_h delta^h``, is about ``1 / (1 - delta)`` steps, and the fast solver
cuts the window where ``delta^h`` falls below
:data:`~bfio.solvers.objective.NEGLIGIBLE_WEIGHT`
(:func:`~bfio.solvers.objective.effective_horizon`). The figure reads the
objective study's grid (``results/studies/objective/choose.csv``: each trace,
seed, discount and ``H``), keeps its longest window and one new-request model,
and shows each run relative to ``H = 0`` on the same trace and seed (no
lookahead: the same for every discount), so traces of different sizes share
one axis. Seaborn draws the mean over traces and seeds with its 95% interval
(bootstrap, seeded: the same data give the same figure), and each trace as a
thin line with its own colour and marker (colour-blind palette).
"""

from __future__ import annotations

import pandas as pd

from bfio.figures.style import figure
from bfio.solvers.objective import DEFAULT_DISCOUNT, effective_horizon, offset_weights

#: Panels: column, axis label.
PANELS = (("imbalance_ratio", "AvgImbalance\n(relative to H = 0)"),
          ("throughput_gain_pct", "throughput change\nvs H = 0 (%)"))
MARKERS = ("o", "s", "^", "D", "v", "P", "X", "*")


def reach(discount: float, horizon: int) -> float:
    """``sum_{h=0..H} delta^h``: the window's total weight in steps (``H + 1`` for
    ``delta = 1``), from the objective's own weights (:func:`offset_weights`)."""
    return float(offset_weights(horizon, discount).sum())


def reach_frame(choose: pd.DataFrame, new_requests: str = "predicted") -> pd.DataFrame:
    """The rows the figure draws: runs at the grid's longest ``H`` with
    ``new_requests``, each against the ``H = 0`` run of its trace and seed,
    with ``reach`` and ``effective_horizon`` per discount."""
    c = choose[choose["new_requests"] == new_requests]
    if c.empty:
        return pd.DataFrame(columns=["trace", "seed", "discount", "reach", "effective_horizon",
                                     "imbalance_ratio", "throughput_gain_pct"])
    H = int(c["horizon"].max())
    base = (c[c["horizon"] == 0].groupby(["trace", "seed"])[["avg_imbalance", "throughput"]].first()
            .rename(columns=lambda k: f"{k}_h0"))
    long = c[c["horizon"] == H].join(base, on=["trace", "seed"], how="inner").copy()
    long["reach"] = [reach(d, H) for d in long["discount"]]
    long["effective_horizon"] = [effective_horizon(H, d) for d in long["discount"]]
    long["imbalance_ratio"] = long["avg_imbalance"] / long["avg_imbalance_h0"]
    long["throughput_gain_pct"] = 100 * (long["throughput"] / long["throughput_h0"] - 1)
    long["horizon"] = H
    return long.sort_values(["trace", "seed", "reach"]).reset_index(drop=True)


def plot_discount_reach(choose: pd.DataFrame, new_requests: str = "predicted"):
    """Two panels against the reach (log axis): imbalance relative to ``H = 0``
    and throughput change; the library's default discount marked."""
    import seaborn as sns

    data = reach_frame(choose, new_requests)
    fig, axes = figure(1, 2, width=7.2, height=3.4)
    traces = sorted(data["trace"].unique()) if len(data) else []
    palette = dict(zip(traces, sns.color_palette("colorblind", max(1, len(traces)))))
    H = int(data["horizon"].iloc[0]) if len(data) else 0
    for ax, (col, label) in zip(axes.flat, PANELS):
        if data.empty:
            ax.text(0.5, 0.5, f"no runs with new_requests = {new_requests}", transform=ax.transAxes, ha="center")
            continue
        sns.lineplot(data=data, x="reach", y=col, hue="trace", style="trace", markers=list(MARKERS[:len(traces)]),
                     dashes=False, palette=palette, errorbar=None, linewidth=0.8, alpha=0.6, markersize=4,
                     ax=ax, legend=ax is axes.flat[0])
        sns.lineplot(data=data, x="reach", y=col, color="black", errorbar=("ci", 95), seed=0, n_boot=1000,
                     linewidth=2.0, marker="o", ax=ax, label="mean, 95% CI (traces x seeds)")
        d0 = reach(DEFAULT_DISCOUNT, H)
        ax.axvline(d0, color="0.3", linestyle="--", linewidth=1.0,
                   label=f"default discount {DEFAULT_DISCOUNT:g} (H_eff = {effective_horizon(H, DEFAULT_DISCOUNT)})")
        ax.axhline(1.0 if col == "imbalance_ratio" else 0.0, color="0.6", linewidth=0.8)
        ax.set_xscale("log")
        ticks = []
        for t in sorted(data["reach"].unique()):  # label a tick only if clear of the last one
            if not ticks or t / ticks[-1] > 1.5:
                ticks.append(t)
        ax.set_xticks(ticks)
        ax.set_xticklabels([f"{t:.3g}" for t in ticks])
        ax.minorticks_off()
        ax.set_xlabel("reach of the lookahead (steps)")
        ax.set_ylabel(label)
        if ax.get_legend() is not None:
            ax.get_legend().remove()
    handles, labels = axes.flat[0].get_legend_handles_labels()
    seen = {}
    for h, lab in zip(handles, labels):
        if lab not in seen and lab != "trace":
            seen[lab] = h
    fig.legend(list(seen.values()), list(seen), loc="upper center", ncol=4, fontsize=7, frameon=False,
               bbox_to_anchor=(0.5, 0.99))
    fig.suptitle(f"How far ahead should BF-IO look? (H = {H}, new requests {new_requests}; "
                 f"reach = sum of delta^h over the window, about 1 / (1 - delta); delta = 1: {H + 1})",
                 fontsize=8, y=1.07)
    fig.tight_layout(rect=(0, 0, 1, 0.88))
    return fig


__all__ = ["plot_discount_reach", "reach_frame", "reach"]
