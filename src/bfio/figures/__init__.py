"""Figures of the pipeline, one module per figure. Each module exposes a
``plot_*`` function that takes plain arrays/DataFrames and returns a
matplotlib Figure, so figures can be tested on synthetic data; the workflow
scripts only read files and call them. :mod:`bfio.figures.style` holds the
shared, grayscale-readable style and :func:`~bfio.figures.style.save`.
"""

from bfio.figures.style import apply_style, save

__all__ = ["apply_style", "save"]
