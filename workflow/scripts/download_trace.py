"""Download a paper/Azure trace from its pinned source and verify it (rule download_trace)."""
from bfio.experiments import download_trace, script_log

with script_log(snakemake.log[0]) as log:  # noqa: F821
    sm = snakemake  # noqa: F821
    log.info("downloading %s", sm.params.url)
    download_trace(sm.params.url, sm.output[0], sm.params.sha256)
