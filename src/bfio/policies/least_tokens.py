"""Token-aware shortest queue (``least_tokens``).

Each arriving request is bound to the worker with the fewest tokens: its
resident KV load ``L_g = sum_{i in A_g} (s_i + tau_i)`` plus the prompt tokens
of the requests already queued on it (lowest index on ties); the chosen
worker's queued tokens then grow by the request's ``s``. This is the
token-counting variant of the "shortest queue" rules of production
data-parallel routers: SGLang's ``--load-balance-method minimum_tokens``
(``sglang/srt/managers/data_parallel_controller.py``; current releases mark it
deprecated and fall back to round robin) and the load-based fallback of the
SGLang router's ``cache_aware`` policy, with tokens instead of request counts
as the load, which the paper's Appendix A argues is the right proxy for
barrier-gated decode.

Modes (``docs/online.md``):

- ``instant``: the rule above, each worker serving its own FIFO queue;
- ``central``: with one shared pool nothing is queued per worker, so the key is
  the resident load alone and the rule is exactly ``jsq_tokens`` (the paper's
  tables' JSQ: oldest first, to the free-slot worker with the lowest load).
"""

import numpy as np

from bfio.policies import register
from bfio.policies.base import DISPATCH_MODES, DispatchState, InstantPolicy, RoutingState
from bfio.policies.instant import greedy_argmin
from bfio.policies.jsq import JSQTokens


@register
class LeastTokens(InstantPolicy, JSQTokens):
    name = "least_tokens"
    dispatch_modes = DISPATCH_MODES

    def route(self, state: RoutingState) -> np.ndarray:
        return super().route(state)

    def select(self, state: DispatchState, requests: np.ndarray) -> np.ndarray:
        key = (state.loads + state.waiting_tokens).astype(np.float64)
        return greedy_argmin(key, state.prefill_of(requests).astype(np.float64))
