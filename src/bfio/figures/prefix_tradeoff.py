"""Prefix-cache study: cache hit rate against p99 TTFT, and against throughput,
one point per router (mean over seeds, 95% intervals as error bars), one column
per setting (``results/tables/prefix_cache.csv``)."""

from __future__ import annotations

import pandas as pd

from bfio.figures.style import figure, series_style

PANELS = [("ttft_s_p99", "p99 TTFT (s)"), ("throughput_run", "throughput (tokens/s)")]


def plot_prefix_tradeoff(summary: pd.DataFrame):
    from bfio.studies.prefix_summary import router_label

    settings = list(dict.fromkeys(summary["setting"]))
    routers = list(dict.fromkeys(summary["row"]))
    fig, axes = figure(len(PANELS), max(1, len(settings)), width=2.9 * max(1, len(settings)) + 0.6, height=5.4)
    for j, setting in enumerate(settings):
        s = summary[summary["setting"] == setting]
        for i, (m, label) in enumerate(PANELS):
            ax = axes[i, j]
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
            ax.set_xlabel("cache hit rate (% of prompt tokens)")
            ax.set_ylabel(label)
            if i == 0:
                ax.set_title(setting)
    fig.legend(loc="lower center", ncol=min(4, len(routers)), bbox_to_anchor=(0.5, 0.0))
    fig.tight_layout(rect=(0, 0.09, 1, 1))
    return fig


__all__ = ["plot_prefix_tradeoff"]
