"""Golden outputs of :func:`bfio.simulator.simulate` (issue 43): a fixed set of
small runs whose every output is written to one pickle, so a refactor of the
step loop (Section 3; the simulator of Section 6.2) can be checked to change
nothing, bit for bit.

    python benchmarks/sim_golden.py write /tmp/golden_before
    python benchmarks/sim_golden.py write /tmp/golden_after
    python benchmarks/sim_golden.py compare /tmp/golden_before /tmp/golden_after

Kept per case: the metrics without the wall-clock timings (``wall_s``,
``route_s_*``, ``solver_s_*``, the action planners' ``move_plan_s_*`` and
``migration_plan_s_*``; ``route_calls`` is kept), the ``requests`` and
``series`` frames, ``loads``, ``config``, ``warnings``, ``steps`` and
``window_steps``. ``compare`` checks them exactly (``DataFrame.equals``,
``np.array_equal`` with NaNs equal, ``==``) and exits non-zero on a difference
or a case of ``before`` missing from ``after``; cases new in ``after`` are
listed, not compared.
"""

from __future__ import annotations

import math
import pickle
import sys
from pathlib import Path

import numpy as np
import pandas as pd

from bfio.engine.prefill import PrefillModel
from bfio.workloads.sessions import session_requests
from bfio.simulator import simulate
from bfio.workloads.workload import Workload, poisson_arrivals, with_arrivals

#: wall-clock timers (not outputs): the routing call's, the solver's and the action planners'
TIMING_PREFIXES = ("wall_s", "route_s_", "solver_s_", "move_plan_s_", "migration_plan_s_")


def _plain(n: int, seed: int, arrivals: float | None = None, prompt: int = 3000, out: int = 80) -> Workload:
    rng = np.random.default_rng(seed)
    w = Workload(rng.integers(1, prompt, n), rng.integers(1, out, n))
    return with_arrivals(w, poisson_arrivals(n, arrivals, seed)) if arrivals else w


def _sessions(closed: bool, seed: int = 1):
    rng = np.random.default_rng(seed)
    s, o = rng.integers(100, 3000, 300), rng.integers(5, 300, 300)
    return session_requests(s, o, sessions=12, turns=4, seed=seed, think_time_s=2.0, block_tokens=256,
                            closed_loop=closed, group_size=1).workload


def cases() -> dict:
    """name -> (workload, G, B, policy, keyword arguments of simulate)."""
    back = _plain(400, 1)
    arr = _plain(400, 2, arrivals=40.0)
    busy = _plain(300, 3, arrivals=400.0)
    bfio = {"horizon": 20}
    out = {}
    for pol in ("fcfs", "jsq_tokens"):
        out[f"{pol}-backlog"] = (back, 4, 8, pol, {})
        out[f"{pol}-arrivals"] = (arr, 4, 8, pol, {"entry": "arrivals"})
    for adm in ("free", "drain:20"):
        for plc in ("greedy", "auto"):
            opts = {**bfio, "admission": adm, "placement": plc}
            out[f"bfio-{adm}-{plc}-backlog"] = (back, 4, 8, "bfio", {"policy_options": opts})
            out[f"bfio-{adm}-{plc}-arrivals"] = (busy, 4, 8, "bfio", {"policy_options": opts, "entry": "arrivals"})
    for pol in ("vllm_dp", "sglang_total_tokens", "bfio"):
        opts = bfio if pol == "bfio" else {}
        out[f"instant-{pol}-arrivals"] = (busy, 4, 8, pol, {"entry": "arrivals", "dispatch": "instant",
                                                              "policy_options": opts or None})
        out[f"instant-{pol}-backlog"] = (back, 4, 8, pol, {"dispatch": "instant", "policy_options": opts or None})
    out["instant-vllm_dp-report10"] = (busy, 4, 8, "vllm_dp", {"entry": "arrivals", "dispatch": "instant",
                                                               "policy_options": {"report_interval": 10}})
    out["instant-sglang-report10"] = (busy, 4, 8, "sglang_total_tokens", {"entry": "arrivals", "dispatch": "instant",
                                                                          "policy_options": {"report_interval": 10}})
    pf = PrefillModel(chunk_tokens=512, token_s=1e-4)
    kv = PrefillModel(chunk_tokens=512, token_s=1e-4, kv_tokens=12_000)
    cache = PrefillModel(chunk_tokens=2048, token_s=1e-4, cache_blocks=400)
    for pol in ("fcfs", "jsq_tokens", "bfio"):
        out[f"prefill-{pol}-backlog"] = (back, 4, 8, pol, {"prefill": pf, "policy_options": bfio if pol == "bfio"
                                                           else None})
        out[f"prefill-{pol}-arrivals"] = (arr, 4, 8, pol, {"prefill": pf, "entry": "arrivals",
                                                           "policy_options": bfio if pol == "bfio" else None})
    for pol in ("vllm_dp", "bfio"):
        out[f"prefill-kv-instant-{pol}"] = (busy, 4, 8, pol, {"prefill": kv, "entry": "arrivals",
                                                              "dispatch": "instant"})
    # issue 44: the KV bound under central dispatch, and preemption in both dispatch forms
    out["prefill-kv-central-fcfs"] = (busy, 4, 8, "fcfs", {"prefill": kv, "entry": "arrivals"})
    for rule in ("vllm", "sglang"):
        pre = PrefillModel(chunk_tokens=512, token_s=1e-4, kv_tokens=6_000, preemption=rule)
        out[f"preempt-{rule}-instant-vllm_dp"] = (busy, 4, 8, "vllm_dp", {"prefill": pre, "entry": "arrivals",
                                                                          "dispatch": "instant"})
        out[f"preempt-{rule}-central-jsq"] = (busy, 4, 8, "jsq_tokens", {"prefill": pre, "entry": "arrivals"})
    open_s, closed_s = _sessions(False), _sessions(True)
    for pol, disp in (("fcfs", "central"), ("vllm_dp", "instant"), ("cache_first", "instant"),
                      ("bfio", "instant")):
        out[f"prefix-{pol}-{disp}"] = (open_s, 4, 8, pol, {"prefill": cache, "entry": "arrivals", "dispatch": disp})
        if pol != "cache_first":  # it reads the prefix caches (needs the prefill model)
            out[f"closed-{pol}-{disp}"] = (closed_s, 2, 4, pol, {"entry": "arrivals", "dispatch": disp})
        out[f"closed-prefix-{pol}-{disp}"] = (closed_s, 2, 4, pol, {"prefill": cache, "entry": "arrivals",
                                                                    "dispatch": disp})
    for ff in (False, True):
        out[f"ff{ff}-fcfs-arrivals"] = (arr, 4, 8, "fcfs", {"entry": "arrivals", "fast_forward": ff})
        out[f"ff{ff}-jsq-backlog"] = (back, 4, 8, "jsq_tokens", {"fast_forward": ff})
        out[f"ff{ff}-instant-vllm"] = (busy, 4, 8, "vllm_dp", {"entry": "arrivals", "dispatch": "instant",
                                                               "fast_forward": ff})
        out[f"ff{ff}-closed"] = (closed_s, 2, 4, "fcfs", {"entry": "arrivals", "fast_forward": ff})
    out["loads-fcfs-backlog"] = (back, 4, 8, "fcfs", {"record_loads": True})
    out["loads-jsq-arrivals"] = (arr, 4, 8, "jsq_tokens", {"record_loads": True, "entry": "arrivals"})
    out["loads-prefill-instant"] = (busy, 4, 8, "vllm_dp", {"record_loads": True, "entry": "arrivals",
                                                             "dispatch": "instant", "prefill": pf})
    out["loads-bfio-backlog"] = (back, 4, 8, "bfio", {"record_loads": True, "policy_options": bfio})
    # issue 45's actions, each with instant dispatch: queue moves, a rank pause rule, migrations
    # (cost weight 0 lets BF-IO's planner migrate), each way of moving the KV
    inst = {"entry": "arrivals", "dispatch": "instant"}
    for rule in ("sglang_balancer", "bfio"):
        pol = "bfio" if rule == "bfio" else "vllm_dp"
        out[f"moves-{rule}"] = (busy, 4, 8, pol, {**inst, "queue_moves": rule,
                                                   "policy_options": bfio if pol == "bfio" else None})
    out["pause-dyntra_lb"] = (busy, 4, 8, "vllm_dp", {**inst, "rank_pause": "dyntra_lb",
                                                       "rank_pause_options": {"mode": "static", "start_step": 0}})
    out["migrate-roll"] = (busy, 4, 8, "vllm_dp", {**inst, "prefill": kv, "migration": "roll",
                                                    "migration_options": {"threshold": 2}})
    out["migrate-bfio-transfer"] = (busy, 4, 8, "bfio", {**inst, "policy_options": bfio, "migration": "bfio",
                                                          "queue_moves": "bfio",
                                                          "migration_options": {"kv": "transfer", "cost_weight": 0.0}})
    for way in ("recompute", "transfer", "choose"):
        pre = PrefillModel(chunk_tokens=512, token_s=1e-4, kv_tokens=6_000, preemption="vllm")
        out[f"migrate-bfio-{way}-prefill"] = (busy, 4, 8, "bfio", {**inst, "prefill": pre, "policy_options": bfio,
                                                                    "migration": "bfio",
                                                                    "migration_options": {"kv": way,
                                                                                          "cost_weight": 0.0}})
    out["migrate-bfio-choose-prefix"] = (open_s, 4, 8, "bfio", {**inst, "prefill": cache, "migration": "bfio",
                                                                 "migration_options": {"kv": "choose",
                                                                                       "cost_weight": 0.0}})
    out["small-G1"] = (_plain(30, 9), 1, 3, "fcfs", {})
    out["warn-never-full"] = (_plain(12, 10, out=6), 8, 8, "fcfs", {})  # both window warnings
    out["random-seeded"] = (back, 4, 8, "random", {"seed": 7})
    return out


def _untimed(metrics: dict) -> dict:
    return {k: v for k, v in metrics.items() if not k.startswith(TIMING_PREFIXES)}


def outputs(result) -> dict:
    metrics = _untimed(result.metrics)
    return {"metrics": metrics, "requests": result.requests, "series": result.series, "loads": result.loads,
            "config": result.config, "warnings": list(result.warnings), "steps": result.steps,
            "window_steps": result.window_steps}


def write(path: Path) -> None:
    path.mkdir(parents=True, exist_ok=True)
    out = {}
    for name, (w, G, B, policy, kw) in cases().items():
        out[name] = outputs(simulate(w, G, B, policy, show_progress=False, **kw))
    with open(path / "golden.pkl", "wb") as f:
        pickle.dump(out, f)
    print(f"{len(out)} cases -> {path / 'golden.pkl'}")


def _same(a, b) -> bool:
    if isinstance(a, pd.DataFrame):
        return isinstance(b, pd.DataFrame) and a.equals(b) and list(a.columns) == list(b.columns) \
            and a.index.equals(b.index) and (a.dtypes == b.dtypes).all()
    if isinstance(a, np.ndarray) or isinstance(b, np.ndarray):
        return isinstance(a, np.ndarray) and isinstance(b, np.ndarray) and a.dtype == b.dtype \
            and np.array_equal(a, b, equal_nan=a.dtype.kind == "f")
    if isinstance(a, dict):
        return isinstance(b, dict) and list(a) == list(b) and all(_same(a[k], b[k]) for k in a)
    if isinstance(a, (list, tuple)):
        return type(a) is type(b) and len(a) == len(b) and all(_same(x, y) for x, y in zip(a, b))
    if isinstance(a, float) and isinstance(b, float) and math.isnan(a) and math.isnan(b):
        return True
    return type(a) is type(b) and a == b


def compare(before: Path, after: Path) -> int:
    with open(before / "golden.pkl", "rb") as f:
        a = pickle.load(f)
    with open(after / "golden.pkl", "rb") as f:
        b = pickle.load(f)
    bad = []
    missing = [name for name in a if name not in b]
    if missing:
        bad.append(f"cases missing after: {missing}")
    for name in a:
        for part in a[name]:
            x, y = a[name][part], b.get(name, {}).get(part)
            if part == "metrics":  # a reference written before a timer joined TIMING_PREFIXES
                x, y = _untimed(x), _untimed(y or {})
            if name in b and not _same(x, y):
                bad.append(f"{name}: {part}")
    for line in bad:
        print("DIFFERS", line)
    new = [name for name in b if name not in a]
    if new:  # cases added since ``before`` was written: nothing to compare them with
        print(f"{len(new)} new cases, not compared: {', '.join(new)}")
    common = len(a) - len(missing)
    print(f"{common} cases compared: {'identical' if not bad else f'{len(bad)} differences'}")
    return 1 if bad else 0


if __name__ == "__main__":
    cmd = sys.argv[1] if len(sys.argv) > 1 else ""
    if cmd == "write" and len(sys.argv) == 3:
        write(Path(sys.argv[2]))
    elif cmd == "compare" and len(sys.argv) == 4:
        sys.exit(compare(Path(sys.argv[2]), Path(sys.argv[3])))
    else:
        sys.exit(__doc__)
