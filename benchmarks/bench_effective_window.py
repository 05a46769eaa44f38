"""The fast solver's cut-off of the lookahead window, measured (issue 31, item 2).

With a discount ``delta < 1`` the fast solver optimizes the offsets
``0..H_eff`` only (:func:`bfio.solvers.objective.effective_horizon`: where
``delta^h`` falls below ``NEGLIGIBLE_WEIGHT``). This benchmark runs BF-IO
(default objective, library options) twice on the same workload: with the
cut-off and on the whole window ``0..H`` (the cut-off disabled), and reports

- per routing call (every call of the cut-off run, re-solved both ways on the
  whole window): the whole-window ``J`` of the cut-off solution against the
  whole-window solution's, next to the *bound* on what the omitted offsets can
  weigh, their share of the total weight ``sum_{h > H_eff} delta^h / sum_h delta^h``;
- per run: AvgImbalance and throughput with and without the cut-off, and the
  mean routing call.

    python benchmarks/bench_effective_window.py [--trace burstgpt] [--workers 16] [--requests 20000] [--horizon 100]
"""

import argparse
import time

import numpy as np

import bfio.solvers.central as central
from bfio.simulator import simulate
from bfio.solvers.fast import solve_fast
from bfio.solvers.instance import Instance
from bfio.solvers import objective
from bfio.solvers.instance import forced_mask
from bfio.lookahead.discount import DEFAULT_DISCOUNT, effective_horizon, offset_weights
from bfio.traces import load_trace
from bfio.workloads.workload import draw_workload

SLOTS = 72


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--trace", default="burstgpt")
    ap.add_argument("--workers", type=int, default=16)
    ap.add_argument("--requests", type=int, default=20_000)
    ap.add_argument("--horizon", type=int, default=100)
    ap.add_argument("--seed", type=int, default=42)
    args = ap.parse_args()
    t = load_trace(args.trace)
    w = draw_workload(t.prefill, t.decode, args.requests, args.seed)
    H, delta = args.horizon, DEFAULT_DISCOUNT
    H_eff = effective_horizon(H, delta)
    wfull = offset_weights(H, delta)
    share = float(wfull[H_eff + 1:].sum() / wfull.sum())
    opts = {"horizon": H}

    results = {}
    for name, cut in (("cut-off", True), ("whole window", False)):
        if not cut:  # the policy's window (ObjectiveTerms.build reads it at call time): every offset 0..H
            objective.effective_horizon = lambda horizon, discount, *a: int(horizon)
        t0 = time.perf_counter()
        r = simulate(w, args.workers, SLOTS, "bfio", seed=args.seed, policy_options=opts, show_progress=False)
        results[name] = (r.metrics, time.perf_counter() - t0)
        objective.effective_horizon = effective_horizon

    # per call: the base loads of the whole window are rebuilt by re-running the cut-off
    # run and capturing each call's whole-window loads
    gaps = []
    from bfio.lookahead.profiles import predicted_loads

    def per_call(self, state, est, U):
        base_full = predicted_loads(state.slot_request, state.workload.prefill, state.generated, est, H)
        sizes = state.pool_prefill
        n = sizes.shape[0]
        ages = state.step - state.enter_step[state.pool]
        forced = forced_mask((self.admission_mode, self.aging_steps), U, ages)
        free = np.asarray(state.free, dtype=np.int64)
        life = np.maximum(1, est[state.pool])
        cutoff = solve_fast(np.ascontiguousarray(base_full[:, :H_eff + 1]), free, sizes, life, forced, U, 4,
                            offset_weights(H_eff, delta))
        whole = solve_fast(base_full, free, sizes, life, forced, U, 4, wfull)
        # both scored on the whole window by the instance's objective (bfio.solvers.objective)
        inst = Instance(base=base_full, free=free, sizes=sizes, ages=ages, lifetimes=life, discount=delta)
        jc, jw = inst.objective(cutoff), inst.objective(whole)
        if jw > 0 and n:
            gaps.append((jc - jw) / abs(jw))
        return cutoff

    central.CentralCall._route_fast = per_call
    simulate(w, args.workers, SLOTS, "bfio", seed=args.seed, policy_options=opts, show_progress=False)
    g = np.asarray(gaps)
    print(f"{args.trace}, N = {args.requests:,}, G = {args.workers}, B = {SLOTS}, H = {H}, delta = {delta:g}: "
          f"H_eff = {H_eff}; omitted offsets' share of the weight (the bound): {share:.2e}")
    print("| run | AvgImbalance | throughput | mean call | wall |")
    print("|---|---|---|---|---|")
    for name, (m, wall) in results.items():
        print(f"| {name} | {m['avg_imbalance']:.6g} | {m['throughput']:.6g} | "
              f"{m['solver_s_total'] / m['solver_calls'] * 1e3:.3f} ms | {wall:.1f} s |")
    (mc, _), (mw, _) = results["cut-off"], results["whole window"]
    print(f"whole window vs cut-off: imbalance {mw['avg_imbalance'] / mc['avg_imbalance'] - 1:+.3%}, "
          f"throughput {mw['throughput'] / mc['throughput'] - 1:+.3%}")
    print(f"per call ({g.size} calls), whole-window J of the cut-off solution over the whole-window solution's - 1: "
          f"median {np.median(g):+.2e}, p95 {np.percentile(g, 95):+.2e}, max {g.max():+.2e} "
          f"(negative: the cut-off found the better placement; the heuristic is not exact either way)")


if __name__ == "__main__":
    main()
