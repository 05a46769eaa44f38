"""What BF-IO predicts at a routing call, for the central pool and instant dispatch alike.

A :class:`CallView` holds the policy's predictor and objective
(:class:`~bfio.solvers.objective.ObjectiveTerms`) and gives, from a routing or
dispatch state, what Eq. (IO) and its instant form read besides the placement:
the decode estimates ``o_hat_j`` (Section 4, "lookahead predictor"), a
probabilistic predictor's expected loads ``E[Lhat_g(h)]`` (issue 44), the new
requests' lifetimes under the objective's new-request model (``docs/bfio.md``),
the call's :class:`~bfio.solvers.terms.CallWindow` with the calibrated step's
coefficients (``docs/step_model.md``), and the predicted running counts and
survival a probabilistic predictor implies. :class:`bfio.solvers.central.CentralCall`
(the central pool) and :class:`bfio.policies.bfio_instant.InstantBinding` (instant
dispatch) read the same view, so the two forms predict by one set of formulas.
"""

from __future__ import annotations

from dataclasses import replace

import numpy as np

from bfio.solvers.objective import ObjectiveTerms
from bfio.solvers.terms import CallWindow


class CallView:
    """The predictions of a BF-IO routing call (module docstring); one per policy,
    :meth:`reset` at the start of each run."""

    def __init__(self, predictor, objective: ObjectiveTerms, new_requests: str, step_terms: str):
        self.predictor = predictor
        self.objective = objective
        self.new_requests = new_requests
        self.step_terms = step_terms
        self.reset()

    def reset(self) -> None:
        self._estimate = None
        self._estimate_key = None
        self._lifetimes = None  # (est, window, n, lifetimes): new_lifetimes' last answer

    def decode_estimate(self, workload) -> np.ndarray:
        """A point predictor's ``o_hat_j`` of every request of ``workload``, kept while
        the workload is the same (one array a workload)."""
        key = (id(workload), len(workload))
        if self._estimate_key != key:
            self._estimate = self.predictor.decode_estimate(workload.decode)
            self._estimate_key = key
        return self._estimate

    def expected(self, state, window: int) -> tuple[np.ndarray, np.ndarray | None]:
        """A probabilistic predictor's view of a call (central or instant): the ``(G,
        window + 1)`` expected loads of the running requests, ``E[Lhat_g(h)] = sum_i
        (s_i + tau_i + h) P(r_i > h)`` (the predictor's ``expected_loads``), and the
        new requests' expected lengths (``gives_lifetimes``) or ``None`` (they persist)."""
        base = self.predictor.expected_loads(state, window)
        est = None
        if getattr(self.predictor, "gives_lifetimes", False):  # new requests: their expected lengths
            est = self.predictor.expected_lengths(state.workload)
        return base, est

    def new_lifetimes(self, est: np.ndarray | None, window: int, n: int) -> np.ndarray:
        """The steps each of the ``n`` requests of the workload is modelled to stay once
        placed (the objective's new-request model): its predicted length ``est``
        (``new_requests: predicted``) or the whole window (``persist``; ``est`` unread,
        ``None`` for a predictor without lengths).

        Kept between calls while ``est`` is the same array (the point predictors'
        :meth:`decode_estimate` is one array a workload): it spans the whole
        workload, and recomputing it each call cost 1.4 ms of a 3.5 ms call at
        G = 1024, N = 1.5M (issue 40). Read-only, so no caller can change it."""
        kept = self._lifetimes
        if kept is not None and kept[0] is est and kept[1:3] == (window, n):
            return kept[3]
        out = self.lifetimes_of(est, window, n)
        out.flags.writeable = False
        self._lifetimes = (est, window, n, out)  # holds est: its id cannot be reused while kept
        return out

    def lifetimes_of(self, est: np.ndarray | None, window: int, n: int) -> np.ndarray:
        """The new-request model's lifetimes (:meth:`new_lifetimes`, computed afresh, not kept)."""
        return np.maximum(1, est) if self.new_requests == "predicted" else np.full(n, window + 1)

    def step_costs(self, state):
        """The run's calibrated step coefficients when ``J`` weighs them (``step_terms:
        auto`` and a calibrated run), else ``None``."""
        return getattr(state, "step_costs", None) if self.step_terms == "auto" else None

    def window(self, state, counts=None, lifetimes=None) -> CallWindow:
        """The call's :class:`~bfio.solvers.terms.CallWindow`: the objective's weights, the
        step coefficients :meth:`step_costs` and, when they are weighed, the predicted
        request counts (``counts()``, computed only then) and the new requests' lifetimes."""
        step = self.step_costs(state)
        if step is None or counts is None:
            return CallWindow(self.objective.weights, step)
        return CallWindow(self.objective.weights, step, counts(), lifetimes)

    def survival(self, state, window: int) -> np.ndarray:
        """``(running, window + 1)``: ``P(r_i > h)`` of each running request (the busy
        slots in row order), read off its own expected load ``(s_i + tau_i + h)
        P(r_i > h)``: the probabilistic predictor's ``expected_loads`` with each
        running request on a row of its own (the central path's formula)."""
        sr = state.slot_request
        ids = sr[sr >= 0]
        alone = replace(state, slot_request=np.ascontiguousarray(ids[:, None]))
        own = self.predictor.expected_loads(alone, window)  # (running, window + 1)
        h = np.arange(window + 1, dtype=np.float64)
        volume = (state.workload.prefill[ids] + state.generated[ids]).astype(np.float64)
        return own / (volume[:, None] + h[None, :])

    def running_counts(self, state, window: int) -> np.ndarray:
        """``(G, window + 1)`` float: the predicted number of running requests on each
        worker at each offset, as the loads predict them: a point predictor's
        ``[h < r_i]``, ``r_i = max(1, o_hat_i - tau_i)``; a probabilistic one's
        ``P(r_i > h)`` (:meth:`survival`)."""
        sr = state.slot_request
        G = sr.shape[0]
        h = np.arange(window + 1)
        busy = sr >= 0
        if not busy.any():
            return np.zeros((G, window + 1))
        if self.predictor.probabilistic:
            out = np.zeros((G, window + 1))
            np.add.at(out, np.nonzero(busy)[0], self.survival(state, window))
            return out
        est = self.decode_estimate(state.workload)
        ids = np.where(busy, sr, 0)
        r = np.where(busy, np.maximum(1, est[ids] - state.generated[ids]), 0)
        return (r[:, :, None] > h[None, None, :]).sum(axis=1).astype(np.float64)


__all__ = ["CallView"]
