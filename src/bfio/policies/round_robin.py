"""Round robin: requests, oldest first, go to the next worker with a free slot in
cyclic order; the pointer persists across routing calls."""

import numpy as np

from bfio.policies import register
from bfio.policies.base import Policy, RoutingState


@register
class RoundRobin(Policy):
    name = "round_robin"

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
