"""What the prefix-cache routers read of a :class:`~bfio.policies.base.DispatchState`
(issue 32): the prefill step model's view (:class:`bfio.prefill.CacheView`), the
prompts' block hashes, each rank's in-flight requests and the smallest remaining
output of its running requests. Shared by ``cache_first``, ``tpu_least_loaded``,
``sglang_prefix_match``, ``sgl_cache_aware`` and BF-IO's cache term; no policy here.
"""

from __future__ import annotations

import numpy as np

from bfio.errors import ConfigError
from bfio.policies.base import REQUIREMENTS


def prefill_view(state, policy: str):
    """The state's :class:`~bfio.prefill.CacheView`; a :class:`ConfigError` naming
    ``policy`` when the run has no prefill model (``simulate(prefill=...)``)."""
    if state.prefill is None:
        raise ConfigError(f"policy '{policy}' needs {REQUIREMENTS['prefill']}")
    return state.prefill


def prompt_blocks(state, policy: str):
    """The workload's :class:`~bfio.prefix.PrefixBlocks`, or a :class:`ConfigError`."""
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
