"""BF-IO with instant dispatch (issue 30): bind each arriving request to the
worker queue that minimizes the discounted predicted imbalance ``J`` over the
window (Eq. (IO)'s objective, :mod:`bfio.solvers.objective`), as the
data-parallel routers of vLLM and SGLang bind a request to one rank's queue
when it arrives (``docs/online.md``).

A worker's predicted load over offsets ``h = 0..W`` is its running requests'
(``s_i + tau_i + h`` while ``h < r_i``, :func:`bfio.profiles.predicted_loads`)
plus its queue admitted first-in first-out into the slots they free: a
worker's ``B`` slots are a heap of release offsets (0 for a free slot, ``r_i``
for a running request); each queued request ``j`` in order takes the earliest
one, ``e_j``, adds ``s_j + (h - e_j)`` for ``e_j <= h < e_j + l_j`` and frees it
again at ``e_j + l_j`` (``l_j``: its lifetime, the objective's new-request model).
An arriving request is appended to the queue of every candidate worker in
turn, the others unchanged; it goes where ``J`` of the whole cluster is
smallest; among ties (a request that raises the envelope nowhere, common in a
lightly loaded cluster, or that enters beyond the window on every worker of an
overloaded one) to the earliest admission, then the least weighted predicted
load after it, then the first such worker. The arrivals of one call are bound one at a
time, in arrival order, each seeing the earlier ones' bindings: the batch of a
step is not optimized jointly (a sequential rule, as the engines' routers are).
"""

from __future__ import annotations

import heapq

import numpy as np


def queue_profiles(base: np.ndarray, release: list[list[int]], queues: list[np.ndarray], sizes: np.ndarray,
                   lifetimes: np.ndarray) -> tuple[np.ndarray, list[list[int]]]:
    """The ``(G, W + 1)`` predicted loads of every worker: ``base`` (its running
    requests) plus its queued requests ``queues[g]`` (ids, FIFO order) admitted
    into the slots of ``release[g]`` (a heap of release offsets, taken over and
    updated); returns the loads and the heaps after the queues."""
    loads = np.asarray(base, dtype=float).copy()
    W1 = loads.shape[1]
    for g, queue in enumerate(queues):
        heap = release[g]
        for j in queue:
            e = heapq.heappop(heap)
            end = min(e + int(lifetimes[j]), W1)
            if e < W1:
                loads[g, e:end] += sizes[j] + np.arange(end - e)
            heapq.heappush(heap, e + int(lifetimes[j]))
    return loads, release


def bind(loads: np.ndarray, release: list[list[int]], requests: np.ndarray, sizes: np.ndarray,
         lifetimes: np.ndarray, weights: np.ndarray, prefill: PrefillTerm | None = None,
         free: np.ndarray | None = None) -> np.ndarray:
    """The worker of each of ``requests`` (arrival order): the one whose queue,
    with the request appended, gives the smallest ``J = sum_h w_h (G max_g L_g(h)
    - sum_g L_g(h))``, plus, with ``prefill``, the cost of the prefill barrier it
    raises (:class:`PrefillTerm`); ``loads`` and ``release`` are updated with each binding.
    ``free`` (central admission, each worker's free slots): only a worker with a free
    slot left is chosen, and it loses one (updated in place)."""
    G, W1 = loads.shape
    h = np.arange(W1)
    out = np.empty(requests.shape[0], dtype=np.int64)
    for k, j in enumerate(requests):
        entry = np.array([heap[0] for heap in release])  # when each worker's queue would admit it
        life = int(lifetimes[j])
        live = (h[None, :] >= entry[:, None]) & (h[None, :] < entry[:, None] + life)
        add = np.where(live, sizes[j] + (h[None, :] - entry[:, None]), 0.0)
        # J with the request on worker g: the envelope is the max of the others' top and g's new load
        first = loads.argmax(axis=0)  # per offset the top worker (the first of equal ones)
        top = loads[first, h]
        if G > 1:
            rest = loads.copy()
            rest[first, h] = -np.inf
            second = rest.max(axis=0)
        else:
            second = np.full(W1, -np.inf)
        others = np.where(first[None, :] == np.arange(G)[:, None], second[None, :], top[None, :])
        envelope = np.maximum(others, loads + add)
        J = (G * envelope - (loads.sum(axis=0)[None, :] + add)) @ weights
        if prefill is not None:
            J = J + prefill.cost(k, G, entry)
        if free is not None:
            J = np.where(free > 0, J, np.inf)
        # ties (the request raises the envelope nowhere, or enters beyond the window
        # everywhere): the earliest admission, then the least weighted predicted load
        best = np.flatnonzero(J <= J.min() + 1e-9 * max(1.0, abs(J.min())))
        best = best[entry[best] == entry[best].min()]
        g = int(best[np.argmin(((loads + add)[best]) @ weights)])
        out[k] = g
        if free is not None:
            free[g] -= 1
        loads[g] += add[g]
        heapq.heapreplace(release[g], int(entry[g]) + life)
        if prefill is not None:
            prefill.bound(k, g)
    return out


class PrefillTerm:
    """BF-IO's prefix-cache term (issue 32), in ``J``'s units (one unit: ``t_l``
    seconds of one rank idle at the barrier; ``scale = token_s / t_l`` converts a
    prefill token). Binding request ``k`` to rank ``g`` adds its uncached prompt
    tokens ``u_g`` to ``g``'s prefill backlog ``P_g``:

    - **the barrier**: ranks prefill in lockstep, so raising ``max_g P_g`` by ``d``
      tokens costs ``token_s d`` seconds of every rank (:mod:`bfio.prefill`),
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

    def __init__(self, view, requests: np.ndarray, sizes: np.ndarray, slots: int):
        self.view = view  # bfio.prefill.CacheView
        self.requests = requests
        self.sizes = sizes
        self.slots = int(slots)
        self.pending = np.asarray(view.pending, dtype=np.float64).copy()
        self.scale = view.token_s / view.decode_token_s if view.decode_token_s > 0 else 0.0
        self._u = None

    def held(self, i: int, entry: np.ndarray) -> np.ndarray:
        """Per rank, the tokens of request ``i``'s prompt the rank will hold when it
        admits ``i`` at window offset ``entry[g]`` (class docstring)."""
        now = self.view.cached_tokens(i)
        if not (entry > 0).any():
            return now
        return np.where(entry > 0, self.view.expected_tokens(i), now)

    def cost(self, k: int, G: int, entry: np.ndarray) -> np.ndarray:
        """Per rank, the ``J``-equivalent cost of request ``k``'s prefill there (class
        docstring); ``entry[g]``: the offset at which ``g``'s queue would admit it."""
        i = int(self.requests[k])
        self._u = self.sizes[i] - self.held(i, entry).astype(np.float64)
        rise = np.maximum(0.0, self.pending + self._u - self.pending.max())
        top = self.pending.max()
        fill = self.pending.mean() / top if top > 0 else 1.0
        return self.scale * (G * rise + fill * self._u + (self.pending + self._u) / self.slots)

    def bound(self, k: int, g: int) -> None:
        self.pending[g] += self._u[g]
        self.view.note(int(self.requests[k]), g)
