"""Study: prefill and prefix caches against the lockstep barrier (issue 32).

Every router of ``prefix_study.routers`` (instant dispatch; ``bfio`` is BF-IO
with horizon ``prefix_study.horizon`` and its prefix-cache term,
:class:`bfio.solvers.terms.prefill.PrefillTerm`) on each setting, with the prefill
step model (:mod:`bfio.engine.prefill`: ``prefix_study.prefill``, each rank's cache
capacity derived from ``kv_tokens_per_rank``) and every seed. Settings name a
``workload``:

- ``trace``: a trace with block hashes replayed at its own timestamps scaled
  by ``time_scale`` (``< 1``: a higher load); ``requests`` rows, a window
  whose offset the seed draws (Mooncake, ``docs/prefix_cache.md``);
- ``grpo``: GRPO groups of multi-turn rollouts (:func:`bfio.workloads.sessions.session_requests`
  with ``group_size``): ``groups`` prompts, each rolled out ``group_size``
  times for ``turns`` turns, lengths drawn from ``trace``;
- ``sessions``: multi-turn chat sessions (``group_size`` 1).

With ``closed_loop: true`` a rollout's or session's turn is sent its think time
after the previous turn completes in the simulation (:mod:`bfio.workloads.closed_loop`),
as an RL rollout or a chat user does; otherwise (open loop) after it arrived.

One row per run: the run's identity, ``setting`` and every metric (TTFT,
decode TPOT, end-to-end latency, throughput, cache hit rate). The table
(:mod:`bfio.studies.prefix_summary`) has means with 95% intervals and, per
setting, which routers dominate BF-IO on (throughput, p99 TTFT).
"""

from __future__ import annotations

from dataclasses import replace

import numpy as np
import pandas as pd

from bfio.engine.prefix import cache_capacity_blocks
from bfio.runs.run import RunSpec
from bfio.runs.runner import run_batch
from bfio.step_model import from_config
from bfio.studies.registry import Study, register_study
from bfio.ground.errors import ConfigError
from bfio.ground.limits import MAX_REQUESTS, MAX_SLOTS
from bfio.policies import available, policy_class
from bfio.workloads.sessions import check_block_hashes, session_hash_bound, session_requests
from bfio.studies.prefix_summary import prefix_table
from bfio.traces.registry import KNOWN_TRACES
from bfio.engine.run_parameters import ARRIVAL_OPTION

#: the workloads a setting may name
WORKLOADS = ("trace", "grpo", "sessions")
#: block size of the generated workloads (Mooncake's, vLLM's largest common choice)
GENERATED_BLOCK_TOKENS = 512


def prefill_params(section: dict, block_tokens: int) -> tuple:
    """The runs' :class:`~bfio.engine.prefill.PrefillModel` parameters: the section's chunk
    and token cost, a KV memory of ``kv_tokens_per_rank`` tokens bounding admission,
    and a cache of that many tokens in blocks."""
    p = section["prefill"]
    kv = int(p["kv_tokens_per_rank"])
    params = {"chunk_tokens": int(p["chunk_tokens"]), "token_s": float(p["token_s"]),
              "cache_blocks": cache_capacity_blocks(kv, block_tokens), "kv_tokens": kv}
    if p.get("preemption", "none") != "none":  # off: the runs' identities as before issue 44
        params["preemption"] = str(p["preemption"])
    return tuple(sorted(params.items()))


def _variants(section: dict) -> dict:
    """The rows' labels: ``bfio`` (BF-IO with horizon ``prefix_study.horizon``) and the
    section's ``variants`` (``{policy, **options}`` and an instant row's actions after
    binding, :func:`bfio.runs.run.variant_actions`; issue 45's BF-IO with actions)."""
    return {"bfio": {"policy": "bfio", "horizon": int(section["horizon"])}, **(section.get("variants") or {})}


def prefix_runs(setting: dict, section: dict, seeds, slots: int, defaults=None) -> list[RunSpec]:
    """Every router x seed of ``setting`` (instant dispatch, timed arrivals)."""
    kind = setting.get("workload", "trace")
    bt = KNOWN_TRACES[setting["trace"]].block_tokens if kind == "trace" else GENERATED_BLOCK_TOKENS
    if kind == "trace":
        arrival = {"mode": "trace", "time_scale": float(setting.get("time_scale", SETTING_DEFAULTS["time_scale"]))}
        requests = setting.get("requests")
    else:  # generated: the arrivals are the generator's; the count is the setting's
        arrival = {"mode": "trace", "time_scale": 1.0}
        requests = None
    prefill = prefill_params(section, bt)
    step_model = from_config(section.get("step_model"), "prefix_study.step_model")
    out = []
    for row in section["routers"]:
        for seed in seeds:
            run = RunSpec.make(setting["trace"], requests, setting["workers"], setting.get("slots", slots), row,
                               seed, arrival=arrival, dispatch="instant", variants=_variants(section),
                               defaults=defaults)
            out.append(replace(run, prefill=prefill, step_model=step_model))
    return out


def group_pinning(group: np.ndarray, later: np.ndarray, worker: np.ndarray) -> dict:
    """How a router spreads each GRPO group's later turns (turn >= 1: the turns that
    can hit a cached prompt): ``group_ranks``, the mean number of ranks serving a
    group's later turns, and ``pinned_share``, the share of groups served by one
    rank only (tpu-inference PR #3307: "the entire group pins to a single rank")."""
    counts = pd.Series(worker[later]).groupby(group[later]).nunique()
    if counts.empty:
        return {"group_ranks": np.nan, "pinned_share": np.nan}
    return {"group_ranks": float(counts.mean()), "pinned_share": float((counts == 1).mean())}


def kv_peak(result, budget: int) -> dict:
    """``kv_peak_share``: the largest resident KV of any rank at any step (tokens
    counted per request, as the step time reads them) over the rank's KV budget.
    The budget bounds admission (:class:`bfio.engine.prefill.PrefillModel` ``kv_tokens``);
    without ``prefix_study.prefill.preemption`` decode growth is not preempted, so
    above 1 a real engine would have preempted requests (``docs/prefix_cache.md``)."""
    return {"kv_peak_share": float(result.series["max_load_pre"].max()) / budget}


def generated_requests(setting: dict, frame: pd.DataFrame, seed: int):
    """The GRPO or session requests of ``setting`` and ``seed`` (lengths from
    ``frame``): a :class:`bfio.workloads.sessions.SessionRequests`."""
    kind = setting["workload"]
    group = int(setting.get("group_size", 1)) if kind == "grpo" else 1
    sessions = int(setting["groups"]) * group if kind == "grpo" else int(setting["sessions"])
    return session_requests(frame["prefill_tokens"].to_numpy(), frame["decode_tokens"].to_numpy(), sessions,
                            int(setting["turns"]), seed, block_tokens=GENERATED_BLOCK_TOKENS,
                            session_rate_per_s=setting.get("session_rate_per_s"),
                            think_time_s=float(setting.get("think_time_s", 30.0)), name=kind,
                            group_size=group, stream_gap_s=float(setting.get("stream_gap_s", 0.0)),
                            closed_loop=bool(setting.get("closed_loop", False)))


def run_prefix_study(name: str, setting: dict, section: dict, seeds, slots: int, frame: pd.DataFrame,
                     log=None, defaults=None) -> pd.DataFrame:
    """Simulate every router and seed of setting ``name``; one row per run."""
    runs = prefix_runs(setting, section, seeds, slots, defaults)
    budget = int(section["prefill"]["kv_tokens_per_rank"])
    workload_of = pinning = None
    if setting.get("workload", "trace") != "trace":
        cache: dict = {}

        def requests_of(seed):
            if seed not in cache:
                cache[seed] = generated_requests(setting, frame, seed)
            return cache[seed]

        def workload_of(run):
            return requests_of(run.seed).workload

        if setting["workload"] == "grpo":
            size = int(setting["group_size"])

            def pinning(run, result):
                r = requests_of(run.seed)
                worker = result.requests["queue_worker"].to_numpy()
                every = group_pinning(r.session // size, np.ones(r.turn.shape[0], dtype=bool), worker)
                return group_pinning(r.session // size, r.turn >= 1, worker) | {"pinned_share_all": every["pinned_share"]}

    def extra(run, result):
        return kv_peak(result, budget) | (pinning(run, result) if pinning is not None else {})

    out = run_batch(runs, {setting["trace"]: frame}, show_progress=False, log=log, workload_of=workload_of,
                    extra=extra)
    out.insert(0, "setting", name)
    out.insert(1, "workload", setting.get("workload", "trace"))
    return out


#: keys a setting of each workload needs
WORKLOAD_KEYS = {"trace": (), "grpo": ("groups", "group_size", "turns"), "sessions": ("sessions", "turns")}
#: keys a setting of each workload reads beyond the common ones (name, description,
#: workload, trace, workers, slots); any other is refused, not ignored
WORKLOAD_READS = {w: WORKLOAD_KEYS[w] + optional for w, optional in {
    "trace": ("requests", "time_scale"),
    "grpo": ("think_time_s", "closed_loop", "stream_gap_s", "session_rate_per_s"),
    "sessions": ("think_time_s", "closed_loop", "session_rate_per_s"),
}.items()}
#: the schema's defaults of a setting's keys (filled into every setting when the
#: config loads, so a default value of a key the workload does not read is no mistake)
SETTING_DEFAULTS = {"time_scale": ARRIVAL_OPTION["time_scale"].default, "think_time_s": 30.0, "closed_loop": False, "stream_gap_s": 0.0,
                    "session_rate_per_s": None}
_COMMON_KEYS = ("name", "description", "workload", "trace", "workers", "slots")


def validate_section(section: dict, config: dict) -> None:
    """Every router is an instant-dispatch policy; every setting has its workload's
    keys; a replayed trace carries block hashes and arrival times."""
    variants = _variants(section)
    for i, row in enumerate(section["routers"]):
        policy = variants[row]["policy"] if row in variants else row
        if policy not in available():
            raise ConfigError(f"config key 'prefix_study.routers.{i}': unknown policy '{row}' "
                              f"(available: {', '.join(available())})")
        if "instant" not in policy_class(policy).dispatch_modes:
            raise ConfigError(f"config key 'prefix_study.routers.{i}': '{row}' has no instant dispatch "
                              "(the study binds requests on arrival)")
    _check_prefill(section["prefill"])
    from_config(section.get("step_model"), "prefix_study.step_model")  # checked here, the error naming the key
    specs = KNOWN_TRACES  # extra traces (config 'extra_traces') carry no block hashes
    for i, st in enumerate(section["settings"]):
        for key in WORKLOAD_KEYS[st["workload"]]:
            if key not in st:
                raise ConfigError(f"config key 'prefix_study.settings.{i}.{key}': workload '{st['workload']}' "
                                  "needs it")
        _check_setting_keys(i, st, config)
        if st["workload"] != "trace":
            _check_generated_size(i, st)
        _check_kv_budget(i, st, section["prefill"])
        spec = specs.get(st["trace"])
        if st["workload"] == "trace" and not (spec is not None and spec.hash_col and spec.arrival_col):
            raise ConfigError(f"config key 'prefix_study.settings.{i}.trace': trace '{st['trace']}' has no block "
                              "hashes and arrival times to replay (known traces with both: "
                              f"{', '.join(n for n, sp in specs.items() if sp.hash_col and sp.arrival_col)})")


def _check_finite(where: str, key: str, value) -> None:
    """A number of the section finite (YAML's ``.nan`` and ``.inf`` pass the schema's
    ``minimum``); the error names ``where.key``."""
    import math

    if isinstance(value, float) and not math.isfinite(value):
        raise ConfigError(f"config key '{where}.{key}': expected a finite number, got {value}")


def _check_prefill(prefill: dict) -> None:
    """The prefill model's numbers finite."""
    for key, value in prefill.items():
        _check_finite("prefix_study.prefill", key, value)


def _check_setting_keys(i: int, setting: dict, config: dict) -> None:
    """A setting's numbers finite, its cluster within :data:`bfio.ground.limits.MAX_SLOTS`,
    and no key its workload does not read (:data:`WORKLOAD_READS`; a schema default
    left in place is no mistake)."""
    where = f"prefix_study.settings.{i}"
    kind = setting["workload"]
    for key, value in setting.items():
        _check_finite(where, key, value)
        if key in _COMMON_KEYS or key in WORKLOAD_READS[kind]:
            continue
        if key in SETTING_DEFAULTS and value == SETTING_DEFAULTS[key]:
            continue
        readers = [w for w, keys in WORKLOAD_READS.items() if key in keys]
        raise ConfigError(f"config key '{where}.{key}': workload '{kind}' does not read it (only workload "
                          f"{' | '.join(readers)} does); remove it, it would be ignored")
    slots = int(setting.get("slots", config.get("slots", 72)))
    if int(setting["workers"]) * slots > MAX_SLOTS:
        raise ConfigError(f"config key '{where}.workers': G * B = {setting['workers']} * {slots} = "
                          f"{int(setting['workers']) * slots:,} exceeds the bound of {MAX_SLOTS:,} slots (bfio.ground.limits)")


def _check_kv_budget(i: int, setting: dict, prefill: dict) -> None:
    """``kv_tokens_per_rank`` holds at least one cache block of the setting's
    workload and, for a known trace, its longest prompt (``TraceSpec.longest``):
    a run whose draw holds a prompt beyond the budget fails in its job."""
    kv = int(prefill["kv_tokens_per_rank"])
    spec = KNOWN_TRACES.get(setting["trace"])
    bt = spec.block_tokens if setting["workload"] == "trace" and spec is not None else GENERATED_BLOCK_TOKENS
    key = "config key 'prefix_study.prefill.kv_tokens_per_rank'"
    if bt is not None and kv < bt:
        raise ConfigError(f"{key}: {kv:,} tokens hold no block of {bt} tokens (setting "
                          f"'{setting['name']}'): a rank's prefix cache would have no room")
    if spec is not None and spec.longest is not None and kv < spec.longest[0]:
        raise ConfigError(f"{key}: {kv:,} tokens are less than trace '{spec.name}''s longest prompt "
                          f"({spec.longest[0]:,} tokens, setting '{setting['name']}'); a rank could never admit it")


def _check_generated_size(i: int, setting: dict) -> None:
    """A generated setting's requests within :data:`bfio.ground.limits.MAX_REQUESTS` and
    its block hashes within the memory budget (:func:`bfio.workloads.sessions.check_block_hashes`),
    the hashes bounded from the longest prompt and output of its known trace
    (``TraceSpec.longest``; an extra trace's are checked by the generator in the job)."""
    grpo = setting["workload"] == "grpo"
    sessions = int(setting["groups"]) * int(setting["group_size"]) if grpo else int(setting["sessions"])
    turns = int(setting["turns"])
    requests = sessions * turns
    where = f"prefix_study.settings.{i}"
    if requests > MAX_REQUESTS:
        what = "groups x group_size x turns" if grpo else "sessions x turns"
        raise ConfigError(f"config key '{where}.{'group_size' if grpo else 'sessions'}': {what} = {requests:,} "
                          f"requests exceed the bound of {MAX_REQUESTS:,} (bfio.ground.limits.MAX_REQUESTS)")
    spec = KNOWN_TRACES.get(setting["trace"])
    if spec is not None and spec.longest is not None:
        hashes = session_hash_bound(sessions, turns, *spec.longest, GENERATED_BLOCK_TOKENS)
        check_block_hashes(requests, hashes, f"config key '{where}.turns'",
                           f"the bound takes trace '{spec.name}''s longest prompt and output "
                           f"({spec.longest[0]:,} and {spec.longest[1]:,} tokens) in blocks of "
                           f"{GENERATED_BLOCK_TOKENS} tokens; use fewer turns, "
                           f"{'groups or a smaller group_size' if grpo else 'sessions'}", at_most=True)


STUDY = register_study(Study(
    name="prefix_study", description="Prefill and prefix caches: cache affinity against the barrier",
    directory="prefix", table="prefix_cache", figure="prefix_tradeoff",
    simulate=lambda name, setting, section, seeds, slots, frame, defaults, log: run_prefix_study(
        name, setting, section, seeds, slots, frame, log=log, defaults=defaults),
    tabulate=prefix_table, plot="bfio.figures.prefix_tradeoff:plot_prefix_tradeoff",
    modules=("studies/prefix_study.py", "engine/prefill.py", "engine/prefix.py", "workloads/sessions.py", "policies/cache_first.py",
             "policies/tpu_least_loaded.py", "policies/sglang_prefix_match.py", "policies/sgl_cache_aware.py",
             "policies/prefix_state.py", "solvers/dispatch.py", "solvers/terms/prefill.py", "step_model"),
    table_modules=("studies/prefix_summary.py",), figure_modules=("figures/prefix_tradeoff.py",),
    validate=validate_section,
    caption="""Prefix caches against the lockstep barrier (issue 32, ``docs/studies.md``):
prefix-cache hit rate (share of prompt tokens served from a rank's cache) against
p99 time to first token, one point per router (instant dispatch) and setting, mean
over seeds {{ config["seeds"] }} with 95% intervals; chunked prefill of
{{ config["prefix_study"]["prefill"]["chunk_tokens"] }} tokens per rank and step.""",
))

__all__ = ["WORKLOADS", "WORKLOAD_KEYS", "WORKLOAD_READS", "SETTING_DEFAULTS", "validate_section", "prefill_params", "prefix_runs", "group_pinning", "kv_peak",
           "generated_requests", "run_prefix_study", "STUDY"]
