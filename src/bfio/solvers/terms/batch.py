"""The calibrated step's per-request term of ``J`` (issue 44, :mod:`bfio.solvers.terms`).

Eq. (IO)'s imbalance weighs KV tokens, right for the paper's step ``dt = C +
t_l max_g L_g``. The calibrated step (``docs/step_model.md``) also charges every
request that decodes on a rank: ``a_n n_g`` inside the slowest rank's cost and
``beta max_g n_g`` for the batch padded to the largest rank's. In KV-token units
(``J``'s, one token costing ``a_kv``) a request weighs ``w = (a_n + beta) / a_kv``
tokens in every step it decodes (about 180 with the A100 Llama-2-7B fit), so
balancing tokens alone lets the request counts drift apart and the padded batch
with them. This term is the discounted imbalance of the per-rank request counts
over the window, in those units,

    w sum_h w_h [ G max_g n_g(h) - sum_g n_g(h) ],

with the imbalance term's weights ``w_h`` and formula
(:func:`bfio.solvers.objective.imbalance_objective`), ``n_g(h)`` the predicted
requests on rank ``g`` at offset ``h`` (:class:`~bfio.solvers.terms.base.CallWindow`
``counts``: the running ones while they are predicted to run, the queued ones
over their predicted stay) plus those bound in this call. A simplification, as
a separate maximum: the step's ``max_g [a_kv L_g + a_n n_g]`` is bounded by the
imbalance term's maximum plus this one's.

Active only with the calibrated step (``state.step_costs``) and when the policy
weighs it (BF-IO's ``step_terms: auto``, which passes the coefficients in the
window); with the paper's step it never applies. Not linear in the assignment
(a maximum): the exact backends refuse it by name, and the fast kernels do not
compute it (the central path places the requests they chose by the candidate
costs, :meth:`bfio.solvers.central.CentralCall.place_sequential`).
"""

from __future__ import annotations

import numpy as np

from bfio.solvers.terms.base import CallWindow, Term


def request_tokens(step_costs) -> float:
    """``w = (a_n + beta) / a_kv``: a decoding request's cost per step in KV tokens
    (0 when the step charges nothing per request or nothing per token)."""
    if step_costs.a_kv <= 0:
        return 0.0
    return float((step_costs.a_n + step_costs.beta) / step_costs.a_kv)


def for_call(state, requests: np.ndarray, window: CallWindow | None) -> BatchTerm | None:
    """The term at a routing call whose caller weighs the calibrated step
    (``window.step_costs``, the run's ``state.step_costs``), for ``requests`` in
    binding order; ``None`` with the paper's step, without a window, or when the
    step charges nothing per request."""
    if window is None or window.step_costs is None or getattr(state, "step_costs", None) is None:
        return None
    per_request = request_tokens(window.step_costs)
    if per_request <= 0:
        return None
    return BatchTerm(per_request, window.weights, window.counts, window.lifetimes, requests)


class BatchTerm(Term):
    """The per-request term (module docstring). Sequential: each binding adds the
    request's stay to its rank's counts, which the next candidate sees; built
    without ``counts`` (an exact backend's instance) it only names itself, to be
    refused (:meth:`bfio.solvers.objective.ObjectiveTerms.check_solver`)."""

    name = "batch"

    def __init__(self, per_request: float, weights: np.ndarray, counts: np.ndarray | None,
                 lifetimes: np.ndarray | None, requests: np.ndarray):
        self.per_request = float(per_request)
        self.weights = np.asarray(weights, dtype=np.float64)
        self.counts = None if counts is None else np.array(counts, dtype=np.float64)
        self.lifetimes = lifetimes
        self.requests = np.asarray(requests)
        self._live = None
        self.bindings: list[tuple[int, int]] = []

    def _check(self) -> None:
        if self.counts is None or self.lifetimes is None:
            raise ValueError("the batch term needs the predicted request counts and lifetimes of the call "
                             "(CallWindow.counts, .lifetimes)")

    def live(self, k: int, entry: np.ndarray) -> np.ndarray:
        """``(G, W + 1)``: 1 where the ``k``-th request would run on each worker,
        admitted at ``entry[g]`` for its lifetime."""
        self._check()
        W1 = self.counts.shape[1]
        h = np.arange(W1)
        life = int(self.lifetimes[int(self.requests[k])])
        e = np.asarray(entry)[:, None]
        return ((h[None, :] >= e) & (h[None, :] < e + life)).astype(np.float64)

    def candidate_costs(self, k: int, loads: np.ndarray, add: np.ndarray, entry: np.ndarray) -> np.ndarray:
        """Per worker, the change of ``w sum_h w_h [G max_g n_g(h) - sum_g n_g(h)]`` when
        the ``k``-th request joins it (:func:`~bfio.solvers.objective.imbalance_candidate_costs`
        on the counts)."""
        # local: bfio.solvers.objective imports this package (its Term base) as it loads
        from bfio.solvers.objective import imbalance_candidate_costs, imbalance_objective

        self._live = self.live(k, entry)
        before = float(imbalance_objective(self.counts, self.weights))
        return self.per_request * (imbalance_candidate_costs(self.counts, self._live, self.weights) - before)

    def bound(self, k: int, g: int) -> None:
        self.counts[g] += self._live[g]
        self.bindings.append((int(self.requests[k]), int(g)))

    def value(self, loads: np.ndarray, assign: np.ndarray) -> float:
        """The term over the counts after the bindings made through it (:meth:`bound`);
        ``assign`` (indexed like :attr:`requests`) must be them."""
        from bfio.solvers.objective import imbalance_objective  # local: as in candidate_costs

        self._check()
        made = dict(self.bindings)
        if any(made.get(int(r), -1) != int(g) for r, g in zip(self.requests, assign)):
            raise ValueError("the batch term's value is that of the bindings made through it (bound), "
                             "not of another assignment")
        return self.per_request * float(imbalance_objective(self.counts, self.weights))


__all__ = ["BatchTerm", "for_call", "request_tokens"]
