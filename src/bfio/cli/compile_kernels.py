"""``bfio compile``: compile every numba kernel once, into numba's on-disk cache
(:mod:`bfio.kernels_warmup`), so later runs load them instead of compiling."""

from __future__ import annotations

from bfio.kernels_warmup import build_parser, run


def add_parser(subparsers) -> None:
    """The ``compile`` subcommand and its options (those of :mod:`bfio.kernels_warmup`)."""
    c = subparsers.add_parser("compile", help="compile every numba kernel once (the install step; about 1-2 min)",
                              description="Compile every numba kernel of the package into numba's on-disk cache "
                                          "(once per installation; later runs load them in about a second). A "
                                          "second run only loads them.")
    build_parser(c)


def cmd_compile(args) -> int:
    return run(args)
