"""Certified gap of BF-IO's default placement at scale (issue 40): ``J(auto)`` against
:func:`bfio.solvers.bounds.lp_bound` on routing calls captured with the library's
defaults, and how much of that gap is the placement's and how much the bound's.

Settings: BurstGPT as in ``bench_scaling.py`` (``N = 1,500 G``, ``B = 72``, seed 42,
oracle predictor), ``make_policy("bfio")`` with every default (``placement: auto``,
``admission: drain:100``, ``H = 20``, discount 0.6, predicted lifetimes).

What is captured. Under ``drain:N`` a call is two steps (``CentralCall._route_drain``, :mod:`bfio.solvers.central`):
:func:`bfio.solvers.drain.plan_drain` seats the requests it reserved workers for,
then the placement (``CentralCall._place``, ``auto``) solves Eq. (IO) on the rest: the
loads with drain's seats (``base_k``), the free slots left, the other waiting
requests, and ``U_rest``. That sub-problem is the objective ``auto`` minimizes,
with every term it has (no extra term with the paper's step; the fast window
``0..H_eff = 13`` and weights ``0.6^h``), and ``J`` of the sub-problem's
assignment is ``J`` of the whole call (drain's seats are in ``base_k``). The
benchmark wraps the call's ``_place`` to record it (the policy's own
``capture_instances`` refuses ``drain``, whose first step an instance cannot
describe). Kept: every ``--every``-th placement call after the first ``--skip``,
``--calls`` of them (default 20, placement calls 100, 120, ..., 480, so the
run's steps about 100-500).

Per call: ``J`` of the assignment the run made, :func:`bfio.solvers.trivial_bound`,
:func:`~bfio.solvers.bounds.lp_bound` (HiGHS's interior point, ``--time-limit-s`` a
call) and its seconds, and an upper bound on the optimum (:func:`upper_bound`): the
better of :func:`improve` (exact-``J`` swap descent, ``--improve-moves``) run from
``auto``'s assignment and from :func:`target_fill`'s (every slot filled under the
envelope's floor). The certified gap is
``(J - bound) / bound``; ``auto``'s own gap to the optimum is at least
``(J - J_improved) / J_improved``; the bound's gap at most
``(J_improved - bound) / bound``.

``--sub K``: the LP's integrality gap where HiGHS proves the optimum: per call a
sub-instance with every worker without a free slot (so the envelope's floor is
the call's), ``K`` random workers with free slots and the waiting requests
subsampled in proportion (seeded, ``numpy`` seed 100); ``lp_bound``, ``auto``
and the proven optimum side by side.

    python benchmarks/bench_certified_gap.py [--workers 256,1024] [--calls 20] [--every 20] [--skip 100]
        [--time-limit-s 60] [--improve-moves 150] [--sub 0] [--json FILE]
"""

import argparse
import json
import sys
import time

import numpy as np

from bfio.policies import make_policy
from bfio.simulator import simulate
from bfio.solvers import solve, trivial_bound
from bfio.solvers.bounds import lp_bound
from bfio.solvers.instance import Instance
from bfio.traces import load_trace
from bfio.workloads.workload import draw_workload

SLOTS = 72
PER_WORKER = 1_500
SEED = 42


class _Enough(Exception):
    pass


def capture(G: int, calls: int, every: int, skip: int) -> list:
    """``(instance, assignment)`` of ``calls`` placement calls of a default BF-IO run on ``G``
    workers (module docstring): the sub-problem ``auto`` solved and what it returned."""
    t = load_trace("burstgpt")
    w = draw_workload(t.prefill, t.decode, PER_WORKER * G, SEED)
    policy = make_policy("bfio", seed=SEED)
    kept, count = [], [0]
    place = policy._central._place

    def recording(base, free, sizes, forced, U, terms, step_s):
        assign = place(base, free, sizes, forced, U, terms, step_s)
        c = count[0]
        count[0] += 1
        if c >= skip and (c - skip) % every == 0 and U > 0:
            # forced is all-or-nothing in _route_drain (Eq. (IO): all when all fit), as 'free' makes it
            inst = Instance(base=np.rint(base).astype(np.int64), free=free, sizes=sizes,
                            ages=np.zeros(sizes.shape[0], dtype=np.int64), admission="free",
                            lifetimes=terms.lifetimes, discount=terms.discount, meta={"placement_call": c})
            assert np.array_equal(inst.forced(), forced) and np.array_equal(inst.base, base)
            kept.append((inst, assign.copy()))
            if len(kept) >= calls:
                raise _Enough
        return assign

    policy._central._place = recording
    try:
        simulate(w, G, SLOTS, policy, seed=SEED, show_progress=False)
    except _Enough:
        pass
    return kept


def improve(inst: Instance, assign: np.ndarray, max_moves: int) -> tuple[np.ndarray, float, int]:
    """An upper bound on the optimum of ``inst``: steepest descent on exact ``J`` from
    ``assign`` over two moves, each keeping every worker's count: an admitted request
    of a worker at the envelope swapped for a waiting one (not if it is forced), or
    exchanged with an admitted request of another worker. Stops at a local optimum or
    after ``max_moves`` (deterministic: no clock); returns the assignment, its ``J`` (recomputed by the instance)
    and the moves made."""
    G, w = inst.workers, inst.weights
    P = inst.profiles().astype(np.float64)
    a = assign.copy()
    L = inst.loads(a).astype(np.float64)
    forced = inst.forced()
    cols = np.arange(L.shape[1])
    moves = 0
    while moves < max_moves:
        M = L.max(axis=0)
        order = np.argsort(-L, axis=0, kind="stable")[:3]
        top = [L[order[r], cols] if r < L.shape[0] else np.full(L.shape[1], -np.inf) for r in range(3)]
        out, adm = np.flatnonzero((a < 0) & ~forced), np.flatnonzero(a >= 0)
        best, move = -1e-9 * max(1.0, abs(float(G * M @ w))), None
        for t in np.unique(order[0]):
            excl = np.where(order[0] == t, top[1], top[0])
            for j in np.flatnonzero(a == t):
                if out.size and not forced[j]:
                    Mn = np.maximum(excl[None], L[t][None] - P[j][None] + P[out])
                    d = G * (Mn - M[None]) @ w - (P[out] - P[j][None]) @ w
                    k = int(np.argmin(d))
                    if d[k] < best:
                        best, move = d[k], ("in", t, j, out[k])
                o = adm[a[adm] != t]
                t2 = a[o]
                hit = lambda r: (order[r][None] == t) | (order[r][None] == t2[:, None])  # noqa: E731
                ex = np.where(hit(0), np.where(hit(1), top[2][None], top[1][None]), top[0][None])
                Mn = np.maximum(ex, np.maximum(L[t][None] - P[j][None] + P[o], L[t2] - P[o] + P[j][None]))
                d = G * (Mn - M[None]) @ w
                k = int(np.argmin(d)) if o.size else -1
                if k >= 0 and d[k] < best:
                    best, move = d[k], ("ex", t, j, o[k])
        if move is None:
            break
        kind, t, j, j2 = move
        if kind == "in":
            L[t] += P[j2] - P[j]
            a[j2], a[j] = t, -1
        else:
            t2 = a[j2]
            L[t] += P[j2] - P[j]
            L[t2] += P[j] - P[j2]
            a[j], a[j2] = t2, t
        moves += 1
    inst.check(a)
    return a, float(inst.objective(a)), moves


def target_fill(inst: Instance) -> np.ndarray | None:
    """A feasible assignment built under the envelope's floor ``E0(h) = max_g base_g(h)``
    (``None`` unless every free slot is filled, ``U = sum free``, with nothing forced):
    the workers in order of their least room, each slot given the waiting request of
    the largest weighted volume that fits the room left less the smallest profiles the
    worker's remaining slots need, or, if none fits, the one whose overshoot costs least
    (``G w . overshoot - volume``)."""
    if inst.admissible != int(inst.free.sum()) or inst.forced().any():
        return None
    G, w = inst.workers, inst.weights
    P = inst.profiles().astype(np.float64)
    v = P @ w
    base = inst.base.astype(np.float64)
    T = np.flatnonzero(inst.free > 0)
    room = base.max(axis=0)[None] - base[T]
    a = np.full(inst.waiting, -1, dtype=np.int64)
    avail = np.ones(inst.waiting, dtype=bool)
    for i in np.argsort(room.min(axis=1), kind="stable"):
        t, r = T[i], room[i].copy()
        for slot in range(inst.free[t]):
            idx = np.flatnonzero(avail)
            left = inst.free[t] - slot - 1
            need = np.sort(P[idx], axis=0)[:left].sum(axis=0) if left else 0.0
            over = np.maximum(P[idx] - (r - need)[None], 0.0) @ w
            fit = over <= 0.0
            j = idx[fit][np.argmax(v[idx][fit])] if fit.any() else idx[np.argmin(G * over - v[idx])]
            a[j], avail[j] = t, False
            r -= P[j]
    inst.check(a)
    return a


def upper_bound(inst: Instance, assign: np.ndarray, max_moves: int) -> tuple[float, str, int]:
    """The best feasible ``J`` found: :func:`improve` from ``auto``'s assignment and from
    :func:`target_fill`'s, ``max_moves`` each; returns ``(J, its start, moves)``."""
    best = (float(inst.objective(assign)), "auto", 0)
    for name, start in (("auto", assign), ("target_fill", target_fill(inst))):
        if start is not None:
            _, J, moves = improve(inst, start, max_moves)
            best = min(best, (J, name, moves))
    return best


def sub_instance(inst: Instance, k: int, rng) -> Instance:
    """``inst`` cut to its workers without a free slot, ``k`` random ones with, and the
    waiting requests subsampled in proportion to the free slots kept (``--sub``)."""
    T, off = np.flatnonzero(inst.free > 0), np.flatnonzero(inst.free == 0)
    keep = np.concatenate([off, rng.choice(T, min(k, T.size), replace=False)])
    m = int(round(inst.waiting * inst.free[keep].sum() / inst.free.sum()))
    js = np.sort(rng.choice(inst.waiting, m, replace=False))
    return Instance(base=inst.base[keep], free=inst.free[keep], sizes=inst.sizes[js], ages=inst.ages[js],
                    admission=inst.admission, lifetimes=inst.lifetimes[js], discount=inst.discount)


def _pct(x, q):
    return float(np.percentile(np.asarray(x, dtype=float), q))


def run_scale(G, args, log) -> tuple[list, dict]:
    rows = []
    t0 = time.perf_counter()
    caps = capture(G, args.calls, args.every, args.skip)
    print(f"G={G}: captured {len(caps)} calls in {time.perf_counter() - t0:.0f} s", file=log, flush=True)
    for k, (inst, assign) in enumerate(caps):
        J = float(inst.objective(assign))
        b = lp_bound(inst, time_limit_s=args.time_limit_s, details=True)
        t_up = time.perf_counter()
        J_up, start, moves = upper_bound(inst, assign, args.improve_moves)
        t_up = time.perf_counter() - t_up
        row = {"workers": G, "call": k, "placement_call": inst.meta["placement_call"], "waiting": inst.waiting,
               "free_workers": int((inst.free > 0).sum()), "admissible": inst.admissible, "J_auto": J,
               "trivial_bound": b.trivial, "lp_bound": b.value, "status": b.status, "bound_s": b.wall_s,
               "J_improved": J_up, "improved_from": start, "moves": moves, "improve_s": t_up, "gap": (J - b.value) / abs(b.value),
               "trivial_gap": (J - b.trivial) / abs(b.trivial), "auto_over_improved": (J - J_up) / J_up,
               "improved_gap": (J_up - b.value) / abs(b.value)}
        rows.append(row)
        print(f"G={G} call {k} (n={inst.waiting}, |T|={row['free_workers']}, U={inst.admissible}): J={J:.6g} "
              f"bound={b.value:.6g} trivial={b.trivial:.6g} improved={J_up:.6g} gap {row['gap']:.2%} "
              f"auto/improved {row['auto_over_improved']:+.2%} (from {start}; {b.status}, {b.wall_s:.1f} s)", file=log, flush=True)
    s = {"workers": G, "calls": len(rows)}
    for key in ("gap", "trivial_gap", "auto_over_improved", "improved_gap"):
        s[key + "_median"] = _pct([r[key] for r in rows], 50)
        s[key + "_p95"] = _pct([r[key] for r in rows], 95)
    secs = [r["bound_s"] for r in rows]
    s.update(bound_s_median=_pct(secs, 50), bound_s_max=float(max(secs)),
             lp_finished=int(sum(r["status"] in ("Optimal", "Unknown") for r in rows)))
    return rows, s


def run_sub(caps_G, k, time_limit_s, log) -> list:
    rng = np.random.default_rng(100)
    out = []
    for G, caps in caps_G:
        for c, (inst, _) in enumerate(caps):
            sub = sub_instance(inst, k, rng)
            auto = solve(sub, "fast", placement="auto")
            heap = solve(sub, "fast", placement="heap")
            ex = solve(sub, "highs", time_limit_s=time_limit_s)
            lb = lp_bound(sub, time_limit_s=time_limit_s)
            r = {"workers": G, "call": c, "sub_workers": sub.workers, "waiting": sub.waiting,
                 "admissible": sub.admissible, "J_auto": auto.objective, "J_heap": heap.objective,
                 "optimum": ex.objective, "proven": ex.proven_optimal, "lp_bound": lb,
                 "lp_below_opt": 1 - lb / ex.objective, "heap_over_opt": heap.objective / ex.objective - 1}
            out.append(r)
            print(f"sub G={G} call {c}: K={k} n={sub.waiting} U={sub.admissible}: heap {heap.objective:.6g} "
                  f"auto {auto.objective:.6g} opt {ex.objective:.6g} (proven {ex.proven_optimal}) lp {lb:.6g}: "
                  f"lp {r['lp_below_opt']:.2%} below, heap {r['heap_over_opt']:+.2%}", file=log, flush=True)
    return out


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--workers", default="256,1024")
    ap.add_argument("--calls", type=int, default=20)
    ap.add_argument("--every", type=int, default=20)
    ap.add_argument("--skip", type=int, default=100)
    ap.add_argument("--time-limit-s", type=float, default=60.0)
    ap.add_argument("--improve-moves", type=int, default=150)
    ap.add_argument("--sub", type=int, default=0, help="workers with free slots of the sub-instances (0: none)")
    ap.add_argument("--json", default=None, help="write the rows and the summary as JSON ('-' for stdout)")
    args = ap.parse_args()
    log = sys.stderr if args.json == "-" else sys.stdout
    rows, summary, subs = [], [], []
    for G in (int(g) for g in args.workers.split(",")):
        if args.sub:
            subs += run_sub([(G, capture(G, args.calls, args.every, args.skip))], args.sub, args.time_limit_s, log)
            continue
        r, s = run_scale(G, args, log)
        rows += r
        summary.append(s)
    print(f"BurstGPT, N = {PER_WORKER:,} G, B = {SLOTS}, seed {SEED}, BF-IO defaults (auto, drain:100, H = 20, "
          f"discount 0.6); placement calls {args.skip}, {args.skip + args.every}, ...", file=log)
    if summary:
        print("| G | calls | certified gap median | p95 | trivial-bound gap median | auto over improved median | "
              "p95 | improved over bound median | LP finished | bound s median | max |", file=log)
        print("|---|---|---|---|---|---|---|---|---|---|---|", file=log)
        for s in summary:
            print(f"| {s['workers']} | {s['calls']} | {s['gap_median']:.2%} | {s['gap_p95']:.2%} | "
                  f"{s['trivial_gap_median']:.0%} | {s['auto_over_improved_median']:.2%} | "
                  f"{s['auto_over_improved_p95']:.2%} | {s['improved_gap_median']:.2%} | {s['lp_finished']} | "
                  f"{s['bound_s_median']:.1f} | {s['bound_s_max']:.1f} |", file=log)
    if subs:
        lp = [r["lp_below_opt"] for r in subs]
        hp = [r["heap_over_opt"] for r in subs]
        print(f"sub-instances ({len(subs)}, K = {args.sub}, proven {sum(r['proven'] for r in subs)}): lp_bound below "
              f"the optimum median {_pct(lp, 50):.2%} max {max(lp):.2%}; heap above it median {_pct(hp, 50):.2%} "
              f"max {max(hp):.2%}", file=log)
    if args.json:
        text = json.dumps({"rows": rows, "summary": summary, "sub": subs}, indent=1)
        if args.json == "-":
            print(text)
        else:
            with open(args.json, "w") as f:
                f.write(text + "\n")


if __name__ == "__main__":
    main()
