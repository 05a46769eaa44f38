"""Random: each request, oldest first, goes to a worker drawn uniformly among
the workers that still have a free slot (seeded)."""

import numpy as np

from bfio.policies import register
from bfio.policies.base import Policy, RoutingState


@register
class RandomChoice(Policy):
    name = "random"

    def route(self, state: RoutingState) -> np.ndarray:
        out = np.full(state.pool.shape[0], -1, dtype=np.int64)
        free = state.free.copy()
        for j in range(state.admissible):
            g = self.rng.choice(np.flatnonzero(free > 0))
            out[j] = g
            free[g] -= 1
        return out
