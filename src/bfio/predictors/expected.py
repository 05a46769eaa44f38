"""What the learned predictors share: the running requests, the probability
each is still active ``h`` steps ahead, the expected loads it weights, and the
Kaplan-Meier survival of events and right-censored observations.
"""

from __future__ import annotations

import numpy as np

#: Observations (completions) before a learned error or survival fit is trusted
#: (:class:`~bfio.predictors.posterior.PosteriorPredictor`,
#: :class:`~bfio.predictors.prompt_survival.PromptSurvivalPredictor`).
MIN_EVENTS = 30


def still_active(s0, st) -> np.ndarray:
    """``q(h) = S(tau + h) / S(tau)`` from ``s0 = S(tau)`` (one per request) and
    ``st = S(tau + h)`` (a row per request); 1 where ``S(tau) = 0`` (no evidence:
    the request is predicted to stay), within ``[0, 1]``."""
    s0 = np.asarray(s0, dtype=float)[:, None]
    with np.errstate(divide="ignore", invalid="ignore"):
        return np.clip(np.where(s0 > 0, st / np.where(s0 > 0, s0, 1.0), 1.0), 0.0, 1.0)


def active_requests(state) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """The worker, request id and generated tokens ``tau`` of every running request."""
    g, b = np.nonzero(state.slot_request >= 0)
    ids = state.slot_request[g, b]
    return g, ids, state.generated[ids].astype(np.int64)


def weighted_loads(workers: int, worker, prefill, tau, q) -> np.ndarray:
    """The ``(G, H + 1)`` expected loads ``sum (s_i + tau_i + h) q_i(h)`` of the
    running requests on each worker (``q``: a row per request)."""
    h = np.arange(q.shape[1], dtype=float)
    w = (np.asarray(prefill, dtype=float)[:, None] + np.asarray(tau, dtype=float)[:, None] + h[None, :]) * q
    out = np.zeros((workers, q.shape[1]))
    for k in range(q.shape[1]):
        out[:, k] = np.bincount(worker, weights=w[:, k], minlength=workers)
    return out



def kaplan_meier(events: np.ndarray, censored: np.ndarray) -> np.ndarray:
    """Survival at the bin edges from per-bin ``events`` and right-``censored``
    counts: ``S(e_0) = 1``, ``S(e_{k+1}) = S(e_k) (1 - d_k / n_k)`` with ``n_k``
    the observations in bins ``>= k`` (a censored one was at risk up to its bin)."""
    at_risk = np.cumsum((events + censored)[::-1])[::-1]
    with np.errstate(divide="ignore", invalid="ignore"):
        hazard = np.where(at_risk > 0, events / np.where(at_risk > 0, at_risk, 1), 0.0)
    return np.concatenate([[1.0], np.cumprod(1.0 - hazard)])


__all__ = ["MIN_EVENTS", "still_active", "active_requests", "weighted_loads", "kaplan_meier"]
