"""SGLang's data-parallel controller, method ``total_requests`` (``sglang_total_requests``).

Source: SGLang ``python/sglang/srt/managers/data_parallel_controller.py``,
``DPBudget`` with ``--load-balance-method total_requests``. The method was
called ``shortest_queue`` until pull request #16258 ("[dpc]: unify DP
controller load balancing and simplify dispatch logic", merged, opened
2026-01-01), which renamed it and made ``DPBudget`` a greedy dispatcher on the
ranks' reported loads. ``DPBudget.update_budget`` sets, per rank,
``total_requests = num_running_reqs + num_waiting_reqs`` from the rank's last
load report; ``DPBudget.dispatch`` picks
``total_requests.index(min(total_requests))`` (the lowest rank on ties) and
then adds 1 to the chosen rank's ``total_requests`` until the next report.

Mapping to the simulator's state: ``num_running_reqs = running_g`` (``|A_g|``)
and ``num_waiting_reqs = waiting_g`` (requests queued on ``g``), so the rule is
``argmin_g waiting_g + running_g``, lowest index on ties, each binding adding
1. That is exactly the instant rule of ``jsq_requests`` (this class is that
rule under SGLang's name and source; ``tests/test_production_routers.py``
checks the two are bit-identical), also with ``report_interval > 0``, where
the router's own dispatches since the last report add 1 each
(:class:`bfio.policies.base.InstantPolicy`), as ``DPBudget.dispatch`` does.

Modes: ``instant`` (what SGLang does) and ``central`` (no per-worker queues:
fewest active requests among the free-slot workers, = ``jsq_requests``).
"""

from bfio.policies import register
from bfio.policies.base import DISPATCH_MODES
from bfio.policies.jsq import JSQRequests


@register
class SglangTotalRequests(JSQRequests):
    name = "sglang_total_requests"
    dispatch_modes = DISPATCH_MODES
    default_dispatch = "instant"  # the engine binds a request to a rank on arrival
