"""vLLM's data-parallel load balancer (``vllm_dp``).

vLLM v1 with ``--data-parallel-size > 1`` and its internal load balancer routes
each request, when it arrives at the API server, to the engine (DP rank) with
the lowest score ``waiting * 4 + running``, its engine-reported waiting and
running request counts; ties go to the first engine scanned, which for a single
API-server client is the lowest rank. The engine keeps the request for life
(``vllm/v1/engine/core_client.py``, ``DPLBAsyncMPClient.get_core_engine_for_request``;
counts published by ``vllm/v1/engine/coordinator.py``, ``DPCoordinator``). After
choosing, vLLM bumps its local copy of the chosen engine's waiting count until
the next stats update. With the default ``report_interval=0`` the simulator's
state is exact and updated per binding, so it needs no such estimate; with
``report_interval=k`` the router sees the ranks' last report plus its own
dispatches (each adds 1 to ``waiting``), which is that estimate
(:class:`bfio.policies.base.InstantPolicy`). ``vllm_token_lb`` is the same
balancer with token counts (``--data-parallel-token-lb``). vLLM pull request
#49204 ("[Core] Fix internal LB load-balancing", merged, July 2026) later
changed this score (in-flight requests per client, waiting requests weighted by
KV-cache pressure); ``vllm_dp`` is the ``waiting * 4 + running`` rule before it.

Modes (``docs/online.md``):

- ``instant`` (what vLLM does): each arriving request is bound to
  ``argmin_g 4 * waiting_g + running_g`` (lowest index on ties) and waits in
  that worker's FIFO queue;
- ``central``: with one shared pool there are no per-worker waiting queues
  (``waiting_g = 0``), so the score is the running count alone and the rule is
  exactly ``jsq_requests`` (oldest first, to the worker with a free slot and the
  fewest active requests). It is accepted so a study can run every policy in
  both modes, and it is reported under its own name.
"""

import numpy as np

from bfio.policies import register
from bfio.policies.base import DISPATCH_MODES, DispatchState, RoutingState
from bfio.policies.instant import greedy_argmin
from bfio.policies.jsq import JSQRequests

#: vLLM's weight of a waiting request relative to a running one.
WAITING_WEIGHT = 4


@register
class VllmDP(JSQRequests):
    name = "vllm_dp"
    label = "vLLM DP"
    dispatch_modes = DISPATCH_MODES

    def route(self, state: RoutingState) -> np.ndarray:
        return super().route(state)

    def select(self, state: DispatchState, requests: np.ndarray) -> np.ndarray:
        key = (WAITING_WEIGHT * state.waiting + state.running).astype(np.float64)
        return greedy_argmin(key, np.full(requests.shape[0], float(WAITING_WEIGHT)))


@register
class VllmDPRotating(VllmDP):
    """vLLM's balancer with the rotating tie-break of pull request #47420 (July
    2026): the engines are scanned from a start index that advances by one after
    every selection (``eng_start_index``), so fully tied engines take turns
    instead of the lowest rank taking every tie; the score is unchanged
    (``waiting * 4 + running``, the chosen engine's waiting count bumped). Source
    status (``docs/online.md``): the rotation is described by a design note on
    vLLM's ``core_client.py`` in the code index; the pull request itself could
    not be read here (the vLLM snapshot exceeds the fetch limit). ``vllm_dp`` is
    the rule before it (ties to the lowest rank)."""

    name = "vllm_dp_rotating"
    label = "vLLM DP (rotating)"

    def reset(self, workers: int, slots: int) -> None:
        super().reset(workers, slots)
        self._start = 0

    def select(self, state: DispatchState, requests: np.ndarray) -> np.ndarray:
        key = (WAITING_WEIGHT * state.waiting + state.running).astype(np.float64)
        G = key.shape[0]
        out = np.empty(requests.shape[0], dtype=np.int64)
        for j in range(requests.shape[0]):
            scan = (self._start + np.arange(G)) % G
            g = int(scan[np.argmin(key[scan])])  # the first minimum in scan order
            self._start += 1
            out[j] = g
            key[g] += WAITING_WEIGHT
        return out
