"""BF-IO's migration planner (issue 45, ``migration = bfio``, :mod:`bfio.sim.migration`)
as numba kernels: which running requests move, each evaluation scoring one request
on every rank (its ``J`` there and its KV's cost) in a few microseconds instead of
a Python loop of NumPy calls (the planner cost 2.9x the run without it over NVLink,
``benchmarks/bfio_actions.py --cpu``).

The rule is :func:`plan_migrations`' docstring; the phases are small kernels, each
stating its invariant:

- the phases shared with the queue moves' kernel (:mod:`bfio.solvers.queue_kernels`):
  the slots' release offsets as sorted rows, a queue admitted into them, ``J`` and
  per destination ``J`` with the request appended to its queue;
- :func:`_transfer_costs`: a transfer's charge beyond what the barrier already
  waits (:mod:`bfio.sim.transfer`), per destination;
- :func:`kv_cost`: a migration's cost and the KV's way (``kv: choose``: the
  cheaper of recompute and transfer, the one formula of the choice);
- :func:`candidate_order`: per rank the requests to evaluate, heaviest first;
- :func:`_plan`: the loop.

A migration's cost (:class:`MigrationCost`) is what the simulator's migration rule
declares: per candidate and destination a fixed part in ``J``'s units (a
recompute's tokens, :meth:`bfio.sim.migration.BfioMigration.cost_model`) plus, for a
KV sent over a link, the barrier's wait for it, which depends on the loads and on
the migrations planned earlier in the call, so it is computed in the loop. With
``choose`` (issue 45, ``kv: choose``) the two are not added: each planned
migration takes the cheaper (:func:`kv_cost`, ties to the transfer, which
computes nothing), and only a migration whose KV is sent adds to the ranks'
pending transfers seen by the later evaluations of the call.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Callable

import numpy as np

from bfio.ground.jit import helper, kernel
from bfio.solvers.dispatch import TOLERANCE
from bfio.solvers.queue_kernels import _admit_queue, _candidate_costs, _objective, _replace_min, _swap_value
from bfio.solvers.objective import ObjectiveTerms


@dataclass(frozen=True)
class MigrationCost:
    """What migrating a running request costs, in ``J``'s units (token-steps):
    ``fixed(ids)`` ``(n, G)`` per request of ``ids`` and destination (``None``: 0),
    plus with ``seconds`` (a KV sent over a link: ``seconds(tokens)`` its transfer's
    ``X_i``, :meth:`bfio.sim.transfer.KvTransfer.seconds_of`) ``weight x G x stall /
    t_l``, ``stall`` what the barrier of the next step waits for it beyond what it
    waits already for the ranks' ``pending`` transfers and the call's earlier
    migrations (:func:`_transfer_costs`; ``t_l`` the seconds per resident token of a
    rank's share). ``sent_tokens(ids)``: per request the KV tokens its transfer sends
    (``None``: its ``s_i + tau_i``; with the prefill model its resident tokens,
    :meth:`bfio.engine.prefill_resume.Resumes.sent_tokens`). ``transfer_fixed(ids)``: per
    request a sent KV's cost besides the link, the same on every destination (with
    the prefill model the prompt tokens it has still to compute, there as they
    would be here; ``None``: 0). ``choose``: the cost is the cheaper of the fixed
    part (a recompute) and the transfer (its fixed part and the link), not their
    sum (:func:`kv_cost`). ``room`` ``(G,)``: per rank the KV tokens a request joining
    its queue may take and be seated at once (:func:`bfio.sim.migration_kv.seat_room`;
    ``None``: no bound), each seated request keeping ``growth`` more: a migration's
    destination must hold its ``s_i + tau_i`` (the planner's seat check reads slots
    and KV memory, as admission does). ``share_offsets`` ``(3, G)``: what each rank's
    share of the step holds beyond ``t_l L_g``, on the migrated request's source (row 0), on any
    other rank (row 1) and on its destination (row 2) (the calibrated step's
    ``rank_cost(0, n_g, P_g)`` with the request counted where it decodes,
    :meth:`bfio.sim.transfer.share_offsets`; ``None``: 0, the paper's step).
    ``share_loads`` ``(G,)``: the ranks' resident tokens the shares read, as the next
    step reads them (:meth:`bfio.sim.transfer.TransferEngine.shares`; moved with the
    call's planned migrations); ``None``: the predicted loads at offset 0 (a
    hand-built cost: they count a queued prompt whole, which the step does not)."""

    fixed: Callable[[np.ndarray], np.ndarray] | None = None
    seconds: Callable[[np.ndarray], np.ndarray] | None = None
    pending: np.ndarray | None = None
    weight: float = 1.0
    token_latency_s: float = 1.0
    sent_tokens: Callable[[np.ndarray], np.ndarray] | None = None
    transfer_fixed: Callable[[np.ndarray], np.ndarray] | None = None
    choose: bool = False
    room: np.ndarray | None = None
    growth: float = 0.0
    share_offsets: np.ndarray | None = None
    share_loads: np.ndarray | None = None

    @property
    def sends(self) -> bool:
        """Whether a migration's KV is sent when the cost does not choose (a link's cost)."""
        return self.seconds is not None


@helper
def kv_cost(recompute, transfer, choose, sends):
    """A migration's cost to one destination and whether its KV is sent, from the
    cost of recomputing it (``recompute``, the fixed part) and of sending it
    (``transfer``, :func:`_transfer_costs`), both in ``J``'s units: with ``choose``
    the cheaper (ties: the transfer, which computes nothing), else their sum and
    ``sends`` (the rule's one way). The one formula of ``kv: choose`` (issue 45):
    the planner's loop and :func:`migration_costs` read it."""
    if choose:
        if transfer <= recompute:
            return transfer, True
        return recompute, False
    return recompute + transfer, sends


@helper
def _transfer_costs(now_loads, size, x, pending, weight, t_l, offsets, src, out):
    """``out[d] += weight G stall_d / t_l``: the seconds ``stall_d`` the next step's
    barrier waits for a transfer of ``x`` seconds to rank ``d`` beyond what it waits
    for the ``pending`` ones (per rank), shares ``t_l L_g + offsets[row, g]`` of the
    loads ``now_loads`` (offset 0, without the request) with its ``size`` tokens on
    ``d`` (``row`` 0 on its source ``src``, 2 on ``d``, else 1: :class:`MigrationCost`):
    ``max(0, max_g (share_g + X_g) - max_g share_g)`` with and without it
    (:meth:`bfio.sim.transfer.KvTransfer.charge`). Invariant: ``out[d]`` grows by at
    least 0."""
    G = now_loads.shape[0]
    for d in range(G):
        top = -np.inf
        busy = -np.inf
        full = -np.inf
        for g in range(G):
            row = 2 if g == d else (0 if g == src else 1)
            share = t_l * (now_loads[g] + (size if g == d else 0.0)) + offsets[row, g]
            if share > top:
                top = share
            v = share + pending[g]
            if v > busy:
                busy = v
            if g == d:
                v += x
            if v > full:
                full = v
        stall = max(0.0, full - top) - max(0.0, busy - top)
        out[d] += weight * G * stall / t_l


@kernel
def candidate_order(held, remaining, movable, c0, c1, per_rank):
    """Per rank ``g`` the slots to evaluate, ``(G, per_rank)`` and their counts: its
    ``movable`` slots in decreasing weighted in-place profile ``held c0[r] + c1[r]``
    (``r`` the slot's release offset, capped at the window's ``W + 1 = len(c0) -
    1``; ties in slot order: a stable sort), the first ``per_rank``. Invariant: row
    ``g``'s first ``counts[g]`` entries are a prefix of that stable order."""
    G, B = held.shape
    W1 = c0.shape[0] - 1
    out = np.full((G, per_rank), -1, dtype=np.int64)
    counts = np.zeros(G, dtype=np.int64)
    order = np.empty(B, dtype=np.int64)
    keys = np.empty(B)
    for g in range(G):
        n = 0
        for b in range(B):
            if not movable[g, b]:
                continue
            r = min(remaining[g, b], W1)
            keys[n] = held[g, b] * c0[r] + c1[r]
            order[n] = b
            q = n
            while q > 0 and keys[q - 1] < keys[q]:  # insertion: only strictly smaller ones move back
                keys[q - 1], keys[q] = keys[q], keys[q - 1]
                order[q - 1], order[q] = order[q], order[q - 1]
                q -= 1
            n += 1
        counts[g] = min(per_rank, n)
        for k in range(counts[g]):
            out[g, k] = order[k]
    return out, counts


@helper
def _shares_without(res, without, use_share, g, size, out):
    """``out``: the loads a transfer's shares read with the request (``size`` tokens) off
    its rank ``g``: the resident loads ``res`` less it (``use_share``), else the predicted
    loads at offset 0 ``without[:, 0]`` (already without it). Invariant: ``out[k] =
    res[k]`` or ``without[k, 0]`` for every ``k != g``."""
    for k in range(out.shape[0]):
        out[k] = res[k] if use_share else without[k, 0]
    if use_share:
        out[g] -= size


@helper
def _best_destination(g, entry, room, size, stay, J, cost):
    """``(d, net)``: among the ranks other than ``g`` that would seat the request at once
    (``entry[k] == 0``: a free slot; ``room[k] >= size``: its KV fits) the one of the
    largest net gain ``stay - J[k] - cost[k]`` (ties: the first); ``d = -1`` when none
    does. Invariant: ``d != g``."""
    d = -1
    top = -np.inf
    for k in range(J.shape[0]):
        if k != g and entry[k] == 0 and room[k] >= size:
            net = stay - J[k] - cost[k]
            if d < 0 or net > top:
                d, top = k, net
    return d, top


@helper
def _heaviest(loads, w, tried, counts):
    """The rank :func:`_plan` evaluates next: of those with a candidate left to try
    (``tried[k] < counts[k]``), the largest weighted load ``sum_h w_h loads[k, h]``
    (ties: the first); -1 when none has. Invariant: the result is -1 or has a
    candidate left."""
    g = -1
    best = -np.inf
    for k in range(loads.shape[0]):
        if tried[k] < counts[k]:
            v = 0.0
            for h in range(loads.shape[1]):
                v += loads[k, h] * w[h]
            if g < 0 or v > best:
                g, best = k, v
    return g


@kernel
def _admitted(base, remaining, qptr, qids, sizes, lifetimes):
    """The planner's start (:func:`_plan`): the slots' release offsets as sorted rows
    ``rel0``, and the loads and rows with each rank's queue admitted into them
    (``loads``, ``rel``). Invariant: ``base`` and ``remaining`` are not written."""
    rel0 = np.sort(remaining)  # per row: the sorted rows are the heaps of bfio.solvers.dispatch
    loads = base.copy()
    rel = rel0.copy()
    for g in range(base.shape[0]):
        _admit_queue(loads[g], rel[g], qids[qptr[g]:qptr[g + 1]], sizes, lifetimes)
    return rel0, loads, rel


@kernel
def first_evaluated(base, remaining, qptr, qids, sizes, lifetimes, w, counts):
    """The rank whose first candidate :func:`_plan`'s first evaluation reads (-1: none
    is evaluated): with one evaluation a call, the only candidate whose costs the
    planner reads. Invariant: the choice of :func:`_plan`'s first iteration (the same
    kernels on the same loads)."""
    loads = _admitted(base, remaining, qptr, qids, sizes, lifetimes)[1]
    return _heaviest(loads, w, np.zeros(base.shape[0], dtype=np.int64), counts)


@kernel
def _plan(base, remaining, qptr, qids, sizes, lifetimes, slots, held, cand, counts, w, budget, floor, use_floor,
          fixed, rest, transfer, choose, sends, x, pending, weight, t_l, room, growth, offsets, share0, use_share,
          out_i, out_d, out_s):
    """The planner's loop (:func:`plan_migrations`): ``base`` ``(G, W + 1)`` and the
    slots' release offsets ``remaining`` ``(G, B)`` before the queues, updated with
    each migration; rank ``g``'s ``t``-th candidate is slot ``cand[g, t]``
    (request ``slots[g, cand[g, t]]``, its fixed cost ``fixed[g, t]`` per
    destination, a transfer's fixed part ``rest[g, t]`` and its seconds ``x[g, t]``;
    ``pending`` updated with the
    planned transfers; ``share0`` the loads a transfer's shares read when ``use_share``,
    moved with each migration, else the predicted loads at offset 0; a destination must have a free slot at once and ``room`` for
    the request's ``held`` tokens, ``room`` moved with each migration (``growth``); :func:`kv_cost` of the two, ``choose``/``sends``). Returns
    the number of migrations written to ``out_i``, ``out_d`` and ``out_s`` (its KV
    sent). Invariant: each evaluation sees the loads with every earlier migration
    of the call applied, and the pending transfers of those whose KV is sent."""
    G, W1 = base.shape
    rel0, loads, rel = _admitted(base, remaining, qptr, qids, sizes, lifetimes)
    stay = _objective(loads, w)
    tried = np.zeros(G, dtype=np.int64)
    without = np.empty_like(loads)
    row_rel = np.empty(rel.shape[1], dtype=rel.dtype)
    freed = np.empty(rel.shape[1], dtype=rel.dtype)
    profile = np.empty(W1)
    J = np.empty(G)
    cost = np.empty(G)
    sent = np.zeros(G, dtype=np.bool_)
    tcost = np.empty(G)
    entry = np.empty(G, dtype=np.int64)
    res = share0.copy()
    resw = np.empty(G)
    n = 0
    for _ in range(budget):
        g = _heaviest(loads, w, tried, counts)
        if g < 0:
            break
        t = tried[g]
        b = cand[g, t]
        i = slots[g, b]
        tried[g] += 1
        r, size = remaining[g, b], float(held[g, b])
        for h in range(W1):
            profile[h] = size + h if h < r else 0.0
        if use_floor and n == 0 and qptr[g] == qptr[g + 1]:
            most = 0.0
            for h in range(W1):
                others = 0.0 if G == 1 else -np.inf
                for k in range(G):
                    if k != g and loads[k, h] > others:
                        others = loads[k, h]
                most += min(profile[h], max(0.0, loads[g, h] - others)) * w[h]
            if G * most <= floor[i]:
                continue
        freed[:] = rel0[g]
        _swap_value(freed, r, 0)
        row_rel[:] = freed
        without[:] = loads
        for h in range(W1):
            without[g, h] = base[g, h] - profile[h]
        _admit_queue(without[g], row_rel, qids[qptr[g]:qptr[g + 1]], sizes, lifetimes)
        for k in range(G):
            entry[k] = row_rel[0] if k == g else rel[k, 0]
        _candidate_costs(without, entry, size, r, w, J)
        for k in range(G):
            tcost[k] = rest[g, t]
        if transfer:
            _shares_without(res, without, use_share, g, size, resw)
            _transfer_costs(resw, size, x[g, t], pending, weight, t_l, offsets, g, tcost)
        for k in range(G):
            cost[k], sent[k] = kv_cost(fixed[g, t, k], tcost[k], choose, sends)
        d, top = _best_destination(g, entry, room, size, stay, J, cost)
        if d < 0 or not top > TOLERANCE * max(1.0, abs(stay)):
            continue
        for h in range(W1):
            base[g, h] -= profile[h]
            base[d, h] += profile[h]
            without[d, h] += profile[h]
        rel0[g] = freed
        _swap_value(rel0[d], 0, r)
        _replace_min(rel[d], r)
        rel[g] = row_rel
        loads[:] = without
        room[d] -= size + growth
        room[g] += size + growth
        if use_share:
            res[g] -= size
            res[d] += size
        stay = J[d]
        if transfer and sent[d]:
            pending[d] += x[g, t]
        out_i[n] = i
        out_d[n] = d
        out_s[n] = sent[d]
        n += 1
    return n


_NO_FLOOR = np.zeros(1)
_WEIGHTS: dict = {}


def _prefix_weights(w: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """``c0[r] = sum_{h<r} w_h``, ``c1[r] = sum_{h<r} h w_h``: ``sum_h w_h (held_i + h) [h <
    r_i] = held_i c0[r_i] + c1[r_i]``, a running request's weighted in-place profile
    (kept per weights: a policy's window is one array a run)."""
    key = w.tobytes()
    out = _WEIGHTS.get(key)
    if out is None:
        out = _WEIGHTS[key] = (np.concatenate(([0.0], np.cumsum(w))),
                               np.concatenate(([0.0], np.cumsum(np.arange(w.shape[0]) * w))))
    return out


def plan_migrations(base: np.ndarray, remaining: np.ndarray, queues: tuple[np.ndarray, np.ndarray],
                    sizes: np.ndarray, lifetimes: np.ndarray, slots: np.ndarray, held: np.ndarray,
                    movable: np.ndarray, terms: ObjectiveTerms, cost: MigrationCost, budget: int, per_rank: int,
                    floor: np.ndarray | None = None) -> list[tuple[int, int, bool]]:
    """Running requests to migrate (issue 45, ``migration = bfio``,
    :mod:`bfio.sim.migration`): at most ``budget`` evaluations, each of one running
    request of the worker with the largest weighted predicted load ``sum_h w_h
    Lhat_g(h)`` (among ties the first) that has one left to try (at most
    ``per_rank`` each), its request with the largest weighted in-place profile
    first (``held_i + h`` while ``h < remaining_i``: the one whose departure lowers
    that worker's load the most over the window; ties in slot order). The request
    leaves its slot (the worker's queue then takes it:
    :func:`bfio.solvers.dispatch.queue_profiles` with that slot free) and is bound
    again as :func:`bfio.solvers.dispatch.bind` binds an arrival (at the tail of
    each worker's queue, adding ``held_i + (h - e)`` for ``e <= h < e +
    remaining_i``). Its gain on worker ``d`` is ``J`` now (the predicted loads, the
    request in place) minus ``J`` with it on ``d``, in ``J``'s units (token-steps,
    weighted); its ``cost`` (:class:`MigrationCost`, the same units, with the
    migrations planned so far in the call) is subtracted. It migrates to the
    worker of the largest net gain when that is positive (beyond the ties'
    tolerance), that worker is another one and would seat it at once (``e = 0``: a
    running request is not put to wait); moves are applied to the predicted loads
    as they are made, and a request is evaluated once a call.

    ``base`` ``(G, W + 1)``: the running requests' predicted loads; per slot ``(G,
    B)``: ``remaining`` its release offset (``r_i`` >= 1, 0 when free), ``slots`` its
    request (-1 when free), ``held`` its ``s_i + tau_i`` and ``movable`` whether it
    may migrate; ``queues`` the workers' FIFO queues as ``(ptr, ids)``
    (:func:`flat_queues`) admitted as :func:`~bfio.solvers.dispatch.queue_profiles`
    admits them (``sizes``, ``lifetimes`` per request). ``floor[i]`` (optional,
    per request): a lower bound of request ``i``'s cost over the workers, valid
    before the call's first migration; until then an evaluation whose worker has
    an empty queue is skipped when the most its departure can lower ``J``, ``G
    sum_h w_h min(profile_i(h), (Lhat_g(h) - max_{g' != g} Lhat_g'(h))^+)`` (the
    envelope falls at most to the next rank; joining a worker never lowers it), is
    at most ``floor[i]``: it would not migrate (the same plan, fewer
    evaluations). Only ``J``'s imbalance term (``terms`` without extra terms).
    Returns ``(request, worker, sent)`` in order, ``sent`` whether its KV is sent
    (:func:`kv_cost`: ``cost.choose``'s choice, else whether ``cost`` has a link)."""
    if terms.extra:
        raise ValueError(f"plan_migrations scores the imbalance term alone; got the extra terms "
                         f"{[t.name for t in terms.extra]}")
    G = slots.shape[0]
    w = terms.weights
    held = np.asarray(held, dtype=np.int64)
    remaining = np.asarray(remaining, dtype=np.int64)
    c0, c1 = _prefix_weights(w)
    cand, counts = candidate_order(held, remaining, np.asarray(movable, dtype=np.bool_), c0, c1, int(per_rank))
    P = cand.shape[1]
    fixed = np.zeros((G, P, G))
    picked = cand >= 0
    some = bool(picked.any())
    base = np.array(base, dtype=np.float64, order="C")
    queues = (np.asarray(queues[0], dtype=np.int64), np.asarray(queues[1], dtype=np.int64))
    sizes, lifetimes = np.asarray(sizes, dtype=np.int64), np.asarray(lifetimes, dtype=np.int64)
    w = np.ascontiguousarray(w, dtype=np.float64)
    if some and int(budget) == 1 and (cost.fixed is not None or cost.transfer_fixed is not None
                                      or cost.sent_tokens is not None):
        # one evaluation reads one candidate's costs: the per-request ones computed for it alone
        g = first_evaluated(base, remaining, queues[0], queues[1], sizes, lifetimes, w, counts)
        picked = np.zeros_like(picked)
        picked[g, 0] = g >= 0
        some = bool(g >= 0)
    rows, cols = np.nonzero(picked)
    requests = slots[rows, cand[rows, cols]]  # the candidates' request ids, row by row
    if cost.fixed is not None and some:
        fixed[picked] = cost.fixed(requests)
    transfer = cost.seconds is not None and cost.weight != 0.0
    x, pending, rest = np.zeros((G, P)), np.zeros(G), np.zeros((G, P))
    if cost.transfer_fixed is not None and some:
        rest[picked] = cost.transfer_fixed(requests)
    if transfer:
        if cost.sent_tokens is None:
            tokens = held[np.arange(G)[:, None], np.maximum(cand, 0)].astype(np.float64)
        else:
            tokens = np.zeros((G, P))
            if some:
                tokens[picked] = cost.sent_tokens(requests)
        x = np.asarray(cost.seconds(tokens), dtype=np.float64)
        pending = np.array(cost.pending, dtype=np.float64)
    out_i = np.empty(max(1, int(budget)), dtype=np.int64)
    out_d = np.empty_like(out_i)
    out_s = np.zeros(out_i.shape[0], dtype=np.bool_)
    n = _plan(base, remaining, queues[0], queues[1], sizes, lifetimes, slots, held, cand, counts, w, int(budget),
              _NO_FLOOR if floor is None else np.asarray(floor, dtype=np.float64), floor is not None, fixed,
              rest, transfer, bool(cost.choose), cost.sends, x, pending, float(cost.weight), float(cost.token_latency_s),
              np.full(G, np.inf) if cost.room is None else np.array(cost.room, dtype=np.float64), float(cost.growth),
              _offsets(cost, G), _share_loads(cost, G), cost.share_loads is not None, out_i, out_d, out_s)
    return [(int(out_i[k]), int(out_d[k]), bool(out_s[k])) for k in range(n)]


def _share_loads(cost: MigrationCost, G: int) -> np.ndarray:
    """``cost.share_loads`` as the kernel reads it (``(G,)``; zeros when ``None``, then unread)."""
    return np.zeros(G) if cost.share_loads is None else np.array(cost.share_loads, dtype=np.float64)


def _offsets(cost: MigrationCost, G: int) -> np.ndarray:
    """``cost.share_offsets`` as the kernels read it (``(3, G)``; zeros when ``None``)."""
    if cost.share_offsets is None:
        return np.zeros((3, G))
    return np.ascontiguousarray(cost.share_offsets, dtype=np.float64)


def kv_choices(cost: MigrationCost, ids: np.ndarray, held: np.ndarray, loads0: np.ndarray,
               planned=(), sources: np.ndarray | None = None) -> tuple[np.ndarray, np.ndarray]:
    """``(n, G)`` twice: what migrating each of ``ids`` (``held[i] = s_i + tau_i``)
    costs per destination when the ranks' loads at offset 0 are ``loads0`` (without
    it) and the call has planned ``planned`` (``(request, worker)``, or ``(request,
    worker, sent)``: a transfer pending unless ``sent`` is false), and whether its
    KV is sent: the planner's own :func:`_transfer_costs` and :func:`kv_cost`, for
    tests and reports. ``sources``: per request its rank (``None``: none is, every
    rank other than the destination reads row 1 of ``cost.share_offsets``)."""
    ids = np.asarray(ids, dtype=np.int64)
    G = loads0.shape[0]
    fixed = np.zeros((ids.shape[0], G)) if cost.fixed is None else np.array(cost.fixed(ids), dtype=np.float64)
    trans = np.zeros_like(fixed)
    if cost.transfer_fixed is not None:
        trans += np.asarray(cost.transfer_fixed(ids), dtype=np.float64)[:, None]
    if cost.seconds is not None and cost.weight != 0.0:
        def seconds(j):
            tokens = held[j] if cost.sent_tokens is None else cost.sent_tokens(np.array([j]))[0]
            return float(cost.seconds(np.array([float(tokens)]))[0])

        pending = np.array(cost.pending, dtype=np.float64)
        for p in planned:
            if len(p) < 3 or p[2]:
                pending[p[1]] += seconds(p[0])
        offsets = _offsets(cost, G)
        for k in range(ids.shape[0]):
            src = -1 if sources is None else int(sources[k])
            _transfer_costs(np.asarray(loads0, dtype=np.float64), float(held[ids[k]]), seconds(ids[k]), pending,
                            float(cost.weight), float(cost.token_latency_s), offsets, src, trans[k])
    out, sent = np.zeros_like(fixed), np.zeros(fixed.shape, dtype=bool)
    for k in range(ids.shape[0]):
        for d in range(G):
            out[k, d], sent[k, d] = kv_cost(fixed[k, d], trans[k, d], bool(cost.choose), cost.sends)
    return out, sent


def migration_costs(cost: MigrationCost, ids: np.ndarray, held: np.ndarray, loads0: np.ndarray,
                    planned=()) -> np.ndarray:
    """``(n, G)``: the costs of :func:`kv_choices`."""
    return kv_choices(cost, ids, held, loads0, planned)[0]


__all__ = ["MigrationCost", "candidate_order", "kv_choices", "kv_cost", "migration_costs", "plan_migrations"]
