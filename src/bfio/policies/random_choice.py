"""Random: each request, oldest first, goes to a worker drawn uniformly among
the workers that still have a free slot (seeded).

With ``dispatch="instant"`` each arriving request is bound to a worker drawn
uniformly among all ``G`` (seeded)."""

import numpy as np

from bfio.policies import register
from bfio.policies.base import DISPATCH_MODES, DispatchState, InstantPolicy, RoutingState


@register
class RandomChoice(InstantPolicy):
    name = "random"
    dispatch_modes = DISPATCH_MODES

    def route(self, state: RoutingState) -> np.ndarray:
        out = np.full(state.pool.shape[0], -1, dtype=np.int64)
        free = state.free.copy()
        for j in range(state.admissible):
            g = self.rng.choice(np.flatnonzero(free > 0))
            out[j] = g
            free[g] -= 1
        return out

    def select(self, state: DispatchState, requests: np.ndarray) -> np.ndarray:
        return self.rng.integers(0, state.workers, size=requests.shape[0]).astype(np.int64)
