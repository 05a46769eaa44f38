"""``bfio compile``: compile the numba kernels of runs with default options once
(``--all``: every kernel), into numba's on-disk cache
(:mod:`bfio.pipeline.kernels_warmup`), so later runs load them instead of compiling."""

from __future__ import annotations

from bfio.pipeline.kernels_warmup import build_parser, run


def add_parser(subparsers) -> None:
    """The ``compile`` subcommand and its options (those of :mod:`bfio.pipeline.kernels_warmup`)."""
    c = subparsers.add_parser("compile", help="compile the numba kernels once (the install step; under a minute)",
                              description="Compile the numba kernels of runs with default options (--all: every "
                                          "kernel, the options' too) into numba's on-disk cache (once per "
                                          "installation; later runs load them in about a second; an option's "
                                          "own kernels otherwise compile on their first use, saying so in one "
                                          "line). A second run only loads them.")
    build_parser(c)


def cmd_compile(args) -> int:
    return run(args)
