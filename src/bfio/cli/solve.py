"""``bfio solve``: re-solve a saved BF-IO integer program instance (Section 4)
with one backend, the JSON result to stdout or ``--json``."""

from __future__ import annotations

import json
from pathlib import Path

from bfio.cli.arguments import positive_float
from bfio.cli.output import check_writable, write_json
from bfio.ground.errors import ConfigError
from bfio.solvers import SOLVERS
from bfio.ground.limits import MAX_DECODE, MAX_PREFILL, MAX_SLOTS
from bfio.solvers.instance import solve_instance_file


def add_parser(subparsers) -> None:
    """The ``solve`` subcommand and its options."""
    v = subparsers.add_parser("solve", help="solve a saved BF-IO instance (JSON) with one backend",
                              description="Solve a BF-IO integer program instance saved as JSON (its 'discount' and "
                                          "per-request 'waiting.lifetime' are part of the objective; files without "
                                          "them are delta = 1 with persisting new requests). The JSON result goes "
                                          "to stdout unless --json names a file; solver logs never do.")
    v.add_argument("--instance", required=True, help="instance JSON file")
    v.add_argument("--solver", default="fast", help=" | ".join(SOLVERS) + " (default fast)")
    v.add_argument("--time-limit-s", type=positive_float, default=None,
                   help="time limit for exact solvers, model build included (default 10)")
    v.add_argument("--on-solver-error", choices=["fail", "fallback"], default="fail",
                   help="fail (default) | fallback: on a solver error move to the next backend "
                   "(gurobi -> highs -> fast), as bfio simulate does")
    v.add_argument("--json", metavar="DEST", default="-", help="where to write the JSON result ('-' for stdout)")


def check_instance_bounds(path: str) -> None:
    """Token counts of a saved instance within :mod:`bfio.ground.limits`, checked
    before the instance loader (:mod:`bfio.solvers.instance`) casts them to
    int64, where ``1e30`` would overflow. Malformed files are left to the loader."""
    try:
        data = json.loads(Path(path).read_text())
    except (OSError, ValueError):
        return
    if not isinstance(data, dict):
        return
    waiting = data.get("waiting") if isinstance(data.get("waiting"), dict) else {}
    # a base load is at most B (<= MAX_SLOTS) requests of MAX_PREFILL + MAX_DECODE tokens
    fields = [("waiting.prefill", waiting.get("prefill"), MAX_PREFILL),
              ("waiting.lifetime", waiting.get("lifetime"), MAX_DECODE),
              ("waiting.age", waiting.get("age"), 2 ** 53),
              ("free", data.get("free"), MAX_SLOTS)]
    rows = data.get("base_loads")
    if isinstance(rows, list):
        fields += [(f"base_loads[{g}]", row, MAX_SLOTS * (MAX_PREFILL + MAX_DECODE)) for g, row in enumerate(rows)]
    for name, values, maximum in fields:
        if not isinstance(values, list):
            continue
        for k, v in enumerate(values):
            if isinstance(v, (int, float)) and not isinstance(v, bool) and abs(v) > maximum:
                raise ConfigError(f"file {path}, field '{name}': entry {k} is {v!r}, above the bound "
                                  f"{maximum:,} (bfio.ground.limits)")


def cmd_solve(args) -> int:
    check_writable(args.json, "--json")
    check_instance_bounds(args.instance)
    write_json(solve_instance_file(args.instance, args.solver, time_limit_s=args.time_limit_s,
                                   on_error=args.on_solver_error), args.json)
    return 0
