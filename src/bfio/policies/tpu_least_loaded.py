"""tpu-inference's DP scheduler after PR #3315 (merged 2026-08-01): minimise the
resulting maximum rank load (``tpu_least_loaded``).

Source: vllm-project/tpu-inference PR #3315, "Route DP requests by minimising
the resulting maximum rank load" (description): ``load(r) = pending_prefill[r]
+ (num_tokens - cached_on_rank[r])`` and ``rank = argmin (load(r), inflight[r],
min_remaining_output[r])``, the request's contribution being its prompt less
the tokens the rank's prefix cache holds; "with prefix caching disabled this
is identical to the previous behaviour" (the fallback of ``cache_first``). The
code itself was not read at source here (the description is); the tie order
past the three keys (lowest rank) is this project's.

Mapping as in :mod:`bfio.policies.cache_first`. Instant dispatch only; needs
the prefill step model.
"""

from __future__ import annotations

import numpy as np

from bfio.policies import register
from bfio.policies.base import DispatchState, InstantPolicy
from bfio.policies.prefix_state import bind_by_rank_state


@register
class TpuLeastLoaded(InstantPolicy):
    name = "tpu_least_loaded"
    dispatch_modes = ("instant",)
    requires = ("prefill",)

    def select(self, state: DispatchState, requests: np.ndarray) -> np.ndarray:
        return bind_by_rank_state(state, requests, self.name, lambda cached, uncached, pending, flight, remaining:
                                  np.lexsort((remaining, flight, pending + uncached))[0])
