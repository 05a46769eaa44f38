"""tpu-inference's DP scheduler before PR #3315: prefix-cache affinity first
(``cache_first``).

Source: vllm-project/tpu-inference ``tpu_inference/core/sched/dp_scheduler.py``,
``DPScheduler._find_best_rank_for_request`` as quoted in PR #2577 (review,
2026-05-14), PR #3307 (2026-07-31, "gives prefix cache affinity absolute
priority") and PR #3315 ("Before"): every rank is probed for the prompt's
computed blocks (``SchedulerCommand.PROBE_COMPUTED_BLOCKS``); the first rank
with the most cached tokens (strict ``>``) wins whenever that is more than 0,
whatever its load; otherwise the rank with the lexicographically smallest
``(pending prefill tokens, in-flight requests, min remaining output)`` (PR #2780
added the last two keys). PR #3307 shows the consequence this policy exists to
measure: GRPO streams sharing a prompt all probe-hit the rank that first cached
it, "the entire group pins to a single rank".

Mapping: the probe reads the rank's prefix cache (blocks enter it when a
prefill completes, :mod:`bfio.engine.prefill`); pending prefill is the rank's queued
prompt tokens plus its running requests' uncomputed ones
(:class:`~bfio.sim.cache_view.CacheView`); each binding adds the request's uncached
tokens and one in-flight request to the chosen rank before the next request.
Instant dispatch only; needs the prefill step model.
"""

from __future__ import annotations

import numpy as np

from bfio.policies import register
from bfio.policies.base import DispatchState, InstantPolicy
from bfio.policies.prefix_state import bind_by_rank_state


@register
class CacheFirst(InstantPolicy):
    name = "cache_first"
    dispatch_modes = ("instant",)
    requires = ("prefill",)

    def select(self, state: DispatchState, requests: np.ndarray) -> np.ndarray:
        def pick(cached, uncached, pending, flight, remaining):
            if cached.max() > 0:
                return np.argmax(cached)  # the first rank with the most cached tokens
            return np.lexsort((remaining, flight, pending))[0]

        return bind_by_rank_state(state, requests, self.name, pick)
