"""Power of two choices: for each request, oldest first, sample two distinct
random workers with a free slot; the one with the lower token load wins (the
first sampled on ties) and its load grows by the request's ``s``."""

import numpy as np

from bfio.policies import register
from bfio.policies.base import Policy, RoutingState


@register
class PowerOfTwo(Policy):
    name = "power_of_two"

    def route(self, state: RoutingState) -> np.ndarray:
        out = np.full(state.pool.shape[0], -1, dtype=np.int64)
        free = state.free.copy()
        loads = state.loads.astype(np.float64).copy()
        s = state.pool_prefill
        for j in range(state.admissible):
            candidates = np.flatnonzero(free > 0)
            if candidates.size == 1:
                g = candidates[0]
            else:
                a, b = self.rng.choice(candidates, size=2, replace=False)
                g = b if loads[b] < loads[a] else a
            out[j] = g
            free[g] -= 1
            loads[g] += s[j]
        return out
