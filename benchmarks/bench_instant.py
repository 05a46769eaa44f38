"""Routing cost of BF-IO with instant dispatch (issue 30): time per arriving request.

BurstGPT, 6,000 requests with Poisson arrivals near saturation (150 req/s at
G = 16, 600 req/s at G = 64), B = 72, BF-IO H = 40 bound on arrival
(``dispatch="instant"``), warm (a first run compiles); the policy's own
dispatch time over the arrivals.

    python benchmarks/bench_instant.py

Target (issue 30): at most 0.1 ms an arrival at G = 64.
"""

from bfio.simulator import simulate
from bfio.traces import load_trace
from bfio.workloads.workload import draw_workload, poisson_arrivals, with_arrivals

N = 6_000


def main():
    t = load_trace("burstgpt")
    print("| G | arrivals/s | dispatch calls | per call (mean) | per call (p99) | per arrival (target <= 0.1 ms at G=64) |")
    print("|---|---|---|---|---|---|")
    for G, rate in ((16, 150.0), (64, 600.0)):
        w = with_arrivals(draw_workload(t.prefill, t.decode, N, 42), poisson_arrivals(N, rate, 42))
        opts = {"horizon": 40}
        simulate(w, G, 72, "bfio", entry="arrivals", dispatch="instant", policy_options=opts, show_progress=False)
        m = simulate(w, G, 72, "bfio", entry="arrivals", dispatch="instant", policy_options=opts,
                     show_progress=False).metrics
        print(f"| {G} | {rate:g} | {m['solver_calls']:,} | {m['solver_s_total'] / m['solver_calls'] * 1e3:.3f} ms | "
              f"{m['solver_s_p99'] * 1e3:.3f} ms | {m['solver_s_total'] / N * 1e3:.3f} ms |", flush=True)


if __name__ == "__main__":
    main()
