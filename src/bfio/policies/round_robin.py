"""Round robin: requests, oldest first, go to the next worker with a free slot in
cyclic order; the pointer persists across routing calls.

With ``dispatch="instant"`` the ``i``-th arriving request is bound to worker
``i mod G`` whatever its state (the paper's Appendix A definition of RR, and
SGLang's ``round_robin`` load-balance method,
``sglang/srt/managers/data_parallel_controller.py``: ``round_robin_counter``)."""

import numpy as np

from bfio.policies import register
from bfio.policies.base import DispatchState, Policy, RoutingState


@register
class RoundRobin(Policy):
    name = "round_robin"
    label = "Round robin"
    dispatch_modes = ("central", "instant")

    def reset(self, workers, slots):
        self.pointer = 0

    def route(self, state: RoutingState) -> np.ndarray:
        out = np.full(state.pool.shape[0], -1, dtype=np.int64)
        free = state.free.copy()
        G = state.workers
        for j in range(state.admissible):
            for k in range(G):
                g = (self.pointer + k) % G
                if free[g] > 0:
                    out[j] = g
                    free[g] -= 1
                    self.pointer = (g + 1) % G
                    break
        return out

    def dispatch(self, state: DispatchState, requests: np.ndarray) -> np.ndarray:
        G = state.workers
        out = (self.pointer + np.arange(requests.shape[0], dtype=np.int64)) % G
        self.pointer = int((self.pointer + requests.shape[0]) % G)
        return out
