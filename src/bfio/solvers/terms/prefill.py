"""BF-IO's prefix-cache term (issue 32) as a term of ``J`` (:mod:`bfio.solvers.terms`):
the prefill barrier, the prefill work and the request's own wait behind its
rank's prefill backlog, in ``J``'s units (Section 4's objective extended by the
prefill step model, :mod:`bfio.engine.prefill`; ``docs/bfio.md``).

Not linear in the assignment (the barrier is a maximum, and each binding
changes the caches the next one hits): the exact backends refuse a run with it
(:meth:`bfio.solvers.objective.ObjectiveTerms.check_solver`), and the fast
kernels do not compute it (BF-IO's central path places the requests its kernels
chose one at a time by the candidate costs, as instant dispatch binds arrivals).
"""

from __future__ import annotations

import numpy as np

from bfio.solvers.terms.base import Term


def for_call(state, requests: np.ndarray, window=None) -> PrefillTerm | None:
    """The term at a routing call with the prefill step model (``state.prefill``, a
    :class:`bfio.sim.cache_view.CacheView`), for ``requests`` in binding order; ``None``
    without the model (``window`` is not read)."""
    if state.prefill is None:
        return None
    return PrefillTerm(state.prefill, requests, state.workload.prefill, state.slots)


class PrefillTerm(Term):
    """BF-IO's prefix-cache term (issue 32), in ``J``'s units (one unit: ``t_l``
    seconds of one rank idle at the barrier; ``scale = token_s / t_l`` converts a
    prefill token). Binding request ``k`` to rank ``g`` adds its uncached prompt
    tokens ``u_g`` to ``g``'s prefill backlog ``P_g``:

    - **the barrier**: ranks prefill in lockstep, so raising ``max_g P_g`` by ``d``
      tokens costs ``token_s d`` seconds of every rank (:mod:`bfio.engine.prefill`),
      ``G scale d``;
    - **the work**: below the largest backlog the tokens are free while the other
      ranks would idle at the barrier anyway, and not free once later arrivals
      fill them up to it, when each adds ``1 / G`` of a step's chunk to every
      rank's wait. The term counts the share the others would fill, the
      backlogs' fill ``f = mean_g P_g / max_g P_g`` (1 with no backlog):
      ``f scale u_g``;
    - **the request's own wait**: its first token comes after ``P_g + u_g`` tokens
      of ``g``'s prefill; each of those prefill-bound steps (about ``chunk token_s``
      seconds) its slot holds without decoding, ``1 / B`` of the rank's decode, so
      ``scale (P_g + u_g) / B``. It separates ranks the barrier cannot (a lightly
      loaded cluster, where no binding raises the largest backlog).

    The cost is ``scale (G d + f u_g + (P_g + u_g) / B)``. ``u_g`` is the prompt less
    what ``g`` will hold of it when the request is admitted there: its computed
    blocks if it enters a free slot at once (a prompt still being prefilled cannot
    serve a request admitted beside it: the cache is matched at admission), or
    also the blocks of the prompts queued or prefilling ahead of it when it waits
    for a slot (``CacheView.expected_tokens``). A cache hit lowers ``u_g`` (and
    maybe ``d``): affinity is worth the prefill it saves, weighed against the
    barrier it raises and the wait behind the rank's backlog."""

    name = "prefill"

    def __init__(self, view, requests: np.ndarray, sizes: np.ndarray, slots: int):
        self.view = view  # bfio.sim.cache_view.CacheView
        self.requests = requests
        self.sizes = sizes
        self.slots = int(slots)
        self.pending = np.asarray(view.pending, dtype=np.float64).copy()
        self.scale = view.token_s / view.decode_token_s if view.decode_token_s > 0 else 0.0
        self._u = None
        self._cost = None
        self.total = 0.0  # the costs of the bindings made (value)
        self.bindings: list[tuple[int, int]] = []

    def held(self, i: int, entry: np.ndarray) -> np.ndarray:
        """Per rank, the tokens of request ``i``'s prompt the rank will hold when it
        admits ``i`` at window offset ``entry[g]`` (class docstring)."""
        now = self.view.cached_tokens(i)
        if not (entry > 0).any():
            return now
        return np.where(entry > 0, self.view.expected_tokens(i), now)

    def candidate_costs(self, k: int, loads: np.ndarray, add: np.ndarray, entry: np.ndarray) -> np.ndarray:
        """Per rank, the ``J``-equivalent cost of request ``k``'s prefill there (class
        docstring); ``entry[g]``: the offset at which ``g``'s queue would admit it."""
        G = loads.shape[0]
        i = int(self.requests[k])
        self._u = self.sizes[i] - self.held(i, entry).astype(np.float64)
        rise = np.maximum(0.0, self.pending + self._u - self.pending.max())
        top = self.pending.max()
        fill = self.pending.mean() / top if top > 0 else 1.0
        self._cost = self.scale * (G * rise + fill * self._u + (self.pending + self._u) / self.slots)
        return self._cost

    def bound(self, k: int, g: int) -> None:
        self.total += float(self._cost[g])
        self.bindings.append((int(self.requests[k]), int(g)))
        self.pending[g] += self._u[g]
        self.view.note(int(self.requests[k]), g)

    def value(self, loads: np.ndarray, assign: np.ndarray) -> float:
        """The term is sequential (each binding moves the backlogs and the caches the
        next one sees): its part of ``J`` is the sum of the costs of the bindings made
        through it, in order; ``assign`` (indexed like :attr:`requests`) must be them."""
        made = dict(self.bindings)
        if any(made.get(int(r), -1) != int(g) for r, g in zip(self.requests, assign)):
            raise ValueError("the prefill term's value is that of the bindings made through it (bound), "
                             "not of another assignment")
        return self.total


__all__ = ["PrefillTerm", "for_call"]
