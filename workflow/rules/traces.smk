# Traces: verify the pinned sha256, convert to the canonical table
# (prefill_tokens, decode_tokens[, arrival_s]) and write summary statistics.


rule prepare_trace:
    input:
        trace_source,
    output:
        table="results/traces/{trace}.parquet",
        stats="results/traces/{trace}.stats.json",
    wildcard_constraints:
        trace="|".join(KNOWN_TRACES),
    log:
        "logs/traces/{trace}.log",
    conda:
        "../../environment.yml"
    script:
        "../scripts/prepare_trace.py"


rule prepare_extra_trace:
    # A trace of the config's extra_traces (its columns and optional sha256).
    input:
        trace_source,
    output:
        table="results/traces/{trace}.parquet",
        stats="results/traces/{trace}.stats.json",
    params:
        spec=lambda wc: config["extra_traces"][wc.trace],
    wildcard_constraints:
        trace="|".join(EXTRA_TRACES) or "NO_EXTRA_TRACE",
    log:
        "logs/traces/{trace}.log",
    conda:
        "../../environment.yml"
    script:
        "../scripts/prepare_extra_trace.py"


rule download_trace:
    # A public trace the config uses that is not in data_dir (download: auto,
    # the default) or every public trace (download: true): fetched from its
    # pinned source (or the mirror download_url_base / $BFIO_TRACE_BASE_URL),
    # sha256-verified before the file appears (bfio.traces.download.fetch: temp file,
    # verify, rename; retries with backoff). The URL, timeout and retries are
    # read by the script, not params: a mirror does not make a verified file
    # stale. A local rule: on a cluster it runs where snakemake runs (compute
    # nodes often have no internet).
    localrule: True
    output:
        f"{DOWNLOAD_DIR}/{{relpath}}",
    params:
        trace=lambda wc: TRACE_BY_RELPATH[wc.relpath].name,
        sha256=lambda wc: TRACE_BY_RELPATH[wc.relpath].sha256,
    wildcard_constraints:
        relpath="|".join(re.escape(t.relpath) for t in KNOWN_TRACES.values() if t.url),
    log:
        "logs/download/{relpath}.log",
    conda:
        "../../environment.yml"
    script:
        "../scripts/download_trace.py"


rule trace_table:
    input:
        expand("results/traces/{trace}.stats.json", trace=config["traces"]),
    output:
        csv="results/tables/traces.csv",
        md="results/tables/traces.md",
    log:
        "logs/tables/traces.log",
    conda:
        "../../environment.yml"
    script:
        "../scripts/trace_table.py"
