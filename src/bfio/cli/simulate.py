"""``bfio simulate``: one simulation of a trace under a routing policy
(Sections 3, 6.2), its metrics printed or written as JSON, optionally its
per-step series and per-request table."""

from __future__ import annotations

import sys

from bfio.cli.arguments import nonneg_int, policy_name, positive_float, positive_int, request_count, seed_int
from bfio.cli.output import FRAME_SUFFIXES, check_distinct, check_writable, frame_output, json_output, write_outputs
from bfio.cli.traces import known_trace_dir
from bfio.errors import ConfigError
from bfio.policies.base import DISPATCH_MODES
from bfio.workload import ARRIVAL_MODES

BFIO_OPTIONS = ("horizon", "predictor", "solver", "admission", "on_solver_error",
                "noise_low", "noise_high", "time_limit_s", "objective", "discount", "new_requests",
                "shard_workers", "placement")


def add_parser(subparsers) -> None:
    """The ``simulate`` subcommand and its options."""
    s = subparsers.add_parser("simulate", help="run one simulation and print its metrics",
                              description="Run one simulation. Metrics follow the paper convention "
                                          "(post-completion imbalance and power over steps 1..last admission); "
                                          "the pre-step measurement is reported beside it.")
    s.add_argument("--trace", required=True,
                   help="known trace name (longbench, burstgpt, arxiv, azure_code, azure_conv, vidur_arxiv, "
                        "sarathi_sharegpt, sharegpt_10k, longbench_v1; sha256-verified) or a path to a "
                        ".json/.jsonl/.csv/.parquet trace")
    s.add_argument("--requests", type=request_count, required=True,
                   help="number of requests N: drawn with replacement from the trace (backlog, poisson), or a "
                        "contiguous window of N of the trace's own rows at a --seed offset (trace)")
    s.add_argument("--seed", type=seed_int, default=42, help="seed (>= 0) of the workload draw and of random policies (default 42)")
    s.add_argument("--workers", type=positive_int, required=True, help="number of workers G")
    s.add_argument("--slots", type=positive_int, default=72, help="slots (max batch size) per worker B (default 72)")
    from bfio.policies import registered, supporting

    s.add_argument("--policy", default="fcfs", type=policy_name,
                   help="routing policy: " + ", ".join(registered()))
    s.add_argument("--json", metavar="DEST", help="write the result as one JSON object to DEST ('-' for stdout)")
    s.add_argument("--prefill-col", help="prefill-length column of a generic trace (default input_length)")
    s.add_argument("--decode-col", help="decode-length column of a generic trace (default output_length)")
    s.add_argument("--arrival-col", help="arrival-time column (seconds or timestamps), optional")
    s.add_argument("--data-dir", help="directory holding the known traces (default $BFIO_DATA_DIR or ../shared/data)")
    s.add_argument("--download", action="store_true",
                   help="a known trace missing from the data directory is fetched from its pinned public source "
                        "into --download-dir (sha256-verified; $BFIO_TRACE_BASE_URL names a mirror)")
    s.add_argument("--download-dir", default=None,
                   help="where downloaded traces are kept and looked for (default resources/traces, as the "
                        "pipeline's download_dir)")
    s.add_argument("--no-verify", action="store_true", help="skip the sha256 check of known traces")
    s.add_argument("--arrival-mode", choices=ARRIVAL_MODES, default=None,
                   help="backlog: the paper's pool of 4G requests, no arrival times (default); "
                        "poisson: requests drawn as in backlog, Poisson arrivals at --arrival-rate; "
                        "trace: the trace's own rows replayed at their timestamps (needs an arrival column), "
                        "times multiplied by --time-scale")
    s.add_argument("--arrival-rate", type=positive_float, metavar="REQ_PER_S",
                   help="with --arrival-mode poisson: arrival rate in requests/s (required)")
    s.add_argument("--time-scale", type=positive_float, metavar="X",
                   help="with --arrival-mode trace: multiply the replayed arrival times by X (> 0; < 1 compresses "
                        "time = more load; default 1)")
    s.add_argument("--dispatch", choices=DISPATCH_MODES, default="central",
                   help="central: one shared pool, the policy admits from it at every step (the paper's, default); "
                        "instant: each request is bound to one worker's FIFO queue on arrival (vLLM/SGLang "
                        "data-parallel routers); policies: " + ", ".join(supporting("instant")))
    s.add_argument("--admission-mode", choices=["backlog", "arrivals"], default=None,
                   help="deprecated alias: backlog = --arrival-mode backlog; arrivals = --arrival-mode poisson "
                        "with --arrival-rate, else --arrival-mode trace")
    s.add_argument("--series", metavar="FILE", help="also write the per-step series (.csv, .parquet or .pq; other extensions are refused)")
    s.add_argument("--per-request", metavar="FILE", help="also write per-request start/finish/wait (.csv, .parquet or .pq)")
    s.add_argument("--report-interval", type=nonneg_int, metavar="K",
                   help="with --dispatch instant: the router sees the workers' load as reported every K steps, plus "
                        "its own dispatches since the last report (vLLM/SGLang routers route on such periodic "
                        "reports); 0 = the exact state (default)")
    g = s.add_argument_group("BF-IO options (with --policy bfio)")
    g.add_argument("--horizon", type=nonneg_int, help="lookahead window H (default 0)")
    g.add_argument("--predictor", help="oracle | noisy | none | empirical | geometric (default oracle); "
                   "empirical and geometric learn from completed requests, no oracle (fast solver only)")
    g.add_argument("--noise-low", type=float, help="noisy predictor: d_lo in o_est = o * U[1-d_lo, 1+d_hi]")
    g.add_argument("--noise-high", type=float, help="noisy predictor: d_hi")
    from bfio.solvers import SOLVERS

    g.add_argument("--solver", help=" | ".join(SOLVERS) + " (default fast)")
    g.add_argument("--admission", help="aging:N | free | fifo (default aging:200: a request waiting 200 steps "
                   "is admitted first; free = Eq. (IO) as in the paper's tables)")
    g.add_argument("--on-solver-error", help="fail | fallback: what to do when an exact solver errors")
    g.add_argument("--time-limit-s", type=float, help="time limit per exact solve in seconds")
    from bfio.solvers.objective import NEW_REQUEST_MODELS, OBJECTIVES
    from bfio.solvers.shards import DEFAULT_SHARD_WORKERS

    g.add_argument("--objective", choices=list(OBJECTIVES),
                   help="default (discount %g, new requests finish at their predicted length: the objective "
                   "study's choice) | paper-literal (Eq. (IO) as printed: no discount, new requests persist)"
                   % OBJECTIVES["default"]["discount"])
    g.add_argument("--discount", type=float, help="offset discount delta in (0, 1]: J weighs offset h by delta^h "
                   "(default: the objective's)")
    g.add_argument("--new-requests", choices=list(NEW_REQUEST_MODELS),
                   help="predicted: a new request adds s_j + h while h < its predicted decode length; persist: "
                   "at every offset (default: the objective's; persist for predictors without o_hat)")
    from bfio.solvers import DEFAULT_PLACEMENT, PLACEMENTS

    g.add_argument("--placement", choices=list(PLACEMENTS),
                   help="solver fast: greedy (fill plus local search) | heap (largest-that-fits on a heap of "
                   "headrooms, O(U (log G + H_eff)) per call; docs/bfio.md 'Production scale') (default %s)"
                   % DEFAULT_PLACEMENT)
    g.add_argument("--shard-workers", type=nonneg_int,
                   help="solver fast: split a routing call with more workers with free slots into shards of at "
                   "most this many (default %d; 0: never)" % DEFAULT_SHARD_WORKERS)


#: BF-IO options that apply only with another option's value: (option, other, values it applies with).
BFIO_OPTION_SCOPE = (("noise_low", "predictor", ("noisy",)), ("noise_high", "predictor", ("noisy",)),
                     ("shard_workers", "solver", ("fast",)), ("placement", "solver", ("fast",)),
                     ("time_limit_s", "solver", ("highs", "gurobi")),
                     ("on_solver_error", "solver", ("highs", "gurobi")))


def _bfio_default(option: str):
    """BF-IO's own default of ``option`` (the policy's signature: never written twice)."""
    import inspect

    from bfio.policies.bfio import BFIO

    return inspect.signature(BFIO).parameters[option].default


def policy_options(args) -> dict:
    opts = {k: getattr(args, k) for k in BFIO_OPTIONS if getattr(args, k) is not None}
    if opts and args.policy != "bfio":
        flags = ", ".join("--" + k.replace("_", "-") for k in opts)
        raise ConfigError(f"{flags}: only valid with --policy bfio (got --policy {args.policy})")
    for key, other, values in BFIO_OPTION_SCOPE:
        chosen = opts.get(other, _bfio_default(other))
        if key in opts and chosen not in values:
            raise ConfigError(f"--{key.replace('_', '-')}: only valid with --{other} {' | '.join(values)} "
                              f"(got --{other} {chosen}); it would be ignored")
    if getattr(args, "report_interval", None) is not None:
        if args.dispatch != "instant":
            raise ConfigError(f"--report-interval: only valid with --dispatch instant (got --dispatch {args.dispatch}); "
                              "a central pool has no per-worker load reports")
        from bfio.policies import supporting

        if args.policy not in supporting("instant"):
            raise ConfigError(f"--report-interval: policy '{args.policy}' has no instant dispatch (policies: "
                              f"{', '.join(supporting('instant'))})")
        opts["report_interval"] = args.report_interval
    return opts


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
    mode = mode or "backlog"
    if args.arrival_rate is not None and mode != "poisson":
        raise ConfigError(f"--arrival-rate: only valid with --arrival-mode poisson (got {mode})")
    if mode == "poisson" and args.arrival_rate is None:
        raise ConfigError("--arrival-mode poisson: needs --arrival-rate REQ_PER_S")
    if args.time_scale is not None and mode != "trace":
        raise ConfigError(f"--time-scale: only valid with --arrival-mode trace (got {mode})")
    return mode


def cmd_simulate(args) -> int:
    from bfio.run import ArrivalSpec, RunSpec, simulate_run
    from bfio.traces import load_trace

    options = policy_options(args)
    mode = arrival_mode(args)
    check_simulate_outputs(args)
    trace = load_trace(args.trace, prefill_col=args.prefill_col, decode_col=args.decode_col,
                       arrival_col=args.arrival_col, data_dir=known_trace_dir(args), verify=not args.no_verify)
    if mode == "trace":
        if trace.arrival_s is None:
            raise ConfigError(f"--arrival-mode trace: trace {trace.path} has no arrival column; "
                              "name one with --arrival-col (or use --arrival-mode poisson --arrival-rate R)")
        if args.requests > len(trace):
            raise ConfigError(f"--requests: --arrival-mode trace replays the trace's own rows without resampling; "
                              f"trace {trace.name} has {len(trace)} rows, got --requests {args.requests}")
    arrival = ArrivalSpec(mode, rate=args.arrival_rate if mode == "poisson" else None,
                          time_scale=(args.time_scale or 1.0) if mode == "trace" else 1.0)
    spec = RunSpec(trace.name, args.requests, args.workers, args.slots, args.policy, args.seed, arrival,
                   args.dispatch, args.policy, tuple(sorted(options.items())))
    result = simulate_run(spec, trace.to_frame(), show_progress=None)
    summary = {"trace": trace.name, "arrival_mode": mode, "arrival_rate": args.arrival_rate,
               "time_scale": args.time_scale if mode == "trace" else None, **result.summary()}
    from bfio.solvers import warn_fallbacks

    fell_back = warn_fallbacks(result.metrics.get("solver_fallbacks", 0), result.metrics.get("solver_calls", 0),
                               options.get("solver", "fast"))
    if fell_back:
        summary.setdefault("warnings", []).append(fell_back)
    outputs = [(dest, frame_output(frame, dest, option), option)
               for dest, frame, option in ((args.series, result.series, "--series"),
                                           (args.per_request, result.requests, "--per-request")) if dest]
    if args.json:
        outputs.append((args.json, json_output(summary), "--json"))
    for w in result.warnings:
        print(f"bfio: warning: {w}", file=sys.stderr)
    write_outputs(outputs)  # all or nothing
    if not args.json:
        m = result.metrics
        print(f"{trace.name} N={args.requests} G={args.workers} B={args.slots} policy={args.policy}: "
              f"AvgImbalance={m['avg_imbalance']:.4g} (pre-step {m['avg_imbalance_pre']:.4g}) tokens, "
              f"throughput={m['throughput']:.4g} tok/s, TPOT={m['tpot']:.4g} s/tok, "
              f"energy={m['energy_j']:.4g} J (pre-step {m['energy_j_pre']:.4g} J), "
              f"steps={result.steps} (window {result.window_steps}), wall={result.wall_s:.3f} s")
        print(f"  {mode} arrivals, {args.dispatch} dispatch: queue wait p50/p99={m['queue_wait_s_p50']:.4g}/"
              f"{m['queue_wait_s_p99']:.4g} s, TPOT p99={m['tpot_s_p99']:.4g} s/tok, e2e p99={m['e2e_s_p99']:.4g} s; "
              f"whole run: AvgImbalance={m['avg_imbalance_run']:.4g}, throughput={m['throughput_run']:.4g} tok/s, "
              f"energy={m['energy_j_run']:.4g} J")
    return 0


def check_simulate_outputs(args) -> None:
    """Every check that needs no trace, before the trace is read or a step runs:
    the cluster size bound and the writability of each output."""
    from bfio.limits import MAX_SLOTS

    if args.workers * args.slots > MAX_SLOTS:
        raise ConfigError(f"--workers x --slots: G * B = {args.workers} * {args.slots} = "
                          f"{args.workers * args.slots:,} exceeds the bound of {MAX_SLOTS:,} slots (bfio.limits)")
    outputs = ((args.json, "--json", None), (args.series, "--series", FRAME_SUFFIXES),
               (args.per_request, "--per-request", FRAME_SUFFIXES))
    for dest, option, suffixes in outputs:
        if dest is not None:
            check_writable(dest, option, suffixes)
    check_distinct([(dest, option) for dest, option, _ in outputs])
