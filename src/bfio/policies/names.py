"""Display names of the built-in routers: the one place a router's label and its
one-line meaning are written. Tables (:func:`bfio.policies.policy_label`, the
studies' row labels), figures (:data:`bfio.figures.series.SERIES`, which adds
each router's colour and marker) and the figures' glossary read them here, so a
table and a figure name a router the same way.

A light module (no numba, no pandas): the table and figure jobs import it
without the policies themselves (issue 42). A plugin's policy names itself by
its class's ``label`` (:class:`bfio.policies.base.Policy`); a policy in neither
place is shown by its registry name.
"""

from __future__ import annotations

from typing import NamedTuple


class RouterName(NamedTuple):
    """A router's legend and table ``label`` and its ``meaning`` (the glossary's definition)."""

    label: str
    meaning: str


#: Registry name -> :class:`RouterName`, for every built-in policy.
ROUTER_NAMES: dict[str, RouterName] = {
    "fcfs": RouterName('FCFS',
                      "first come, first served: a freed slot takes the oldest waiting request (the paper's baseline)"),
    "jsq_tokens": RouterName('JSQ',
                      "join the shortest queue: each request to the worker with the least token load (the paper's JSQ)"),
    "jsq_requests": RouterName('JSQ (requests)', 'join the shortest queue counted in active requests'),
    "bfio": RouterName('BF-IO',
                      "the paper's router, BF-IO, with lookahead H (the default, discounted objective) routing from a "
                      'central pool'),
    "random": RouterName('Random', 'each request to a random worker'),
    "round_robin": RouterName('Round robin', 'each request to the next worker in turn'),
    "power_of_two": RouterName('Power of two', 'two random workers, the one with fewer tokens wins'),
    "least_tokens": RouterName('Least tokens',
                      'each request at once to the worker with the fewest resident plus queued tokens'),
    "vllm_dp": RouterName('vLLM DP', "vLLM's data-parallel balancer: lowest 4 x waiting + running requests"),
    "vllm_dp_rotating": RouterName('vLLM DP, rotating ties',
                      'vLLM DP with ties taken in turn (vLLM pull request 47420)'),
    "vllm_dp_kv": RouterName('vLLM DP, KV-usage score',
                      'vLLM DP scoring in-flight requests and KV-cache usage (vLLM pull request 49204)'),
    "vllm_token_lb": RouterName('vLLM token LB',
                      "vLLM's proposed token-level balancer: lowest 4 x waiting + running tokens (vLLM pull request 40795)"),
    "sglang_total_requests": RouterName('SGLang total requests',
                      "SGLang's data-parallel controller, fewest running plus waiting requests"),
    "sglang_total_tokens": RouterName('SGLang total tokens',
                      "SGLang's data-parallel controller, fewest KV plus waiting tokens"),
    "sglang_prefix_match": RouterName('SGLang prefix match',
                      "SGLang's proposed rule: a hash of the prompt's first 4k tokens picks the rank"),
    "atom_least_requests": RouterName('ATOM least requests',
                      "ROCm ATOM's balancer: fewest in-flight requests, then prompt tokens"),
    "tpu_least_loaded": RouterName('tpu-inference least loaded',
                      "tpu-inference's scheduler: the smallest resulting rank load, cached prefix tokens discounted"),
    "cache_first": RouterName('tpu-inference cache first',
                      "tpu-inference's former scheduler: the rank with the longest cached prefix, whatever its load"),
    "sgl_cache_aware": RouterName('sgl-router cache aware',
                      "sgl-router's policy: the longest approximate prefix match unless the loads are imbalanced"),
}


#: The actions after binding (issue 45; a run's ``queue_moves``, ``rank_pause`` and
#: ``migration`` rules, :mod:`bfio.sim.moves`, :mod:`bfio.sim.pause`,
#: :mod:`bfio.sim.migration`): (field, rule) -> the words a router's label gains.
ACTION_NAMES: dict[tuple[str, str], RouterName] = {
    ("queue_moves", "sglang_balancer"): RouterName(
        "+ SGLang queue balancer", "queued, not yet prefilled requests moved between ranks when the queues drift apart"),
    ("queue_moves", "bfio"): RouterName(
        "+ BF-IO queue moves", "queued requests moved when the move lowers BF-IO's predicted imbalance"),
    ("rank_pause", "dyntra_lb"): RouterName(
        "+ DyntraLB pauses", "a rank's admissions paused by its KV-block count (vllm-ascend's DyntraLB)"),
    ("migration", "roll"): RouterName(
        "+ ROLL migrations", "waiting, then the shortest running requests interrupted and migrated (ROLL)"),
    ("migration", "bfio"): RouterName(
        "+ BF-IO migrations", "a running request migrated when the imbalance it removes outweighs its KV's cost"),
}


#: How a migrated request's KV reaches its new rank (option ``kv`` of every migration
#: rule; :mod:`bfio.sim.migration_kv` says what each does), as a label says it: the
#: registry of the ways (:data:`bfio.sim.migration_kv.KV_MODES` reads it), the first the
#: rules' default. Here, not in the simulator, so that a table job names them without it.
KV_WAY_LABELS = {"recompute": "(KV recomputed)", "transfer": "(KV sent)",
                 "choose": "(KV recomputed or sent, the cheaper)"}
#: the ways' names, the rules' default first
KV_WAYS = tuple(KV_WAY_LABELS)


def actions_label(actions: dict) -> str:
    """The words the actions ``{field: rule}`` add to a router's label (``''`` for none);
    a rule without an entry in :data:`ACTION_NAMES` is named by its field and rule; the
    entry ``kv`` (a migration's KV way, :data:`KV_WAY_LABELS`) follows its migrations."""
    words = [ACTION_NAMES[(f, r)].label if (f, r) in ACTION_NAMES else f"+ {f} {r}"
             for f, r in actions.items() if r and r != "none" and f != "kv"]
    if actions.get("kv") and actions.get("migration", "none") != "none":
        words.append(KV_WAY_LABELS.get(actions["kv"], f"(KV {actions['kv']})"))
    return " ".join(words)


def router_label(name: str) -> str:
    """The built-in router ``name``'s label; another name is its own label."""
    entry = ROUTER_NAMES.get(name)
    return entry.label if entry is not None else name


__all__ = ["ACTION_NAMES", "KV_WAYS", "KV_WAY_LABELS", "RouterName", "ROUTER_NAMES", "actions_label", "router_label"]
