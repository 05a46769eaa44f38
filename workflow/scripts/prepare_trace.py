"""Verify a trace's sha256 and convert it to the canonical table (rule prepare_trace)."""
from bfio.traces.canonical import prepare_trace
from bfio.ground.progress import script_log

with script_log(snakemake.log[0]) as log:  # noqa: F821
    sm = snakemake  # noqa: F821
    stats = prepare_trace(sm.wildcards.trace, sm.input[0], sm.output.table, sm.output.stats)
    log.info("%s: %d rows, sha256 %s", sm.wildcards.trace, stats["rows"], stats["sha256"])
