"""The step loop of barrier-synchronized data-parallel decode (Section 3; the
simulator of Section 6.2), written over its parts: the checked arguments
(:mod:`bfio.sim.setup`), the cluster state (:mod:`bfio.sim.state`), an entry
strategy (:mod:`bfio.sim.entry`), a dispatch part (:mod:`bfio.sim.dispatch`), a
step engine (:mod:`bfio.sim.engine`) and the result (:mod:`bfio.sim.result`).
``docs/architecture.md`` draws how they fit.
"""

from __future__ import annotations

import time

import numpy as np

from bfio.ground.constants import PaperConstants
from bfio.ground.errors import PolicyError
from bfio.engine.prefill import Prefill, PrefillModel
from bfio.ground.progress import progress
from bfio.sim.dispatch import Dispatch, make_dispatch
from bfio.sim.entry import Entry, make_entry
from bfio.sim.engine import make_engine
from bfio.sim.result import assemble
from bfio.sim.pooled import reference_run
from bfio.sim.setup import setup
from bfio.sim.state import ClusterState
from bfio.engine.simulation_result import SimulationResult
from bfio.step_model import StepModel
from bfio.workloads.workload import Workload


def simulate(workload: Workload, workers: int, slots: int, policy="fcfs", *, seed: int = 0,
             constants: PaperConstants | None = None, entry: str = "backlog",
             record_loads: bool = False, show_progress: bool | None = None,
             policy_options: dict | None = None, dispatch: str = "central",
             fast_forward: bool = True, admission_mode: str | None = None,
             prefill: PrefillModel | None = None, step_model: StepModel | str | None = None,
             queue_moves: str = "none", rank_pause: str = "none",
             rank_pause_options: dict | None = None, migration: str = "none",
             migration_options: dict | None = None, reference: str = "none") -> SimulationResult:
    """Run ``workload`` on ``workers`` x ``slots`` under ``policy`` (a name or a
    :class:`~bfio.policies.Policy`) and return a :class:`SimulationResult`.

    ``seed`` seeds randomized policies (the workload is drawn separately, see
    :func:`bfio.workloads.workload.draw_workload`). ``entry``: ``backlog`` (the
    paper's pool of ``pool_factor * G``) or ``arrivals`` (requests enter at
    ``workload.arrival_s``); ``admission_mode`` is its former name, accepted with
    a ``DeprecationWarning`` for one release. ``dispatch``: ``central`` (the paper's shared pool)
    or ``instant`` (per-worker FIFO queues bound at arrival; the policy must list
    ``"instant"`` in its ``dispatch_modes``). With ``backlog`` and ``instant``,
    topped-up requests are dispatched when they enter the pool.

    ``fast_forward`` (default on) runs the steps between two routing calls that
    can change anything (nothing waits: until the next arrival, or to the end
    once every request has entered) in one kernel call instead of one step at a
    time; the results are identical, bit for bit (``False`` is the plain step
    loop, kept for checking that).

    ``prefill`` (:class:`bfio.engine.prefill.PrefillModel`, issue 32): chunked prefill
    in the step and, with ``cache_blocks`` and a workload with ``blocks``,
    per-rank prefix caches; adds TTFT and cache metrics. ``None`` (the default)
    is the paper's step loop, unchanged. Its ``kv_tokens`` bounds admission (both
    dispatch forms) and, with ``preemption`` ``vllm`` or ``sglang`` (issue 44,
    :mod:`bfio.sim.preemption`), decode growth: a rank over its KV memory evicts
    running requests, which are recomputed when admitted again.

    ``step_model`` (:class:`bfio.step_model.StepModel` or its name, issue 44,
    ``docs/step_model.md``): ``None`` or ``"paper"`` (the default) is the paper's
    ``dt = C + t_l max_g L_g``, unchanged; ``calibrated`` the lockstep step fitted
    to public kernel profiles (read from the data directory, sha256-verified).

    ``queue_moves`` (issue 45, :mod:`bfio.sim.moves`; ``dispatch="instant"`` only):
    ``none`` (the default: a request stays in the queue it was bound to),
    ``sglang_balancer`` (SGLang PR #37401's waiting-queue balancer) or ``bfio``
    (the policy's ``plan_moves``: BF-IO moves a queued request when that lowers its
    ``J``); a moved request is re-bound to another rank's queue before it is admitted.

    ``rank_pause`` (issue 45, :mod:`bfio.sim.pause`; ``dispatch="instant"`` only):
    ``none`` (the default) or ``dyntra_lb`` (vllm-ascend PR #12292's DyntraLB: a
    per-step plan over the ranks' KV-block counts that pauses running requests,
    keeping their KV, and pauses ranks' admissions); ``rank_pause_options`` the
    rule's options (DyntraLB's: :data:`bfio.sim.pause.DYNTRA_DEFAULTS`).

    ``migration`` (issue 45, :mod:`bfio.sim.migration`; ``dispatch="instant"`` only):
    ``none`` (the default), ``roll`` (alibaba/ROLL PR #134: the most loaded rank's
    waiting, then shortest running requests are interrupted, half the spread of the
    ranks' in-flight counts, and re-queued on the least loaded ranks; a 3 s freeze)
    or ``bfio`` (policy bfio: a running request of the most loaded rank migrates when
    the drop of BF-IO's ``J`` exceeds its KV's cost in ``J``'s units);
    ``migration_options`` the rule's options (:data:`bfio.sim.migration.ROLL_DEFAULTS`,
    :data:`bfio.sim.migration.BFIO_DEFAULTS`),
    among them ``kv``: a migrated request's KV ``recompute``d through the prefill
    model (needs ``prefill``) or ``transfer``red over a link, the lockstep barrier
    waiting for it (:mod:`bfio.sim.transfer`).

    ``reference`` (issue 44, :mod:`bfio.sim.pooled`): ``none`` (the default: the
    cluster) or ``balanced``, the run's balanced reference: one pooled rank of the
    cluster's ``G B`` slots, KV memory and prefill budget, its step charged as if
    every rank held the mean load with no request split, admitting FCFS
    (``policy="fcfs"``, ``dispatch="central"``); the goodput study's
    router-independent reference (``divisible``: the mean load alone).

    A workload with ``follow_ups`` (:mod:`bfio.workloads.closed_loop`) and ``entry="arrivals"``
    is a closed loop: a request that follows another arrives ``think_s`` after that
    one completes (the steps then run one at a time while such a release is
    pending). With ``entry="backlog"`` arrival times, and so follow-ups, are not read.
    """
    t_wall = time.perf_counter()
    run = reference_run(setup(workload, workers, slots, policy, seed=seed, constants=constants, entry=entry,
                              policy_options=policy_options, dispatch=dispatch, admission_mode=admission_mode,
                              prefill=prefill, step_model=step_model, queue_moves=queue_moves, rank_pause=rank_pause,
                              rank_pause_options=rank_pause_options, migration=migration,
                              migration_options=migration_options), reference)
    G, B, policy, c = run.workers, run.slots, run.policy, run.constants
    coef = run.coefficients
    chunked = Prefill(run.prefill, workload, G, B) if run.prefill is not None else None
    state = ClusterState.empty(workload, G, B, coef)  # the policies' views carry the step model
    # what a step costs per resident KV token of the slowest rank (a router's view of the step)
    router = make_dispatch(run.dispatch, state, policy, chunked, c.token_latency_s if coef is None else coef.a_kv,
                           run.queue_moves, run.rank_pause, run.rank_pause_options, run.migration,
                           run.migration_options)
    arrivals = make_entry(run.entry, workload, c.pool_factor * G)
    engine = make_engine(chunked, c, G, B, record_loads, run.step_coef, run.step_model.barrier,
                         None if router.migration is None else router.migration.transfer)
    policy.reset(G, B)
    router.routing_call(arrivals)
    N = state.requests
    bar = progress(total=N, desc=f"simulate {policy.name}", enabled=show_progress, unit="req")
    while state.finished < N:
        if not state.active.any() and not _restart(state, arrivals, router, policy.name):
            break
        # while the dispatch is quiet (nothing waits), a routing call is a no-op until the next arrival
        until = arrivals.quiet_until(state.step) if fast_forward and router.quiet() else -np.inf
        done = engine.run(state, until)
        if done:
            bar.update(done)
            arrivals.completed(state.completed[state.finished - done:state.finished], state.finish)
        if router.routing_call(arrivals) > 0:
            state.last_admission_step = state.step
    bar.close()
    return assemble(run, state, engine, router, chunked, t_wall)


def _restart(state: ClusterState, arrivals: Entry, router: Dispatch, policy: str) -> bool:
    """Nothing is active: the clock jumps to the next arrival if nothing waits, then
    a routing call. Returns whether some request is active again (``False``:
    the loop ends); a policy that admits nothing to an idle cluster while
    requests wait is a :class:`PolicyError`."""
    if router.waiting() == 0 and not arrivals.all_entered:
        nxt = arrivals.next_arrival(state.step)
        if nxt is not None:
            state.wait_until(nxt)
    if router.routing_call(arrivals) > 0:
        state.last_admission_step = state.step
    if state.active.any():
        return True
    waiting = router.waiting()
    if waiting and (state.slots - state.active).any():
        raise PolicyError(f"policy '{policy}' admitted nothing at step {state.step} "
                          f"while every worker was idle and {waiting} requests waited")
    return False
