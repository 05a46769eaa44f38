"""Issue 45's measurement of BF-IO with actions (not a test): instant BF-IO with its
own migrations (``migration = bfio``, :mod:`bfio.sim.migration`: a running
request moves when the drop of BF-IO's ``J`` exceeds its KV's cost) against
instant BF-IO alone, vLLM's DP router with DyntraLB's pauses (vllm-ascend PR
#12292, :mod:`bfio.sim.pause`) or with ROLL's migrations (alibaba/ROLL PR #134),
and vLLM's DP router alone; LongBench-like Poisson runs at a share of the
capacity, instant dispatch, G = 8, B = 72, in the two settings of issue 45's
earlier measurements:

- ``transfer``: the paper's step, 4,000 requests (``benchmarks/rank_pause.py``'s
  setting), a migrated request's KV sent over a 400 Gb/s link at Llama-2-7B's
  512 KiB a token (:mod:`bfio.sim.transfer`); DyntraLB at the ``bubble_threshold``
  that ``benchmarks/rank_pause.py`` chose on seeds 100-109 (500 blocks);
- ``transfer_nvlink``: the same over one direction of an H100's NVLink 4
  (450 GB/s, :data:`NVLINK_GBPS`), ranks of one node;
- ``recompute``: the step with chunked prefill (:class:`bfio.engine.prefill.PrefillModel`'s
  defaults), 1,000 requests (``benchmarks/migration.py``'s setting), a migrated
  request's prompt and output so far prefilled again; DyntraLB is not modelled
  with the prefill model, so ROLL at the threshold ``benchmarks/migration.py``
  chose (1) is the engines' action there.

    python benchmarks/bfio_actions.py [OUT_CSV]
    python benchmarks/bfio_actions.py --cpu     # the rule's simulation cost alone
    python benchmarks/bfio_actions.py --margin 42,1-29   # the margin over DyntraLB on more seeds
    python benchmarks/bfio_actions.py --links 42,1-29    # the margin as the link grows (:func:`links`)

The ``bfio`` rule's ``cost_weight`` and ``horizon`` are chosen per setting on the
tuning seeds 100-109 (the highest mean whole-run throughput of instant BF-IO with
the rule, among :data:`GRID`), then every row runs on the reported seeds 42, 1-4.
Prints per row the mean over seeds of the throughput and the p99 end-to-end
latency, and per comparison the paired per-seed change with a 95% t-interval
over the five seeds; the CPU seconds of instant BF-IO with the rule against
without it (the simulation's cost of the action); the balanced reference
(:mod:`bfio.sim.pooled`, one pooled rank: no router or action of the cluster
removes more imbalance); and the break-even of a migration (module
:mod:`bfio.sim.migration`, "Why BF-IO rarely migrates"). ``OUT_CSV`` (optional)
gets one line per run. The trace is ``$LONGBENCH`` or
``results/traces/longbench.parquet``.
"""

from __future__ import annotations

import os
import sys
import time

import numpy as np
import pandas as pd
from scipy import stats

from bfio.engine.capacity import trace_capacity
from bfio.ground.constants import PaperConstants
from bfio.engine.prefill import PrefillModel
from bfio.sim.transfer import DEFAULT_KV_BYTES_PER_TOKEN, DEFAULT_TRANSFER_GBPS
from bfio.simulator import simulate
from bfio.workloads.workload import draw_workload, poisson_arrivals, with_arrivals

TRACE = os.environ.get("LONGBENCH", "results/traces/longbench.parquet")
TUNE_SEEDS, REPORT_SEEDS = range(100, 110), (42, 1, 2, 3, 4)
#: the bfio rule's options tried on the tuning seeds: the cost's weight and the window
#: (0: BF-IO's own, H = 20 at discount 0.6; 200: undiscounted over 200 steps)
#: and the requests evaluated per call (1, per rank 1; or 4, per rank 2)
GRID = tuple({"cost_weight": w, "horizon": h, "evaluations": e, "per_rank": min(e, 2)}
             for e in (1, 4) for h in (0, 200) for w in (1.0, 4.0, 16.0))
BFIO = ("bfio", {"horizon": 20})
DYNTRA = ("rank_pause", "dyntra_lb", {"bubble_threshold": 500.0})
#: one NVLink 4 direction of an H100 (450 GB/s): ranks of one node exchanging KV
NVLINK_GBPS = 3600.0
#: per setting: the requests, the prefill model, the KV's way and link, and the engines'
#: action on vLLM DP
SETTINGS = {"transfer": (4000, None, {"kv": "transfer"}, DYNTRA),
            "transfer_nvlink": (4000, None, {"kv": "transfer", "transfer_gbps": NVLINK_GBPS}, DYNTRA),
            "recompute": (1000, PrefillModel(), {"kv": "recompute"},
                          ("migration", "roll", {"threshold": 1, "kv": "recompute"}))}
KEEP = ("throughput_run", "e2e_s_p99", "migrations", "migration_queue_moves", "migration_transfer_s",
        "migration_transfer_wait_s", "migration_recomputed_tokens", "request_pauses")


def workload(frame, n, rate, seed):
    s, o = frame["prefill_tokens"].to_numpy(), frame["decode_tokens"].to_numpy()
    return with_arrivals(draw_workload(s, o, n, seed, name="longbench"), poisson_arrivals(n, rate, seed))


def run(frame, setting, rate, seed, label, policy, opts, action=None, G=8, B=72) -> dict:
    """One simulation; ``action``: ``(argument, rule, options)`` or ``None``."""
    n, prefill, _, _ = SETTINGS[setting]
    kw = {}
    if action is not None:
        key, rule, options = action
        kw = {key: rule, f"{key}_options": options}
    t0 = time.process_time()
    res = simulate(workload(frame, n, rate, seed), G, B, policy, seed=seed, entry="arrivals", dispatch="instant",
                   policy_options=opts, prefill=prefill, show_progress=False, **kw)
    return {"setting": setting, "row": label, "seed": seed, "cpu_s": time.process_time() - t0,
            **{k: res.metrics.get(k, 0) for k in KEEP}}


def reference(frame, setting, rate, seed, G=8, B=72) -> float:
    """The balanced reference's whole-run throughput (:mod:`bfio.sim.pooled`)."""
    n, prefill, _, _ = SETTINGS[setting]
    res = simulate(workload(frame, n, rate, seed), G, B, "fcfs", seed=seed, entry="arrivals", dispatch="central",
                   prefill=prefill, reference="balanced", show_progress=False)
    return res.metrics["throughput_run"]


def interval(x: pd.Series) -> str:
    """Mean and 95% t-interval over the seeds, and the per-seed range."""
    x = x.to_numpy(dtype=float)
    half = stats.t.ppf(0.975, x.size - 1) * x.std(ddof=1) / np.sqrt(x.size)
    return (f"{x.mean():+.1f}% [95% CI {x.mean() - half:+.1f}, {x.mean() + half:+.1f}; "
            f"seeds {x.min():+.1f}..{x.max():+.1f}]")


def breakeven() -> None:
    """The window over which a migration must keep its whole gain to pay for its KV."""
    t_l = PaperConstants().token_latency_s
    x = DEFAULT_KV_BYTES_PER_TOKEN / (DEFAULT_TRANSFER_GBPS * 1e9 / 8)
    token_s = PrefillModel().token_s
    print(f"break-even: a migrated token lowers the slowest rank's share by t_l = {t_l:.4g} s a step; it costs "
          f"{x:.4g} s of transfer ({x / t_l:.1f} steps) or {token_s:.4g} s of recompute ({token_s / t_l:.0f} steps) "
          "when the barrier waits for it; BF-IO's window (H = 20, discount 0.6) weighs at most "
          f"{sum(0.6 ** h for h in range(14)):.2f} steps")


def choose(frame, setting: str, rate: float, kv: dict) -> tuple[dict, pd.DataFrame]:
    """The rule's options among :data:`GRID` with the highest mean whole-run throughput
    of instant BF-IO on the tuning seeds (``kv``: the migrations' KV way and link),
    and the tuning runs (one row per seed and option)."""
    tune = pd.DataFrame([run(frame, setting, rate, seed, f"bfio+mig {o}", *BFIO, ("migration", "bfio", {**kv, **o}))
                         for seed in TUNE_SEEDS for o in GRID])
    by = tune.groupby("row", sort=False)["throughput_run"].mean()
    return max(GRID, key=lambda o: by[f"bfio+mig {o}"]), tune


def main(out: str | None = None, G: int = 8, B: int = 72, load: float = 0.9) -> None:
    frame = pd.read_parquet(TRACE)
    d = frame["decode_tokens"].to_numpy()
    breakeven()
    print(f"LongBench outputs: {100 * (d > 104).mean():.1f}% longer than 104 tokens, {100 * (d > 995).mean():.1f}% "
          f"longer than 995 (max {d.max()})\n")
    runs = []
    for setting, (n, prefill, kv, engine_action) in SETTINGS.items():
        rate = load * trace_capacity(frame, G, B, prefill_model=prefill).requests_per_s
        best, tune = choose(frame, setting, rate, kv)
        tune = pd.concat([tune, pd.DataFrame([run(frame, setting, rate, seed, "bfio", *BFIO) for seed in TUNE_SEEDS])],
                         ignore_index=True)
        by = tune.groupby("row", sort=False)[["throughput_run", "e2e_s_p99", "migrations", "cpu_s"]].mean()
        print(f"{setting}: tuning (instant BF-IO, seeds 100-109, N={n}, G={G}, B={B}, {rate:.3g} req/s = "
              f"{load:g} x capacity):")
        print(by.to_string(float_format=lambda v: f"{v:.4g}"))
        print(f"{setting}: chosen {best}\n")
        key, rule, options = engine_action
        rows = {"vllm_dp": ("vllm_dp", None, None),
                f"vllm_dp+{rule}": ("vllm_dp", None, engine_action),
                "bfio": (*BFIO, None),
                "bfio+mig": (*BFIO, ("migration", "bfio", {**kv, **best}))}
        if key == "rank_pause":
            rows["bfio+dyntra_lb"] = (*BFIO, engine_action)
            free = {**kv, "transfer_gbps": 1e9, "evaluations": 4, "per_rank": 2}
            rows["bfio+mig free"] = (*BFIO, ("migration", "bfio", free))  # a KV that moves for nothing: the bound
        report = pd.DataFrame([run(frame, setting, rate, seed, label, *spec)
                               for seed in REPORT_SEEDS for label, spec in rows.items()])
        ref = pd.Series({seed: reference(frame, setting, rate, seed) for seed in REPORT_SEEDS})
        table = report.groupby("row", sort=False)[list(KEEP) + ["cpu_s"]].mean()
        print(f"{setting}: reported (seeds {', '.join(map(str, REPORT_SEEDS))}; mean over seeds):")
        print(table.drop(columns=[c for c in KEEP if not table[c].any()]).to_string(
            float_format=lambda v: f"{v:.4g}"))
        print(f"{setting}: balanced reference throughput {ref.mean():.4g} tok/s")
        p = report.pivot(index="seed", columns="row")
        thr, p99 = p["throughput_run"], p["e2e_s_p99"]
        for a, b in (("bfio+mig", "bfio"), ("bfio+mig", f"vllm_dp+{rule}"), ("bfio", f"vllm_dp+{rule}"),
                     (f"vllm_dp+{rule}", "vllm_dp"), ("bfio+mig", "vllm_dp"), ("bfio", "vllm_dp"),
                     *((("bfio+dyntra_lb", "bfio"), ("bfio+mig free", "bfio"), ("bfio+mig free", "vllm_dp+dyntra_lb"))
                       if "bfio+dyntra_lb" in rows else ())):
            print(f"{setting}: {a} vs {b}: throughput {interval(100 * (thr[a] / thr[b] - 1))}, "
                  f"p99 e2e {interval(100 * (p99[a] / p99[b] - 1))}")
        for a in ("bfio", "bfio+mig", f"vllm_dp+{rule}"):
            print(f"{setting}: balanced reference vs {a}: throughput {interval(100 * (ref / thr[a] - 1))}")
        cpu = p["cpu_s"]
        ratio = cpu["bfio+mig"] / cpu["bfio"]
        options = tune[tune["row"] != "bfio"]["cpu_s"].mean() / by.loc["bfio", "cpu_s"]
        total = cpu["bfio+mig"].sum() / cpu["bfio"].sum()
        print(f"{setting}: CPU of instant BF-IO with the rule / without: {total:.2f} (per seed "
              f"{ratio.min():.2f}..{ratio.max():.2f}); tuning runs, every option: {options:.2f}\n")
        runs += [tune.assign(phase="tune"), report.assign(phase="report"),
                 pd.DataFrame({"setting": setting, "row": "balanced reference", "seed": ref.index,
                               "throughput_run": ref.to_numpy(), "phase": "report"})]
    every = pd.concat(runs)
    print(f"CPU: {every['cpu_s'].sum():.1f} s in {every['cpu_s'].notna().sum()} runs")
    if out:
        every.to_csv(out, index=False)


#: the rule's options :func:`main` chose on seeds 100-109 (2026-12-05, ``docs/architecture.md``), per setting
CHOSEN = {"transfer": {"kv": "transfer", "cost_weight": 16.0},
          "transfer_nvlink": {"kv": "transfer", "transfer_gbps": NVLINK_GBPS, "cost_weight": 4.0,
                              "evaluations": 4, "per_rank": 2}}


def margin(seeds: list[int], G: int = 8, B: int = 72, load: float = 0.9) -> pd.DataFrame:
    """Issue 45's margin over DyntraLB on more seeds, nothing chosen on them
    (``python benchmarks/bfio_actions.py --margin 42,1-29``): per transfer setting,
    vLLM DP with and without DyntraLB's pauses, instant BF-IO with and without its
    migrations (:data:`CHOSEN`), paired by seed."""
    frame = pd.read_parquet(TRACE)
    rate = load * trace_capacity(frame, G, B).requests_per_s
    out = []
    for setting, options in CHOSEN.items():
        rows = {"vllm_dp": ("vllm_dp", None, None), "vllm_dp+dyntra_lb": ("vllm_dp", None, DYNTRA),
                "bfio": (*BFIO, None), "bfio+mig": (*BFIO, ("migration", "bfio", options))}
        report = pd.DataFrame([run(frame, setting, rate, seed, label, *spec)
                               for seed in seeds for label, spec in rows.items()])
        p = report.pivot(index="seed", columns="row")
        thr, p99 = p["throughput_run"], p["e2e_s_p99"]
        print(f"{setting} ({len(seeds)} seeds; mean throughput " + ", ".join(
            f"{r} {thr[r].mean():.4g}" for r in rows) + " tok/s):")
        for a, b in (("vllm_dp+dyntra_lb", "vllm_dp"), ("bfio+mig", "vllm_dp+dyntra_lb"),
                     ("bfio", "vllm_dp+dyntra_lb"), ("bfio+mig", "bfio")):
            print(f"  {a} vs {b}: throughput {interval(100 * (thr[a] / thr[b] - 1))}, "
                  f"p99 e2e {interval(100 * (p99[a] / p99[b] - 1))}")
        out.append(report)
    return pd.concat(out)


#: the links :func:`links` sweeps (Gb/s): 400 Gb/s, two and four of them, NVLink 4, and a
#: KV that moves for nothing (the most migrations can add with this rule)
LINKS = (DEFAULT_TRANSFER_GBPS, 800.0, 1600.0, NVLINK_GBPS, 1e9)


def links(seeds: list[int], G: int = 8, B: int = 72, load: float = 0.9) -> pd.DataFrame:
    """The margin over DyntraLB as the link grows (``python benchmarks/bfio_actions.py
    --links 42,1-29``): per link of :data:`LINKS` the rule's options chosen on the
    tuning seeds among :data:`GRID` (the highest mean whole-run throughput, as
    :func:`main` chooses them, with today's BF-IO: :data:`CHOSEN` was chosen before
    ``release: order`` became its default, and at 400 Gb/s the choice is now 4
    evaluations at cost weight 4), then instant BF-IO with them against vLLM DP with
    DyntraLB's pauses on ``seeds``, paired by seed: from which link the issue's +6.6%
    is met; the last row is the bound of what this rule's migrations add when the
    KV's transfer costs nothing.

    Measured 2026-12-07, seeds 42, 1-29 (mean [95%]; the worst seed): 400 Gb/s +5.9%
    [+4.3, +7.5] (+0.7), 800 +6.0% [+4.4, +7.6] (-0.2), 1,600 +6.6% [+5.1, +8.2]
    (-0.8), NVLink +7.7% [+6.2, +9.3] (+2.8), free +10.1% [+8.5, +11.8] (+4.0)."""
    frame = pd.read_parquet(TRACE)
    rate = load * trace_capacity(frame, G, B).requests_per_s

    out = []
    dyntra = pd.Series({seed: run(frame, "transfer", rate, seed, "dyntra", "vllm_dp", None, DYNTRA)["throughput_run"]
                        for seed in seeds})
    for gbps in LINKS:
        kv = {"kv": "transfer", "transfer_gbps": gbps}
        best, _ = choose(frame, "transfer", rate, kv)
        thr = pd.Series({seed: run(frame, "transfer", rate, seed, f"{gbps:g} Gb/s", *BFIO,
                                   ("migration", "bfio", {**kv, **best}))["throughput_run"] for seed in seeds})
        d = 100 * (thr / dyntra - 1)
        print(f"{gbps:g} Gb/s (chosen {best}): vs vLLM DP + DyntraLB {interval(d)}", flush=True)
        out.append(pd.DataFrame({"gbps": gbps, "seed": d.index, "vs_dyntra_%": d.to_numpy(), **best}))
    return pd.concat(out)


def cpu(G: int = 8, B: int = 72, load: float = 0.9, repeats: int = 3) -> None:
    """The simulation's cost of the rule: per reported seed the least process time
    of ``repeats`` runs of instant BF-IO in the paper's step, without the rule and
    with each setting's chosen options (``python benchmarks/bfio_actions.py --cpu``)."""
    frame = pd.read_parquet(TRACE)
    rate = load * trace_capacity(frame, G, B).requests_per_s
    chosen = {"off": None, "400 Gb/s, 1 evaluation": CHOSEN["transfer"],
              "NVLink, 4 evaluations": CHOSEN["transfer_nvlink"],
              "NVLink, 1 evaluation": {"kv": "transfer", "transfer_gbps": NVLINK_GBPS, "cost_weight": 4.0}}
    rows = []
    for seed in REPORT_SEEDS:
        work = workload(frame, SETTINGS["transfer"][0], rate, seed)
        for label, o in chosen.items():
            best = np.inf
            for _ in range(repeats):
                t0 = time.process_time()
                simulate(work, G, B, BFIO[0], seed=seed, entry="arrivals", dispatch="instant", policy_options=BFIO[1],
                         migration="none" if o is None else "bfio", migration_options=o, show_progress=False)
                best = min(best, time.process_time() - t0)
            rows.append({"seed": seed, "rule": label, "cpu_s": best})
    t = pd.DataFrame(rows).pivot(index="seed", columns="rule")["cpu_s"]
    print(t.to_string(float_format=lambda v: f"{v:.3f}"))
    for label in list(chosen)[1:]:
        r = t[label] / t["off"]
        print(f"CPU with the rule ({label}) / without: {t[label].sum() / t['off'].sum():.2f}x "
              f"(per seed {r.min():.2f}..{r.max():.2f})")


if __name__ == "__main__":
    if sys.argv[1:2] == ["--cpu"]:
        cpu()
    elif sys.argv[1:2] == ["--margin"]:
        from instant_gap import seeds_arg  # "42,1-29" (this directory's benchmark)

        margin(seeds_arg(sys.argv[2]))
    elif sys.argv[1:2] == ["--links"]:
        from instant_gap import seeds_arg

        links(seeds_arg(sys.argv[2]))
    else:
        main(*sys.argv[1:2])
