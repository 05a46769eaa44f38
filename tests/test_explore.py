"""The exploration notebook's data access (``bfio.pipeline.explore``, issue 42): which
run's tables it reads (default, named, automatic, missing), the views of the
serving studies, its charts (at most 8 series a panel, readable units), and the
notebook itself without tables and on the first look's run (``runs/smoke``)."""

import os
from pathlib import Path

import matplotlib
import nbformat
import numpy as np
import pandas as pd
import pytest

from bfio.ground.errors import BfioError, ConfigError
from bfio.pipeline.explore import (DEFAULT_RUN, RUN_ENV, choose_run, default_routers, goodput_views, online_views,
                          routers_views, runs_with_tables, starvation_views, step_regime_views, summary_view)

matplotlib.use("Agg")

REPO = Path(__file__).resolve().parents[1]


def layout(root: Path, default=(), **named) -> Path:
    """A repository layout under ``root``: a Snakefile, ``results/tables/<t>.csv``
    for ``t`` in ``default``, ``runs/<name>/results/tables/<t>.csv`` per named run."""
    (root / "Snakefile").write_text("# marker\n")
    for name, tables in [(None, default), *named.items()]:
        d = root / "results" / "tables" if name is None else root / "runs" / name / "results" / "tables"
        d.mkdir(parents=True, exist_ok=True)
        for t in tables:
            (d / f"{t}.csv").write_text("row,workers\nfcfs,4\n")
    return root


# --------------------------------------------------------------------------- choosing the run


def test_no_tables_anywhere_reads_the_default_run_and_says_what_writes_it(tmp_path, capsys):
    root = layout(tmp_path)
    run = choose_run(None, root=root, environ={})
    assert run.name == DEFAULT_RUN and run.path == root / "results" / "tables"
    text = run.describe()
    assert f"no tables at {root / 'results' / 'tables'}" in text
    assert "snakemake -c 2 --configfile config/smoke.yaml" in text and "RUN = 'smoke'" in text
    assert run.read("online") is None
    assert "results/tables/online.csv not found" in capsys.readouterr().out


def test_the_default_run_named_runs_and_the_environment(tmp_path):
    root = layout(tmp_path, smoke=["online"])
    # the default run has no tables: the named run that has some is read, and the choice is said
    auto = choose_run(None, root=root, environ={})
    assert (auto.name, auto.path) == ("smoke", root / "runs" / "smoke" / "results" / "tables")
    assert "automatically" in auto.chosen_by and "results/tables has no tables" in auto.chosen_by
    # once the default run has tables it is the automatic choice
    layout(root, default=["table1"])
    assert choose_run(None, root=root, environ={}).name == DEFAULT_RUN
    assert runs_with_tables(root) == [DEFAULT_RUN, "smoke"]
    # the environment variable names a run; the notebook's RUN wins over it
    by_env = choose_run(None, root=root, environ={RUN_ENV: "smoke"})
    assert by_env.name == "smoke" and by_env.chosen_by == f"{RUN_ENV}=smoke"
    assert choose_run(DEFAULT_RUN, root=root, environ={RUN_ENV: "smoke"}).path == root / "results" / "tables"
    assert choose_run("smoke", root=root, environ={}).tables() == ["online"]
    assert choose_run(None, root=root, environ={RUN_ENV: ""}).name == DEFAULT_RUN  # empty: unset


def test_a_missing_named_run_is_an_error_naming_where_it_looked(tmp_path):
    root = layout(tmp_path, smoke=["online"])
    missing = root / "runs" / "mytrace" / "results" / "tables"
    with pytest.raises(BfioError) as err:
        choose_run("mytrace", root=root, environ={})
    assert f"no tables at {missing}" in str(err.value) and "Runs with tables: smoke" in str(err.value)
    with pytest.raises(BfioError, match=f"{RUN_ENV}=mytrace"):
        choose_run(None, root=root, environ={RUN_ENV: "mytrace"})
    (root / "runs" / "empty" / "results" / "tables").mkdir(parents=True)  # a run that wrote nothing yet
    with pytest.raises(BfioError, match="no tables at"):
        choose_run("empty", root=root, environ={})
    with pytest.raises(ConfigError, match="not a run name"):
        choose_run("runs/smoke", root=root, environ={})


def test_a_table_a_run_lacks_is_named_with_the_command_that_writes_it(tmp_path, capsys):
    root = layout(tmp_path, smoke=["online"])
    run = choose_run("smoke", root=root, environ={})
    assert run.read("goodput") is None
    out = capsys.readouterr().out
    assert "runs/smoke/results/tables/goodput.csv not found" in out
    assert "snakemake -c 2 --configfile config/smoke.yaml results/tables/goodput.md" in out
    assert run.read("online")["row"].tolist() == ["fcfs"]


# --------------------------------------------------------------------------- views of the serving studies


def online_table() -> pd.DataFrame:
    """A small online summary as the pipeline writes it: two Poisson settings, three loads,
    central and instant routers, one on lagging reports."""
    rows = [("fcfs", "fcfs", "central", 0, None), ("bfio_h40", "bfio", "central", 0, 40),
            ("bfio_h40_instant", "bfio", "instant", 0, 40), ("vllm_dp", "vllm_dp", "instant", 0, None),
            ("sglang_total_tokens", "sglang_total_tokens", "instant", 0, None),
            ("sglang_total_tokens_r10", "sglang_total_tokens", "instant", 10, None)]
    recs = []
    for s, (setting, trace, g) in enumerate([("burstgpt_g16", "burstgpt", 16), ("longbench_g64", "longbench", 64)]):
        for load in (0.5, 0.8, 1.05):
            for k, (row, policy, dispatch, ri, h) in enumerate(rows):
                e2e = (1 + s) * (1 + load) * (1 + 0.1 * k)
                rec = {"setting": setting, "trace": trace, "requests": 2000, "workers": g, "slots": 72,
                       "arrival_mode": "poisson", "load": load, "time_scale": 1.0, "dispatch": dispatch, "row": row,
                       "policy": policy, "report_interval": ri, "horizon": h, "n_seeds": 5,
                       "reference": "bfio_h40", "label": None}
                for m, v in (("e2e_s_p99", e2e), ("throughput_run", 3e4 * load / (1 + 0.1 * k)),
                             ("vs_reference", 1 + 0.1 * k)):
                    rec.update({f"{m}_mean": v, f"{m}_ci_lo": 0.9 * v, f"{m}_ci_hi": 1.1 * v})
                recs.append(rec)
    return pd.DataFrame(recs)


def test_online_view_is_one_metric_per_router_and_load_on_exact_state():
    views = online_views(online_table())
    assert [v.caption.split(" ")[0] for v in views] == ["burstgpt_g16", "longbench_g64"]
    frame = views[1].frame
    assert list(frame.columns) == ["0.5", "0.8", "1.05"]
    assert "SGLang total tokens, reports every 10 steps (instant)" not in frame.index  # lagging: routers view
    assert frame.loc["BF-IO (H=40) (central)", "0.8"] == f"{2 * 1.8 * 1.1:.3g}"
    assert "e2e latency p99 (s)" in views[0].caption and "5 seeds" in views[0].caption
    with pytest.raises(ConfigError, match="not a column"):
        online_views(online_table(), "e2e_p99")


def test_routers_view_has_a_column_per_report_interval_at_the_nearest_load():
    views = routers_views(online_table(), load=0.95)
    assert "load 1.05" in views[0].caption
    frame = views[0].frame
    assert list(frame.columns) == ["k=0", "k=10"]
    assert frame.loc["SGLang total tokens (instant)", "k=10"] == "1.5 [1.35, 1.65]"
    assert frame.loc["BF-IO (instant)", "k=10"] == ""


def test_default_routers_lead_with_bfio_and_stop_at_eight():
    table = online_table()
    assert default_routers(table)[:3] == ["bfio_h40", "bfio_h40_instant", "fcfs"]
    assert "sglang_total_tokens_r10" not in default_routers(table)
    assert len(default_routers(table, n=2)) == 2


def test_goodput_step_regime_and_starvation_views():
    goodput = pd.DataFrame([{"setting": s, "regime": "calibrated", "row": row, "dispatch": d, "policy": p,
                             "report_interval": 0, "horizon": h, "goodput_rps": rps, "capacity_rps": 100.0,
                             "goodput_share": rps / 100, "ttft_slo_s": 2.0, "tpot_slo_s": 0.2, "n_seeds": 3}
                            for s in ("burstgpt_g16", "azure_code_g16")
                            for row, d, p, h, rps in (("bfio_h20", "central", "bfio", 20, 90.4),
                                                      ("vllm_dp", "instant", "vllm_dp", None, 65.5))])
    (view,) = goodput_views(goodput)
    assert view.frame.loc["BF-IO (H=20) (central)", "azure_code_g16"] == "90.4 (90%)"
    assert view.frame.loc["capacity (ignores the targets)", "burstgpt_g16"] == "100.0"
    assert view.frame.loc["targets: p99 TTFT / TPOT", "azure_code_g16"] == "2 s / 200 ms"
    # per-seed bisections (a mean with its interval) and a setting's own targets
    goodput = goodput.assign(goodput_ci_lo=goodput["goodput_rps"] - 5, goodput_ci_hi=goodput["goodput_rps"] + 5)
    goodput.loc[goodput["setting"] == "azure_code_g16", ["ttft_slo_s", "tpot_slo_s"]] = [6.0, 0.175]
    (view,) = goodput_views(goodput)
    assert view.frame.loc["vLLM DP (instant)", "burstgpt_g16"] == "65.5 [60.5, 70.5] (66%)"
    assert view.frame.loc["targets: p99 TTFT / TPOT", "azure_code_g16"] == "6 s / 175 ms"
    assert "mean [95% CI]" in view.caption
    bound = goodput.iloc[:1].assign(row="balanced", policy="fcfs", reference="balanced", goodput_rps=95.0)
    (view,) = goodput_views(pd.concat([goodput.assign(reference="none"), bound]))
    assert view.frame.loc["balanced bound", "burstgpt_g16"].startswith("95.0")

    regimes = pd.DataFrame([{"setting": "burstgpt_g16", "trace": "burstgpt", "requests": 5000, "workers": 16,
                             "slots": 72, "load": 0.8, "regime": g, "dispatch": "central", "row": row, "policy": p,
                             "report_interval": 0, "vs_best": v, "rank": k, "n_seeds": 5}
                            for g in ("paper", "beta=0.00054")
                            for row, p, v, k in (("bfio_h20", "bfio", 1.0, 1), ("fcfs", "fcfs", 1.37, 2))])
    (view,) = step_regime_views(regimes)
    assert list(view.frame.columns) == ["paper", "beta=0.00054"]
    assert view.frame.loc["FCFS (central)", "paper"] == "1.370 (2)"

    starv = pd.DataFrame([{"setting": "burstgpt_g16", "trace": "burstgpt", "requests": 9000, "workers": 16,
                           "slots": 72, "row": row, "horizon": h, "admission": a, "n_seeds": n,
                           **{f"{m}_{s}": v for m, v in (("wait_steps_p99", 40.0), ("wait_steps_max", 2999.0),
                                                         ("wait_s_max", 38.3), ("throughput_run_cost_pct", -0.0))
                              for s in ("mean", "ci_lo", "ci_hi")}}
                          for row, h, a, n in (("fcfs", None, "-", 2), ("bfio_h0_free", 0, "free", 2))])
    views = starvation_views(starv, {"admission": "aging:20", "proposed": "drain:100", "criterion": "the rule"})
    frame = views[0].frame
    assert frame.loc["BF-IO (H=0), free", "max wait (steps)"] == "2,999"  # not 3e+03
    assert frame.loc["BF-IO (H=0), free", "throughput cost vs free (%)"] == "0"  # not -0
    assert "no interval with fewer than 3" in views[0].caption  # 2 seeds: the mean alone
    assert views[-1].frame["proposed"].iloc[0] == "drain:100"


# --------------------------------------------------------------------------- charts


def sweep_summary() -> pd.DataFrame:
    """A horizon sweep as the old bar chart drew it: 23 rows, FCFS far above."""
    recs = []
    rows = ["fcfs", "jsq_tokens"] + [f"bfio_h{h}" for h in range(0, 105, 10)] + \
        [f"bfio_h{h}_literal" for h in range(10, 105, 10)]
    for k, row in enumerate(rows):
        m = 3.7e9 if row == "fcfs" else 1.5e8 + 1e6 * k
        h = None if not row.startswith("bfio") else int(row[6:].split("_")[0])
        rec = {"row": row, "workers": 256, "horizon": h, "trace": "longbench", "requests": 80000, "slots": 72,
               "n_seeds": 5, "ref_seed": 42, "avg_imbalance": m}
        rec.update({"avg_imbalance_mean": m, "avg_imbalance_ci_lo": 0.9 * m, "avg_imbalance_ci_hi": 1.1 * m})
        recs.append(rec)
    return pd.DataFrame(recs)


def test_summary_chart_draws_series_not_rows_in_readable_units():
    from bfio.figures.summary_bars import MAX_SERIES, plot_summary

    summary = sweep_summary()
    assert len(summary) == 23
    fig = plot_summary(summary, "avg_imbalance")
    fig.canvas.draw()
    labels = [t.get_text() for leg in fig.legends for t in leg.get_texts()]
    assert labels == ["FCFS", "JSQ", "BF-IO", "BF-IO paper-literal"]
    handles = fig.legends[0].legend_handles
    colours = [tuple(np.round(matplotlib.colors.to_rgba(h.get_color()), 3)) for h in handles]
    assert len(set(colours)) == len(colours)  # FCFS and paper-literal no longer share a colour
    for ax in fig.axes:
        assert len(ax.get_legend_handles_labels()[0]) <= MAX_SERIES
        assert ax.yaxis.get_offset_text().get_text() == ""  # no "1e9" above the axis
        assert ax.get_xlabel() == "lookahead horizon H (steps)"
    assert fig.axes[0].get_ylabel() == "Avg imbalance (x1e8 tokens)"
    view = summary_view(summary, "avg_imbalance")
    assert view.caption.startswith("Avg imbalance (x1e8 tokens)")
    assert view.frame.loc[0, "mean [95% CI]"] == "37 [33.3, 40.7]"


def test_online_chart_shows_at_most_eight_routers_and_bars_for_one_load():
    from bfio.figures.style import text_overlaps
    from bfio.figures.summary_bars import plot_online

    table = online_table()
    fig = plot_online(table, default_routers(table))
    assert len(fig.legends[0].get_texts()) == 5 and not text_overlaps(fig)
    assert all(ax.get_xlabel() == "offered load (share of the capacity)" for ax in fig.axes)
    one_load = table[table["load"] == 0.8]
    fig = plot_online(one_load, default_routers(one_load), "throughput_run")
    assert all(len(ax.patches) == 5 for ax in fig.axes)  # one bar per router
    assert "load 0.8" in fig.axes[0].get_xlabel()


# --------------------------------------------------------------------------- the notebook


def execute_tables_part(workdir: Path, env: dict):
    """explore.ipynb up to its simulation section (section 4; the nbmake run and
    tests/test_pipeline_notebook.py execute it all), executed in ``workdir``."""
    nbclient = pytest.importorskip("nbclient")
    nb = nbformat.read(REPO / "notebooks" / "explore.ipynb", as_version=4)
    stop = next(i for i, c in enumerate(nb.cells) if c.cell_type == "markdown" and c.source.startswith("## 4."))
    nb.cells = nb.cells[:stop]
    client = nbclient.NotebookClient(nb, timeout=600, kernel_name="python3",
                                     resources={"metadata": {"path": str(workdir)}})
    client.execute(env={**os.environ, **env})
    return [c for c in nb.cells if c.cell_type == "code"]


def streams(cell) -> str:
    return "".join(o.get("text", "") for o in cell.outputs if o.get("output_type") == "stream")


def test_notebook_without_tables_says_what_is_missing(tmp_path):
    root = layout(tmp_path)
    (root / "notebooks").mkdir()
    env = {k: v for k, v in os.environ.items() if k != RUN_ENV}
    cells = execute_tables_part(root / "notebooks", {**env, RUN_ENV: ""})
    assert f"no tables at {root / 'results' / 'tables'}" in streams(cells[0])
    for cell in cells[1:]:
        assert "not found: this run has no tables yet" in streams(cell), cell.source


SMOKE_TABLES = REPO / "runs" / "smoke" / "results" / "tables"


@pytest.mark.skipif(not (SMOKE_TABLES / "online.csv").exists(),
                    reason="no first-look run (snakemake -c 2 --configfile config/smoke.yaml writes runs/smoke)")
def test_notebook_reads_the_first_look_run():
    cells = execute_tables_part(REPO / "notebooks", {RUN_ENV: "smoke"})
    assert "tables: run 'smoke', runs/smoke/results/tables" in streams(cells[0])
    online = next(c for c in cells if 'run.read("online")' in c.source)
    assert any("image/png" in o.get("data", {}) for o in online.outputs)
    assert any("text/html" in o.get("data", {}) for o in online.outputs)
    for cell in cells[1:]:  # every table either shown or named as missing
        shown = any("text/html" in o.get("data", {}) for o in cell.outputs)
        assert shown or "not found" in streams(cell), cell.source
