"""Small random Eq. (IO) instances shaped like routing calls (tests, benchmarks,
the fast solver's gap table in :mod:`bfio.studies.agreement`)."""

from __future__ import annotations

import numpy as np

from bfio.solvers.instance import Instance


def random_instance(rng: np.random.Generator, workers: int | None = None, waiting: int | None = None,
                    horizon: int | None = None, admission: str | None = None,
                    max_size: int = 400, discount=None, lifetimes=None) -> Instance:
    """A small random instance shaped like a routing call: active loads that grow
    by one token per request per offset and drop when requests finish.

    ``discount``: ``None`` (``delta = 1``), a number, or ``"random"`` (one time in
    five exactly 1, else uniform in ``(0, 1]``). ``lifetimes``: ``None`` (new
    requests persist), an array, or ``"random"`` (uniform in ``1..H + 2``, so
    some persist over the window). The random draws are made only when asked,
    so instances drawn without them are unchanged.
    """
    G = int(workers or rng.integers(1, 9))
    n = int(rng.integers(0, 25) if waiting is None else waiting)
    H = int(rng.choice([0, 5, 20]) if horizon is None else horizon)
    B = int(rng.integers(1, 5))
    base = np.zeros((G, H + 1), dtype=np.int64)
    free = np.zeros(G, dtype=np.int64)
    h = np.arange(H + 1)
    for g in range(G):
        active = int(rng.integers(0, B + 1))
        free[g] = B - active
        for _ in range(active):
            load = int(rng.integers(1, 4 * max_size))
            remaining = int(rng.integers(1, 2 * H + 3))
            base[g] += np.where(h < remaining, load + h, 0)
    sizes = rng.integers(1, max_size, size=n)
    ages = np.sort(rng.integers(0, 30, size=n))[::-1]
    if admission is None:
        admission = str(rng.choice(["free", "fifo", "aging:10"]))
    if isinstance(discount, str):
        if discount != "random":
            raise ValueError(f"discount: expected a number, None or 'random', got {discount!r}")
        discount = 1.0 if rng.random() < 0.2 else float(1.0 - rng.random())  # 1 - U[0, 1) is in (0, 1]
    if isinstance(lifetimes, str):
        if lifetimes != "random":
            raise ValueError(f"lifetimes: expected an array, None or 'random', got {lifetimes!r}")
        lifetimes = rng.integers(1, H + 3, size=n)
    return Instance(base=base, free=free, sizes=sizes, ages=ages, admission=admission,
                    discount=1.0 if discount is None else discount, lifetimes=lifetimes)


def random_feasible(inst: Instance, rng: np.random.Generator) -> np.ndarray:
    """A uniformly drawn feasible assignment of ``inst`` (its admission rule: every
    forced request and the rest up to ``admissible``; each worker's free slots),
    checked by :meth:`Instance.check`."""
    forced = np.flatnonzero(inst.forced())
    others = rng.permutation(np.flatnonzero(~inst.forced()))
    chosen = np.concatenate([forced, others[: inst.admissible - forced.size]]).astype(np.int64)
    seats = rng.permutation(np.repeat(np.arange(inst.workers), inst.free))[: chosen.size]
    out = np.full(inst.waiting, -1, dtype=np.int64)
    out[chosen] = seats
    inst.check(out)
    return out


__all__ = ["random_instance", "random_feasible"]
