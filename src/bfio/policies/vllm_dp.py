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
KV-cache pressure); ``vllm_dp`` is the ``waiting * 4 + running`` rule before it,
``vllm_dp_kv`` the rule after it.

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
from bfio.policies.base import DISPATCH_MODES, DispatchState, InstantPolicy, RoutingState
from bfio.ground.options import Option
from bfio.engine.prefix import KV_TOKENS_PER_RANK
from bfio.policies.instant import greedy_argmin, rotating_argmin
from bfio.policies.jsq import JSQRequests

#: vLLM's weight of a waiting request relative to a running one.
WAITING_WEIGHT = 4


@register
class VllmDP(JSQRequests):
    name = "vllm_dp"
    dispatch_modes = DISPATCH_MODES
    default_dispatch = "instant"  # the engine binds a request to a rank on arrival

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
    (``docs/online.md``): the pull request's description and vLLM's
    ``core_client.py`` at commit 00080ee in the code index
    (``eng_start_index = (eng_start_index + 1) % num_engines``). ``vllm_dp`` is
    the rule before it (ties to the lowest rank); ``vllm_dp_kv`` the score of
    #49204 that followed."""

    name = "vllm_dp_rotating"

    def reset(self, workers: int, slots: int) -> None:
        super().reset(workers, slots)
        self._start = 0

    def select(self, state: DispatchState, requests: np.ndarray) -> np.ndarray:
        key = (WAITING_WEIGHT * state.waiting + state.running).astype(np.float64)
        G = key.shape[0]
        out = np.empty(requests.shape[0], dtype=np.int64)
        for j in range(requests.shape[0]):
            g = rotating_argmin(key, self._start % G)
            self._start += 1
            out[j] = g
            key[g] += WAITING_WEIGHT
        return out


#: KV-cache pressure above which vLLM #49204 penalizes waiting requests, and the
#: penalty's slope: ``waiting * 6 * max(0, usage - 0.5)`` (3x waiting at 100%).
KV_PENALTY_FROM = 0.5
KV_PENALTY_SLOPE = 6.0


@register
class VllmDPKV(InstantPolicy):
    """vLLM's balancer after pull request #49204 ("[Core] Fix internal LB
    load-balancing", merged July 2026), with the rotating tie-break of #47420.

    Source: ``vllm/v1/engine/core_client.py``,
    ``DPLBAsyncMPClient.get_core_engine_for_request`` (read in the code index at
    vLLM commit 00080ee). For each engine, scanned from a start index that
    advances by one after every selection, with a strict ``<``::

        score = max(client_count * inflight, waiting + running)
        if waiting:
            score += waiting * 6.0 * max(0.0, kv_cache_usage - 0.5)

    ``inflight`` is the front end's own exact count of its unfinished requests
    on the engine; ``waiting``, ``running`` and ``kv_cache_usage`` come from the
    coordinator's stats (the chosen engine's ``waiting`` bumped by
    ``client_count`` until the next stats update). The ``4 x waiting`` weight of
    the older rule is gone: without KV pressure the score counts in-flight
    requests, with it a queue on a KV-bound engine repels new requests.

    Mapping to the simulator (one API-server client, ``client_count = 1``):
    ``inflight_g`` is the exact ``waiting_g + running_g`` whatever
    ``report_interval`` is (the front end counts its dispatches and the
    completions it streams); ``waiting``, ``running`` and the KV usage come from
    the router's view (exact, or the last report plus its own dispatches);
    ``kv_cache_usage_g = L_g / kv_tokens_per_rank``, the resident KV tokens of
    the running requests over the rank's KV budget. That budget is this option,
    not the prefill model's ``kv_tokens`` (which bounds admission and, with
    ``preemption``, decode growth); without the latter the simulator does not
    enforce it, so ``L_g`` may exceed it. The usage is capped at 1, as vLLM's is
    (``vllm/v1/core/block_pool.py``, ``BlockPool.get_usage``: ``1 - free / total``
    blocks, between 0 and 1): a KV-bound rank reads as full.
    """

    name = "vllm_dp_kv"
    dispatch_modes = ("instant",)  # a front end's rule; without queues it would be jsq_requests
    options = InstantPolicy.options + (
        Option("kv_tokens_per_rank", int, KV_TOKENS_PER_RANK,
               "vllm_dp_kv: a rank's KV-cache budget in tokens, the denominator of its kv_cache_usage "
               "(default: an A100-80GB serving an 8B model, docs/prefix_cache.md)", minimum=1,
               identity="non-default", metavar="TOKENS"),)

    def __init__(self, seed: int = 0, **options):
        super().__init__(seed=seed, **options)
        self._start = 0

    def reset(self, workers: int, slots: int) -> None:
        super().reset(workers, slots)
        self._start = 0

    def dispatch(self, state: DispatchState, requests: np.ndarray) -> np.ndarray:
        # the front end's exact in-flight counts, whatever the reports lag
        self._inflight = (np.asarray(state.waiting) + np.asarray(state.running)).astype(np.float64)
        return super().dispatch(state, requests)

    def select(self, state: DispatchState, requests: np.ndarray) -> np.ndarray:
        G = state.workers
        inflight = self._inflight.copy()
        waiting = np.asarray(state.waiting, dtype=np.float64).copy()
        running = np.asarray(state.running, dtype=np.float64)
        # vLLM's kv_cache_usage is the used share of the block pool (at most 1):
        # KVCacheManager.usage, BlockPool.get_usage() = 1 - free / total blocks
        usage = np.minimum(np.asarray(state.loads, dtype=np.float64) / self.option_values["kv_tokens_per_rank"], 1.0)
        pressure = KV_PENALTY_SLOPE * np.maximum(0.0, usage - KV_PENALTY_FROM)
        out = np.empty(requests.shape[0], dtype=np.int64)
        for j in range(requests.shape[0]):
            score = np.maximum(inflight, waiting + running) + waiting * pressure
            g = rotating_argmin(score, self._start)
            self._start = (self._start + 1) % G
            out[j] = g
            waiting[g] += 1.0
            inflight[g] += 1.0
        return out
