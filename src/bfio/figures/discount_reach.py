"""How far ahead should BF-IO look? Imbalance and throughput against the
lookahead's reach ``1 / (1 - delta)`` (issue 31, item 2; docs/bfio.md).

The discount ``delta`` weighs offset ``h`` of the window by ``delta^h``
(:func:`bfio.lookahead.discount.offset_weights`): its *reach*, the total weight
``sum_h delta^h``, is about ``1 / (1 - delta)`` steps, and the fast solver
cuts the window where ``delta^h`` falls below
:data:`~bfio.lookahead.discount.NEGLIGIBLE_WEIGHT`
(:func:`~bfio.lookahead.discount.effective_horizon`). The figure reads the
objective study's grid (``results/studies/objective/choose.csv``: each trace,
seed, discount and ``H``), keeps its longest window and one new-request model,
and shows each run relative to ``H = 0`` on the same trace and seed (no
lookahead: the same for every discount), so traces of different sizes share
one axis. Seaborn draws the mean over traces and seeds with its 95% interval
(bootstrap, seeded: the same data give the same figure), and each trace as a
thin line in its colour and marker of the registry
(:data:`bfio.figures.style.SERIES`, family ``trace``); with more traces than a
panel can name (:data:`~bfio.figures.style.MAX_SERIES`) the traces are thin
grey lines behind the mean. The default discount's effective window is worded
by :func:`bfio.figures.style.heff_text`, as in every figure.
"""

from __future__ import annotations

import pandas as pd

from bfio.figures.style import (MAX_SERIES, OTHERS, SERIES, figure, heff_text, reach_of, series, setting_title,
                                trace_label)
from bfio.lookahead.discount import DEFAULT_DISCOUNT, effective_horizon, offset_weights

#: Panels: column, axis label.
PANELS = (("imbalance_ratio", "AvgImbalance\n(relative to H = 0)"),
          ("throughput_gain_pct", "throughput change\nvs H = 0 (%)"))


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
    fig, axes = figure(1, 2, width=7.2, height=3.6)
    traces = sorted(data["trace"].unique()) if len(data) else []
    named = len(traces) + 2 <= MAX_SERIES  # the traces, the mean and the default discount
    H = int(data["horizon"].iloc[0]) if len(data) else 0
    default = SERIES["reference"]["h_eff"]
    for ax, (col, label) in zip(axes.flat, PANELS):
        if data.empty:
            ax.text(0.5, 0.5, f"no runs with new_requests = {new_requests}", transform=ax.transAxes, ha="center")
            continue
        for k, tr in enumerate(traces):
            g = data[data["trace"] == tr].groupby("reach")[col].mean()
            if named:
                st = series("trace", tr).style()
                ax.plot(g.index, g.to_numpy(), linewidth=0.8, alpha=0.75, markersize=4,
                        **{**st, "linestyle": "-"})
            else:
                ax.plot(g.index, g.to_numpy(), color=OTHERS, linewidth=0.8,
                        label=f"each of the {len(traces)} traces (mean over seeds)" if k == 0 else "_trace")
        sns.lineplot(data=data, x="reach", y=col, color="black", errorbar=("ci", 95), seed=0, n_boot=1000,
                     linewidth=2.0, marker="o", ax=ax, label="mean over traces and seeds, 95% CI (bootstrap)")
        d0 = reach(DEFAULT_DISCOUNT, H)
        ax.axvline(d0, color=default.style()["color"], linestyle=default.linestyle, linewidth=1.0,
                   label=f"default discount {DEFAULT_DISCOUNT:g}: {heff_text(reach_of(DEFAULT_DISCOUNT), H)}")
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
    ncol = 3
    fig.legend(list(seen.values()), list(seen), loc="lower center", ncol=ncol, fontsize=7, frameon=False)
    G = sorted(data["workers"].unique()) if "workers" in data and len(data) else None
    B = data["slots"].iloc[0] if "slots" in data and len(data) else None
    n = int(data["seed"].nunique()) if len(data) else 0
    where = setting_title(workers=G, slots=B, seeds=n, extra=f"traces: {', '.join(map(trace_label, traces))}")
    fig.suptitle(f"How far ahead should BF-IO look? H = {H}, new requests {new_requests}\n{where}\n"
                 f"reach = sum of delta^h over the window, about 1 / (1 - delta); delta = 1: {H + 1}", fontsize=8)
    rows = -(-len(seen) // ncol)
    fig.tight_layout(rect=(0, (0.1 + 0.15 * rows) / fig.get_figheight(), 1, 1))
    return fig


__all__ = ["plot_discount_reach", "reach_frame", "reach"]
