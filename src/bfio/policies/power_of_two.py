"""Power of two choices: for each request, oldest first, sample two distinct
random workers with a free slot; the one with the lower token load wins (the
first sampled on ties) and its load grows by the request's ``s``.

With ``dispatch="instant"`` the two candidates are drawn among all workers and
compared on tokens: resident load plus the prompt tokens already queued on
them (Mitzenmacher's power of two choices; the SGLang router's
``power_of_two`` policy compares worker loads the same way)."""

import numpy as np

from bfio.policies import register
from bfio.policies.base import DISPATCH_MODES, DispatchState, InstantPolicy, RoutingState
from bfio.policies.instant import distinct_pairs, two_choices


@register
class PowerOfTwo(InstantPolicy):
    name = "power_of_two"
    dispatch_modes = DISPATCH_MODES

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

    def select(self, state: DispatchState, requests: np.ndarray) -> np.ndarray:
        first, second = distinct_pairs(self.rng, state.workers, requests.shape[0])
        key = (state.loads + state.waiting_tokens).astype(np.float64)
        return two_choices(key, first, second, state.prefill_of(requests).astype(np.float64))
