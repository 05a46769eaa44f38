"""Trace loading: known traces verify their sha256; every malformed input
raises a TraceError naming the file, row and field."""

import json
import shutil

import numpy as np
import pandas as pd
import pytest

from bfio.ground.errors import ChecksumError, TraceError
from bfio.traces.registry import KNOWN_TRACES, sha256_of
from bfio.traces import load_trace


@pytest.mark.parametrize("name", sorted(KNOWN_TRACES))
def test_known_traces_load_and_verify(name, data_dir):
    t = load_trace(name, data_dir=data_dir)
    assert len(t) > 1000
    assert t.prefill.dtype == np.int64 and t.prefill.min() >= 1 and t.decode.min() >= 1
    if KNOWN_TRACES[name].arrival_col:
        assert t.arrival_s is not None and np.all(np.isfinite(t.arrival_s))


def test_paper_trace_matches_readme_statistics(data_dir):
    # ../shared/data/README.md: LongBench output mean 37.0, max 346; BurstGPT prompt max 14,117.
    lb = load_trace("longbench", data_dir=data_dir)
    assert len(lb) == 8000 and lb.decode.max() == 346 and round(lb.decode.mean(), 1) == 37.0
    assert load_trace("burstgpt", data_dir=data_dir).prefill.max() == 14117


def test_checksum_mismatch_is_refused(tmp_path, data_dir):
    spec = KNOWN_TRACES["burstgpt"]
    dst = tmp_path / spec.relpath
    dst.parent.mkdir(parents=True)
    shutil.copy(data_dir / spec.relpath, dst)
    with open(dst, "ab") as f:
        f.write(b" ")
    with pytest.raises(ChecksumError, match="sha256"):
        load_trace("burstgpt", data_dir=tmp_path)
    assert sha256_of(dst) != spec.sha256


def test_missing_known_trace_names_path_and_remedy(tmp_path):
    with pytest.raises(TraceError, match="burst_data_8000.json.*does not exist.*download"):
        load_trace("burstgpt", data_dir=tmp_path)


def _write_json(tmp_path, obj, name="t.json"):
    p = tmp_path / name
    p.write_text(json.dumps(obj))
    return p


def _records(n=3):
    return [{"input_length": 10 + i, "output_length": 2 + i} for i in range(n)]


def test_generic_json_loads(tmp_path):
    t = load_trace(_write_json(tmp_path, {"data": _records()}))
    assert t.prefill.tolist() == [10, 11, 12] and t.decode.tolist() == [2, 3, 4]


@pytest.mark.parametrize("bad, field, what", [
    ("x", "input_length", "not an integer"),
    (2.5, "input_length", "not an integer"),
    (0, "input_length", "not positive"),
    (-3, "output_length", "not positive"),
    (None, "output_length", "missing|not an integer"),
    (True, "input_length", "not an integer"),
])
def test_json_bad_values_name_row_and_field(tmp_path, bad, field, what):
    recs = _records(4)
    recs[2][field] = bad
    with pytest.raises(TraceError, match=rf"row 2, field '{field}'.*({what})"):
        load_trace(_write_json(tmp_path, {"data": recs}))


def test_json_missing_field(tmp_path):
    recs = _records(3)
    del recs[1]["output_length"]
    with pytest.raises(TraceError, match=r"row 1, field 'output_length'"):
        load_trace(_write_json(tmp_path, {"data": recs}))


def test_json_missing_column_everywhere(tmp_path):
    with pytest.raises(TraceError, match=r"field 'output_length': missing decode column"):
        load_trace(_write_json(tmp_path, {"data": [{"input_length": 3}]}))


@pytest.mark.parametrize("obj, match", [
    ({"rows": []}, "no 'data' key"),
    ({"data": {"a": 1}}, "expected a list"),
    ({"data": [1, 2]}, "row 0.*expected a JSON object"),
    ({"data": []}, "no rows"),
    (42, "expected an object or a list"),
])
def test_json_wrong_shape(tmp_path, obj, match):
    with pytest.raises(TraceError, match=match):
        load_trace(_write_json(tmp_path, obj))


def test_invalid_json(tmp_path):
    p = tmp_path / "t.json"
    p.write_text('{"data": [')
    with pytest.raises(TraceError, match="not valid JSON"):
        load_trace(p)


def test_empty_file(tmp_path):
    p = tmp_path / "t.csv"
    p.write_text("")
    with pytest.raises(TraceError, match="t.csv: file is empty"):
        load_trace(p, prefill_col="p", decode_col="d")


def test_header_only_csv(tmp_path):
    p = tmp_path / "t.csv"
    p.write_text("p,d\n")
    with pytest.raises(TraceError, match="no rows"):
        load_trace(p, prefill_col="p", decode_col="d")


def test_unreadable_file(tmp_path):
    p = tmp_path / "t.parquet"
    p.write_bytes(b"this is not parquet")
    with pytest.raises(TraceError, match="cannot read file"):
        load_trace(p, prefill_col="p", decode_col="d")


def test_unsupported_extension(tmp_path):
    p = tmp_path / "t.xlsx"
    p.write_text("x")
    with pytest.raises(TraceError, match="unsupported extension"):
        load_trace(p)


def test_csv_with_named_columns_and_timestamps(tmp_path):
    p = tmp_path / "t.csv"
    p.write_text("when,prompt,gen\n2023-11-16 18:00:00.0,5,2\n2023-11-16 18:00:01.5,7,1\n")
    t = load_trace(p, prefill_col="prompt", decode_col="gen", arrival_col="when")
    assert t.prefill.tolist() == [5, 7] and t.arrival_s.tolist() == [0.0, 1.5]


@pytest.mark.parametrize("cell, match", [
    ("", "row 1, field 'gen': value is missing"),
    ("NaN", "row 1, field 'gen': value is missing"),
    ("3.5", r"row 1, field 'gen': value 3.5 is not an integer"),
    ("abc", r"row 1, field 'gen': value 'abc' is not an integer"),
    ("0", "row 1, field 'gen'.*not positive"),
])
def test_csv_bad_cells(tmp_path, cell, match):
    p = tmp_path / "t.csv"
    p.write_text(f"prompt,gen\n5,2\n7,{cell}\n9,3\n")
    with pytest.raises(TraceError, match=match):
        load_trace(p, prefill_col="prompt", decode_col="gen")


def test_csv_missing_column_lists_available(tmp_path):
    p = tmp_path / "t.csv"
    p.write_text("prompt,gen\n5,2\n")
    with pytest.raises(TraceError, match=r"field 'output': missing decode column \(available: prompt, gen\)"):
        load_trace(p, prefill_col="prompt", decode_col="output")


def test_bad_arrival(tmp_path):
    p = tmp_path / "t.csv"
    p.write_text("a,prompt,gen\n0.0,5,2\n-1,7,1\n")
    with pytest.raises(TraceError, match="row 1, field 'a': arrival time is negative"):
        load_trace(p, prefill_col="prompt", decode_col="gen", arrival_col="a")
    p.write_text("a,prompt,gen\nyesterday,5,2\n")
    with pytest.raises(TraceError, match="row 0, field 'a'"):
        load_trace(p, prefill_col="prompt", decode_col="gen", arrival_col="a")


def test_jsonl_and_parquet(tmp_path):
    p = tmp_path / "t.jsonl"
    p.write_text('{"s": 4, "o": 2}\n\n{"s": 6, "o": 1}\n')
    assert load_trace(p, prefill_col="s", decode_col="o").prefill.tolist() == [4, 6]
    p.write_text('{"s": 4, "o": 2}\n[1]\n')
    with pytest.raises(TraceError, match="row 1.*line 2"):
        load_trace(p, prefill_col="s", decode_col="o")
    q = tmp_path / "t.parquet"
    pd.DataFrame({"s": [3, 4], "o": [1, -2]}).to_parquet(q)
    with pytest.raises(TraceError, match="row 1, field 'o'.*not positive"):
        load_trace(q, prefill_col="s", decode_col="o")


@pytest.mark.parametrize("name", sorted(KNOWN_TRACES))
def test_known_trace_row_counts_pinned(name, data_dir):
    # TraceSpec.rows feeds the config cross-checks (online.replay.requests)
    assert len(load_trace(name, data_dir=data_dir)) == KNOWN_TRACES[name].rows


@pytest.mark.parametrize("name", sorted(KNOWN_TRACES))
def test_known_trace_sizes_and_sources_pinned(name, data_dir):
    # TraceSpec.size is what a download costs (README "Data", bfio simulate's hint)
    spec = KNOWN_TRACES[name]
    assert (data_dir / spec.relpath).stat().st_size == spec.size
    if spec.url:  # a pinned commit, and the same file name as under the data directory
        assert spec.url.startswith("https://raw.githubusercontent.com/")
        assert any(len(part) == 40 and all(c in "0123456789abcdef" for c in part) for part in spec.url.split("/"))
        assert spec.url.rsplit("/", 1)[1] == spec.relpath.rsplit("/", 1)[1]
