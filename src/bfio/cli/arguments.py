"""argparse value types of the command line: integers with a lower bound,
positive finite numbers; a bad value is a one-line usage error naming it."""

from __future__ import annotations

import argparse
import math

from bfio.ground.limits import BYTES_PER_REQUEST, MAX_RANK_TOKENS, MAX_REQUESTS, MAX_TOKEN_S, MEMORY_BUDGET
from bfio.policies import registered


def _int_at_least(minimum: int, what: str):
    """argparse type: an integer >= ``minimum`` (``what`` names it in the error)."""

    def parse(text: str) -> int:
        try:
            v = int(text)
        except ValueError:
            raise argparse.ArgumentTypeError(f"expected a {what} integer, got '{text}'") from None
        if v < minimum:
            raise argparse.ArgumentTypeError(f"expected a {what} integer, got {v}")
        return v

    return parse


positive_int = _int_at_least(1, "positive")


def request_count(text: str) -> int:
    """argparse type: a number of requests in ``1..MAX_REQUESTS`` (:mod:`bfio.ground.limits`)."""
    v = positive_int(text)
    if v > MAX_REQUESTS:
        raise argparse.ArgumentTypeError(request_bound_message(v))
    return v


def request_bound_message(n: int) -> str:
    """Why ``n`` requests are refused: the bound and the memory they would need."""
    return (f"{n:,} requests exceed the bound of {MAX_REQUESTS:,} (bfio.ground.limits.MAX_REQUESTS): a run needs about "
            f"{BYTES_PER_REQUEST} bytes a request, {n * BYTES_PER_REQUEST / 2 ** 30:,.1f} GiB here, above the "
            f"{MEMORY_BUDGET / 2 ** 30:.0f} GiB budget")


def rank_tokens(text: str) -> int:
    """argparse type: a prefill size of one rank (tokens or blocks) in
    ``1..MAX_RANK_TOKENS`` (:mod:`bfio.ground.limits`), so it fits the step kernels' int64."""
    v = positive_int(text)
    if v > MAX_RANK_TOKENS:
        raise argparse.ArgumentTypeError(f"{v:,} exceeds the bound of {MAX_RANK_TOKENS:,} "
                                         "(bfio.ground.limits.MAX_RANK_TOKENS: what a rank of the largest cluster can hold)")
    return v


seed_int = _int_at_least(0, "non-negative seed")
nonneg_int = _int_at_least(0, "non-negative")


def positive_float(text: str) -> float:
    """argparse type: a finite number > 0."""
    try:
        v = float(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected a positive number, got '{text}'") from None
    if not (math.isfinite(v) and v > 0):
        raise argparse.ArgumentTypeError(f"expected a finite number > 0, got {text}")
    return v


def token_seconds(text: str) -> float:
    """argparse type: seconds per prompt token, finite, > 0 and at most
    ``MAX_TOKEN_S`` (:mod:`bfio.ground.limits`), so the simulated clock stays finite."""
    v = positive_float(text)
    if v > MAX_TOKEN_S:
        raise argparse.ArgumentTypeError(f"{text} s per token exceeds the bound of {MAX_TOKEN_S:g} s "
                                         "(bfio.ground.limits.MAX_TOKEN_S: 10^4 times the default)")
    return v


def policy_name(text: str) -> str:
    """argparse type: a registered policy (:func:`bfio.policies.registered`);
    anything else, the empty name included, is a usage error listing them."""
    if text not in registered():
        raise argparse.ArgumentTypeError(f"'{text}' is not a policy ({', '.join(registered())})")
    return text
