"""``bfio simulate``: one simulation of a trace under a routing policy
(Sections 3, 6.2), its metrics printed or written as JSON, optionally its
per-step series and per-request table."""

from __future__ import annotations

import re
import sys
from dataclasses import replace

from bfio.cli.arguments import (policy_name, positive_float, positive_int, rank_tokens, request_count, seed_int,
                                token_seconds)
from bfio.cli.output import FRAME_SUFFIXES, check_distinct, check_writable, frame_output, json_output, write_outputs
from bfio.cli.traces import known_trace_dir
from bfio.cli.library_words import cli_words
from bfio.ground.errors import ConfigError
from bfio.policies.base import DISPATCH_MODES
from bfio.ground.limits import MAX_RANK_TOKENS, MAX_SLOTS, MAX_TOKEN_S
from bfio.policies import policy_class, policy_options as declared_options, registered, supporting
from bfio.ground.options import identity_of
from bfio.runs.results_diff import without_timings
from bfio.engine.run_parameters import ARRIVAL, ARRIVAL_OPTION, PREFILL, SLOTS
from bfio.sim.moves import QUEUE_MOVES
from bfio.sim.migration import RULES as MIGRATION_RULES
from bfio.sim.pause import RULES as PAUSE_RULES
from bfio.solvers import warn_fallbacks
from bfio.step_model import OPTIONS
from bfio.traces import load_trace
from bfio.traces.registry import ARRIVAL_UNITS, KNOWN_TRACES, resolve_trace


def add_parser(subparsers) -> None:
    """The ``simulate`` subcommand and its options."""
    s = subparsers.add_parser("simulate", help="run one simulation and print its metrics",
                              description="Run one simulation. Metrics follow the paper convention "
                                          "(post-completion imbalance and power over steps 1..last admission); "
                                          "the pre-step measurement is reported beside it.")
    s.add_argument("--trace", required=True,
                   help=f"known trace name ({', '.join(KNOWN_TRACES)}; sha256-verified) or a path to a "
                        ".json/.jsonl/.csv/.parquet trace")
    s.add_argument("--requests", type=request_count, required=True,
                   help="number of requests N: drawn with replacement from the trace (backlog, poisson), or a "
                        "contiguous window of N of the trace's own rows at a --seed offset (trace)")
    s.add_argument("--seed", type=seed_int, default=42, help="seed (>= 0) of the workload draw and of random policies (default 42)")
    s.add_argument("--workers", type=positive_int, required=True, help="number of workers G")
    add_parameter_flag(s, SLOTS, default=SLOTS.default)
    s.add_argument("--policy", default="fcfs", type=policy_name,
                   help="routing policy: " + ", ".join(registered()))
    s.add_argument("--json", metavar="DEST", help="write the result as one JSON object to DEST ('-' for stdout)")
    s.add_argument("--no-timings", action="store_true",
                   help="leave the machine's timings (wall_s, route_s_*, solver_s_*) out of the outputs, so two runs "
                        "of the same arguments write the same bytes")
    s.add_argument("--prefill-col", help="prefill-length column of a generic trace (default input_length)")
    s.add_argument("--decode-col", help="decode-length column of a generic trace (default output_length)")
    s.add_argument("--arrival-col", help="arrival-time column (seconds or timestamps), optional")
    s.add_argument("--arrival-unit", choices=sorted(ARRIVAL_UNITS), default=None,
                   help="unit of a numeric arrival column of a trace given by path (default s; a column named "
                        "*_ms, or whose values span weeks as seconds, must say it); known traces carry their own")
    s.add_argument("--hash-col", metavar="NAME",
                   help="column of each prompt's KV-block hashes (a list) of a trace given by path, for "
                        "--prefix-cache-blocks; needs --block-tokens (known traces carry their own)")
    s.add_argument("--block-tokens", type=positive_int, metavar="N",
                   help="with --hash-col: tokens per hashed block")
    s.add_argument("--data-dir", help="directory holding the known traces (default $BFIO_DATA_DIR or ../shared/data)")
    s.add_argument("--download", action="store_true",
                   help="a known trace missing from the data directory is fetched from its pinned public source "
                        "into --download-dir (sha256-verified; $BFIO_TRACE_BASE_URL names a mirror)")
    s.add_argument("--download-dir", default=None,
                   help="where downloaded traces are kept and looked for (default resources/traces, as the "
                        "pipeline's download_dir)")
    s.add_argument("--no-verify", action="store_true", help="skip the sha256 check of known traces")
    for o in ARRIVAL:  # bfio.engine.run_parameters.ARRIVAL
        add_parameter_flag(s, o)
    s.add_argument("--dispatch", choices=DISPATCH_MODES, default=None,
                   help="central: one shared pool, the policy admits from it at every step (the paper's); "
                        "instant: each request is bound to one worker's FIFO queue on arrival (vLLM/SGLang "
                        "data-parallel routers); policies: " + ", ".join(supporting("instant")) + ". Default: "
                        "the policy's: instant for the engines' routers (" + ", ".join(instant_by_default())
                        + ") and the instant-only ones, central otherwise; give --dispatch central to run an "
                        "engine's router from the central pool")
    s.add_argument("--queue-moves", choices=QUEUE_MOVES, default="none",
                   help="with --dispatch instant: move queued, not yet admitted requests between ranks' queues "
                        "(issue 45): none (default), sglang_balancer (SGLang PR #37401's waiting-queue balancer), "
                        "bfio (BF-IO moves a queued request when that lowers its objective J; policy bfio)")
    add_action_flags(s, "--rank-pause", PAUSE_RULES, "pause ranks' admissions and running requests (issue 45)")
    add_action_flags(s, "--migration", MIGRATION_RULES, "interrupt running requests and re-queue them on other "
                     "ranks, their KV recomputed or transferred (issue 45; docs/architecture.md)",
                     "; kv recompute needs the prefill model, kv transfer runs with or without it, kv choose (rule "
                     "bfio, with the prefill model) takes the cheaper per migration")
    s.add_argument("--admission-mode", choices=["backlog", "arrivals"], default=None,
                   help="deprecated alias: backlog = --arrival-mode backlog; arrivals = --arrival-mode poisson "
                        "with --arrival-rate, else --arrival-mode trace")
    pf = s.add_argument_group("prefill and prefix caches (issue 32, docs/prefix_cache.md; off unless one is given)")
    for o in PREFILL:  # bfio.engine.run_parameters.PREFILL
        add_parameter_flag(pf, o)
    add_step_model_options(s)
    s.add_argument("--series", metavar="FILE", help="also write the per-step series (.csv, .parquet or .pq; other extensions are refused)")
    s.add_argument("--per-request", metavar="FILE", help="also write per-request start/finish/wait (.csv, .parquet or .pq)")
    add_policy_options(s)


def add_action_flags(s, flag: str, rules: dict, what: str, note: str = "") -> None:
    """An action's flags (issue 45): ``FLAG`` picks its rule among ``none`` and the
    registry ``rules`` (name -> class with its ``summary`` and option ``defaults``;
    ``what`` the action does), ``FLAG-option KEY=VALUE`` (repeatable) sets the
    rule's options."""
    names = ("none", *rules)
    s.add_argument(flag, choices=names, default="none",
                   help=f"with --dispatch instant: {what}: none (default), "
                        + ", ".join(f"{name} ({cls.summary})" for name, cls in rules.items()))
    s.add_argument(f"{flag}-option", action="append", default=None, metavar="KEY=VALUE",
                   help=f"an option of {flag} (repeatable); "
                        + "; ".join(f"{name}'s: " + ", ".join(f"{k} (default {v})" for k, v in cls.defaults.items())
                                    for name, cls in rules.items()) + note)


def _option_value(option):
    """argparse type of a declared policy option: the text as the option's type,
    checked by the declaration (:meth:`bfio.ground.options.Option.check`)."""
    import argparse

    def parse(text: str):
        try:
            value = option.type(text)
        except ValueError:
            raise argparse.ArgumentTypeError(f"expected {option.describe_values()}, got '{text}'") from None
        try:
            return option.check(value)
        except ConfigError as e:
            raise argparse.ArgumentTypeError(str(e).split(": ", 1)[1]) from None

    return parse


def dest(option) -> str:
    """The ``args`` attribute of a declared run parameter's flag (``--kv-tokens``: ``kv_tokens``)."""
    return option.flag[2:].replace("-", "_")


def parameter_value(option):
    """argparse type of a declared run parameter (:mod:`bfio.engine.run_parameters`): the command
    line's readers of its kind, with their messages (:mod:`bfio.cli.arguments`: an integer
    >= 1, ``rank_tokens`` when declared at most ``MAX_RANK_TOKENS``; a number > 0,
    ``token_seconds`` when declared at most ``MAX_TOKEN_S``, which also refuses 0 s a token
    on the command line); choices: argparse's own check; else the declaration's check."""
    if option.allowed() is not None and option.type is str:
        return None
    if option.type is int and option.minimum == 1 and option.maximum in (None, MAX_RANK_TOKENS):
        return positive_int if option.maximum is None else rank_tokens
    if option.type is float and option.maximum == MAX_TOKEN_S:
        return token_seconds
    if option.type is float and option.exclusive_minimum == 0 and option.maximum is None:
        return positive_float
    return _option_value(option)


def add_parameter_flag(group, option, default=None) -> None:
    """The flag of a declared run parameter: its name, reader, metavar, choices and help
    from its declaration; ``default``: the flag's (``None``: not given, the library's applies)."""
    allowed, reader = option.allowed(), parameter_value(option)
    shown = replace(option, minimum=None, exclusive_minimum=0.0) if reader in (positive_float, token_seconds) \
        else option  # the help says what the reader takes
    group.add_argument(option.flag, type=reader, metavar=option.metavar, default=default,
                       choices=list(allowed) if allowed is not None else None,
                       help=shown.help_text().replace("%", "%%"))


def add_step_model_options(s) -> None:
    """One flag per declared step-model option (:data:`bfio.step_model.OPTIONS`)."""
    g = s.add_argument_group("step time model (issue 44, docs/step_model.md; default: the paper's)")
    for o in OPTIONS:
        allowed = o.allowed()
        g.add_argument(o.flag, dest=o.name, type=_option_value(o), metavar=o.metavar,
                       choices=list(allowed) if allowed is not None else None, help=o.help_text().replace("%", "%%"))


def step_model_options(args) -> dict:
    """The step-model flags given, refused (as policy options are) when they would be
    ignored: ``--gpu``, ``--model``, ``--beta``, ``--barrier`` need ``--step-model calibrated``."""
    given = {o.name: getattr(args, o.name) for o in OPTIONS if getattr(args, o.name, None) is not None}
    for o in OPTIONS:
        if o.name in given and o.applies_with is not None:
            other, values = o.applies_with
            chosen = given.get(other, OPTIONS[0].default)
            if chosen not in values:
                raise ConfigError(f"{o.flag}: only valid with --{other.replace('_', '-')} {' | '.join(values)} "
                                  f"(got --{other.replace('_', '-')} {chosen}); it would be ignored")
    if given.get("step_model") == "paper":
        del given["step_model"]  # the paper's: the run's identity as without the flag
    return given


def add_policy_options(s) -> None:
    """One flag per declared policy option (:func:`bfio.policies.policy_options`),
    grouped by the policies that take it; each flag's help, values and default
    come from its declaration."""
    groups: dict[tuple, list] = {}
    for option, policies in declared_options().values():
        groups.setdefault(tuple(policies), []).append(option)
    for policies, options in groups.items():
        g = s.add_argument_group(f"options of --policy {' | '.join(policies)}")
        for o in options:
            allowed = o.allowed()
            g.add_argument(o.flag, dest=o.name, type=_option_value(o), metavar=o.metavar,
                           choices=list(allowed) if allowed is not None else None,
                           help=o.help_text().replace("%", "%%"))  # argparse formats help with %


def instant_by_default() -> list[str]:
    """The registered policies that run with instant dispatch unless told otherwise
    although they support the central pool (:attr:`bfio.policies.base.Policy.default_dispatch`)."""
    return [n for n in registered() if len(policy_class(n).dispatch_modes) > 1
            and policy_class(n).dispatch_default() == "instant"]


def resolve_dispatch(args) -> str:
    """``--dispatch``, or the chosen policy's default when not given (set on ``args``)."""
    if args.dispatch is None:
        args.dispatch = policy_class(args.policy).dispatch_default()
    return args.dispatch


def policy_options(args) -> dict:
    """The policy options given on the command line, refused (one message shape
    for all) when the chosen policy does not take them, when they would be
    ignored (:attr:`bfio.ground.options.Option.applies_with`) or, for
    ``--report-interval``, without instant dispatch."""
    declared = declared_options()
    cls = policy_class(args.policy)
    options = {o.name: o for o in cls.options}
    given = {name: getattr(args, name) for name in declared if getattr(args, name, None) is not None}
    foreign = [name for name in given if name not in options]
    if foreign:
        flags = ", ".join(declared[n][0].flag for n in foreign)
        takers = declared[foreign[0]][1]
        raise ConfigError(f"{flags}: only valid with --policy {' | '.join(takers)} (got --policy {args.policy})")
    for o in options.values():
        if o.name in given and o.applies_with is not None:
            other, values = o.applies_with
            chosen = given.get(other, options[other].default)
            if chosen not in values:
                raise ConfigError(f"{o.flag}: only valid with --{other.replace('_', '-')} {' | '.join(values)} "
                                  f"(got --{other.replace('_', '-')} {chosen}); it would be ignored")
    pooled = [n for n in getattr(cls, "central_only_options", ()) if n in given]
    if pooled and args.dispatch == "instant":
        raise ConfigError(f"{options[pooled[0]].flag}: only valid with --dispatch central (got --dispatch "
                          f"instant); {args.policy}'s instant dispatch has FIFO queues and its own binding rule")
    queued = [n for n in getattr(cls, "instant_only_options", ("report_interval",)) if n in given]
    if queued and args.dispatch != "instant":
        raise ConfigError(f"{options[queued[0]].flag}: only valid with --dispatch instant (got --dispatch "
                          f"{args.dispatch}); a central pool has no per-worker load reports or queues")
    return given


def key_values(texts, flag: str) -> dict:
    """Repeated ``FLAG KEY=VALUE`` flags (``--rank-pause-option``, ``--migration-option``)
    as a dict (the library checks and types them)."""
    out = {}
    for text in texts or ():
        key, sep, value = text.partition("=")
        if not sep or not key:
            raise ConfigError(f"{flag}: expected KEY=VALUE, got {text!r}")
        out[key.strip()] = value.strip()
    return out


def arrival_mode(args) -> str:
    """``--arrival-mode``, resolving the deprecated ``--admission-mode`` alias."""
    mode = args.arrival_mode
    if args.admission_mode is not None:
        legacy = "backlog" if args.admission_mode == "backlog" else (
            "poisson" if args.arrival_rate is not None else "trace")
        if mode is not None and mode != legacy:
            raise ConfigError(f"--admission-mode {args.admission_mode} (deprecated, means --arrival-mode {legacy}) "
                              f"contradicts --arrival-mode {mode}; give --arrival-mode only")
        print(f"bfio: warning: --admission-mode is deprecated; use --arrival-mode {legacy}", file=sys.stderr)
        mode = legacy
    mode = mode or ARRIVAL_OPTION["mode"].default
    for o in ARRIVAL:  # a flag that applies with another mode would be ignored
        if o.applies_with is not None and getattr(args, dest(o)) is not None and not o.applies({"mode": mode}):
            other = ARRIVAL_OPTION[o.applies_with[0]].flag
            raise ConfigError(f"{o.flag}: only valid with {other} {' | '.join(o.applies_with[1])} (got {mode})")
    if mode == "poisson" and args.arrival_rate is None:
        raise ConfigError("--arrival-mode poisson: needs --arrival-rate REQ_PER_S")
    return mode


def cmd_simulate(args) -> int:
    from bfio.runs.run import ArrivalSpec, RunSpec  # local: `bfio --help` starts without bfio.runs.run
    from bfio.runs.runner import simulate_run

    resolve_dispatch(args)
    if args.queue_moves != "none" and args.dispatch != "instant":
        raise ConfigError(f"--queue-moves: {args.queue_moves} moves requests between ranks' queues, which only "
                          f"--dispatch instant has (got --dispatch {args.dispatch})")
    options = policy_options(args)
    pause_options = key_values(args.rank_pause_option, "--rank-pause-option")
    migration_options = key_values(args.migration_option, "--migration-option")
    step_model = step_model_options(args)
    mode = arrival_mode(args)
    check_simulate_outputs(args)
    known = check_path_flags(args)
    trace = load_trace(args.trace, prefill_col=args.prefill_col, decode_col=args.decode_col,
                       arrival_col=args.arrival_col, data_dir=known_trace_dir(args), verify=not args.no_verify,
                       arrival_unit=args.arrival_unit, hash_col=args.hash_col, block_tokens=args.block_tokens)
    check_arrival_unit(args, trace, known)
    if mode == "trace":
        if trace.arrival_s is None:
            raise ConfigError(f"--arrival-mode trace: trace {trace.path} has no arrival column; "
                              "name one with --arrival-col (or use --arrival-mode poisson --arrival-rate R)")
        if args.requests > len(trace):
            raise ConfigError(f"--requests: --arrival-mode trace replays the trace's own rows without resampling; "
                              f"trace {trace.name} has {len(trace)} rows, got --requests {args.requests}")
    arrival = ArrivalSpec(mode, **{o.name: o.default if getattr(args, dest(o)) is None else getattr(args, dest(o))
                                   for o in ARRIVAL if o.name != "mode"})  # arrival_mode refused what would not apply
    # the prefill model's flags given (a rule at its default, preemption none, is as not given)
    prefill = {o.name: getattr(args, dest(o)) for o in PREFILL if getattr(args, dest(o)) is not None
               and not (o.identity == "non-default" and getattr(args, dest(o)) == o.default)}
    if "preemption" in prefill and args.kv_tokens is None:
        raise ConfigError(f"--preemption: '{args.preemption}' preempts when a rank's KV memory runs out; "
                          "set --kv-tokens N (a rank's KV memory in tokens)")
    if prefill:  # the rest at their defaults, as the run's identity records them (bfio.engine.run_parameters)
        prefill = identity_of(PREFILL, {**{o.name: o.default for o in PREFILL}, **prefill})
    try:
        spec = RunSpec(trace.name, args.requests, args.workers, args.slots, args.policy, args.seed, arrival,
                       args.dispatch, args.policy, tuple(sorted(options.items())), tuple(sorted(prefill.items())),
                       tuple(sorted(step_model.items())), args.queue_moves, args.rank_pause,
                       tuple(sorted(pause_options.items())), args.migration,
                       tuple(sorted(migration_options.items())))
        result = simulate_run(spec, trace.to_frame(), show_progress=None)
    except ConfigError as e:  # the library names its arguments; say which flags set them
        raise ConfigError(cli_words(str(e))) from e
    check_finite_clock(result)
    summary = {"trace": trace.name, "arrival_mode": mode, "arrival_rate": args.arrival_rate,
               "time_scale": args.time_scale if mode == "trace" else None, **result.summary()}
    fell_back = warn_fallbacks(result.metrics.get("solver_fallbacks", 0), result.metrics.get("solver_calls", 0),
                               options.get("solver", "fast"))
    if fell_back:
        summary.setdefault("warnings", []).append(fell_back)
    keep = without_timings if args.no_timings else (lambda v: v)
    outputs = [(dest, frame_output(keep(frame), dest, option), option)
               for dest, frame, option in ((args.series, result.series, "--series"),
                                           (args.per_request, result.requests, "--per-request")) if dest]
    if args.json:
        outputs.append((args.json, json_output(keep(summary)), "--json"))
    for w in result.warnings:
        print(f"bfio: warning: {w}", file=sys.stderr)
    write_outputs(outputs)  # all or nothing
    if not args.json:
        m = result.metrics
        print(f"{trace.name} N={args.requests} G={args.workers} B={args.slots} policy={args.policy}: "
              f"AvgImbalance={m['avg_imbalance']:.4g} (pre-step {m['avg_imbalance_pre']:.4g}) tokens, "
              f"throughput={m['throughput']:.4g} tok/s, TPOT={m['tpot']:.4g} s/tok, "
              f"energy={m['energy_j']:.4g} J (pre-step {m['energy_j_pre']:.4g} J), "
              f"steps={result.steps} (window {result.window_steps})"
              + ("" if args.no_timings else f", wall={result.wall_s:.3f} s"))
        print(f"  {mode} arrivals, {args.dispatch} dispatch: queue wait p50/p99={m['queue_wait_s_p50']:.4g}/"
              f"{m['queue_wait_s_p99']:.4g} s, TPOT p99={m['tpot_s_p99']:.4g} s/tok, e2e p99={m['e2e_s_p99']:.4g} s; "
              f"whole run: AvgImbalance={m['avg_imbalance_run']:.4g}, throughput={m['throughput_run']:.4g} tok/s, "
              f"energy={m['energy_j_run']:.4g} J")
        if "ttft_s_p99" in m:  # the prefill model (issue 32)
            hit = f", prefix-cache hit rate={m['cache_hit_rate']:.1%}" if "cache_hit_rate_blocks" in m else ""
            print(f"  prefill: TTFT p50/p99={m['ttft_s_p50']:.4g}/{m['ttft_s_p99']:.4g} s, decode TPOT="
                  f"{m['tpot_decode_s_mean']:.4g} s/tok, prompt tokens computed={m['prefill_tokens_computed']:,}{hit}")
            if "preemptions" in m:  # KV preemption (issue 44)
                print(f"  KV preemption ({args.preemption}): {m['preemptions']:,} evictions of "
                      f"{m['preempted_requests']:,} requests, {m['recomputed_tokens']:,} tokens recomputed")
        if "queue_move_count" in m:  # queue moves (issue 45)
            print(f"  queue moves ({args.queue_moves}): {m['queue_move_count']:,} moves of "
                  f"{m['queue_moved_requests']:,} requests")
        if "rank_pauses" in m:  # pauses (issue 45)
            print(f"  pauses ({args.rank_pause}): {m['rank_pauses']:,} rank pauses ({m['paused_rank_steps']:,} "
                  f"rank-steps), {m['request_pauses']:,} pauses of {m['paused_requests']:,} running requests")
        if "migrations" in m:  # migrations (issue 45)
            kv = "; ".join(
                ([f"{m['migration_recomputed_tokens']:,} tokens recomputed"] if "migration_recomputed_tokens" in m
                 else []) + ([f"{m['migration_transfer_s']:.4g} s of KV transfer, the barrier waited "
                              f"{m['migration_transfer_wait_s']:.4g} s"] if "migration_transfer_s" in m else []))
            print(f"  migrations ({args.migration}): {m['migrations']:,} running requests migrated "
                  f"({m['migrated_requests']:,} requests), {m['migration_queue_moves']:,} queued ones re-bound, "
                  f"in {m['migration_interruptions']:,} interruptions; {kv}")
    return 0


#: Arrival-column names that say milliseconds (``t_ms``, ``timestampMs``, ``millis``).
_MS_NAME = re.compile(r"(^|[_\W])(ms|msec|millis|milliseconds?)$", re.IGNORECASE)
_MS_CAMEL = re.compile(r"[a-z](Ms|Millis)$")
#: Arrivals read as seconds that span more than this look like milliseconds (a day
#: of a trace in ms spans 2.7 years as seconds): a loud warning.
MS_SPAN_WARN_S = 14 * 86400


def check_finite_clock(result) -> None:
    """A run whose clock, energy or throughput overflowed writes nothing: the
    step-time parameters were beyond anything meaningful."""
    import math

    bad = [k for k in ("energy_j_run", "throughput_run", "e2e_s_p99") if isinstance(result.metrics.get(k), float)
           and math.isinf(result.metrics[k])]
    if bad:
        raise ConfigError(f"the simulated clock overflowed ({bad[0]} = {result.metrics[bad[0]]}); "
                          "check --prefill-token-s and the step-time profile (nothing was written)")


def check_path_flags(args):
    """``--arrival-unit``, ``--hash-col`` and ``--block-tokens`` describe a trace
    given by path; a known trace's unit and hash column are pinned. Returns the
    known trace's spec (``None``: a trace given by path)."""
    _, spec = resolve_trace(args.trace, args.data_dir)
    given = [f for f, v in (("--arrival-unit", args.arrival_unit), ("--hash-col", args.hash_col),
                            ("--block-tokens", args.block_tokens)) if v is not None]
    if spec is not None and given:
        raise ConfigError(f"{given[0]}: only for a trace given by path; known trace '{spec.name}' has its own "
                          f"(arrival unit {spec.arrival_unit}, hash column {spec.hash_col or 'none'})")
    if args.block_tokens is not None and args.hash_col is None:
        raise ConfigError("--block-tokens: only valid with --hash-col (the tokens per block of its hashes)")
    if args.hash_col is not None and args.block_tokens is None:
        raise ConfigError(f"--hash-col {args.hash_col}: needs --block-tokens N, the tokens per hashed block")
    return spec


def check_arrival_unit(args, trace, known) -> None:
    """A trace given by path whose arrival column reads as milliseconds while
    seconds are assumed (no ``--arrival-unit``): refused when its name says so
    (``t_ms``), a loud warning when its span as seconds exceeds two weeks. ``known``:
    the known trace's spec (:func:`check_path_flags`), whose unit is pinned."""
    if known is not None or args.arrival_unit is not None or trace.arrival_s is None or args.arrival_col is None:
        return
    if _MS_NAME.search(args.arrival_col) or _MS_CAMEL.search(args.arrival_col):
        raise ConfigError(f"--arrival-col {args.arrival_col}: the name says milliseconds but seconds are assumed; "
                          f"give --arrival-unit ms (or --arrival-unit s if the values are seconds)")
    span = float(trace.arrival_s.max() - trace.arrival_s.min()) if len(trace) else 0.0
    if span > MS_SPAN_WARN_S:
        print(f"bfio: warning: --arrival-col {args.arrival_col}: read as seconds, the arrivals span "
              f"{span / 86400:,.0f} days; if the values are milliseconds give --arrival-unit ms "
              f"(--arrival-unit s silences this)", file=sys.stderr)


def check_simulate_outputs(args) -> None:
    """Every check that needs no trace, before the trace is read or a step runs:
    the cluster size bound and the writability of each output."""
    if args.workers * args.slots > MAX_SLOTS:
        raise ConfigError(f"--workers x --slots: G * B = {args.workers} * {args.slots} = "
                          f"{args.workers * args.slots:,} exceeds the bound of {MAX_SLOTS:,} slots (bfio.ground.limits)")
    outputs = ((args.json, "--json", None), (args.series, "--series", FRAME_SUFFIXES),
               (args.per_request, "--per-request", FRAME_SUFFIXES))
    for dest, option, suffixes in outputs:
        if dest is not None:
            check_writable(dest, option, suffixes)
    check_distinct([(dest, option) for dest, option, _ in outputs])
