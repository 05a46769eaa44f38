"""Join-Shortest-Queue policies (``../shared/spec/semantics.md``, "Baseline policies").

``jsq_tokens`` is the paper tables' "JSQ": each request, oldest first, goes to
the worker with a free slot and the lowest current token load (lowest index on
ties), whose load then grows by the request's ``s``. ``jsq_requests`` is the
paper's prose definition and what vLLM-style routers count: the same with the
number of active requests as the queue length.

``jsq_requests`` also supports ``dispatch="instant"``: each arriving request is
bound to the worker with the fewest waiting + running requests (lowest index on
ties). That is SGLang's ``shortest_queue`` load-balance method
(``sglang/srt/managers/data_parallel_controller.py``: ``DPBudget`` balances
``num_reqs``, "instead of num_waiting_reqs to balance decode running batch"),
renamed ``total_requests`` in January 2026 and registered under that name as
``sglang_total_requests`` (the same rule). Like every instant rule it takes the
``report_interval`` option (:class:`bfio.policies.base.InstantPolicy`).
"""

import numpy as np

from bfio.ground.jit import kernel
from bfio.policies import register
from bfio.policies.base import DISPATCH_MODES, DispatchState, InstantPolicy, Policy, RoutingState
from bfio.policies.instant import greedy_argmin


@kernel
def greedy_least_loaded(key, free, weights, limit):
    """Assign ``limit`` requests in order to the worker with a free slot and the
    smallest ``key`` (lowest index on ties), adding ``weights[j]`` to its key."""
    key = key.copy()
    free = free.copy()
    out = np.full(weights.shape[0], -1, dtype=np.int64)
    G = key.shape[0]
    for j in range(limit):
        best = -1
        for g in range(G):
            if free[g] > 0 and (best < 0 or key[g] < key[best]):
                best = g
        if best < 0:
            break
        out[j] = best
        key[best] += weights[j]
        free[best] -= 1
    return out


@register
class JSQTokens(Policy):
    name = "jsq_tokens"

    def route(self, state: RoutingState) -> np.ndarray:
        return greedy_least_loaded(state.loads.astype(np.float64), state.free.astype(np.int64),
                                   state.pool_prefill.astype(np.float64), state.admissible)


@register
class JSQRequests(InstantPolicy):
    name = "jsq_requests"
    dispatch_modes = DISPATCH_MODES

    def route(self, state: RoutingState) -> np.ndarray:
        ones = np.ones(state.pool.shape[0], dtype=np.float64)
        return greedy_least_loaded(state.active.astype(np.float64), state.free.astype(np.int64),
                                   ones, state.admissible)

    def select(self, state: DispatchState, requests: np.ndarray) -> np.ndarray:
        key = (state.waiting + state.running).astype(np.float64)
        return greedy_argmin(key, np.ones(requests.shape[0], dtype=np.float64))
