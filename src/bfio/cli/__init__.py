"""The ``bfio`` command line: ``bfio simulate`` runs one simulation, ``bfio solve``
re-solves a saved BF-IO instance, ``bfio traces`` lists the known traces,
``bfio compile`` compiles the numba kernels once (the install step).

One module per subcommand (:mod:`bfio.cli.simulate`, :mod:`bfio.cli.solve`,
:mod:`bfio.cli.traces`, :mod:`bfio.cli.compile_kernels`), each adding its parser and running it; the outputs'
writers are :mod:`bfio.cli.output`, the option value types
:mod:`bfio.cli.arguments`. ``python -m bfio.cli`` runs :func:`main`.
"""

from __future__ import annotations

import argparse
import sys

from bfio.cli import compile_kernels, simulate, solve, traces
from bfio.ground.errors import BfioError


def build_parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(
        prog="bfio",
        description="Simulate barrier-synchronized data-parallel LLM decode under routing policies "
                    "(FCFS, JSQ, BF-IO, ...) in the paper's conventions.")
    sub = p.add_subparsers(dest="command", required=True)

    simulate.add_parser(sub)
    solve.add_parser(sub)
    traces.add_parser(sub)
    compile_kernels.add_parser(sub)
    return p


def main(argv=None) -> int:
    try:
        parser = build_parser()  # reads the policy registry, which loads the plugins
    except BfioError as e:  # a plugin that fails to load: one line, no traceback, --help included
        print(f"bfio: error: {e}", file=sys.stderr)
        print("bfio: the command line lists the plugins' policies, so no command (not even --help) runs until "
              "the plugin loads; fix it or remove it from $BFIO_PLUGINS", file=sys.stderr)
        return 2
    args = parser.parse_args(argv)
    handler = {"simulate": simulate.cmd_simulate, "solve": solve.cmd_solve,
               "traces": traces.cmd_traces, "compile": compile_kernels.cmd_compile}[args.command]
    try:
        return handler(args)
    except BfioError as e:
        print(f"bfio: error: {e}", file=sys.stderr)
        return 2
    except KeyboardInterrupt:  # Ctrl-C: one line, no traceback; outputs are all or nothing
        print("bfio: interrupted (no output was written)", file=sys.stderr)
        return 130
