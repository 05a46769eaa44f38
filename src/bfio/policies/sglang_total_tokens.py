"""SGLang's data-parallel controller, method ``total_tokens`` (``sglang_total_tokens``).

Source: SGLang ``python/sglang/srt/managers/data_parallel_controller.py``,
``DPBudget`` with ``--load-balance-method total_tokens`` (named
``minimum_tokens`` until pull request #16258, merged, opened 2026-01-01).
``DPBudget.update_budget`` sets, per rank, from the rank's last load report:

- ``total_tokens = num_total_tokens``, which the scheduler computes as
  ``num_used_tokens`` (KV-cache tokens held by its running batch) plus the
  ``seqlen`` of every request in its waiting queue;
- ``total_requests = num_running_reqs + num_waiting_reqs``.

``DPBudget.dispatch`` picks ``min(range(dp_size), key=lambda i:
(total_tokens[i], total_requests[i]))``: fewest tokens, ties broken by fewer
requests, then by the lowest rank (Python's ``min`` keeps the first). It then
adds 1 to the chosen rank's ``total_requests`` and, since pull request #22614
("Fix: Add token heuristic increment in total_tokens load balancing", merged,
opened 2026-04-12), the request's estimated tokens to its ``total_tokens``.
These local increments are SGLang's *pending tokens*: tokens the controller
has dispatched to a rank that the rank has not reported yet. Pull request
#25235 ("Improve DP load balance updates", opened 2026-05-14; closed
unmerged when this was written) would keep them across reports until the
scheduler acknowledges them and count pending output tokens; in the simulator
a dispatched request is in its rank's queue at once, so every later report
includes it and the two coincide. What exactly #25235's "pending output
tokens" adds beyond this is as described in the issue (#18), not verified
against source.

Mapping to the simulator's state: ``num_used_tokens = L_g`` (resident KV,
``sum (s_i + tau_i)`` over the running requests), the waiting requests'
``seqlen`` is their prompt ``s_i`` (``waiting_tokens_g``), so

    (total_tokens_g, total_requests_g) = (L_g + waiting_tokens_g, waiting_g + running_g),

lexicographic minimum, lowest index on ties; each request bound to ``g`` adds
``s_i`` (its estimated tokens: the prompt, ``len(req.input_ids)``, which is what
it holds in the KV cache when admitted) and 1. With ``report_interval > 0`` the
report is the last one the ranks sent, plus the router's own dispatches since
(:class:`bfio.policies.base.InstantPolicy`).

With exact reports this is the project's ``least_tokens`` (``argmin L_g +
waiting_tokens_g``) except on ties, which ``least_tokens`` gives to the lowest
index and SGLang to the rank with fewer requests.

Modes: ``instant`` (what SGLang does) and ``central`` (no per-worker queues:
the free-slot worker with the fewest ``(L_g, |A_g|)``, oldest request first;
``jsq_tokens`` up to the tie-break).
"""

import numpy as np

from bfio.policies import register
from bfio.policies.base import DISPATCH_MODES, DispatchState, InstantPolicy, RoutingState
from bfio.policies.instant import greedy_argmin_lex, greedy_least_loaded_lex


@register
class SglangTotalTokens(InstantPolicy):
    name = "sglang_total_tokens"
    dispatch_modes = DISPATCH_MODES
    default_dispatch = "instant"  # the engine binds a request to a rank on arrival

    def route(self, state: RoutingState) -> np.ndarray:
        return greedy_least_loaded_lex(state.loads.astype(np.float64), state.active.astype(np.float64),
                                       state.free.astype(np.int64), state.pool_prefill.astype(np.float64),
                                       state.admissible)

    def select(self, state: DispatchState, requests: np.ndarray) -> np.ndarray:
        tokens = (state.loads + state.waiting_tokens).astype(np.float64)
        reqs = (state.waiting + state.running).astype(np.float64)
        return greedy_argmin_lex(tokens, reqs, state.prefill_of(requests).astype(np.float64),
                                 np.ones(requests.shape[0], dtype=np.float64))
