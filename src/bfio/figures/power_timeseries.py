"""Mean GPU power over time, FCFS vs BF-IO (paper Figs. ``power_timeseries``
and ``power_light``), with each policy's total energy in the legend."""

from __future__ import annotations

import numpy as np

from bfio.figures.style import figure, line_style, scale_for


def plot_power_timeseries(curves, title: str = "", smooth: int = 1):
    """``curves``: list of ``(label, clock_s, power_w, energy_j, window_end_s)``;
    ``power_w`` is the mean over workers of ``P(u_g)`` per step and
    ``energy_j`` the run's energy (paper convention). ``smooth`` > 1 applies a
    centred moving average of that many steps (for long runs)."""
    fig, axes = figure(1, 1, width=6.5, height=3.0)
    ax = axes[0, 0]
    factor, unit = scale_for([c[3] for c in curves], "J")
    for i, (label, t, pw, energy, window_end) in enumerate(curves):
        pw = np.asarray(pw, dtype=float)
        if smooth > 1 and pw.size > smooth:
            pw = np.convolve(pw, np.ones(smooth) / smooth, mode="same")
        st = line_style(i, markers=False)
        ax.plot(t, pw, label=f"{label}: E = {energy / factor:.3g} {unit}", linewidth=1.1, **st)
        if window_end is not None and np.isfinite(window_end):
            ax.axvline(window_end, color=st["color"], linestyle=st["linestyle"], linewidth=0.8, alpha=0.7)
    ax.set_xlabel("time (s)")
    ax.set_ylabel("mean power per GPU (W)")
    ax.legend(loc="lower left", title="energy over the measurement window" if curves else None)
    if title:
        ax.set_title(title)
    fig.tight_layout()
    return fig


__all__ = ["plot_power_timeseries"]
