"""Traces with prompt block hashes (issue 32): the Mooncake trace loads with its
hash_ids and millisecond timestamps; every malformed hash list is a TraceError
naming file, row and field; arrival units convert to seconds."""

from __future__ import annotations

import json
import math

import numpy as np
import pandas as pd
import pytest

from bfio.ground.errors import ConfigError, TraceError
from bfio.engine.prefix import PrefixCache, check_blocks_cover
from bfio.traces import load_trace
from bfio.traces.registry import KNOWN_TRACES
from bfio.workloads.workload import draw_workload, replay_workload


def test_mooncake_spec():
    spec = KNOWN_TRACES["mooncake"]
    assert (spec.relpath, spec.rows, spec.hash_col, spec.block_tokens, spec.arrival_unit) == \
           ("mooncake/synthetic_trace.jsonl", 3993, "hash_ids", 512, "ms")
    assert spec.url.startswith("https://raw.githubusercontent.com/kvcache-ai/Mooncake/"
                               "3b5a594133958449a1feaf1c9e0fc1b553e34a28/FAST25-release/traces/")
    assert all(KNOWN_TRACES[n].hash_col is None and KNOWN_TRACES[n].arrival_unit == "s"
               for n in KNOWN_TRACES if n != "mooncake")


def test_mooncake_loads_with_blocks(data_dir):
    t = load_trace("mooncake", data_dir=data_dir)
    assert len(t) == 3993 and len(t.blocks) == 3993 and t.blocks.block_tokens == 512
    check_blocks_cover(t.blocks, t.prefill, "mooncake")
    # ../shared/data/README.md: 121,877 block references to 43,924 distinct blocks, about 17 minutes
    assert t.blocks.hashes.size == 121_877 and np.unique(t.blocks.hashes).size == 43_924
    assert t.arrival_s[0] == 0 and 16 * 60 < t.arrival_s[-1] < 18 * 60
    with open(data_dir / "mooncake/synthetic_trace.jsonl") as f:
        recs = [json.loads(next(f)) for _ in range(4)]
    assert t.arrival_s[:4].tolist() == [r["timestamp"] / 1000 for r in recs]
    assert [t.blocks.blocks_of(i).tolist() for i in range(4)] == [r["hash_ids"] for r in recs]
    # README statistics: prompt max 191,378, output max 893
    assert t.prefill.max() == 191_378 and t.decode.max() == 893


def test_mooncake_prefixes_are_shared(data_dir):
    t = load_trace("mooncake", data_dir=data_dir)
    w = replay_workload(t.prefill, t.decode, t.arrival_s, blocks=t.blocks)
    assert w.blocks == t.blocks.take(np.argsort(t.arrival_s, kind="stable"))
    cache = PrefixCache(10**9)
    for i in range(len(w)):
        cache.admit(w.blocks.blocks_of(i))
    # unbounded cache: every block misses once, every later reference is in a matched leading run
    assert (cache.hits, cache.lookups) == (121_877 - 43_924, 121_877)
    d = draw_workload(t.prefill, t.decode, 200, seed=1, blocks=t.blocks)
    check_blocks_cover(d.blocks, d.prefill, "draw")


def test_hash_col_none_for_other_traces(data_dir):
    assert load_trace("burstgpt", data_dir=data_dir).blocks is None


def _jsonl(tmp_path, recs, name="t.jsonl"):
    p = tmp_path / name
    p.write_text("".join(json.dumps(r) + "\n" for r in recs))
    return p


def _recs():
    return [{"t": 0, "s": 5, "o": 1, "h": [1, 2]},
            {"t": 1500, "s": 4, "o": 2, "h": [1]},
            {"t": 2250, "s": 9, "o": 3, "h": [1, 2, 3]}]


def _load(p, **kw):
    return load_trace(p, prefill_col="s", decode_col="o", arrival_col="t", hash_col="h", block_tokens=4, **kw)


def test_path_with_hash_col(tmp_path):
    t = _load(_jsonl(tmp_path, _recs()), arrival_unit="ms")
    assert [t.blocks.blocks_of(i).tolist() for i in range(3)] == [[1, 2], [1], [1, 2, 3]]
    assert t.arrival_s.tolist() == [0.0, 1.5, 2.25]
    assert _load(_jsonl(tmp_path, _recs())).arrival_s.tolist() == [0.0, 1500.0, 2250.0]  # seconds by default
    assert load_trace(_jsonl(tmp_path, _recs()), prefill_col="s", decode_col="o").blocks is None


@pytest.mark.parametrize("bad, what", [
    ([1], r"1 block hashes, but a prompt of 9 tokens has ceil\(9 / 4\) = 3 blocks"),
    ([1, 2, 3, 4], "4 block hashes"),
    ([1, -2, 3], r"block 1: hash -2 is outside"),
    ([1, 2.5, 3], r"block 1: 2.5 is not an integer block hash"),
    ([1, True, 3], r"block 1: True is not an integer"),
    ([1, "2", 3], r"block 1: '2' is not an integer"),
    ([1, 2**63, 3], r"block 1: hash 9223372036854775808 is outside"),
    (7, r"value 7 is not a list of block hashes"),
    (None, r"value missing is not a list"),
    ({"a": 1}, r"value \{'a': 1\} is not a list of block hashes"),
])
def test_corrupt_hash_row_names_row_and_field(tmp_path, bad, what):
    recs = _recs()
    recs[2]["h"] = bad
    with pytest.raises(TraceError, match=rf"t.jsonl, row 2, field 'h': {what}"):
        _load(_jsonl(tmp_path, recs))


def test_missing_hash_key_and_column(tmp_path):
    recs = _recs()
    del recs[1]["h"]
    with pytest.raises(TraceError, match=r"row 1, field 'h'.*not a list"):
        _load(_jsonl(tmp_path, recs))
    with pytest.raises(TraceError, match=r"field 'x': missing block-hash column \(available: t, s, o, h\)"):
        load_trace(_jsonl(tmp_path, _recs()), prefill_col="s", decode_col="o", hash_col="x", block_tokens=4)


def test_hash_col_needs_block_tokens_for_a_path(tmp_path):
    with pytest.raises(ConfigError, match="block_tokens.*hash column 'h'"):
        load_trace(_jsonl(tmp_path, _recs()), prefill_col="s", decode_col="o", hash_col="h")
    with pytest.raises(ConfigError, match="block_tokens"):
        load_trace(_jsonl(tmp_path, _recs()), prefill_col="s", decode_col="o", hash_col="h", block_tokens=0)


def test_csv_and_parquet_hash_columns(tmp_path):
    frame = pd.DataFrame(_recs())
    csv = tmp_path / "t.csv"
    frame.assign(h=frame["h"].map(json.dumps)).to_csv(csv, index=False)
    pq = tmp_path / "t.parquet"
    frame.to_parquet(pq)
    for p in (csv, pq):
        t = _load(p)
        assert [t.blocks.blocks_of(i).tolist() for i in range(3)] == [[1, 2], [1], [1, 2, 3]], p
    bad = frame.assign(h=frame["h"].map(json.dumps))
    bad.loc[1, "h"] = "[1"
    bad.to_csv(csv, index=False)
    with pytest.raises(TraceError, match=r"row 1, field 'h': value '\[1' is not a list"):
        _load(csv)


def test_arrival_units(tmp_path):
    p = _jsonl(tmp_path, [{"s": 1, "o": 1, "t": 40}, {"s": 1, "o": 1, "t": 1022025}])
    kw = dict(prefill_col="s", decode_col="o", arrival_col="t")
    assert load_trace(p, arrival_unit="ms", **kw).arrival_s.tolist() == [0.04, 1022.025]
    assert load_trace(p, arrival_unit="us", **kw).arrival_s.tolist() == [0.00004, 1.022025]
    assert load_trace(p, **kw).arrival_s.tolist() == [40.0, 1022025.0]
    with pytest.raises(ConfigError, match="arrival_unit: expected one of s, ms, us"):
        load_trace(p, arrival_unit="h", **kw)
    q = _jsonl(tmp_path, [{"s": 1, "o": 1, "t": "2024-01-01T00:00:00"}], name="ts.jsonl")
    with pytest.raises(TraceError, match="row 0, field 't': arrival unit 'ms' is for numeric"):
        load_trace(q, arrival_unit="ms", **kw)
    # the bound on the arrival span applies in seconds, after the conversion
    far = _jsonl(tmp_path, [{"s": 1, "o": 1, "t": 0}, {"s": 1, "o": 1, "t": 2e9}], name="far.jsonl")
    assert load_trace(far, arrival_unit="ms", **kw).arrival_s[-1] == 2e6
    with pytest.raises(TraceError, match="MAX_ARRIVAL_S"):
        load_trace(far, **kw)


def test_mooncake_hash_count_matches_ceil(data_dir):
    t = load_trace("mooncake", data_dir=data_dir)
    assert all(t.blocks.count(i) == math.ceil(int(t.prefill[i]) / 512) for i in range(0, len(t), 97))


def test_mooncake_hashes_are_chained_on_the_prefix(data_dir):
    # the same hash always follows the same block (or starts the prompt): what PrefixCache's
    # prefix-closed eviction assumes
    t = load_trace("mooncake", data_dir=data_dir)
    before: dict[int, int] = {}
    for i in range(len(t)):
        prev = -1
        for h in t.blocks.blocks_of(i).tolist():
            assert before.setdefault(h, prev) == prev, (i, h)
            prev = h


def test_pipeline_conversion_reads_millisecond_arrivals_as_milliseconds(tmp_path):
    """prepare_trace (rule prepare_trace) honours the spec's arrival_unit: an extra
    trace with arrival_unit 'ms' and the config's trace_specs both carry it."""
    import pandas as pd

    from bfio.pipeline.config import trace_specs
    from bfio.runs.experiments import prepare_trace

    src = tmp_path / "t.csv"
    src.write_text("p,d,ts\n10,5,0\n20,6,1500\n30,7,4000\n")
    config = {"extra_traces": {"mine": {"path": str(src), "prefill_col": "p", "decode_col": "d",
                                        "arrival_col": "ts", "arrival_unit": "ms"}}}
    spec = trace_specs(config)["mine"]
    prepare_trace("mine", src, tmp_path / "t.parquet", tmp_path / "t.json", spec=spec)
    assert pd.read_parquet(tmp_path / "t.parquet")["arrival_s"].tolist() == [0.0, 1.5, 4.0]
