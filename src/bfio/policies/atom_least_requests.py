"""ROCm ATOM's data-parallel balancer, default strategy ``least_requests``
(``atom_least_requests``).

Source: ROCm/ATOM ``atom/model_engine/engine_core_mgr.py``,
``CoreManager._select_dp_rank_locked`` (read at commit ffdf3bb, 2026-08-22;
the strategy became the default with PR #1638, ``DP_LB_DEFAULT =
"least_requests"``), with its tests ``tests/test_dp_load_balance.py``. The
front end keeps, per rank, the *in-flight* requests it dispatched and has not
seen finish (``_rank_reqs``, +1 at dispatch, -1 at finish or abort) and their
prompt tokens (``_rank_tokens``, ``num_prompt_tokens``), and picks the
lexicographic minimum of ``(requests, prompt tokens)``, scanning the ranks from
a rotating start (``_rank_rotation_cursor``, advanced at every selection) with
a strict ``<``: fully tied ranks are resolved by the rotation, not by rank 0.

Mapping to the simulator's state: a rank's in-flight requests are its queued
plus running ones (``waiting_g + running_g``), their prompt tokens
``waiting_tokens_g + running_prompt_tokens_g``; each binding adds 1 and
``s_i`` to the chosen rank before the next request is placed, as the counters
do. ATOM's counters are the front end's own, so they are exact
(``report_interval = 0``, the default, is ATOM's behaviour; a positive
interval models a router that only sees periodic reports instead).
"""

from __future__ import annotations

import numpy as np

from bfio.policies import register
from bfio.policies.base import DispatchState, InstantPolicy


@register
class AtomLeastRequests(InstantPolicy):
    name = "atom_least_requests"
    dispatch_modes = ("instant",)

    def reset(self, workers: int, slots: int) -> None:
        super().reset(workers, slots)
        self._cursor = 0

    def select(self, state: DispatchState, requests: np.ndarray) -> np.ndarray:
        G = state.workers
        reqs = (np.asarray(state.waiting) + np.asarray(state.running)).astype(np.int64)
        running_tokens = (np.zeros(G, dtype=np.int64) if state.running_prompt_tokens is None
                          else np.asarray(state.running_prompt_tokens, dtype=np.int64))
        tokens = np.asarray(state.waiting_tokens, dtype=np.int64) + running_tokens
        prompts = state.prefill_of(requests).astype(np.int64)
        out = np.empty(requests.shape[0], dtype=np.int64)
        for k in range(requests.shape[0]):
            scan = (self._cursor + np.arange(G)) % G  # the rotating start
            order = np.lexsort((tokens[scan], reqs[scan]))  # (requests, tokens); stable: scan order on full ties
            g = int(scan[order[0]])
            self._cursor += 1
            out[k] = g
            reqs[g] += 1
            tokens[g] += prompts[k]
        return out
