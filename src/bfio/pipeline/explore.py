"""What the exploration notebook (``notebooks/explore.ipynb``) reads, kept out of
the notebook so it is tested (``tests/test_explore.py``) and the cells stay short:

- **which run** (:func:`choose_run`): the default run's tables
  (``results/tables``, written by ``snakemake -c 2``) or a named run's
  (``runs/<name>/results/tables``; the first look ``snakemake -c 2
  --configfile config/smoke.yaml`` is the named run ``smoke``), chosen by the
  notebook's ``RUN`` variable, else the environment variable :data:`RUN_ENV`
  (``BFIO_RUN``), else automatically (the default run when it has tables, else
  the newest named run that has some);
- **its tables** (:class:`RunTables`): read back as the pipeline wrote them,
  and a sentence naming the file and the command that writes it when one is
  missing;
- **compact views** of the serving studies' tables (:func:`online_views`,
  :func:`routers_views`, :func:`goodput_views`, :func:`step_regime_views`,
  :func:`starvation_views`), each a list of :class:`View` (a caption and a
  frame) that :func:`show` displays.
"""

from __future__ import annotations

import json
import os
from dataclasses import dataclass
from pathlib import Path
from typing import NamedTuple

import pandas as pd

from bfio.pipeline.config import NAMED_RUN_DIR, _RUN_NAME_RE
from bfio.ground.errors import BfioError, ConfigError
from bfio.lookahead.run_keys import paper_row_spec
from bfio.studies.declared_rows import declare_run_rows
from bfio.studies.goodput_summary import REFERENCE_LABELS
from bfio.studies.online_summary import ONLINE_METRICS, policy_label, record_label
from bfio.runs.tables import METRIC_INFO, MIN_INTERVAL_SEEDS, ci_text, row_label

#: The environment variable that names the run when the notebook's ``RUN`` is ``None``.
RUN_ENV = "BFIO_RUN"
#: The name of the default run (``results/tables``); any other name is a named run (``runs/<name>``).
DEFAULT_RUN = "default"
#: Where a run keeps its tables, under its working directory.
TABLES = Path("results") / "tables"
#: The commands that write tables: the full pipeline (default run) and the first look (run ``smoke``).
FULL_COMMAND = "snakemake -c 2"
FIRST_LOOK_COMMAND = "snakemake -c 2 --configfile config/smoke.yaml"

#: The serving studies' tables (beyond the paper), in the notebook's order, with their titles.
SERVING_STUDIES = {
    "online": "Online load study",
    "online_routers": "Online routers and lagging load reports",
    "goodput": "Goodput against the capacity and the balanced bound",
    "step_regime": "Router ranking by step regime",
    "starvation": "Starvation and admission",
}
#: Columns a table stores as printed text ("8.00", not 8.0).
_TEXT_COLUMNS = {"paper_printed": str, "ours_rounded": str}


def find_repo(start=None) -> Path:
    """The repository (the first directory at or above ``start``, default the
    working directory, that holds a ``Snakefile``)."""
    start = Path(start if start is not None else Path.cwd()).resolve()
    for p in (start, *start.parents):
        if (p / "Snakefile").exists():
            return p
    raise BfioError(f"no repository (a directory with a Snakefile) at or above {start}: "
                    "open the notebook from the repository's notebooks/ folder")


def tables_dir(root, run: str = DEFAULT_RUN) -> Path:
    """``<root>/results/tables`` for the default run, ``<root>/runs/<run>/results/tables``
    for a named one (a ``run_name`` of the pipeline's config: a lowercase identifier)."""
    root = Path(root)
    if run == DEFAULT_RUN:
        return root / TABLES
    if not isinstance(run, str) or not _RUN_NAME_RE.match(run):
        raise ConfigError(f"run {run!r}: not a run name (the config key run_name of a named run, a lowercase "
                          f"identifier such as 'smoke', whose tables are in "
                          f"{NAMED_RUN_DIR}/<name>/{TABLES.as_posix()}; "
                          f"or {DEFAULT_RUN!r} for {TABLES.as_posix()})")
    return root / NAMED_RUN_DIR / run / TABLES


def has_tables(path) -> bool:
    """True when ``path`` is a directory holding at least one ``.csv`` table."""
    path = Path(path)
    return path.is_dir() and any(path.glob("*.csv"))


def runs_with_tables(root) -> list[str]:
    """The runs under ``root`` that have tables: :data:`DEFAULT_RUN` first when
    ``results/tables`` has some, then the named runs (``runs/<name>``) by name."""
    root = Path(root)
    named = sorted(p.name for p in (root / NAMED_RUN_DIR).glob("*")
                   if _RUN_NAME_RE.match(p.name) and has_tables(p / TABLES))
    return ([DEFAULT_RUN] if has_tables(root / TABLES) else []) + named


def _rel(path: Path, root: Path) -> str:
    try:
        return path.relative_to(root).as_posix()
    except ValueError:
        return str(path)


@dataclass(frozen=True)
class RunTables:
    """The tables of one pipeline run: ``name`` (:data:`DEFAULT_RUN` or a run
    name), ``root`` (the repository), ``path`` (its tables directory) and
    ``chosen_by`` (how :func:`choose_run` chose it, in words)."""

    name: str
    root: Path
    path: Path
    chosen_by: str

    @property
    def where(self) -> str:
        """The tables directory relative to the repository (``runs/smoke/results/tables``)."""
        return _rel(self.path, self.root)

    @property
    def command(self) -> str:
        """The command that writes this run's tables."""
        if self.name == DEFAULT_RUN:
            return FULL_COMMAND
        if self.name == "smoke":
            return FIRST_LOOK_COMMAND
        return f"snakemake -c 2 --configfile <your config with run_name: {self.name}>"

    def tables(self) -> list[str]:
        """Names of the tables present (``table1``, ``online``, ...: the ``.csv`` files' stems), sorted."""
        return sorted(p.stem for p in self.path.glob("*.csv")) if self.path.is_dir() else []

    def has(self, name: str) -> bool:
        return (self.path / f"{name}.csv").is_file()

    def missing(self, name: str) -> str:
        """The sentence the notebook prints for a table the run lacks: its path and the command."""
        file = _rel(self.path / f"{name}.csv", self.root)
        if not has_tables(self.path):
            return f"{file} not found: this run has no tables yet; `{self.command}` writes them"
        return (f"{file} not found: not in this run (its config may lack the study); "
                f"`{self.command} {TABLES.as_posix()}/{name}.md` writes it when the config has it")

    def read(self, name: str, quiet: bool = False) -> pd.DataFrame | None:
        """The table ``<name>.csv`` (printed values kept as text), or ``None``
        after printing :meth:`missing` (unless ``quiet``)."""
        path = self.path / f"{name}.csv"
        if not path.is_file():
            if not quiet:
                print(self.missing(name))
            return None
        return pd.read_csv(path, dtype=dict(_TEXT_COLUMNS))

    def read_json(self, name: str) -> dict | None:
        """``<name>.json`` of the tables directory (``starvation_recommendation``), or ``None``."""
        path = self.path / f"{name}.json"
        return json.loads(path.read_text()) if path.is_file() else None

    def describe(self) -> str:
        """Which run, why, where, and which tables it has (or what writes them)."""
        label = "the default run" if self.name == DEFAULT_RUN else f"run {self.name!r}"
        lines = [f"tables: {label}, {self.where} ({self.chosen_by})"]
        names = self.tables()
        if not names:
            lines.append(f"  no tables at {self.path}: run `{FIRST_LOOK_COMMAND}` (the first look, a few minutes; "
                         f"then RUN = 'smoke') or `{FULL_COMMAND}` (every study, paper scale); the simulation "
                         "section below runs without them")
            return "\n".join(lines)
        lines.append(f"  {len(names)} tables: {', '.join(names)}")
        serving = [n for n in SERVING_STUDIES if n in names]
        lines.append("  serving studies: " + (", ".join(serving) if serving else "none")
                     + ("" if len(serving) == len(SERVING_STUDIES) else
                        f" (not in this run: {', '.join(n for n in SERVING_STUDIES if n not in names)})"))
        others = [n for n in runs_with_tables(self.root) if n != self.name]
        if others:
            lines.append(f"  other runs with tables: {', '.join(others)} (set RUN to read one)")
        return "\n".join(lines)


def choose_run(run: str | None = None, root=None, environ=None) -> RunTables:
    """The run whose tables the notebook reads.

    ``run`` (the notebook's ``RUN``) names it: :data:`DEFAULT_RUN` for
    ``results/tables``, a run name for ``runs/<name>/results/tables``. When it
    is ``None``, the environment variable :data:`RUN_ENV` (``BFIO_RUN``) names
    it; when that is unset or empty, it is chosen automatically: the default run
    when ``results/tables`` has tables, else the named run whose tables were
    written last, else the default run (which has none; :meth:`RunTables.describe`
    then says how to make them).

    A named run without tables raises :class:`~bfio.ground.errors.BfioError` naming
    the directory it looked in and the runs that have tables (a mistyped name
    is not silently replaced by another run); a malformed name raises
    :class:`~bfio.ground.errors.ConfigError`.
    """
    root = find_repo() if root is None else Path(root).resolve()
    environ = os.environ if environ is None else environ
    if run is not None:
        name, why = str(run), f"RUN = {run!r}"
    elif environ.get(RUN_ENV, "").strip():
        name = environ[RUN_ENV].strip()
        why = f"{RUN_ENV}={name}"
    else:
        default = tables_dir(root)
        named = [n for n in runs_with_tables(root) if n != DEFAULT_RUN]
        if has_tables(default):
            name, why = DEFAULT_RUN, "chosen automatically: it has tables"
        elif named:
            name = max(named, key=lambda n: tables_dir(root, n).stat().st_mtime)
            why = (f"chosen automatically: {_rel(default, root)} has no tables and this is the named run "
                   "written last")
        else:
            name, why = DEFAULT_RUN, "chosen automatically: no run has tables yet"
    path = tables_dir(root, name)
    if name != DEFAULT_RUN and not has_tables(path):
        others = runs_with_tables(root)
        raise BfioError(f"run {name!r} ({why}): no tables at {path}. Runs with tables: "
                        f"{', '.join(others) if others else 'none'}. A named run writes its tables there: "
                        f"`{RunTables(name, root, path, why).command}`")
    declare_run_rows(root, name if name != DEFAULT_RUN else None)  # its config's rows, by label
    return RunTables(name, root, path, why)


# --------------------------------------------------------------------------- views


class View(NamedTuple):
    """A caption and the frame it describes (one setting of a study)."""

    caption: str
    frame: pd.DataFrame


def show(views) -> None:
    """Display each :class:`View` (its caption in bold, then the frame) in a notebook,
    or print them elsewhere."""
    try:
        from IPython.display import Markdown, display
    except ImportError:  # pragma: no cover - outside IPython
        Markdown, display = str, print
    for view in [views] if isinstance(views, View) else views:
        display(Markdown(f"**{view.caption}**"))
        display(view.frame)


def _fmt(x, digits: int = 3) -> str:
    """``digits`` significant digits; whole numbers from ``10**digits`` on (``2,999``, not ``3e+03``); no ``-0``."""
    if x is None or pd.isna(x):
        return "n/a"
    x = float(x)
    if abs(x) >= 10 ** digits:
        return f"{x:,.0f}"
    text = f"{x:.{digits}g}"
    return "0" if float(text) == 0 else text


def _ci(r, metric: str, digits: int = 3, scale: float = 1.0) -> str:
    """``'mean [lo, hi]'``; the mean alone below :data:`~bfio.runs.tables.MIN_INTERVAL_SEEDS`
    seeds (the caption says so: :func:`_seeds`)."""
    mean = _fmt(r[f"{metric}_mean"] * scale, digits)
    n = r.get("n_seeds")
    if n is not None and pd.notna(n) and int(n) < MIN_INTERVAL_SEEDS:
        return mean
    return ci_text(mean, _fmt(r[f"{metric}_ci_lo"] * scale, digits), _fmt(r[f"{metric}_ci_hi"] * scale, digits), n)


def _seeds(frame: pd.DataFrame) -> str:
    """``'5 seeds'`` (``'2-5 seeds'`` when they differ), with ``' (no interval with fewer than 3)'`` when some
    have fewer than 3."""
    n = pd.to_numeric(frame.get("n_seeds", pd.Series(dtype=float)), errors="coerce").dropna()
    if n.empty:
        return "? seeds"
    words = f"{int(n.min())}" if n.min() == n.max() else f"{int(n.min())}-{int(n.max())}"
    few = n.min() < MIN_INTERVAL_SEEDS
    return words + " seeds" + (f" (no interval with fewer than {MIN_INTERVAL_SEEDS})" if few else "")


def _setting_words(r) -> str:
    return f"{r['trace']}, G={int(r['workers'])}, B={int(r['slots'])}, N={int(r['requests']):,}"


def _router(r) -> str:
    """:func:`~bfio.studies.online_summary.record_label`, with BF-IO named so where a
    table stores no horizon (``bfio (instant)`` -> ``BF-IO (instant)``)."""
    return _bfio_name(record_label(r))


def _bfio_name(label: str) -> str:
    return "BF-IO" + label[4:] if label.startswith("bfio (") else label


def online_views(online: pd.DataFrame, metric: str = "e2e_s_p99") -> list[View]:
    """Per setting of the online table, the routers on exact load state (report
    interval 0; the lagging ones are :func:`routers_views`') against the
    offered load: the mean over seeds of ``metric`` (a column stem of the
    table: ``e2e_s_p99``, ``queue_wait_s_p99``, ``throughput_run``, ...)."""
    if f"{metric}_mean" not in online:
        known = [m for m in ONLINE_METRICS if f"{m}_mean" in online]
        raise ConfigError(f"metric {metric!r}: not a column of the online table (it has: {', '.join(known)})")
    label, unit = ONLINE_METRICS.get(metric, (metric, ""))
    exact = online[online["report_interval"].fillna(0) == 0] if "report_interval" in online else online
    views = []
    for setting, sub in exact.groupby("setting", sort=False):
        sub = sub.assign(router=[_router(r) for r in sub.to_dict("records")])
        frame = sub.pivot_table(index="router", columns="load", values=f"{metric}_mean", sort=False).map(_fmt)
        frame.columns = [f"{x:.3g}" for x in frame.columns]
        frame.columns.name = "load"
        frame.index.name = None
        first = sub.iloc[0]
        arrivals = ("trace replay, load = the replay's rate over the capacity" if first["arrival_mode"] == "trace"
                    else "Poisson arrivals, load = rate over the capacity")
        views.append(View(f"{setting} ({_setting_words(first)}; {arrivals}): {label} ({unit}), mean over "
                          f"{_seeds(sub)}", frame.fillna("")))
    return views


#: Columns of a paper table's cells the notebook shows, when the table has them.
PAPER_CELL_COLUMNS = ["label", "objective_label", "metric_label", "unit", "paper_printed", "ours_rounded", "rel_diff",
                      "verdict", "vs_paper", "expected", "check", "ok"]


def paper_cells(table: pd.DataFrame) -> pd.DataFrame:
    """The cells of a paper table (``table1``, ``table2``) that the paper prints:
    its printed value beside this run's, with the comparison columns the table has."""
    printed = table["paper_printed"].fillna("").astype(str).str.strip() != ""
    return table.loc[printed, [c for c in PAPER_CELL_COLUMNS if c in table]].reset_index(drop=True)


def summary_view(summary: pd.DataFrame, metric: str) -> View:
    """An experiment summary's ``metric`` per row and G in the chart's units
    (:func:`bfio.figures.summary_bars.metric_scale`): the reference seed's value
    and the mean [95% CI] over seeds."""
    from bfio.figures.summary_bars import metric_scale  # local: matplotlib only when a chart is asked for

    if f"{metric}_mean" not in summary:
        known = [m for m in METRIC_INFO if f"{m}_mean" in summary]
        raise ConfigError(f"metric {metric!r}: not in this summary (it has: {', '.join(known)})")
    factor, unit = metric_scale(metric, summary[[f"{metric}_mean", f"{metric}_ci_hi"]].to_numpy(dtype=float))
    ref = int(summary["ref_seed"].iloc[0]) if "ref_seed" in summary else None
    rows = []
    for r in summary.to_dict("records"):
        rec = {"policy": row_label(r["row"]), "G": int(r["workers"])}
        if "effective_horizon" in r and pd.notna(r["effective_horizon"]):
            rec["H_eff"] = str(int(r["effective_horizon"]))
        rec[f"seed {ref}" if ref is not None else "value"] = _fmt(r[metric] / factor) if metric in r else ""
        rec["mean [95% CI]"] = _ci(r, metric, scale=1 / factor)
        rows.append(rec)
    label = METRIC_INFO.get(metric, (metric,))[0]
    return View(f"{label} ({unit}), mean over {_seeds(summary)}", pd.DataFrame(rows).fillna(""))


#: Routers the online chart shows first when present (then the table's others, up to 8).
PREFERRED_ROUTERS = ("fcfs", "jsq_tokens", "sglang_total_tokens", "vllm_dp", "vllm_dp_kv", "round_robin",
                     "least_tokens", "power_of_two")


def default_routers(online: pd.DataFrame, n: int = 8) -> list[str]:
    """At most ``n`` rows of the online table (exact load state) for a chart:
    BF-IO's central row with the longest H and its instant-dispatch row, FCFS,
    JSQ, then the production routers of :data:`PREFERRED_ROUTERS`, then the
    table's other rows in its order."""
    exact = online[online["report_interval"].fillna(0) == 0] if "report_interval" in online else online
    rows = list(dict.fromkeys(exact["row"]))
    bfio = exact[exact["policy"] == "bfio"] if "policy" in exact else exact.iloc[:0]
    default = bfio["row"].map(lambda r: (spec := paper_row_spec(r)) is not None and spec.objective == "default")
    central = bfio[(bfio["dispatch"] == "central") & default]
    first = []
    if len(central):
        first.append(central.loc[pd.to_numeric(central["horizon"]).idxmax(), "row"])
    first += list(dict.fromkeys(bfio.loc[bfio["dispatch"] == "instant", "row"]))[:1]
    order = first + [r for r in PREFERRED_ROUTERS if r in rows] + rows
    return list(dict.fromkeys(order))[:n]


def _nearest(values, target: float) -> float:
    values = sorted(set(values))
    return min(values, key=lambda v: (abs(v - target), -v))


def routers_views(routers: pd.DataFrame, load: float = 0.95) -> list[View]:
    """Per setting of the routers table, at the load nearest ``load``: each
    router's p99 end-to-end latency over the reference's (BF-IO, central pool;
    the table's ``vs_reference``, paired by seed), mean [95% CI], one column
    per report interval k (steps between load reports; 0 = exact state)."""
    views = []
    for setting, sub in routers.groupby("setting", sort=False):
        at = _nearest(sub["load"], load)
        sub = sub[sub["load"] == at]
        rows: dict = {}
        for r in sub.to_dict("records"):
            streamed = r.get("completions") == "streamed"  # a line of its own (issue 44)
            key = (r["policy"], r["dispatch"], streamed)
            k = int(r["report_interval"]) if pd.notna(r.get("report_interval")) else 0
            rec = rows.setdefault(key, {})
            if k == 0 or "router" not in rec:
                rec["router"] = _bfio_name(r["label"] if k == 0 and isinstance(r.get("label"), str) else
                                           policy_label(r["policy"], r["dispatch"],
                                                        completions="streamed" if streamed else None))
            rec[f"k={k}"] = _ci(r, "vs_reference")
        frame = pd.DataFrame(rows.values()).set_index("router")
        frame = frame[sorted(frame.columns, key=lambda c: int(c[2:]))].fillna("")
        frame.index.name = None
        ref = sub["reference"].iloc[0] if "reference" in sub else "the reference"
        views.append(View(f"{setting} ({_setting_words(sub.iloc[0])}), load {at:.3g}: p99 end-to-end latency over "
                          f"{row_label(ref)}'s (central pool), mean [95% CI] over {_seeds(sub)}; "
                          "k = steps between load reports (0: exact state)", frame))
    return views


def _goodput_router(r) -> str:
    """A goodput row's name: a reference's (``balanced bound``), else the router's."""
    ref = r.get("reference")
    if isinstance(ref, str) and ref in REFERENCE_LABELS:
        return REFERENCE_LABELS[ref].split(":")[0]
    return _router(r)


def goodput_views(goodput: pd.DataFrame) -> list[View]:
    """Per step regime of the goodput table: each router's goodput in req/s
    per setting (the mean over seeds with its 95% interval where the table has
    one, ``goodput_ci_lo``/``_hi``) and its share of the capacity, the references
    (``reference``: the balanced bound, :mod:`bfio.sim.pooled`) named as such;
    then the capacity and each setting's latency targets as the last rows."""
    views = []
    has_ci = {"goodput_ci_lo", "goodput_ci_hi"} <= set(goodput.columns)

    def cell(r) -> str:
        g = f"{r['goodput_rps']:.1f}"
        if has_ci and pd.notna(r["goodput_ci_lo"]) and pd.notna(r["goodput_ci_hi"]):
            g += f" [{max(r['goodput_ci_lo'], 0.0):.1f}, {r['goodput_ci_hi']:.1f}]"
        return f"{g} ({r['goodput_share']:.0%})"

    for regime, sub in goodput.groupby("regime", sort=False):
        recs = sub.to_dict("records")
        sub = sub.assign(router=[_goodput_router(r) for r in recs], cell=[cell(r) for r in recs])
        cells = sub.pivot_table(index="router", columns="setting", values="cell", aggfunc="first",
                                sort=False).fillna("")
        first = sub.groupby("setting", sort=False).first()
        cells.loc["capacity (ignores the targets)"] = [f"{first.loc[c, 'capacity_rps']:.1f}" for c in cells.columns]
        cells.loc["targets: p99 TTFT / TPOT"] = [
            f"{first.loc[c, 'ttft_slo_s']:g} s / {1000 * first.loc[c, 'tpot_slo_s']:g} ms" for c in cells.columns]
        cells.index.name = None
        views.append(View(f"regime {regime}: goodput in req/s{', mean [95% CI]' if has_ci else ''} (share of the "
                          "capacity), the highest Poisson rate whose p99 TTFT and p99 TPOT meet the setting's targets "
                          f"(last row); {_seeds(sub)}", cells))
    return views


def step_regime_views(step_regime: pd.DataFrame) -> list[View]:
    """Per setting of the step-regime table: each router's p99 end-to-end
    latency over the regime's best router's (mean over seeds) and its rank, one
    column per step regime (``paper``, then the calibrated step by beta)."""
    views = []
    for setting, sub in step_regime.groupby("setting", sort=False):
        sub = sub.assign(router=[_router(r) for r in sub.to_dict("records")],
                         cell=[f"{v:.3f} ({int(k)})" for v, k in zip(sub["vs_best"], sub["rank"])])
        frame = sub.pivot_table(index="router", columns="regime", values="cell", aggfunc="first", sort=False)
        frame.index.name = None
        frame.columns.name = "regime"
        views.append(View(f"{setting} ({_setting_words(sub.iloc[0])}), load {sub['load'].iloc[0]:g} of each regime's "
                          f"capacity: p99 end-to-end latency over the best router's (rank), {_seeds(sub)}", frame))
    return views


#: The starvation view's columns: (column stem, heading, digits).
STARVATION_COLUMNS = [("wait_steps_p99", "p99 wait (steps)", 3), ("wait_steps_max", "max wait (steps)", 3),
                      ("wait_s_max", "max wait (s)", 3), ("throughput_run_cost_pct", "throughput cost vs free (%)", 2)]


def starvation_views(starvation: pd.DataFrame, recommendation: dict | None = None) -> list[View]:
    """Per setting of the starvation table (backlog mode): each admission rule's
    p99 and longest wait and its throughput cost against ``free`` (same H,
    paired by seed, whole run), mean [95% CI]; the recommendation (the
    ``starvation_recommendation.json`` beside the table) as a last view."""
    views = []
    for setting, sub in starvation.groupby("setting", sort=False):
        rows = []
        for r in sub.to_dict("records"):
            rec = {"rule": row_label(r["row"]) if r["admission"] == "-" else
                   f"BF-IO (H={int(r['horizon'])}), {r['admission']}"}
            for stem, head, digits in STARVATION_COLUMNS:
                rec[head] = _ci(r, stem, digits) if f"{stem}_mean" in r and pd.notna(r[f"{stem}_mean"]) else ""
            rows.append(rec)
        frame = pd.DataFrame(rows).set_index("rule")
        frame.index.name = None
        views.append(View(f"{setting} ({_setting_words(sub.iloc[0])}; backlog): waits from pool entry to admission, "
                          f"mean [95% CI] over {_seeds(sub)}", frame))
    if recommendation:
        rec = pd.DataFrame([{k: recommendation.get(k) for k in ("admission", "proposed", "proposed_passes", "by")}])
        views.append(View(f"recommended admission, by the rule: {recommendation.get('criterion', '')}", rec))
    return views


__all__ = ["RUN_ENV", "DEFAULT_RUN", "SERVING_STUDIES", "RunTables", "View", "choose_run", "default_routers",
           "find_repo", "goodput_views", "has_tables", "online_views", "paper_cells", "routers_views",
           "runs_with_tables", "show", "starvation_views", "step_regime_views", "summary_view", "tables_dir"]
