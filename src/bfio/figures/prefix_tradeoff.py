"""Prefix-cache study: cache hit rate against p99 TTFT, and against throughput,
one point per router (mean over seeds, 95% intervals as error bars), one pair
of panels (TTFT above throughput) per setting, at most ``COLUMNS`` settings a
row (``results/tables/prefix_cache.csv``)."""

from __future__ import annotations

import pandas as pd

from bfio.figures.style import figure, series_style
from bfio.studies.prefix_summary import router_label

PANELS = [("ttft_s_p99", "p99 TTFT (s)"), ("throughput_run", "throughput (tokens/s)")]
#: settings per row of panel pairs
COLUMNS = 5


def plot_prefix_tradeoff(summary: pd.DataFrame):
    settings = list(dict.fromkeys(summary["setting"]))
    routers = list(dict.fromkeys(summary["row"]))
    cols = max(1, min(COLUMNS, len(settings)))
    bands = max(1, -(-len(settings) // cols))
    fig, axes = figure(len(PANELS) * bands, cols, width=3.4 * cols + 0.6, height=2.7 * len(PANELS) * bands + 0.8)
    for ax in axes.flat:
        ax.set_visible(False)
    for j, setting in enumerate(settings):
        s = summary[summary["setting"] == setting]
        band, col = divmod(j, cols)
        for i, (m, label) in enumerate(PANELS):
            ax = axes[len(PANELS) * band + i, col]
            ax.set_visible(True)
            for k, router in enumerate(routers):
                r = s[s["row"] == router]
                if r.empty:
                    continue
                r = r.iloc[0]
                st = series_style(k, len(routers))
                bold = router == "bfio"
                ax.errorbar(100 * r["cache_hit_rate_mean"], r[f"{m}_mean"],
                            xerr=[[100 * (r["cache_hit_rate_mean"] - r["cache_hit_rate_ci_lo"])],
                                  [100 * (r["cache_hit_rate_ci_hi"] - r["cache_hit_rate_mean"])]],
                            yerr=[[r[f"{m}_mean"] - r[f"{m}_ci_lo"]], [r[f"{m}_ci_hi"] - r[f"{m}_mean"]]],
                            linestyle="none", markersize=8 if bold else 5, markeredgecolor="black" if bold else None,
                            label=router_label(router) if (i, j) == (0, 0) else None, **st)
            if i == len(PANELS) - 1:
                ax.set_xlabel("cache hit rate (% of prompt tokens)")
            ax.set_ylabel(label)
            if i == 0:
                ax.set_title(setting)
    fig.legend(loc="lower center", ncol=min(4, len(routers)), bbox_to_anchor=(0.5, 0.0))
    fig.tight_layout(rect=(0, 0.8 / fig.get_figheight(), 1, 1))
    return fig


__all__ = ["plot_prefix_tradeoff"]
