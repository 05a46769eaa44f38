"""The oracle-free survival predictors ``empirical`` and ``geometric``: the
decode-length distribution learned online from completed requests
(``bfio.predictors``' docstring).
"""

from __future__ import annotations

import numpy as np

from bfio.predictors.base import Predictor
from bfio.predictors.expected import still_active
from bfio.lookahead.profiles import expected_loads


class SurvivalPredictor(Predictor):
    """Base class of the oracle-free, probabilistic predictors.

    Subclasses implement :meth:`_consume` (new completed decode lengths) and
    :meth:`survival` (the current ``S`` as a table plus geometric tail, the
    arguments of :func:`bfio.lookahead.profiles.expected_loads`).
    """

    probabilistic = True

    def __init__(self):
        self.reset()

    def reset(self) -> None:
        self.consumed = 0  # completions read so far
        self._key = None

    def observe(self, completed, decode) -> None:
        """Read the completions ``completed[self.consumed:]`` (ids in completion
        order) with true decode lengths ``decode[ids]`` -- known once a request has
        finished. Only the new ones are read."""
        completed = np.asarray(completed)
        if completed.shape[0] < self.consumed:  # a new run without reset()
            self.reset()
        if completed.shape[0] > self.consumed:
            new = np.asarray(decode)[completed[self.consumed:]].astype(np.int64)
            self._consume(new)
            self.consumed = completed.shape[0]

    def observe_state(self, state) -> None:
        key = id(state.workload)
        if self._key is not None and self._key != key:
            self.reset()
        self._key = key
        self.observe(state.completed, state.workload.decode)

    def _consume(self, lengths: np.ndarray) -> None:  # pragma: no cover - abstract
        raise NotImplementedError

    def survival(self) -> tuple[np.ndarray, float]:  # pragma: no cover - abstract
        raise NotImplementedError

    def survival_at(self, t) -> np.ndarray:
        """``S(t) = P(o > t)`` of the current fit at integer ``t >= 0``."""
        t = np.asarray(t, dtype=np.int64)
        surv, rho = self.survival()
        T = surv.shape[0] - 1
        inside = surv[np.minimum(t, T)]
        with np.errstate(under="ignore"):
            return np.where(t <= T, inside, surv[T] * rho ** np.maximum(t - T, 0).astype(float))

    def active_probability(self, tau, horizon: int) -> np.ndarray:
        """``(len(tau), H + 1)`` array of ``q(h) = P(o > tau + h | o > tau)``
        (``q = 1`` where ``S(tau) = 0``); the probabilities
        :func:`~bfio.lookahead.profiles.expected_loads` weights loads with."""
        tau = np.atleast_1d(np.asarray(tau, dtype=np.int64))
        h = np.arange(horizon + 1, dtype=np.int64)
        surv, rho = self.survival()
        T = surv.shape[0] - 1
        inside = np.minimum(tau, T)  # tau >= T is handled below
        q = still_active(surv[inside], self.survival_at(inside[:, None] + h[None, :]))
        # beyond the table: memoryless geometric tail, or (finite support) persist
        tail = (rho ** h.astype(float))[None, :] if surv[T] > 0 else np.ones((1, h.shape[0]))
        q = np.where((tau >= T)[:, None], tail, q)
        return np.clip(q, 0.0, 1.0)

    def expected_loads(self, state, horizon: int) -> np.ndarray:
        """Observe the new completions of ``state`` and return the ``(G, H + 1)``
        expected loads ``E[Lhat_g(h)]`` of the active requests (float)."""
        self.observe_state(state)
        surv, rho = self.survival()
        return expected_loads(state.slot_request, state.workload.prefill, state.generated, surv, float(rho),
                              int(horizon))


class EmpiricalPredictor(SurvivalPredictor):
    """Empirical survival of the completed decode lengths (oracle-free).

    ``S(t) = #{completed o > t} / #completed`` for ``t = 0..max o`` (so
    ``S(max o) = 0``); an active request with ``tau`` generated tokens is still
    active at offset ``h`` with probability ``S(tau + h) / S(tau)``. Keeps a
    histogram of the completed lengths, updated with the new completions only;
    the table is rebuilt (``O(max o)``) when it changed. Cold start and
    ``tau >= max o``: ``q = 1`` (see the module docstring).
    """

    name = "empirical"

    def reset(self) -> None:
        super().reset()
        self.counts = np.zeros(1, dtype=np.int64)  # counts[t] = completed requests with o = t
        self.n = 0
        self._surv = np.ones(1)

    def _consume(self, lengths):
        if lengths.size == 0:
            return
        if lengths.min() < 0:
            raise ValueError("decode lengths must be >= 0")
        top = int(lengths.max())
        if top >= self.counts.shape[0]:
            grown = np.zeros(max(top + 1, 2 * self.counts.shape[0]), dtype=np.int64)
            grown[: self.counts.shape[0]] = self.counts
            self.counts = grown
        self.counts += np.bincount(lengths, minlength=self.counts.shape[0])
        self.n += int(lengths.size)
        T = int(np.flatnonzero(self.counts)[-1])
        self._surv = (self.n - np.cumsum(self.counts[: T + 1])) / self.n

    def survival(self):
        return self._surv, 1.0

    def stats(self):
        return {"predictor_completions_seen": self.n}


class GeometricPredictor(SurvivalPredictor):
    """``o ~ Geometric(p)`` on ``{1, 2, ...}`` with ``p`` fitted online by maximum
    likelihood (oracle-free).

    The paper's Section 5 assumes ``o_i ~ Geo(p)`` i.i.d. (mean ``1/p``, variance
    ``(1 - p)/p^2``; Theorem "Inhomogeneous decode lengths" and Appendix C).
    The MLE from ``n`` completed lengths is ``p = n / sum o``; survival is
    ``S(t) = (1 - p)**t`` and, memoryless, ``q(h) = (1 - p)**h`` for every active
    request. Cold start: ``p = 0`` (never finishes).
    """

    name = "geometric"

    def reset(self) -> None:
        super().reset()
        self.n = 0
        self.tokens = 0

    def _consume(self, lengths):
        self.n += int(lengths.size)
        self.tokens += int(lengths.sum())

    @property
    def p(self) -> float:
        """The MLE ``n / sum o`` (0 before the first completion)."""
        return self.n / self.tokens if self.tokens > 0 else 0.0

    def survival(self):
        return np.ones(1), 1.0 - self.p

    def stats(self):
        return {"predictor_completions_seen": self.n, "predictor_geometric_p": self.p}


__all__ = ["SurvivalPredictor", "EmpiricalPredictor", "GeometricPredictor"]
