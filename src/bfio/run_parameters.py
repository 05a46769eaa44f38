"""A run's parameters besides its policy's, each declared once (issue 43): the
cluster's slots, the arrivals and the prefill model.

Each is an :class:`~bfio.ground.options.Option` (name, type, bounds, default,
help), as a policy's options are, grouped in sections named as the library
names them (``prefill.chunk_tokens``, ``arrival.rate``). Everything else is
derived from these declarations:

- the library's defaults: :class:`bfio.engine.prefill.PrefillModel`'s fields,
  :class:`bfio.runs.run.ArrivalSpec`'s, :data:`bfio.engine.prefill.DEFAULT_CHUNK_TOKENS`;
- ``bfio simulate``'s flags, their help and defaults (:mod:`bfio.cli.simulate`),
  and the library words it rewrites into them (:mod:`bfio.cli.library_words`);
- the config schema's fragments (:func:`fill_schema`, called by
  :func:`bfio.pipeline.config.validate_config`): a node ``{x-parameter: slots}`` becomes
  the parameter's property (``x-default: true``: with its default filled in), a
  section ``{x-parameters: study_prefill}`` gets one property per parameter of
  the section, with its default;
- ``config/README.md``'s rows of those keys (:mod:`bfio.pipeline.config_readme`).
"""

from __future__ import annotations

import copy

from bfio.ground.limits import MAX_RANK_TOKENS, MAX_TOKEN_S
from bfio.ground.options import Option
from bfio.engine.prefix import KV_TOKENS_PER_RANK
from bfio.ground.arrival_modes import ARRIVAL_MODES

#: what a rank does when decode growth would exceed its KV memory (:mod:`bfio.sim.preemption`)
PREEMPTION_RULES = ("none", "vllm", "sglang")

#: B: the cluster's slots per worker (the CLI's ``--slots``; the config's top-level
#: ``slots`` and every experiment's and study setting's own)
SLOTS = Option("slots", int, 72, "B, slots (max batch size) per worker", minimum=1)

#: How requests arrive (:class:`bfio.runs.run.ArrivalSpec`; the glossary's "arrival mode").
ARRIVAL = (
    Option("mode", str, "backlog", "where the arrival times come from: backlog (the paper's pool of 4G requests, "
           "no arrival times), poisson (requests drawn as in backlog, Poisson arrivals at the arrival rate) or "
           "trace (the trace's own rows replayed at their timestamps, which needs an arrival column; times "
           "multiplied by the time scale)", choices=ARRIVAL_MODES, cli_flag="--arrival-mode"),
    Option("rate", float, None, "with arrival mode poisson, which requires it: the arrival rate in requests/s",
           exclusive_minimum=0.0, applies_with=("mode", ("poisson",)), cli_flag="--arrival-rate",
           metavar="REQ_PER_S"),
    Option("time_scale", float, 1.0, "with arrival mode trace: a factor on the replayed arrival times (< 1 "
           "compresses time: more load)", exclusive_minimum=0.0, applies_with=("mode", ("trace",)),
           metavar="X"),
)
ARRIVAL_OPTION = {o.name: o for o in ARRIVAL}

#: The prefill step model (:class:`bfio.engine.prefill.PrefillModel`, issue 32; values and
#: sources: docs/prefix_cache.md, "Prefill in the step").
PREFILL = (
    # vLLM's API-server default ``max_num_batched_tokens`` on A100 (``EngineArgs.get_batch_defaults``)
    Option("chunk_tokens", int, 2048, "chunked prefill: prompt tokens a rank computes per step", minimum=1,
           maximum=MAX_RANK_TOKENS, cli_flag="--prefill-chunk-tokens", metavar="N"),
    # 2 N FLOPs a token, N = 7e9 (a 7B model; the traces' Llama-2 tokenizer), on an A100
    # (312 TFLOP/s) at the paper's saturation utilization 0.45 (Appendix D): 14e9 / 140e12
    Option("token_s", float, 1.0e-4, "seconds per computed prompt token on the slowest rank", minimum=0.0,
           maximum=MAX_TOKEN_S, cli_flag="--prefill-token-s", metavar="S"),
    Option("cache_blocks", int, None, "per-rank prefix cache of N blocks; needs a trace with block hashes, "
           "e.g. mooncake", minimum=1, maximum=MAX_RANK_TOKENS, derived="no prefix cache",
           cli_flag="--prefix-cache-blocks", metavar="N"),
    Option("kv_tokens", int, None, "per-rank KV memory of N tokens: a rank admits a prompt only while it fits",
           minimum=1, maximum=MAX_RANK_TOKENS, derived="unbounded", metavar="N"),
    Option("preemption", str, "none", "when a rank's decode growth would exceed its KV memory: none (not "
           "bounded), vllm (the newest running request is preempted and recomputed through the prefill model) or "
           "sglang (SGLang's retract order); counted as preemptions and recomputed_tokens; with it on, every "
           "request's prompt plus output must fit the KV memory (bfio.sim.preemption, issue 44, "
           "docs/prefix_cache.md)", choices=PREEMPTION_RULES, identity="non-default"),
)
PREFILL_OPTION = {o.name: o for o in PREFILL}

#: A study's prefill section (``prefix_study.prefill``): the model's chunk, token cost
#: and preemption, and one KV budget that sets both the KV memory and the prefix cache
#: (:func:`bfio.studies.prefix_study.prefill_params`).
STUDY_PREFILL = (
    PREFILL_OPTION["chunk_tokens"], PREFILL_OPTION["token_s"],
    Option("kv_tokens_per_rank", int, KV_TOKENS_PER_RANK, "a rank's KV budget in tokens: it bounds admission, "
           "and its prefix cache holds that many tokens of blocks (at least one block and the trace's longest "
           "prompt)", minimum=1, maximum=MAX_RANK_TOKENS),
    PREFILL_OPTION["preemption"],
)

#: Every section of parameters by the name the library gives it (``prefill.kv_tokens``)
#: and the schema's markers use; ``""``: a parameter named alone (``slots``).
SECTIONS: dict[str, tuple[Option, ...]] = {"": (SLOTS,), "arrival": ARRIVAL, "prefill": PREFILL,
                                            "study_prefill": STUDY_PREFILL}


def parameter(key: str) -> Option:
    """The declaration of ``key`` (``slots``, ``prefill.chunk_tokens``)."""
    section, _, name = key.rpartition(".")
    found = {o.name: o for o in SECTIONS.get(section, ())}
    if name not in found:
        raise KeyError(f"{key}: not a declared run parameter (sections: {', '.join(s or '-' for s in SECTIONS)})")
    return found[name]


def library_keys() -> dict[str, Option]:
    """Every library key (``prefill.chunk_tokens``, ``slots``) of the sections the
    library reads (:data:`SECTIONS` but the study's own) -> its declaration."""
    return {f"{section}.{o.name}" if section else o.name: o
            for section, options in SECTIONS.items() if section != "study_prefill" for o in options}


def fill_schema(node, sections: dict | None = None):
    """A copy of the config schema ``node`` whose parameter markers are the
    declarations' properties (module docstring); a marker's own keys (its
    ``description``) win over the declaration's."""
    sections = SECTIONS if sections is None else sections
    if isinstance(node, list):
        return [fill_schema(x, sections) for x in node]
    if not isinstance(node, dict):
        return copy.deepcopy(node)
    out = {k: fill_schema(v, sections) for k, v in node.items()}
    if "x-parameter" in node:
        section, _, name = node["x-parameter"].rpartition(".")
        option = {o.name: o for o in sections[section]}[name]
        out = {**option.schema(default=bool(node.get("x-default"))), **out}
    if "x-parameters" in node:
        out["properties"] = {o.name: o.schema(default=True) for o in sections[node["x-parameters"]]}
    return out


__all__ = ["PREEMPTION_RULES", "SLOTS", "ARRIVAL", "ARRIVAL_OPTION", "PREFILL", "PREFILL_OPTION", "STUDY_PREFILL",
           "SECTIONS", "parameter", "library_keys", "fill_schema"]
