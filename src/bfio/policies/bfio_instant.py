"""BF-IO's instant dispatch (issue 30; :class:`bfio.policies.bfio.BFIO` with
``dispatch="instant"``): each arriving request bound to the worker queue that
minimizes ``J`` over the lookahead window (:mod:`bfio.solvers.dispatch`), on the
exact state or on lagged reports (``report_interval``, issue 44), with every
predictor, and the queued-request moves and running-request migrations of issue 45
(:meth:`InstantBinding.plan_moves`, :meth:`InstantBinding.plan_migrations`).

A mixin of :class:`~bfio.policies.bfio.BFIO`: it reads the policy's objective
(``_objective``), predictor, ``report_interval`` and the predictions it shares with the
central path (``_call_view``, a :class:`~bfio.solvers.call_view.CallView`).
"""

from __future__ import annotations

from dataclasses import replace

import numpy as np

from bfio.ground.jit import run_clock
from bfio.policies.base import DispatchState
from bfio.lookahead.profiles import predicted_loads
from bfio.solvers.dispatch import bind, plan_moves, queue_profiles
from bfio.solvers.migration_plan import MigrationCost, plan_migrations
from bfio.solvers.move_plan import plan_moves as plan_moves_kernel
from bfio.solvers.queue_kernels import flat_queues
from bfio.solvers.objective import ObjectiveTerms
from bfio.solvers.terms import call_terms


def order_release(expected: np.ndarray, busy: np.ndarray, survival: np.ndarray, window: int) -> np.ndarray:
    """Option ``release: order``: per slot ``(G, B)`` the offset at which a worker's
    busy slots free, as the order statistics of its running requests' remaining
    steps: the worker's ``k``-th slot frees at the first offset ``h`` where the
    expected number of its requests gone, ``n_g - sum_i P(r_i > h)``, reaches ``k -
    1/2`` (``W + 1`` when it does not within the window; at least 1). With the
    indicators of a point predictor this is the ``k``-th smallest ``r_i`` (capped at
    ``W + 1``): the releases a point predictor gives. ``expected``: each slot's own
    expected release (the option ``expected``'s, which orders the slots: the
    earliest-expected slot takes the first order statistic); ``busy`` the busy
    slots; ``survival`` ``P(r_i > h)`` of the busy slots in row order, ``(busy,
    window + 1)``. Free slots stay 0."""
    busy = np.asarray(busy, dtype=bool)
    G, B = busy.shape
    out = np.zeros((G, B), dtype=np.int64)
    rows = np.nonzero(busy)[0]
    running = np.bincount(rows, minlength=G)
    still = np.zeros((G, window + 1))
    np.add.at(still, rows, survival)
    gone = np.maximum.accumulate(running[:, None] - still, axis=1)  # expected requests gone by offset h
    # the k-th release: the first offset where gone >= k + 1/2 (gone is non-decreasing), W + 1 when none
    at = (gone[:, None, :] < (np.arange(B) + 0.5)[None, :, None]).sum(axis=2)
    # the busy slots of each worker by their own expected release (stable), the free ones last
    order = np.argsort(np.where(busy, expected, np.iinfo(np.int64).max), axis=1, kind="stable")
    rank = np.arange(B)[None, :] < running[:, None]  # the first running[g] of the order are busy
    g_idx = np.broadcast_to(np.arange(G)[:, None], (G, B))
    out[g_idx[rank], order[rank]] = np.maximum(1, at[rank])
    return out


def advance(loads: np.ndarray, release: list[list[int]], counts: np.ndarray | None,
            age: int) -> tuple[np.ndarray, list[list[int]], np.ndarray | None]:
    """Option ``report_age: advance``: the predictions of a report ``age`` steps old,
    made over offsets ``0..age + H`` from the report's step (the running requests'
    loads, the slots' releases and the queues' admissions, :func:`queue_profiles`),
    read from now: the loads and counts at offsets ``age..age + H``, each release
    offset less ``age`` (0, a free slot, where the report predicts it freed by now).
    Invariant: a heap stays a heap (the shift is monotone) and ``age = 0`` returns
    the predictions unchanged."""
    shifted = [[max(0, e - age) for e in heap] for heap in release]
    return loads[:, age:], shifted, None if counts is None else counts[:, age:]


class InstantBinding:
    """Instant dispatch of :class:`~bfio.policies.bfio.BFIO` (module docstring)."""

    def dispatch(self, state: DispatchState, requests: np.ndarray) -> np.ndarray:
        """Instant dispatch (issue 30, :mod:`bfio.solvers.dispatch`): each arriving
        request to the worker queue minimizing the discounted predicted imbalance
        over the window (offsets ``0..H_eff``), queues admitted FIFO into the slots
        their running requests free; new requests live their predicted length
        (``new_requests: predicted``) or the whole window (``persist``). Every
        predictor (issue 44): a probabilistic one gives the running requests'
        expected loads (``CallView.expected``, as on the central path) and each
        slot's expected release (:meth:`_expected_release`)."""
        t0 = run_clock()
        state, queues, age = self._view(state)
        age = age if self.report_age == "advance" else 0
        span = self._objective.window + age  # a report age steps old: its offsets age..age + H are now's
        base, release, lifetimes = self._predicted(state, span if age else None)
        step = self._call_view.step_costs(state)
        counts = None if step is None else self._call_view.running_counts(state, span)
        loads, release = queue_profiles(base, release, queues, state.workload.prefill, lifetimes, counts)
        if age:
            loads, release, counts = advance(loads, release, counts, age)
        requests = np.asarray(requests)
        # e.g. the prefix-cache term (issue 32), the calibrated step's per-request term
        window = self._call_view.window(state, lambda: counts, lifetimes)
        terms = self._objective.with_terms(*call_terms(state, requests, window))
        out = bind(loads, release, requests, state.workload.prefill, lifetimes, terms)
        if self._report is not None:  # its own bindings join the report's queues until the next report
            for i, g in zip(requests.tolist(), np.asarray(out).tolist()):
                self._report["queues"][g].append(i)
            if self.completions == "streamed":
                self._stream.bind(state, requests, out)
        self._times.append(run_clock() - t0)
        return out

    def _expected_release(self, state: DispatchState, window: int) -> np.ndarray:
        """Per slot ``(G, B)``, the offset at which a probabilistic predictor expects its
        running request to free it: the expected remaining steps within the window,
        ``E[min(r_i, W + 1)] = sum_h P(r_i > h)`` (``P(r_i > h)``: ``CallView.survival``);
        at least 1 (as ``r_i``), 0 for a free slot. With option ``release: order``
        the worker's busy slots free at the order statistics instead
        (:func:`order_release`)."""
        sr = state.slot_request
        out = np.zeros(sr.shape, dtype=np.int64)
        survival = self._call_view.survival(state, window)
        out[sr >= 0] = np.maximum(1, np.rint(survival.sum(axis=1)))
        if self.release == "order":
            return order_release(out, sr >= 0, survival, window)
        return out

    def _predicted(self, state: DispatchState, window: int | None = None,
                   slots: bool = False) -> tuple[np.ndarray, list[list[int]], np.ndarray]:
        """What instant dispatch predicts from: the running requests' loads over the
        window ``(G, H_eff + 1)``, per worker its slots' release offsets (a sorted row,
        a valid heap for :mod:`bfio.solvers.dispatch`) and every request's lifetime as
        a new request. Every predictor (issue 44): a probabilistic one gives the
        expected loads (``CallView.expected``, as on the central path) and each
        slot's expected release (:meth:`_expected_release`). ``window``: another window than
        the objective's (a migration's, :meth:`plan_migrations`); ``slots``: the
        release offsets as the ``(G, B)`` array of the slots instead of the heaps."""
        own = window is None
        window = self._objective.window if own else int(window)
        sr = state.slot_request
        if self.predictor.probabilistic:  # expected loads, as the central path reads them (issue 44)
            base, est = self._call_view.expected(state, window)
            remaining = self._expected_release(state, window)
        else:
            est = self._call_view.decode_estimate(state.workload)
            base = predicted_loads(sr, state.workload.prefill, state.generated, est, window)
            busy = sr >= 0
            ids = np.where(busy, sr, 0)
            # per slot its release offset: r_i (as predicted_loads reads it) or 0 when free
            remaining = np.where(busy, np.maximum(1, est[ids] - state.generated[ids]), 0)
        release = remaining if slots else np.sort(remaining, axis=1).tolist()  # a sorted row is a valid heap
        n = len(state.workload)
        if own:
            return base, release, self._call_view.new_lifetimes(est, window, n)
        # not kept (CallView.new_lifetimes keeps the objective's window's, which dispatch reads every call)
        return base, release, self._call_view.lifetimes_of(est, window, n)

    def plan_moves(self, state: DispatchState, movable: np.ndarray, budget: int) -> list[tuple[int, int]]:
        """Queued requests to move between worker queues (issue 45, ``queue_moves =
        bfio``, :mod:`bfio.sim.moves`): the tails of the most backed-up queues, each
        re-bound as :meth:`dispatch` binds an arrival, moved when that lowers ``J``
        (or ties it and starts the request earlier); at most ``budget`` evaluations
        (:func:`bfio.solvers.dispatch.plan_moves`; its kernel :func:`bfio.solvers.move_plan.plan_moves`
        when the call's objective is the imbalance alone). ``movable[i]``: request ``i`` may
        move. Reads the exact queues (the ranks' own, as an engine-side balancer
        does), never a lagged report."""
        t0 = run_clock()
        objective = self._objective
        if not call_terms(state, np.zeros(0, dtype=np.int64)):  # the imbalance alone: the kernel
            base, release, lifetimes = self._predicted(state, slots=True)
            queues = flat_queues(state.queue_head, state.queue_next, state.waiting)
            out = plan_moves_kernel(base, release, queues, state.workload.prefill, lifetimes, objective, movable,
                                    budget)
            self._move_times.append(run_clock() - t0)
            return out
        base, release, lifetimes = self._predicted(state)

        def terms_for(j: int):
            return objective.with_terms(*call_terms(state, np.array([j], dtype=np.int64)))

        out = plan_moves(base, release, state.queue_lists(), state.workload.prefill, lifetimes, terms_for, movable,
                         budget)
        self._move_times.append(run_clock() - t0)
        return out

    def migration_terms(self, horizon: int = 0) -> ObjectiveTerms:
        """The objective a migration is scored by (issue 45, :meth:`plan_migrations`):
        the policy's own (its window, discount and new-request model), or with
        ``horizon`` ``H > 0`` the same imbalance undiscounted over offsets ``0..H`` (a
        migration's cost is paid once, its gain lasts the request's life:
        :mod:`bfio.sim.migration`). Only the imbalance term: the extra terms score an
        arrival's admission (its prompt's prefill, its batch), a migration's own cost
        is its KV's."""
        if horizon <= 0:
            return self._objective
        terms = self._migration_terms.get(horizon)
        if terms is None:
            terms = self._migration_terms[horizon] = ObjectiveTerms.build(horizon, 1.0, self.new_requests, fast=True)
        return terms

    def migration_bound(self, sizes: np.ndarray, workers: int, horizon: int = 0) -> np.ndarray:
        """Per running request of ``sizes`` (``s_i + tau_i``), the most its migration can
        lower ``J`` (:meth:`migration_terms`): ``G sum_h w_h (s_i + tau_i + h)``, as if
        it left the envelope at every offset of the window and joined nowhere above it."""
        sums = self.migration_sums(horizon)
        return workers * (sizes * sums[0] + sums[1])

    def migration_sums(self, horizon: int = 0) -> tuple[float, float]:
        """``(sum_h w_h, sum_h h w_h)`` of :meth:`migration_terms`' weights (what
        :meth:`migration_bound` reads), kept per ``horizon``."""
        sums = self._migration_terms.get(("sums", horizon))
        if sums is None:
            w = self.migration_terms(horizon).weights
            sums = self._migration_terms[("sums", horizon)] = (float(w.sum()), float(np.arange(w.shape[0]) @ w))
        return sums

    def plan_migrations(self, state: DispatchState, movable: np.ndarray, cost: MigrationCost, budget: int,
                        per_rank: int, horizon: int = 0, floor: np.ndarray | None = None
                        ) -> list[tuple[int, int, bool]]:
        """Running requests to migrate (issue 45, ``migration = bfio``,
        :mod:`bfio.sim.migration`): per evaluation a running request of the worker
        with the largest predicted load, moved to the worker where it lowers ``J``
        (:meth:`migration_terms`) by more than its cost
        (:func:`bfio.solvers.migration_plan.plan_migrations`, its kernels; ``cost``:
        per worker, in ``J``'s units; ``floor``: per request a lower bound of it, or
        ``None``). ``movable[i]``: running request ``i`` may migrate. Reads the exact
        state. Returns ``(request, worker, sent)``: ``sent`` whether its KV is
        transferred (``cost``'s choice with ``kv: choose``)."""
        t0 = run_clock()
        sr = state.slot_request
        busy = sr >= 0
        ids = np.where(busy, sr, 0)
        passes = busy & movable[ids]
        if not passes.any():
            self._migration_times.append(run_clock() - t0)
            return []
        terms = self.migration_terms(horizon)
        base, remaining, lifetimes = self._predicted(state, horizon if horizon > 0 else None, slots=True)
        held = np.where(busy, state.workload.prefill[ids] + state.generated[ids], 0)
        queues = flat_queues(state.queue_head, state.queue_next, state.waiting)
        out = plan_migrations(base, remaining, queues, state.workload.prefill, lifetimes, sr, held, passes, terms,
                              cost, budget, per_rank, floor)
        self._migration_times.append(run_clock() - t0)
        return out

    def _view(self, state: DispatchState) -> tuple[DispatchState, list[list[int]], int]:
        """The state instant dispatch reads, each worker's queue (request ids,
        FIFO) and the age of what it reads in steps: the exact ones (age 0), or with
        ``report_interval`` ``k >= 1`` the last report (running requests, their
        generated tokens and the queues, copied at the first call of each window of
        ``k`` steps, as :class:`~bfio.policies.base.InstantPolicy` reports the
        production routers' state) plus its own bindings since, and the steps since
        that copy; completions, admissions and decode growth stay invisible until
        the next report (option ``report_age: advance`` predicts them from the
        report, :meth:`dispatch`; option ``completions: streamed`` drops the finished
        ones, :mod:`bfio.policies.completion_stream`). The completed requests the
        oracle-free predictors learn from are not lagged."""
        k = self.report_interval
        if k == 0:
            return state, state.queue_lists(), 0
        window = int(state.step) // k
        rep = self._report
        if rep is None or rep["window"] != window or rep["slot_request"].shape != state.slot_request.shape:
            rep = self._report = {"window": window, "step": int(state.step),
                                  "slot_request": np.array(state.slot_request, copy=True),
                                  "generated": np.array(state.generated, copy=True), "queues": state.queue_lists()}
            if self.completions == "streamed":
                self._stream.new_report(state, rep["queues"])
        sr, queues = rep["slot_request"], [list(q) for q in rep["queues"]]
        if self.completions == "streamed":
            self._stream.update(state)
            sr, queues = self._stream.drop_finished(sr, queues)
        lagged = replace(state, slot_request=sr, generated=rep["generated"])
        return lagged, queues, int(state.step) - rep["step"]


__all__ = ["InstantBinding", "advance", "order_release"]
