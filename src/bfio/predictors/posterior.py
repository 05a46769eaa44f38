"""Noise-aware remaining lengths (issue 29): a point predictor read through its
learned error distribution.
"""

from __future__ import annotations

import numpy as np

from bfio.predictors.base import Predictor
from bfio.predictors.expected import MIN_EVENTS, active_requests, kaplan_meier, still_active, weighted_loads

#: Edges of the ratio grid ``R = o / o_hat`` of :class:`PosteriorPredictor`
#: (log-spaced, 1/64 to 64; ratios outside fall in the end bins).
RATIO_GRID = np.exp(np.linspace(np.log(1 / 64), np.log(64), 769))


def ratio_bin(ratio) -> np.ndarray:
    """The bin of :data:`RATIO_GRID` of each ratio (the end bins take the rest)."""
    k = np.searchsorted(RATIO_GRID, np.asarray(ratio, dtype=float), side="right") - 1
    return np.clip(k, 0, RATIO_GRID.shape[0] - 2)


def ratio_mean(surv: np.ndarray) -> float:
    """``E[R]`` of a survival at the edges of :data:`RATIO_GRID` (trapezoids;
    ``R`` below the first edge counted at it)."""
    return float(RATIO_GRID[0] + np.sum(0.5 * (surv[1:] + surv[:-1]) * np.diff(RATIO_GRID)))


class PosteriorPredictor(Predictor):
    """Noise-aware remaining lengths (issue 29): a point predictor's estimates
    ``o_hat`` read through its error distribution, learned online.

    The error is the ratio ``R = o / o_hat`` of true to estimated decode length.
    Its survival ``S_R(x) = P(R > x)`` is estimated by Kaplan-Meier on a log grid
    of ratios (:data:`RATIO_GRID`): a completed request is an event at
    ``o_i / o_hat_i``; an active one is right-censored at ``tau_i / o_hat_i`` (it
    has lived that long), so long requests still running count, and early
    estimates are not biased short. No oracle knowledge of the error level is
    used: only pairs of estimate and length known at the routing call.

    An active request with ``tau`` generated tokens is still active at offset
    ``h`` with probability ``q(h) = S_R((tau + h) / o_hat) / S_R(tau / o_hat)``
    (``q = 1`` where it has outlived all evidence, ``S_R(tau / o_hat) = 0``: it is
    predicted to stay, never to finish at the next step); its expected load is
    ``(s + tau + h) q(h)``, as for the oracle-free predictors. A new request's
    lifetime in the objective is its expected length ``o_hat E[R]``
    (:meth:`expected_lengths`). Before :data:`MIN_EVENTS` completions the
    estimate is taken at face value (``R = 1``), except that a request which
    outlived it stays active."""

    probabilistic = True
    gives_lifetimes = True

    def __init__(self, point: Predictor):
        self.point = point
        self.name = point.name
        self.reset()

    def reset(self) -> None:
        self.point.reset()
        self.events = np.zeros(RATIO_GRID.shape[0] - 1, dtype=np.int64)
        self.n = 0
        self.consumed = 0
        self._key = None
        self._estimate = None
        self._surv = None

    def describe(self) -> dict:
        return {**self.point.describe(), "remaining": "posterior"}

    def stats(self) -> dict:
        return {"predictor_completions_seen": self.n}

    def decode_estimate(self, decode):
        return self.point.decode_estimate(decode)

    def _estimates(self, workload) -> np.ndarray:
        key = (id(workload), len(workload))
        if self._key != key:
            if self._key is not None:
                self.reset()
            self._key = key
            self._estimate = self.point.decode_estimate(workload.decode)
        return self._estimate

    def _observe(self, state) -> None:
        est = self._estimates(state.workload)
        completed = np.asarray(state.completed)
        if completed.shape[0] > self.consumed:
            new = completed[self.consumed:]
            ratio = state.workload.decode[new] / est[new]
            self.events += np.bincount(ratio_bin(ratio), minlength=self.events.shape[0])
            self.n += int(new.shape[0])
            self.consumed = completed.shape[0]

    def survival(self, state) -> np.ndarray:
        """``S_R`` at the edges of :data:`RATIO_GRID` (Kaplan-Meier): the completed
        requests are events, the active ones censored at ``tau / o_hat``."""
        est = self._estimates(state.workload)
        active = state.slot_request[state.slot_request >= 0]
        censored = np.bincount(ratio_bin(state.generated[active] / est[active]), minlength=self.events.shape[0])
        return kaplan_meier(self.events, censored)

    def expected_lengths(self, workload) -> np.ndarray:
        """Every request's expected decode length ``o_hat E[R]`` under the current fit
        (its lifetime when it is admitted; ``o_hat`` before :data:`MIN_EVENTS`)."""
        est = self._estimates(workload)
        if self.n < MIN_EVENTS or self._surv is None:
            return est
        return np.maximum(1, np.rint(est * ratio_mean(self._surv))).astype(np.int64)

    def expected_loads(self, state, horizon: int) -> np.ndarray:
        """The ``(G, H + 1)`` expected loads of the active requests (float)."""
        self._observe(state)
        est = self._estimates(state.workload)
        g, ids, tau_i = active_requests(state)
        tau = tau_i.astype(float)
        o_hat = est[ids].astype(float)
        h = np.arange(horizon + 1, dtype=float)
        if self.n < MIN_EVENTS:
            self._surv = None
            q = np.where(tau[:, None] >= o_hat[:, None], 1.0, (tau[:, None] + h[None, :] < o_hat[:, None]) * 1.0)
        else:
            self._surv = self.survival(state)
            log_edges = np.log(RATIO_GRID)
            s0 = np.interp(np.log(np.maximum(tau / o_hat, RATIO_GRID[0])), log_edges, self._surv)
            x = np.log(np.maximum((tau[:, None] + h[None, :]) / o_hat[:, None], RATIO_GRID[0]))
            q = still_active(s0, np.interp(x, log_edges, self._surv))
        return weighted_loads(state.slot_request.shape[0], g, state.workload.prefill[ids], tau, q)


__all__ = ["RATIO_GRID", "ratio_bin", "ratio_mean", "PosteriorPredictor"]
