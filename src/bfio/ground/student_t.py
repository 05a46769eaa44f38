"""Student-t quantiles: the 95% intervals of the tables (means over seeds,
Section 6.3) and the tolerances of the theory checks (Section 5).

Computed with :mod:`scipy.special` (the functions behind
``scipy.stats.t.ppf`` and ``scipy.stats.norm.ppf``, so the values are the
same bit for bit), imported on first use: importing :mod:`scipy.stats` costs
about 0.4 s, paid by every pipeline job that imported a table module.
"""

from __future__ import annotations

import math


def t_quantile(p: float, df: float) -> float:
    """The ``p`` quantile of Student's t with ``df`` degrees of freedom
    (``scipy.stats.t.ppf(p, df)``); the normal quantile for ``df = inf``."""
    from scipy.special import ndtri, stdtrit  # local: scipy.special loads at the first interval (startup)

    if math.isinf(df):
        return float(ndtri(p))
    return float(stdtrit(df, p))
