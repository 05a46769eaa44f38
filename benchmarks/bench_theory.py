"""Wall time of the theory grids (issue 5: full <= 10 min, smoke <= 1 min on 2 cores).

    python benchmarks/bench_theory.py            # smoke and full
    python benchmarks/bench_theory.py smoke      # one profile

Runs the three grids of bfio.theory.run (Theorem 1; Theorem 2; Theorem 3) as
two parallel jobs, like ``snakemake -c 2``, and prints each job's time and the
wall time of the profile. Numba kernels are compiled (or loaded from the
cache) before timing.
"""

from __future__ import annotations

import sys
import time
from concurrent.futures import ProcessPoolExecutor


def _job(profile: str, parts: tuple[str, ...]) -> dict:
    from bfio.theory import config, run

    cfg = config.resolve({"profile": profile})
    out = {}
    for part in parts:
        t = time.perf_counter()
        if part == "thm1":
            run.run_homogeneous(cfg)
        elif part == "thm2":
            run.run_slots(cfg, "geometric")
        else:
            run.run_slots(cfg, "drift")
        out[part] = time.perf_counter() - t
    return out


def warm() -> None:
    """Compile / load the numba kernels once."""
    _job("smoke", ("thm3",))


def bench(profile: str) -> float:
    t = time.perf_counter()
    with ProcessPoolExecutor(2) as ex:
        futs = [ex.submit(_job, profile, ("thm2",)), ex.submit(_job, profile, ("thm1", "thm3"))]
        parts = {}
        for f in futs:
            parts.update(f.result())
    wall = time.perf_counter() - t
    print(f"{profile:5s} grid: wall {wall:6.1f} s on 2 processes  ("
          + ", ".join(f"{k} {v:.1f} s" for k, v in sorted(parts.items())) + ")", flush=True)
    return wall


if __name__ == "__main__":
    profiles = sys.argv[1:] or ["smoke", "full"]
    warm()
    for prof in profiles:
        bench(prof)
