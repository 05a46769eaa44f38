"""Fetch a known trace from its pinned public source (or a mirror) and verify
its sha256 before it appears at the output path (rule download_trace)."""
from bfio.traces.download import base_url, fetch, trace_url
from bfio.ground.errors import DownloadError
from bfio.ground.progress import script_log
from bfio.traces.registry import KNOWN_TRACES

with script_log(snakemake.log[0]) as log:  # noqa: F821
    sm = snakemake  # noqa: F821
    spec = KNOWN_TRACES[sm.params.trace]
    assert spec.sha256 == sm.params.sha256
    url = trace_url(spec, base_url(sm.config.get("download_url_base")))
    log.info("fetching trace %s from %s into %s", spec.name, url, sm.output[0])
    try:
        fetch(url, sm.output[0], spec.sha256, timeout=float(sm.config["download_timeout_s"]),
              attempts=int(sm.config["download_attempts"]), backoff=float(sm.config["download_backoff_s"]))
    except DownloadError as e:
        raise DownloadError(f"{e}. Without network access: point the config key data_dir at a copy of the "
                            f"traces, or fetch from a mirror (config key download_url_base or "
                            f"$BFIO_TRACE_BASE_URL); README 'Data'") from None
