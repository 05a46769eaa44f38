"""Where each trace of a pipeline run comes from (``../shared/spec``, README
"Data"): the configured ``data_dir``, else the pinned public source fetched into
``download_dir`` (config key ``download``: ``auto``, ``true``, ``false``); traces
with no public source that are absent are skipped with one line, and with
``download: false`` a missing trace stops the run before any job, naming the two
ways to provide it.
"""

from __future__ import annotations

from pathlib import Path

from bfio.ground.errors import ConfigError
from bfio.traces.registry import KNOWN_TRACES, locate_known_trace


#: Values of the config key ``download`` and what they mean (see :func:`download_mode`).
DOWNLOAD_MODES = {"auto": "auto", True: "always", False: "never"}


def download_mode(config: dict) -> str:
    """The config key ``download`` as ``'auto'`` (default: fetch a public trace
    missing from ``data_dir`` into ``download_dir``), ``'always'`` (``true``:
    read every public trace from ``download_dir``, fetching it there) or
    ``'never'`` (``false``: fetch nothing; offline machines, CI)."""
    value = config.get("download", "auto")
    for key, mode in DOWNLOAD_MODES.items():
        if value is key or (isinstance(value, str) and value == key):
            return mode
    raise ConfigError(f"config key 'download': {value!r} is not one of auto, true, false")


def used_traces(config: dict) -> list[str]:
    """Every trace name the config uses (``traces``, experiments, figures,
    studies, the objective study: :func:`trace_references`), in
    order of first use, without repeats."""
    return list(dict.fromkeys(t for _, t in trace_references(config)))


def known_trace_path(name: str, config: dict) -> Path | None:
    """Where the pipeline reads known trace ``name``, or ``None`` when it cannot:
    :func:`bfio.traces.registry.locate_known_trace` with the config keys
    ``data_dir``, ``download_dir`` and ``download`` (:func:`download_mode`);
    a path under ``download_dir`` that does not exist yet is fetched by rule
    ``download_trace``."""
    return locate_known_trace(KNOWN_TRACES[name], config["data_dir"], config["download_dir"],
                              download_mode(config))


def unavailable_traces(config: dict) -> list[str]:
    """Known traces the config uses that :func:`known_trace_path` cannot place."""
    return [t for t in used_traces(config) if t in KNOWN_TRACES and known_trace_path(t, config) is None]


#: Config keys whose lists hold trace names (``traces``, ``figures.distributions``,
#: ``generality.traces``, the objective study's ``choose.traces`` ...).
TRACE_LIST_KEYS = ("traces", "distributions")
#: Sections that name no trace the pipeline prepares (``extra_traces`` defines
#: them; ``theory`` reads its own).
NOT_REFERENCES = ("extra_traces", "theory")


def trace_references(config: dict, node=..., prefix: str = "", seen: set | None = None):
    """``(dotted config key, trace name)`` of every place the config names a
    trace: a key ``trace`` (an experiment, a study setting, in any section, a
    plugin study's included) and the items of a list under a key of
    :data:`TRACE_LIST_KEYS`; in the config's order. A dict or list shared by
    several places (a YAML alias) is visited at its first place only, so nested
    aliases cannot make the walk explode."""
    node = config if node is ... else node
    seen = set() if seen is None else seen
    if isinstance(node, (dict, list)):
        if id(node) in seen:
            return
        seen.add(id(node))
    items = node.items() if isinstance(node, dict) else enumerate(node) if isinstance(node, list) else ()
    for key, value in items:
        where = f"{prefix}.{key}" if prefix else str(key)
        if not prefix and key in NOT_REFERENCES:
            continue
        if key == "trace" and isinstance(value, str):
            yield where, value
        elif key in TRACE_LIST_KEYS and isinstance(value, list):
            for i, t in enumerate(value):
                if isinstance(t, str):
                    yield f"{where}.{i}", t
        else:
            yield from trace_references(config, value, where, seen)


def drop_traces(config: dict, names) -> list[str]:
    """Remove traces ``names`` from ``config`` (in place): from every trace list
    (:data:`TRACE_LIST_KEYS`), and every experiment or study setting reading one
    of them (an entry whose ``trace`` is dropped). Returns the dotted keys that
    changed (for the log line)."""
    names = set(names)
    changed = []

    def reads_dropped(entry) -> bool:
        return isinstance(entry, dict) and entry.get("trace") in names

    def prune(node, prefix: str) -> None:
        if isinstance(node, dict):
            for key in list(node):
                where = f"{prefix}.{key}" if prefix else str(key)
                value = node[key]
                if (not prefix and key in NOT_REFERENCES) or key == "trace":
                    continue
                if key in TRACE_LIST_KEYS and isinstance(value, list) and names & set(
                        t for t in value if isinstance(t, str)):
                    node[key] = [t for t in value if t not in names]
                    changed.append(where)
                elif reads_dropped(value):
                    del node[key]
                    changed.append(where)
                elif isinstance(value, list) and any(reads_dropped(v) for v in value):
                    node[key] = [v for v in value if not reads_dropped(v)]
                    changed.append(where)
                else:
                    prune(value, where)
        elif isinstance(node, list):
            for i, value in enumerate(node):
                prune(value, f"{prefix}.{i}")

    prune(config, "")
    return changed


def skip_unavailable_traces(config: dict) -> str | None:
    """With ``download`` auto or true: drop from ``config`` (in place) the
    traces it uses that are absent from ``data_dir`` and have no public source
    (derived locally), and return the one log line saying which and why
    (``None`` when nothing is dropped). With ``download: false`` nothing is
    dropped: the workflow stops instead (:func:`missing_traces_message`)."""
    if download_mode(config) == "never":
        return None
    names = unavailable_traces(config)
    if not names:
        return None
    changed = drop_traces(config, names)
    return (f"bfio: skipping trace{'s' if len(names) > 1 else ''} {', '.join(names)}: not in data_dir "
            f"{config['data_dir']} and without a public download source (derived locally); dropped from "
            f"{', '.join(changed)}")


def missing_traces_message(names, config: dict) -> str:
    """Why the workflow stops when ``download: false`` and traces are missing:
    every missing trace, its file, and the two ways to provide them."""
    data_dir = Path(config["data_dir"])
    lines = [f"{len(names)} trace{'s' if len(names) > 1 else ''} the config uses "
             f"{'are' if len(names) > 1 else 'is'} missing from data_dir {data_dir} (absolute: "
             f"{data_dir.resolve()}), and download is off (download: false):"]
    for name in names:
        spec = KNOWN_TRACES[name]
        src = f"public source {spec.url}" if spec.url else "no public source: derived locally"
        lines.append(f"  - {name}: {spec.relpath} ({src})")
    lines += ["Provide them in one of two ways:",
              "  1. point the config key 'data_dir' at a directory holding these files (e.g. a copy of the "
              "project's trace directory): snakemake --config data_dir=/path/to/data",
              f"  2. let the workflow fetch the public ones from their pinned sources into "
              f"{config['download_dir']} (sha256-verified): snakemake --config download=auto (the default); "
              "traces without a public source are then skipped."]
    return "\n".join(lines)


def missing_trace_message(name: str, data_dir, download_dir: str = "resources/traces") -> str:
    """The message the workflow stops with when one trace it needs is neither
    present nor downloadable."""
    spec = KNOWN_TRACES[name]
    path = Path(data_dir) / spec.relpath
    lines = [f"Trace '{name}' is missing: expected file {path} (absolute: {path.resolve()}).",
             "Provide it in one of two ways:",
             f"  1. put the file there, or point the config key 'data_dir' at a directory holding "
             f"'{spec.relpath}' (e.g. snakemake --config data_dir=/path/to/data);"]
    if spec.url:
        lines.append(f"  2. let the workflow download it from its pinned public source ({spec.url}, sha256 "
                     f"{spec.sha256[:12]}...) into {download_dir}: snakemake --config download=auto "
                     "(the default).")
    else:
        lines.append(f"  2. this trace has no public download source pinned by the project (it is derived "
                     f"locally); otherwise drop '{name}' from the config key 'traces' (and from any experiment, "
                     "figure or study using it).")
    return "\n".join(lines)


