"""The oracle-free, prompt-conditioned predictor ``prompt_survival`` (issue 29).
"""

from __future__ import annotations

import numpy as np

from bfio.predictors.base import Predictor
from bfio.predictors.expected import MIN_EVENTS, active_requests, kaplan_meier, still_active, weighted_loads

#: Prompt-length buckets of :class:`PromptSurvivalPredictor` (tokens; upper edges, the last open).
PROMPT_EDGES = (256, 1024, 4096)


def prompt_bucket(prefill) -> np.ndarray:
    """The :data:`PROMPT_EDGES` bucket of each prompt length."""
    return np.searchsorted(np.asarray(PROMPT_EDGES), np.asarray(prefill), side="left")


class PromptSurvivalPredictor(Predictor):
    """Oracle-free and prompt-conditioned (issue 29): the decode-length survival
    of each prompt-length bucket (:data:`PROMPT_EDGES`), learned online by
    Kaplan-Meier from completed requests (events at their length) and running
    ones (censored at ``tau``: they have lived that long), so long requests
    still running count.

    An active request with prompt ``s`` and ``tau`` generated tokens is still
    active ``h`` steps ahead with probability ``S_b(tau + h) / S_b(tau)``, ``b``
    its prompt bucket; a bucket with fewer than :data:`MIN_EVENTS` completions
    uses the pooled survival of every bucket. A request beyond all evidence
    (``S(tau) = 0``, or past the longest length seen) is predicted to stay."""

    name = "prompt_survival"
    probabilistic = True

    def __init__(self):
        self.reset()

    def reset(self) -> None:
        self.events = np.zeros((len(PROMPT_EDGES) + 1, 1), dtype=np.int64)  # [bucket, length]
        self.consumed = 0
        self._key = None

    def stats(self) -> dict:
        return {"predictor_completions_seen": int(self.events.sum())}

    def _observe(self, state) -> None:
        key = id(state.workload)
        if self._key is not None and self._key != key:
            self.reset()
        self._key = key
        completed = np.asarray(state.completed)
        if completed.shape[0] > self.consumed:
            new = completed[self.consumed:]
            lengths = state.workload.decode[new].astype(np.int64)
            buckets = prompt_bucket(state.workload.prefill[new])
            top = int(lengths.max()) + 1
            if top > self.events.shape[1]:
                grown = np.zeros((self.events.shape[0], max(top, 2 * self.events.shape[1])), dtype=np.int64)
                grown[:, : self.events.shape[1]] = self.events
                self.events = grown
            np.add.at(self.events, (buckets, lengths), 1)
            self.consumed = completed.shape[0]

    def expected_loads(self, state, horizon: int) -> np.ndarray:
        """The ``(G, H + 1)`` expected loads of the active requests (float)."""
        self._observe(state)
        g, ids, tau = active_requests(state)
        bucket = prompt_bucket(state.workload.prefill[ids])
        T = self.events.shape[1]
        censored = np.zeros_like(self.events)
        np.add.at(censored, (bucket, np.minimum(tau, T - 1)), 1)
        h = np.arange(horizon + 1, dtype=np.int64)
        q = np.ones((ids.shape[0], horizon + 1))
        pooled = kaplan_meier(self.events.sum(axis=0), censored.sum(axis=0))
        for k in range(self.events.shape[0]):
            mine = bucket == k
            if not mine.any() or self.events.sum() < MIN_EVENTS:
                continue
            surv = kaplan_meier(self.events[k], censored[k]) if self.events[k].sum() >= MIN_EVENTS else pooled
            t0 = tau[mine]
            st = surv[np.minimum(t0[:, None] + h[None, :] + 1, T)]
            qk = still_active(surv[np.minimum(t0 + 1, T)], st)  # S(t) = P(o > t) = surv[t + 1]
            beyond = (t0 + 1 >= T)[:, None] | (t0[:, None] + h[None, :] + 1 > T)  # past the longest seen: stays
            q[mine] = np.where(beyond & (st == 0), 1.0, qk)
        return weighted_loads(state.slot_request.shape[0], g, state.workload.prefill[ids], tau, q)


__all__ = ["PROMPT_EDGES", "prompt_bucket", "PromptSurvivalPredictor"]
