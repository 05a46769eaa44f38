"""The BF-IO objective, written once (``../shared/spec/semantics.md``, "BF-IO").

At a routing call the integer program (IO) of Section 4 chooses which waiting
requests to admit and where, to minimize the discounted accumulated predicted
imbalance over the lookahead window ``h = 0..H``:

    J = sum_{h=0..H} delta^h [ G max_g Lhat_g(h) - sum_g Lhat_g(h) ]

where ``Lhat_g(h)`` is the predicted load of worker ``g`` at offset ``h``: the
already-active requests' predicted loads plus, for every request ``j`` admitted
to ``g``, ``s_j + h`` while ``h < l_j`` (its lifetime in offsets; ``l_j = H + 1``
means it persists over the whole window).

Two named objectives (:data:`OBJECTIVES`):

- ``default``: the project's choice from the objective study
  (``docs/bfio.md``, "Objective study"): discount :data:`DEFAULT_DISCOUNT` and,
  with a point predictor, new requests that finish at their predicted decode
  length (``new_requests = predicted``);
- ``paper-literal``: Eq. (IO) exactly as printed, ``delta = 1`` and new
  requests that persist over the window.

Everything that evaluates ``J`` (the instance, brute force, the reports) calls
:func:`imbalance_objective`; the fast solver and the MILP backends take their
weights from :func:`offset_weights` and their per-request contributions from
:func:`request_profiles`.
"""

from __future__ import annotations

import math

import numpy as np

from bfio.errors import ConfigError

# Chosen by the objective study (docs/bfio.md, "Objective study"; workflow/rules/objective.smk).
DEFAULT_DISCOUNT = 0.7
NEW_REQUEST_MODELS = ("predicted", "persist")
OBJECTIVES = {
    "default": {"discount": DEFAULT_DISCOUNT, "new_requests": "predicted"},
    "paper-literal": {"discount": 1.0, "new_requests": "persist"},
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


def offset_weights(horizon: int, discount: float = 1.0) -> np.ndarray:
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


def request_profiles(sizes: np.ndarray, lifetimes: np.ndarray | None, horizon: int) -> np.ndarray:
    """``(n, H + 1)`` int64: what each new request adds at offset ``h`` if admitted,
    ``s_j + h`` while ``h < l_j`` (``lifetimes=None``: every request persists)."""
    h = np.arange(int(horizon) + 1, dtype=np.int64)
    W = np.asarray(sizes, dtype=np.int64)[:, None] + h[None, :]
    if lifetimes is not None:
        W = np.where(h[None, :] < np.asarray(lifetimes, dtype=np.int64)[:, None], W, 0)
    return W


def imbalance_objective(loads: np.ndarray, weights: np.ndarray):
    """``J = sum_h w_h [G max_g L_g(h) - sum_g L_g(h)]`` for loads ``(..., G, H + 1)``.

    With unit weights and integer loads the result is an exact Python ``int``
    (or an int64 array for stacked loads); otherwise float64.
    """
    L = np.asarray(loads)
    G = L.shape[-2]
    per_offset = G * L.max(axis=-2) - L.sum(axis=-2)  # (..., H + 1)
    w = np.asarray(weights, dtype=np.float64)
    if L.dtype.kind in "iu" and np.all(w == 1.0):
        out = per_offset.astype(np.int64).sum(axis=-1)
        return int(out) if np.ndim(out) == 0 else out
    out = per_offset.astype(np.float64) @ w
    return float(out) if np.ndim(out) == 0 else out


__all__ = ["DEFAULT_DISCOUNT", "NEW_REQUEST_MODELS", "OBJECTIVES", "NEGLIGIBLE_WEIGHT", "check_discount",
           "check_new_requests", "check_objective", "offset_weights", "effective_horizon", "request_profiles",
           "imbalance_objective"]
