"""Validate a trace of the config's extra_traces and convert it to the canonical
table (rule prepare_extra_trace)."""
from bfio.traces.registry import trace_specs
from bfio.traces.canonical import prepare_trace
from bfio.ground.progress import script_log

with script_log(snakemake.log[0]) as log:  # noqa: F821
    sm = snakemake  # noqa: F821
    name = sm.wildcards.trace
    spec = trace_specs({"extra_traces": {name: dict(sm.params.spec)}})[name]
    stats = prepare_trace(name, sm.input[0], sm.output.table, sm.output.stats, spec=spec)
    log.info("%s: %d rows, sha256 %s", name, stats["rows"], stats["sha256"])
