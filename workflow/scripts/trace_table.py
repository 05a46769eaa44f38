"""One table of trace statistics (rule trace_table)."""
from bfio.ground.progress import script_log
from bfio.ground.results_io import read_summary
from bfio.runs.tables import write_table
import pandas as pd

with script_log(snakemake.log[0]):  # noqa: F821
    sm = snakemake  # noqa: F821
    rows = []
    for path in sm.input:
        s = read_summary(path)
        rec = {"trace": s["trace"], "rows": s["rows"], "description": s["description"]}
        for col in ("prefill_tokens", "decode_tokens"):
            for q in ("mean", "p50", "p90", "p99", "max"):
                rec[f"{col}_{q}"] = s[col][q]
        rec["sha256"] = s["sha256"]
        rows.append(rec)
    frame = pd.DataFrame(rows)
    md = frame.drop(columns=["sha256"]).to_markdown(index=False, floatfmt=".4g")
    write_table(frame, sm.output.csv, sm.output.md,
                markdown="# Traces (canonical tables under results/traces/)\n\n" + md + "\n")
