"""Fetch a known trace from its pinned public source (or a mirror) and verify
its sha256 before it appears at the output path (rule download_trace)."""
from bfio.download import fetch, trace_url, base_url
from bfio.experiments import script_log
from bfio.traces import KNOWN_TRACES

with script_log(snakemake.log[0]) as log:  # noqa: F821
    sm = snakemake  # noqa: F821
    spec = KNOWN_TRACES[sm.params.trace]
    assert spec.sha256 == sm.params.sha256
    url = trace_url(spec, base_url(sm.config.get("download_url_base")))
    log.info("fetching trace %s from %s into %s", spec.name, url, sm.output[0])
    fetch(url, sm.output[0], spec.sha256, timeout=float(sm.config["download_timeout_s"]),
          attempts=int(sm.config["download_attempts"]), backoff=float(sm.config["download_backoff_s"]))
