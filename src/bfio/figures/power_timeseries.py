"""Mean GPU power over time, FCFS vs BF-IO (paper Figs. ``power_timeseries``
and ``power_light``), with each policy's total energy in the legend."""

from __future__ import annotations

import numpy as np

from bfio.figures.style import figure, row_or_label, scale_for, setting_title


def plot_power_timeseries(curves, title: str = "", smooth: int = 1, setting: dict | None = None):
    """``curves``: list of ``(row, clock_s, power_w, energy_j, window_end_s)``
    (``row`` a row key, coloured from the registry, or a label);
    ``power_w`` is the mean over workers of ``P(u_g)`` per step and
    ``energy_j`` the run's energy (paper convention) over the measurement
    window, which ends at ``window_end_s`` (the last admission; a labelled
    vertical line, ``None``: no line). ``smooth`` > 1 applies a
    centred moving average of that many steps (for long runs)."""
    fig, axes = figure(1, 1, width=6.5, height=3.6)
    ax = axes[0, 0]
    factor, unit = scale_for([c[3] for c in curves], "J")
    energy_lines, window_lines = [], []
    for i, (row, t, pw, energy, window_end) in enumerate(curves):
        pw = np.asarray(pw, dtype=float)
        if smooth > 1 and pw.size > smooth:
            pw = np.convolve(pw, np.ones(smooth) / smooth, mode="same")
        label, st = row_or_label(row, i)
        st.pop("marker")
        energy_lines += ax.plot(t, pw, label=f"{label}: E = {energy / factor:.3g} {unit} over its window",
                                linewidth=1.1, **st)
        if window_end is not None and np.isfinite(window_end):
            # the end of the paper's measurement window (the run's last admission): the
            # energy in the legend is integrated up to here, the tail after it is drain
            window_lines.append(ax.axvline(window_end, color=st["color"], linestyle=st["linestyle"], linewidth=0.8,
                                           alpha=0.7, label=f"{label}: window ends (last admission), "
                                                            f"t = {window_end:.3g} s"))
    ax.set_xlabel("time (s)")
    ax.set_ylabel("mean power per GPU (W)")
    where = setting_title(**(setting or {}))
    heading = "\n".join(t for t in (title, where) if t)
    if heading:
        ax.set_title(heading, fontsize=9)
    # below the panel: the curves (energy over the measurement window) in the first
    # column, the vertical lines ending each window in the second
    handles = energy_lines + window_lines
    if handles:
        ncol = 2 if window_lines else 1
        fig.legend(handles=handles, loc="lower center", ncol=ncol, fontsize=7)
        rows = -(-len(handles) // ncol)
        fig.tight_layout(rect=(0, min(0.45, (0.05 + 0.15 * rows) / 3.6), 1, 1))
    else:
        fig.tight_layout()
    return fig


__all__ = ["plot_power_timeseries"]
