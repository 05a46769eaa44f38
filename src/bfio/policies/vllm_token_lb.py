"""vLLM's token-level data-parallel load balancing (``vllm_token_lb``).

Source: vLLM pull request #40795, "[Core] Token-level DP load balancing for
prefill-heavy workloads" (qianlihuang, opened 2026-04-24; still open when this
was written, so it is not in a vLLM release). It adds the flag
``--data-parallel-token-lb`` (default off), which replaces the request-count
score of vLLM's internal DP load balancer (``vllm_dp``: ``waiting * 4 +
running``, ``vllm/v1/engine/core_client.py``) with

    score_g = 4 * waiting_tokens_g + running_tokens_g,

lowest score wins. The engines report both token counts beside their request
counts. In the pull request's scheduler change (``vllm/v1/core/sched/scheduler.py``,
the revision reviewed on 2026-04-24) they are the tokens *still to be
computed*: ``running_tokens = sum(num_tokens - num_computed_tokens)`` over the
running requests and ``waiting_tokens`` the same sum over the waiting (and
skipped-waiting) requests. Ties and the scan order are those of ``vllm_dp``:
the engines are scanned from the first and the first strict minimum is kept,
so with one API-server client the lowest rank wins a tie.

Mapping to the simulator's state (``DispatchState``):

- ``waiting_tokens_g``: the prompt tokens ``s_i`` of the requests queued on
  ``g`` (``state.waiting_tokens``): a queued request has computed nothing;
- ``running_tokens_g`` (option ``running_tokens``):
  ``uncomputed`` (default, the pull request's definition): the simulator has no
  prefill phase (an admitted request's prompt is in its KV cache, ``L_g``
  counts it) and a running request computes exactly one token per step, so
  ``num_tokens - num_computed_tokens = 1`` and ``running_tokens_g = running_g``
  (``|A_g|``); ``resident``: the resident KV tokens ``L_g = sum (s_i + tau_i)``,
  the reading in which "tokens" means KV-cache load (not vLLM's definition,
  kept to show what that reading would change).

Each request bound to ``g`` adds ``4 s_i`` to ``g``'s score for the next
request of the same call (it now waits there). With ``report_interval > 0``
the router sees the ranks' last report plus its own dispatches since then
(each adds ``s_i`` to ``waiting_tokens_g``; :class:`bfio.policies.base.InstantPolicy`).
How the pull request updates its local copy between reports is not verified
against its source; vLLM's request-count balancer adds 1 to the chosen
engine's waiting count, and the token count is the direct analogue.

Modes (``docs/online.md``):

- ``instant`` (what vLLM does): the rule above, each worker serving its own
  FIFO queue;
- ``central``: with one shared pool nothing is queued per worker
  (``waiting_tokens_g = 0``), so the score is ``running_tokens_g`` alone: the
  rule is exactly ``jsq_requests`` (``uncomputed``) or ``jsq_tokens``
  (``resident``), oldest first to the free-slot worker with the lowest score.
"""

import numpy as np

from bfio.policies import register
from bfio.ground.options import Option
from bfio.policies.base import DISPATCH_MODES, DispatchState, InstantPolicy, RoutingState
from bfio.policies.instant import greedy_argmin
from bfio.policies.jsq import greedy_least_loaded

#: vLLM's weight of waiting work relative to running work.
WAITING_WEIGHT = 4
#: What ``running_tokens_g`` counts (see the module docstring).
RUNNING_TOKENS = ("uncomputed", "resident")


@register
class VllmTokenLB(InstantPolicy):
    name = "vllm_token_lb"
    dispatch_modes = DISPATCH_MODES
    default_dispatch = "instant"  # the engine binds a request to a rank on arrival
    options = InstantPolicy.options + (
        Option("running_tokens", str, "uncomputed",
               "what running_tokens_g counts: uncomputed (the pull request's definition; the simulator "
               "computes one token per running request per step, so it is |A_g|) | resident (the resident KV "
               "tokens L_g)", choices=RUNNING_TOKENS, identity="non-default"),)

    def __init__(self, seed: int = 0, **options):
        super().__init__(seed=seed, **options)
        self.running_tokens = self.option_values["running_tokens"]

    def _running_key(self, running: np.ndarray, loads: np.ndarray) -> np.ndarray:
        return (running if self.running_tokens == "uncomputed" else loads).astype(np.float64)

    def route(self, state: RoutingState) -> np.ndarray:
        weights = (np.ones(state.pool.shape[0], dtype=np.float64) if self.running_tokens == "uncomputed"
                   else state.pool_prefill.astype(np.float64))
        return greedy_least_loaded(self._running_key(state.active, state.loads), state.free.astype(np.int64),
                                   weights, state.admissible)

    def select(self, state: DispatchState, requests: np.ndarray) -> np.ndarray:
        key = WAITING_WEIGHT * state.waiting_tokens.astype(np.float64) + self._running_key(state.running, state.loads)
        return greedy_argmin(key, WAITING_WEIGHT * state.prefill_of(requests).astype(np.float64))
