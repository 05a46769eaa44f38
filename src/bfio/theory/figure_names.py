"""The theory figures' names: the outputs the pipeline's rule ``theory_figures``
lists. A light module (no matplotlib): the workflow reads it when it starts,
and importing :mod:`bfio.theory.figures` for a tuple of names cost its start
0.4 s (issue 42)."""

#: Every theory figure, ``figures/theory/<name>.{pdf,png}``, in the order
#: :func:`bfio.theory.figures.draw_all` draws them.
FIGURES = ("thm1_iir", "thm2_iir", "thm2_snapshot", "thm2_gap", "thm3_iir", "thm3_gap", "energy_saving_vs_G")

__all__ = ["FIGURES"]
