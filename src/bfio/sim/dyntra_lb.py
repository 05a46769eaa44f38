"""DyntraLB's planner (issue 45, the baseline of pausing): vllm-project/vllm-ascend
PR #12292, "[Feature] DyntraLB: Dynamic Intra-decoder Data-parallel Load
Balancing" (merged 2026-08-12, commit ``ffa55704fb``), read at
``vllm_ascend/patch/platform/patch_dyntra_lb_core.py``,
``DyntraLBDPEngineCoreProc._balance_load`` (snapshot ``182b75ea84``,
2026-08-22). Re-implemented here over arrays as a numba kernel
(:func:`balance_load`); its caller is :class:`bfio.sim.pause.DyntraLbPause`.

The planner reads, per DP rank, the KV-cache block counts of its running
requests (in running order) and of its admissible waiting requests (in schedule
order), ``ceil(len(all_token_ids) / block_size)`` each; a rank's load is the sum
over its running requests. It plans, per rank, ``out`` (block counts of running
requests to pause), ``in`` (block counts of waiting requests to admit) and
``freeze`` (no ``in``: the rank admits nothing in the next step):

1. *fill*: each rank, in rank order, takes the heads of its waiting list into
   running while it runs fewer than ``max_num_seqs``, marking them newly added;
2. up to ``max_iters`` (1000) rounds, each: the ranks sorted by load,
   descending (a stable sort of the previous order); stop if the *bubble* is
   below ``threshold`` (``threshold >= 1``: ``max - mean`` load in blocks;
   below 1: ``(max - mean) / max``); on the least loaded rank the best
   *increasing* swap (a running request out, a larger waiting one in) and, if
   one was made, the bubble checked and the ranks re-sorted; on the most
   loaded rank the best *decreasing* swap; if neither rank swapped, a *drop* on
   the most loaded rank (a running request paused, nothing in) when it raises
   the modelled throughput ``running requests / (20000 + 19.2 max_g load_g)``;
   stop when the bubble is below the threshold or nothing was swapped or dropped.
   The best swap is the pair, running outer and waiting inner, that brings the
   rank's load closest to the new mean, strictly closer than it is (or as close,
   with a newly added running request, preferred once over one that is not);
3. an ``out`` and an ``in`` of the same block count on one rank cancel;
   ``freeze`` = no ``in`` left.

Lists behave as the source's Python lists of dicts: an item is removed by
value (the first equal ``(blocks, newly added)``), appended at the end when it
moves between running and waiting.
"""

from __future__ import annotations

import numpy as np

from bfio.ground.jit import helper, kernel

#: The planner's throughput heuristic (source constants, ``try_drop_for_throughput``)
STEP_LATENCY_FIXED_OVERHEAD = 20000.0
STEP_LATENCY_PER_BLOCK = 19.2


@kernel
def _remove(blk, new, n, g, b, flag):
    """Remove the first item of list ``g`` equal to ``(b, flag)`` (Python's ``list.remove``)."""
    for j in range(n[g]):
        if blk[g, j] == b and new[g, j] == flag:
            for k in range(j, n[g] - 1):
                blk[g, k] = blk[g, k + 1]
                new[g, k] = new[g, k + 1]
            n[g] -= 1
            return


@kernel
def _append(blk, new, n, g, b, flag):
    blk[g, n[g]] = b
    new[g, n[g]] = flag
    n[g] += 1


@kernel
def _bubble(tot, threshold):
    G = tot.shape[0]
    mx = tot.max()
    avg = tot.sum() / G
    if threshold < 1:
        return (mx - avg) / mx if mx > 0 else 0.0
    return mx - avg


@kernel
def _sort_desc(order, tot):
    """``order`` sorted by ``tot`` descending, stably (Python's ``sort(reverse=True)``)."""
    for a in range(1, order.shape[0]):
        c = order[a]
        k = a - 1
        while k >= 0 and tot[order[k]] < tot[c]:
            order[k + 1] = order[k]
            k -= 1
        order[k + 1] = c


@kernel
def _best_swap(g, increase, tot, rb, rn, nr, wb, wn, nw):
    """Indices ``(running, waiting)`` of rank ``g``'s best swap, or ``(-1, -1)``."""
    G = tot.shape[0]
    target = tot.sum() / G
    best_dist = abs(tot[g] - target)
    best_r, best_w, best_new = -1, -1, False
    for r in range(nr[g]):
        for w in range(nw[g]):
            delta = wb[g, w] - rb[g, r]
            if (increase and delta <= 0) or (not increase and delta >= 0):
                continue
            dist = abs((tot[g] + delta) - (target + delta / G))
            if dist < best_dist or (dist == best_dist and rn[g, r] and not best_new):
                best_dist, best_r, best_w, best_new = dist, r, w, rn[g, r]
    return best_r, best_w


@kernel
def _swap(g, r, w, tot, rb, rn, nr, wb, wn, nw, out_b, n_out, in_b, n_in):
    b_r, f_r, b_w, f_w = rb[g, r], rn[g, r], wb[g, w], wn[g, w]
    out_b[g, n_out[g]] = b_r
    n_out[g] += 1
    in_b[g, n_in[g]] = b_w
    n_in[g] += 1
    tot[g] += b_w - b_r
    _remove(rb, rn, nr, g, b_r, f_r)
    _remove(wb, wn, nw, g, b_w, f_w)
    _append(rb, rn, nr, g, b_w, f_w)
    _append(wb, wn, nw, g, b_r, f_r)


@kernel
def _drop(g, tot, rb, rn, nr, wb, wn, nw, out_b, n_out):
    """Pause the running request of rank ``g`` whose leaving most raises the modelled
    throughput, if any does; returns whether one was paused."""
    total = nr.sum()
    if total <= 1:
        return False
    second = 0
    for h in range(tot.shape[0]):
        if h != g and tot[h] > second:
            second = tot[h]
    best_tp = total / (STEP_LATENCY_FIXED_OVERHEAD + STEP_LATENCY_PER_BLOCK * tot[g])
    best, best_new = -1, False
    for r in range(nr[g]):
        tp = (total - 1) / (STEP_LATENCY_FIXED_OVERHEAD + STEP_LATENCY_PER_BLOCK * max(tot[g] - rb[g, r], second))
        if tp > best_tp or (tp == best_tp and rn[g, r] and not best_new):
            best_tp, best, best_new = tp, r, rn[g, r]
    if best < 0:
        return False
    b, f = rb[g, best], rn[g, best]
    out_b[g, n_out[g]] = b
    n_out[g] += 1
    tot[g] -= b
    _remove(rb, rn, nr, g, b, f)
    _append(wb, wn, nw, g, b, f)
    return True


@kernel
def _keep(b, g, gone):
    """Compact row ``g`` of ``b`` to its entries not ``gone`` (in order); returns how many."""
    k = 0
    for o in range(gone.shape[0]):
        if not gone[o]:
            b[g, k] = b[g, o]
            k += 1
    return k


@kernel
def _cancel(out_b, n_out, in_b, n_in, freeze):
    """An ``out`` and an ``in`` of equal blocks on one rank cancel; ``freeze``: no ``in`` left."""
    for g in range(out_b.shape[0]):
        gone_o = np.zeros(n_out[g], dtype=np.bool_)
        gone_i = np.zeros(n_in[g], dtype=np.bool_)
        for i in range(n_in[g]):
            for o in range(n_out[g]):
                if not gone_o[o] and out_b[g, o] == in_b[g, i]:
                    gone_o[o] = True
                    gone_i[i] = True
                    break
        n_out[g] = _keep(out_b, g, gone_o)
        n_in[g] = _keep(in_b, g, gone_i)
        freeze[g] = n_in[g] == 0


@kernel
def balance_load(run, n_run, wait, n_wait, max_num_seqs, max_iters, threshold, out_b, n_out, in_b, n_in, freeze):
    """The plan of one step (module docstring). ``run[g, :n_run[g]]`` and
    ``wait[g, :n_wait[g]]`` are rank ``g``'s running and waiting block counts (each
    row at least ``n_run[g] + n_wait[g]`` long); ``max_num_seqs <= 0``: no fill.
    Writes ``out_b[g, :n_out[g]]``, ``in_b[g, :n_in[g]]`` and ``freeze[g]`` (their
    rows at least ``2 max_iters + n_run[g] + n_wait[g]`` long)."""
    G, M = run.shape
    rb, wb = np.zeros((G, M), np.int64), np.zeros((G, M), np.int64)
    rn, wn = np.zeros((G, M), np.bool_), np.zeros((G, M), np.bool_)
    nr, nw = n_run.copy(), n_wait.copy()
    tot = np.zeros(G, np.int64)
    for g in range(G):
        n_out[g] = 0
        n_in[g] = 0
        for j in range(nr[g]):
            rb[g, j] = run[g, j]
            tot[g] += run[g, j]
        for j in range(nw[g]):
            wb[g, j] = wait[g, j]
    for g in range(G):  # fill
        while max_num_seqs > 0 and nr[g] < max_num_seqs and nw[g] > 0:
            b = wb[g, 0]
            in_b[g, n_in[g]] = b
            n_in[g] += 1
            tot[g] += b
            _remove(wb, wn, nw, g, b, wn[g, 0])
            _append(rb, rn, nr, g, b, True)
    order = np.arange(G)
    for _ in range(max_iters):
        _sort_desc(order, tot)
        if _bubble(tot, threshold) < threshold:
            break
        swapped = dropped = False
        lo = order[G - 1]
        r, w = _best_swap(lo, True, tot, rb, rn, nr, wb, wn, nw)
        if r >= 0:
            _swap(lo, r, w, tot, rb, rn, nr, wb, wn, nw, out_b, n_out, in_b, n_in)
            swapped = True
            if _bubble(tot, threshold) < threshold:
                break
            _sort_desc(order, tot)
        hi = order[0]
        r, w = _best_swap(hi, False, tot, rb, rn, nr, wb, wn, nw)
        if r >= 0:
            _swap(hi, r, w, tot, rb, rn, nr, wb, wn, nw, out_b, n_out, in_b, n_in)
            swapped = True
        if not swapped and _drop(hi, tot, rb, rn, nr, wb, wn, nw, out_b, n_out):
            dropped = True
        if _bubble(tot, threshold) < threshold:
            break
        if not swapped and not dropped:
            break
    _cancel(out_b, n_out, in_b, n_in, freeze)


@helper
def kv_blocks(tokens, block):
    """The KV blocks ``tokens`` tokens fill: ``ceil(tokens / block)``, in integers."""
    return (tokens + block - 1) // block


@kernel
def rank_rows(slot_request, order, prefill, generated, head, nxt, length, block, run_ids, run_b, n_run, wait_ids,
              wait_b, n_wait):
    """The planner's inputs read off the ranks (:meth:`bfio.sim.pause.DyntraLbPause.plan`):
    per rank ``g`` its running requests in admission order (``order[i]``; ties in
    slot order) ``run_ids[g, :n_run[g]]`` and the first ``2 B - n_run[g]`` of its
    queue (the list ``head[g]`` -> ``nxt[i]``, head first) ``wait_ids[g, :n_wait[g]]``,
    with their KV-block counts :func:`kv_blocks` of ``s_i + tau_i`` in ``run_b`` and
    ``wait_b``. Invariant: ``n_run[g]`` is the rank's busy slots and ``n_wait[g] =
    min(length[g], 2 B - n_run[g])`` for a consistent list."""
    G, B = slot_request.shape
    for g in range(G):
        n = 0
        for b in range(B):
            i = slot_request[g, b]
            if i < 0:
                continue
            q = n
            while q > 0 and order[run_ids[g, q - 1]] > order[i]:  # insertion: stable in slot order
                run_ids[g, q] = run_ids[g, q - 1]
                q -= 1
            run_ids[g, q] = i
            n += 1
        n_run[g] = n
        for k in range(n):
            i = run_ids[g, k]
            run_b[g, k] = kv_blocks(prefill[i] + generated[i], block)
        m = min(length[g], 2 * B - n)
        k, i = 0, head[g]
        while i >= 0 and k < m:
            wait_ids[g, k] = i
            wait_b[g, k] = kv_blocks(prefill[i] + generated[i], block)
            k += 1
            i = nxt[i]
        n_wait[g] = k


@kernel
def _first_of_each(ids, blocks, n, wanted, n_wanted, out, k):
    """For each of ``wanted[:n_wanted]`` the first of ``ids[:n]`` (in order) not yet taken
    with that block count (``blocks``), written to ``out`` from ``k`` in the order of
    ``ids`` (the source matches a plan to requests by block count alone); returns the
    new end. Invariant: each wanted count takes at most one request."""
    used = np.zeros(n_wanted, dtype=np.bool_)
    left = n_wanted
    for j in range(n):
        if left == 0:
            break
        for w in range(n_wanted):
            if not used[w] and wanted[w] == blocks[j]:
                used[w] = True
                left -= 1
                out[k] = ids[j]
                k += 1
                break
    return k


@kernel
def plan_requests(run_ids, run_b, n_run, wait_ids, wait_b, n_wait, out_b, n_out, in_b, n_in, freeze, paused,
                  admitted):
    """A plan (:func:`balance_load`'s ``out_b``, ``in_b``, ``freeze``) as requests, rank by
    rank: ``paused`` the running ones its ``out`` counts match and ``admitted`` the
    queued ones its ``in`` counts match on a rank not frozen (:func:`_first_of_each`);
    returns their numbers. Invariant: a rank with no ``out`` and (frozen or no ``in``)
    contributes nothing."""
    a = p = 0
    for g in range(run_ids.shape[0]):
        if n_out[g] > 0:
            p = _first_of_each(run_ids[g], run_b[g], n_run[g], out_b[g], n_out[g], paused, p)
        if not freeze[g] and n_in[g] > 0:
            a = _first_of_each(wait_ids[g], wait_b[g], n_wait[g], in_b[g], n_in[g], admitted, a)
    return p, a


def plan(running: list[list[int]], waiting: list[list[int]], max_num_seqs: int = 0, threshold: float = 5.0,
         max_iters: int = 1000) -> list[dict]:
    """:func:`balance_load` on per-rank lists of block counts: per rank
    ``{"out_blk": [...], "in_blk": [...], "freeze": bool}`` (the source's
    ``modifications``)."""
    G = len(running)
    M = max([len(r) + len(w) for r, w in zip(running, waiting)] + [1])
    run, wait = np.zeros((G, M), np.int64), np.zeros((G, M), np.int64)
    for g in range(G):
        run[g, :len(running[g])] = running[g]
        wait[g, :len(waiting[g])] = waiting[g]
    n_run = np.array([len(r) for r in running], np.int64)
    n_wait = np.array([len(w) for w in waiting], np.int64)
    K = 2 * max_iters + M + 1
    out_b, in_b = np.zeros((G, K), np.int64), np.zeros((G, K), np.int64)
    n_out, n_in, freeze = np.zeros(G, np.int64), np.zeros(G, np.int64), np.zeros(G, np.bool_)
    balance_load(run, n_run, wait, n_wait, int(max_num_seqs), int(max_iters), float(threshold), out_b, n_out, in_b,
                 n_in, freeze)
    return [{"out_blk": out_b[g, :n_out[g]].tolist(), "in_blk": in_b[g, :n_in[g]].tolist(),
             "freeze": bool(freeze[g])} for g in range(G)]
