"""FCFS (Appendix B, Alg. 2 as implemented by the paper's simulator): fill worker
0's free slots with the oldest requests, then worker 1's, and so on, until
slots or requests run out."""

import numpy as np

from bfio.policies import register
from bfio.policies.base import Policy, RoutingState


@register
class FCFS(Policy):
    name = "fcfs"

    def route(self, state: RoutingState) -> np.ndarray:
        out = np.full(state.pool.shape[0], -1, dtype=np.int64)
        u = state.admissible
        if u:
            out[:u] = np.repeat(np.arange(state.workers), state.free)[:u]
        return out
