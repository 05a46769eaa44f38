"""Does a lower ``J`` per call give a better run? (issue 40, the certified gap's next target)

``bench_certified_gap.py`` found an assignment 7.4% below ``auto``'s ``J`` (median, G = 256) on
captured calls: :func:`bench_certified_gap.target_fill`, which fills every free slot under the
envelope's floor. This benchmark runs whole simulations with that fill as the placement wherever
it applies (the call fills every free slot and forces nothing; ``auto`` elsewhere) and, on every
call where it runs, scores ``auto``'s assignment of the same sub-problem too, so the run reports
both: ``J`` per call (fill / auto - 1, median) and the run's AvgImbalance and throughput against
the run with ``auto`` alone.

BurstGPT, ``N = --per-worker x G``, ``B = 72``, BF-IO with every library default (``auto``,
``drain:100``, ``H = 20``). Seeds 100-102 were looked at first; the report seeds are 42, 1, 2.

    python benchmarks/bench_fill_runs.py [--workers 64] [--seeds 42,1,2] [--per-worker 1500]
"""

import argparse
import time

import numpy as np

import bfio.solvers.central as central
from bench_certified_gap import target_fill
from bfio.simulator import simulate
from bfio.solvers.instance import Instance
from bfio.traces import load_trace
from bfio.workloads.workload import draw_workload

SLOTS = 72


def run(w, G: int, seed: int, fill: bool) -> tuple[dict, list[float]]:
    """One run; with ``fill`` the fill places every call it applies to. Returns the run's
    metrics and, per call the fill placed, ``J(fill) / J(auto) - 1`` on that call."""
    place0 = central.CentralCall._place
    ratios: list[float] = []

    def place(self, base, free, sizes, forced, U, terms, step_s):
        auto = place0(self, base, free, sizes, forced, U, terms, step_s)
        if not fill or U != int(free.sum()) or forced.any() or terms.extra:
            return auto
        inst = Instance(base=np.rint(base).astype(np.int64), free=free, sizes=sizes,
                        ages=np.zeros(sizes.shape[0], dtype=np.int64), admission="free",
                        lifetimes=terms.lifetimes, discount=terms.discount)
        a = target_fill(inst)
        if a is None:
            return auto
        ja = float(inst.objective(auto))
        if ja > 0:
            ratios.append(float(inst.objective(a)) / ja - 1.0)
        return a

    central.CentralCall._place = place
    try:
        r = simulate(w, G, SLOTS, "bfio", seed=seed, show_progress=False)
    finally:
        central.CentralCall._place = place0
    return r.metrics, ratios


def main():
    ap = argparse.ArgumentParser(description=__doc__)
    ap.add_argument("--workers", default="64")
    ap.add_argument("--seeds", default="42,1,2")
    ap.add_argument("--per-worker", type=int, default=1500)
    args = ap.parse_args()
    t = load_trace("burstgpt")
    print("| G | seed | fill's J per call vs auto's, median [p10, p90] | calls | AvgImbalance fill / auto - 1 "
          "| throughput fill / auto - 1 | CPU s |")
    print("|---|---|---|---|---|---|---|")
    for G in (int(x) for x in args.workers.split(",")):
        for seed in (int(x) for x in args.seeds.split(",")):
            w = draw_workload(t.prefill, t.decode, args.per_worker * G, seed)
            t0 = time.process_time()
            base, _ = run(w, G, seed, fill=False)
            got, ratios = run(w, G, seed, fill=True)
            r = np.asarray(ratios) * 100
            imb = got["avg_imbalance"] / base["avg_imbalance"] - 1
            thr = got["throughput"] / base["throughput"] - 1
            print(f"| {G} | {seed} | {np.median(r):+.1f}% [{np.percentile(r, 10):+.1f}, {np.percentile(r, 90):+.1f}] "
                  f"| {r.size} | {imb * 100:+.1f}% | {thr * 100:+.2f}% | {time.process_time() - t0:.1f} |", flush=True)


if __name__ == "__main__":
    main()
