"""What the prefix-cache routers read of a :class:`~bfio.policies.base.DispatchState`
(issue 32): the prefill step model's view (:class:`bfio.sim.cache_view.CacheView`), the
prompts' block hashes, each rank's in-flight requests and the smallest remaining
output of its running requests. Shared by ``cache_first``, ``tpu_least_loaded``,
``sglang_prefix_match``, ``sgl_cache_aware`` and BF-IO's cache term; no policy here.
"""

from __future__ import annotations

import numpy as np

from bfio.ground.errors import ConfigError
from bfio.policies.base import REQUIREMENTS


def prefill_view(state, policy: str):
    """The state's :class:`~bfio.sim.cache_view.CacheView`; a :class:`ConfigError` naming
    ``policy`` when the run has no prefill model (``simulate(prefill=...)``)."""
    if state.prefill is None:
        raise ConfigError(f"policy '{policy}' needs {REQUIREMENTS['prefill']}")
    return state.prefill


def prompt_blocks(state, policy: str):
    """The workload's :class:`~bfio.engine.prefix.PrefixBlocks`, or a :class:`ConfigError`."""
    if state.workload.blocks is None:
        raise ConfigError(f"policy '{policy}' needs {REQUIREMENTS['blocks']}")
    return state.workload.blocks


def inflight(state) -> np.ndarray:
    """Per rank, its queued plus running requests (what a front end counts)."""
    return (np.asarray(state.waiting) + np.asarray(state.running)).astype(np.int64)


def min_remaining_output(state) -> np.ndarray:
    """Per rank, the fewest output tokens any running request has left (0 for a
    rank with none). The engine reads ``max_tokens - generated``; the simulator's
    requests stop at their true length, which stands for the cap here."""
    sr = state.slot_request
    out = np.zeros(state.workers, dtype=np.int64)
    if sr is None:
        return out
    decode = state.workload.decode
    for g in range(state.workers):
        ids = sr[g][sr[g] >= 0]
        if ids.size:
            out[g] = int((decode[ids] - state.generated[ids]).min())
    return out


def bind_by_rank_state(state, requests: np.ndarray, policy: str, pick) -> np.ndarray:
    """tpu-inference's DP scheduler loop (``cache_first``, ``tpu_least_loaded``): each
    request in arrival order goes to ``pick(cached, uncached, pending, inflight,
    min_remaining)`` (per-rank arrays: the tokens each rank's cache holds of its
    prompt, the rest, the ranks' prefill backlog, in-flight requests and
    :func:`min_remaining_output`); the chosen rank then gains the request's
    uncached tokens and one in-flight request before the next request."""
    view = prefill_view(state, policy)
    pending = view.pending.copy()
    flight = inflight(state)
    remaining = min_remaining_output(state)
    prompts = state.prefill_of(requests).astype(np.int64)
    out = np.empty(requests.shape[0], dtype=np.int64)
    for k, i in enumerate(requests.tolist()):
        cached = view.cached_tokens(i)
        uncached = prompts[k] - cached
        g = int(pick(cached, uncached, pending, flight, remaining))
        out[k] = g
        pending[g] += uncached[g]
        flight[g] += 1
    return out
