"""Peak memory of loading a large JSONL trace (issue 12: 2M rows, ~130 MB).

    python benchmarks/bench_jsonl_memory.py generate /tmp/big.jsonl   # once
    /usr/bin/time -v python benchmarks/bench_jsonl_memory.py load /tmp/big.jsonl

Read "Maximum resident set size" from /usr/bin/time. On the generated 2M-row,
135 MB file: before the streaming reader (a list of every record, then
DataFrame.from_records) 1,215,040 kB (the issue measured 1.26 GB on its
129 MB file); streaming, keeping only the named columns: 463,092 kB, at the
same wall time (~25 s on a loaded 2-core machine). Target: under 600 MB.
Not a timed test: run it by hand.
"""

from __future__ import annotations

import json
import resource
import sys
import time


def generate(path: str, rows: int = 2_000_000, seed: int = 0) -> None:
    import numpy as np

    rng = np.random.default_rng(seed)
    s = rng.integers(1, 8000, rows)
    o = rng.integers(1, 2000, rows)
    with open(path, "w") as f:
        for i in range(rows):
            f.write(json.dumps({"timestamp": round(0.01 * i, 2), "input_length": int(s[i]),
                                "output_length": int(o[i])}) + "\n")


def load(path: str) -> None:
    from bfio.traces import load_trace

    t0 = time.perf_counter()
    t = load_trace(path, arrival_col="timestamp")
    peak_mb = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
    print(f"{len(t)} rows in {time.perf_counter() - t0:.1f} s, peak RSS {peak_mb:.0f} MB")


if __name__ == "__main__":
    {"generate": generate, "load": load}[sys.argv[1]](sys.argv[2])
