"""BF-IO's objectives by name and the discount of Eq. (IO) (Section 4;
``../shared/spec/semantics.md``, "BF-IO"): the names, defaults and checks of the
options ``objective``, ``discount`` and ``new_requests``, the offsets' weights
``delta^h`` and the fast path's effective window.

Split from :mod:`bfio.solvers.objective` (which builds ``J`` from them) so that
what reads these names without solving anything (the tables, the run keys, the
figures' titles) does not import the solvers and numba (issue 42: a table or
figure job starts without them).
"""

from __future__ import annotations

import math

import numpy as np

from bfio.ground.errors import ConfigError

# Chosen by the objective study (docs/bfio.md, "Objective study"; bfio.studies.objective_study).
DEFAULT_DISCOUNT = 0.6
#: ``delta = 1``: every offset weighs the same, Eq. (IO) as printed. The discount of
#: the ``paper-literal`` objective and the default of the solver layer (an
#: :class:`~bfio.solvers.instance.Instance`, an instance file written before the
#: discount existed, :meth:`bfio.solvers.objective.ObjectiveTerms.build`, :func:`offset_weights`); a
#: BF-IO policy's default is its objective's (:data:`OBJECTIVES`).
UNDISCOUNTED = 1.0
NEW_REQUEST_MODELS = ("predicted", "persist")
OBJECTIVES = {
    "default": {"discount": DEFAULT_DISCOUNT, "new_requests": "predicted"},
    "paper-literal": {"discount": UNDISCOUNTED, "new_requests": "persist"},
}


def check_discount(value, key: str = "discount") -> float:
    """``0 < delta <= 1`` or a :class:`ConfigError` naming ``key``."""
    if (isinstance(value, bool) or not isinstance(value, (int, float, np.floating, np.integer))
            or not math.isfinite(float(value)) or not 0.0 < float(value) <= 1.0):
        raise ConfigError(f"{key}: expected a number in (0, 1], got {value!r}")
    return float(value)


def check_new_requests(value, key: str = "new_requests") -> str:
    if value not in NEW_REQUEST_MODELS:
        raise ConfigError(f"{key}: expected {' | '.join(NEW_REQUEST_MODELS)}, got {value!r}")
    return value


def check_objective(value, key: str = "objective") -> str:
    if value not in OBJECTIVES:
        raise ConfigError(f"{key}: expected {' | '.join(OBJECTIVES)}, got {value!r}")
    return value


def offset_weights(horizon: int, discount: float = UNDISCOUNTED) -> np.ndarray:
    """``w_h = delta^h`` for ``h = 0..H`` (float64; exactly ones for ``delta = 1``)."""
    h = np.arange(int(horizon) + 1, dtype=np.float64)
    if discount == 1.0:
        return np.ones_like(h)
    return np.power(float(discount), h)


#: The fast solver ignores offsets whose weight delta^h is below this (their share
#: of the total weight is below ``NEGLIGIBLE_WEIGHT * delta / (1 - delta)``).
NEGLIGIBLE_WEIGHT = 1e-3


def effective_horizon(horizon: int, discount: float, negligible: float = NEGLIGIBLE_WEIGHT) -> int:
    """The largest ``h <= H`` with ``delta^h >= negligible`` (``H`` for ``delta = 1``).

    The fast solver optimizes ``J`` over offsets ``0..effective_horizon`` only:
    beyond it every weight is below ``negligible`` (relative to offset 0), so
    those offsets cannot change ``J`` by more than that share, but they would
    steer the heuristic's candidate choice and local search, whose work grows
    with the window. This makes the result independent of ``H`` once ``H``
    passes the discount's reach (the plateau over ``H``), and keeps long windows
    cheap. The exact backends always solve the full window.
    """
    H = int(horizon)
    if discount >= 1.0:
        return H
    reach = int(math.floor(math.log(negligible) / math.log(float(discount))))
    return min(H, max(0, reach))


__all__ = ["DEFAULT_DISCOUNT", "UNDISCOUNTED", "NEW_REQUEST_MODELS", "OBJECTIVES", "NEGLIGIBLE_WEIGHT",
           "check_discount", "check_new_requests", "check_objective", "offset_weights", "effective_horizon"]
