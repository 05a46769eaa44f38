"""Round robin: requests, oldest first, go to the next worker with a free slot in
cyclic order; the pointer persists across routing calls.

With ``dispatch="instant"`` the ``i``-th arriving request is bound to worker
``i mod G`` whatever its state (the paper's Appendix A definition of RR, and
SGLang's default data-parallel method ``--load-balance-method round_robin``:
``DataParallelController.round_robin_scheduler`` in
``python/sglang/srt/managers/data_parallel_controller.py`` sends each request
to ``workers[round_robin_counter]`` and advances the counter modulo the number
of ranks; unchanged by the January 2026 refactor, pull request #16258). The
rule reads no load, so the ``report_interval`` option (lagging load reports,
:class:`bfio.policies.base.InstantPolicy`) has no effect on it."""

import numpy as np

from bfio.policies import register
from bfio.policies.base import DISPATCH_MODES, DispatchState, InstantPolicy, RoutingState


@register
class RoundRobin(InstantPolicy):
    name = "round_robin"
    dispatch_modes = DISPATCH_MODES

    def reset(self, workers, slots):
        super().reset(workers, slots)
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

    def select(self, state: DispatchState, requests: np.ndarray) -> np.ndarray:
        G = state.workers
        out = (self.pointer + np.arange(requests.shape[0], dtype=np.int64)) % G
        self.pointer = int((self.pointer + requests.shape[0]) % G)
        return out
