"""Starvation study: p99 and max wait against throughput for every BF-IO
admission rule, FCFS as reference (``results/tables/starvation.csv``).

One column per (setting, BF-IO horizon H), the p99 wait above the max wait.
In a panel each admission family is one series in its registry colour and
marker (:data:`bfio.figures.style.SERIES`, family ``admission``): ``free`` and
``FIFO`` a point each, ``aging N`` and ``drain N`` a line through their N (the
steps a request waits before the rule acts, written beside each point); FCFS is
its registry's black square. So a panel shows at most five series, told apart by colour as well
as marker, whatever the number of rules. Every wait axis labels its ticks as
plain numbers of seconds (:func:`bfio.figures.style.plain_log_ticks`)."""

from __future__ import annotations

import pandas as pd

from bfio.figures.style import (figure, interval, interval_note, plain_log_ticks, router, scale_for, series,
                                setting_of)

PANELS = [("wait_s_p99", "p99 wait"), ("wait_s_max", "max wait")]


def _family(rule: str) -> tuple[str, int]:
    mode, _, n = str(rule).partition(":")
    return mode, int(n) if n else 0


def plot_starvation(summary: pd.DataFrame):
    settings = list(dict.fromkeys(summary["setting"]))
    columns = []  # (setting, H)
    for name in settings:
        s = summary[summary["setting"] == name]
        columns += [(name, int(h)) for h in sorted(s.loc[s["admission"] != "-", "horizon"].dropna().unique())]
    fig, axes = figure(len(PANELS), max(1, len(columns)), width=3.3 * max(1, len(columns)) + 0.4, height=6.6)
    kinds = []
    for j, (name, H) in enumerate(columns):
        s = summary[summary["setting"] == name]
        rules = s[(s["admission"] != "-") & (s["horizon"] == H)].copy()
        rules["family"], rules["N"] = zip(*rules["admission"].map(_family)) if len(rules) else ((), ())
        refs = s[s["admission"] == "-"]
        xf, xunit = scale_for(s["throughput_mean"], "tokens/s")
        for i, (m, label) in enumerate(PANELS):
            ax = axes[i, j]
            for fam in dict.fromkeys(rules["family"]):
                grp = rules[rules["family"] == fam].sort_values("N")
                x, xerr, kx = interval(grp, "throughput", xf)
                y, yerr, ky = interval(grp, m)
                kinds += [kx, ky]
                st = series("admission", fam).style()
                st["linestyle"] = st["linestyle"] if len(grp) > 1 else "none"
                ax.errorbar(x, y, xerr=xerr, yerr=yerr, capsize=1.5, markersize=5, linewidth=1.0, **st)
                if len(grp) > 1 or grp["N"].iloc[0] > 0:
                    for xi, yi, n in zip(x, y, grp["N"]):
                        ax.annotate(str(n), (xi, yi), xytext=(4, 2), textcoords="offset points", fontsize=6,
                                    color=st["color"])
            for r in refs.to_dict("records"):
                one = pd.DataFrame([r])
                x, xerr, _ = interval(one, "throughput", xf)
                y, yerr, _ = interval(one, m)
                st = router(r["row"]).style()
                st["linestyle"] = "none"
                ax.errorbar(x, y, xerr=xerr, yerr=yerr, markersize=7, capsize=1.5, **st)
            ax.set_yscale("log")
            ax.set_xlabel(f"throughput ({xunit})")
            ax.set_ylabel(f"{label} (s)")
            if i == 0:
                ax.set_title(f"{setting_of(s.drop(columns='n_seeds'), wrap=True)}\nBF-IO H = {H}", fontsize=8)
    # one tick format per axis (after every point is drawn: the view decides it)
    for ax in axes.flat:
        plain_log_ticks(ax.yaxis)
    seen = {}
    for ax in axes.flat:
        for h, lab in zip(*ax.get_legend_handles_labels()):
            seen.setdefault(lab, h)
    ncol = min(5, max(1, len(seen)))
    fig.legend(list(seen.values()), list(seen), loc="lower center", ncol=ncol, fontsize=7)
    n = int(summary["n_seeds"].max()) if len(summary) else 0
    fig.suptitle(f"Wait against throughput by BF-IO admission rule: mean over {n} seeds, {interval_note(kinds)}\n"
                 "aging N, drain N: the number beside each point is N (steps)", fontsize=9)
    rows = -(-len(seen) // ncol)
    fig.tight_layout(rect=(0, (0.1 + 0.16 * rows) / fig.get_figheight(), 1, 1))
    return fig


__all__ = ["plot_starvation", "PANELS"]
