"""Workload readers and transforms against independent references.

References: the line and job counts of the traces' provenance (SOURCES.md; hard-coded below),
a plain-Python SWF parser written here, hand-computed values for a hand-written sacct dump,
and property tests that feed corrupted and random lines to both readers.
"""

import datetime
import gzip
import hashlib
import json
import math
import string
from pathlib import Path

import polars as pl
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from omegaconf import OmegaConf

import forkcli
from fattorus import workload as W
from fattorus.workload import waves

REPO = Path(__file__).resolve().parents[1]
TRACES = REPO / "data" / "traces"  # shipped with the repository: tests run from a lone clone

# From the traces' provenance (the Parallel Workloads Archive logs as listed in the shared
# SOURCES.md, copied into data/traces/README.md): "Parsed: N job lines", "replayable jobs"
# (run time > 0 and effective procs > 0), sha256 of the .gz, and cores per node from its
# machine table. Only the traces shipped in data/traces/ are checked.
SOURCES = {
    "KTH-SP2-1996-2.1-cln.swf.gz": (28476, 28467),
    "LLNL-Atlas-2006-2.1-cln.swf.gz": (43778, 36600),
    "LLNL-Thunder-2007-1.1-cln.swf.gz": (121039, 113613),
}
# Lines the readers must skip as absurd (issue 10): Atlas line 3322 is job 6762, a 16-second
# one-node job whose requested time is 738,738,720 s (23 years): beyond the 366-day ceiling.
ABSURD = {"LLNL-Atlas-2006-2.1-cln.swf.gz": {3322: "requested time beyond ceiling"}}
CEILING_S = 366 * 86400
SHA256 = {
    "KTH-SP2-1996-2.1-cln.swf.gz": "3e152f201fd2e96808a735bced6ea6eb0bb07fdc447689cafb0750d87b264c0b",
    "LLNL-Atlas-2006-2.1-cln.swf.gz": "48cc83b7a0490252aa1ae41a4b03dd598bc0683e146be94047febee36e7e0b36",
    "LLNL-Thunder-2007-1.1-cln.swf.gz": "00d9bce501efd3a23cd0713bbae591516b7a69217d5f4b851725f601f3b75247",
}
CORES_PER_NODE = {
    "KTH-SP2-1996-2.1-cln.swf.gz": 1,
    "LLNL-Atlas-2006-2.1-cln.swf.gz": 8,
    "LLNL-Thunder-2007-1.1-cln.swf.gz": 4,
}

@pytest.fixture(scope="module")
def traces():
    """Every shipped trace, loaded once for the module."""
    return {name: W.load(TRACES / name) for name in sorted(SOURCES)}


# ---------------------------------------------------------------------------------------
# Real traces


def test_every_shipped_trace_is_listed():
    assert sorted(p.name for p in TRACES.glob("*.swf*")) == sorted(SOURCES)


@pytest.mark.parametrize("name", sorted(SOURCES))
def test_trace_counts_match_sources(traces, name):
    lines, replayable = SOURCES[name]
    absurd = ABSURD.get(name, {})
    wl = traces[name]
    assert wl.lines == lines
    assert wl.jobs.height == lines - len(absurd)
    assert {e.line: e.reason for e in wl.skipped.entries} == absurd
    assert wl.skipped.total == len(absurd) and wl.skipped.steps == 0
    jobs = wl.jobs
    # The absurd lines of the shipped traces are replayable jobs by SOURCES.md's rule.
    assert jobs.filter((pl.col("runtime_s") > 0) & (pl.col("procs") > 0)).height == replayable - len(absurd)
    assert dict(jobs.schema) == W.SCHEMA


@pytest.mark.parametrize("name", sorted(CORES_PER_NODE))
def test_header_cores_per_node(traces, name):
    wl = traces[name]
    assert W.swf_cores_per_node(wl.header) == CORES_PER_NODE[name]
    cpn = CORES_PER_NODE[name]
    jobs = wl.jobs.filter(pl.col("procs").is_not_null())
    expected = [math.ceil(p / cpn) for p in jobs["procs"].to_list()]
    assert jobs["nodes"].to_list() == expected


def test_atlas_stats_match_sources(traces):
    # SOURCES.md: effective procs min 8 / median 64 / max 9120 over 39207 jobs with value > 0;
    # one of them (job 6762, 8 procs) is skipped as absurd (ABSURD above).
    procs = traces["LLNL-Atlas-2006-2.1-cln.swf.gz"].jobs.filter(pl.col("procs") > 0)["procs"]
    assert (procs.len(), procs.min(), procs.median(), procs.max()) == (39207 - 1, 8, 64, 9120)
    hdr = traces["LLNL-Atlas-2006-2.1-cln.swf.gz"].header
    assert hdr["MaxNodes"] == "1152" and hdr["UnixStartTime"] == "1163199901"
    assert hdr["Acknowledge"] == "Moe Jette, LLNL"


def _python_swf(path, cpn):
    """Independent reference: the SWF rules of SOURCES.md with plain Python."""
    rows = []
    with gzip.open(path, "rt") as f:
        for line in f:
            if not line.strip() or line.lstrip().startswith(";"):
                continue
            v = [float(x) for x in line.split()]
            assert len(v) == 18
            if v[3] > CEILING_S or v[8] > CEILING_S:  # run or requested time beyond a year: dirty
                continue
            procs = v[7] if v[7] != -1 else v[4]
            known = lambda x: None if x < 0 else x  # noqa: E731
            rows.append(
                (
                    int(v[0]), known(v[1]), known(v[3]), known(v[8]),
                    None if procs < 0 else int(procs),
                    None if procs < 0 else math.ceil(procs / cpn),
                    None if v[10] < 0 else int(v[10]),
                    None if v[11] < 0 else int(v[11]),
                    None if v[12] < 0 else int(v[12]),
                )
            )
    return rows


def test_atlas_rows_equal_python_reference(traces):
    name = "LLNL-Atlas-2006-2.1-cln.swf.gz"
    assert traces[name].jobs.rows() == _python_swf(TRACES / name, 8)


@pytest.mark.parametrize("name", sorted(SHA256))
def test_shipped_traces(name):
    path = REPO / "data" / "traces" / name
    assert hashlib.sha256(path.read_bytes()).hexdigest() == SHA256[name]
    readme = (REPO / "data" / "traces" / "README.md").read_text()
    assert SHA256[name] in readme and "Feitelson" in readme
    wl = W.load(path)
    assert wl.sha256 == SHA256[name] and wl.lines == SOURCES[name][0]


@pytest.mark.parametrize("name,cpn,trace", [("atlas", 8, "LLNL-Atlas-2006-2.1-cln.swf.gz"), ("thunder", 4, "LLNL-Thunder-2007-1.1-cln.swf.gz")])
def test_workload_configs(name, cpn, trace):
    cfg = OmegaConf.load(REPO / "conf" / "workload" / f"{name}.yaml")
    assert (cfg.name, cfg.cores_per_node, cfg.scale, cfg.window_start_days, cfg.window_days) == (name, cpn, "machine", 0, None)
    assert Path(cfg.path).name == trace
    wl, counts = W.from_config(cfg, machine_nodes=1296)  # "machine" with no machine default: x1
    assert wl.jobs.height == SOURCES[trace][0] - len(ABSURD.get(trace, {}))
    assert counts == {"dropped_by_scaling": 0, "outside_window": 0, "scale_factor": 1.0}


def test_from_config_scale_and_window():
    cfg = OmegaConf.load(REPO / "conf" / "workload" / "atlas.yaml")
    base = W.load(REPO / cfg.path, cores_per_node=8).jobs
    cfg.scale, cfg.window_start_days, cfg.window_days = 2, 10, 15
    wl, counts = W.from_config(cfg, machine_nodes=1296)
    nodes, submit = base["nodes"].to_list(), base["submit_s"].to_list()
    fit = lambda n: n is not None and n <= 1296  # noqa: E731
    pushed = lambda n: fit(n) and 2 * n > 1296  # noqa: E731
    kept = [(s, n) for s, n in zip(submit, nodes) if not pushed(n)]
    t0 = min(s for s, _ in kept) + 10 * 86400  # day 0: the first submission of the scaled table
    in_window = lambda s: t0 <= s < t0 + 15 * 86400  # noqa: E731
    inside = [(s, n) for s, n in kept if in_window(s)]
    dropped = sum(1 for s, n in zip(submit, nodes) if pushed(n) and in_window(s))  # the window's only
    assert counts == {"dropped_by_scaling": dropped, "outside_window": len(submit) - len(inside) - dropped,
                      "scale_factor": 2.0}
    assert 0 < dropped < sum(map(pushed, nodes)) and len(inside) > 0
    got = sorted((s, -1 if n is None else n) for s, n in zip(wl.jobs["submit_s"], wl.jobs["nodes"]))
    assert got == sorted((s, -1 if n is None else 2 * n) for s, n in inside)


# A hand-written log for the window's counts on ft6 (18 nodes), x2, cores_per_node 1 (nodes =
# procs). x2 drops jobs of 10..18 nodes (fitted, 20..36 after); 20 was already too large
# (kept, for the replay's too_large); <= 9 fits. Window: window_start_days=1, window_days=2.
# Day 0 is the first submission of the *scaled* table: job 1 (day 0.0) is dropped, so day 0 is
# job 2's day 1.0 and the window is days [2.0, 4.0) of the log. By hand:
#   job  day  procs  after x2      window
#   1    0.0  12     dropped       out
#   2    1.0   2     kept (4)      out (day 0)
#   3    1.2  14     dropped       out (inside [1, 3) had day 0 been job 1's)
#   4    1.5  15     dropped       out
#   5    2.0   3     kept (6)      in (start included)  -> replayed
#   6    2.5  10     dropped       in
#   7    3.0  20     too large     in                   -> skipped too_large
#   8    3.5   9     kept (18)     in                   -> replayed
#   9    3.9  18     dropped       in
#   10   4.0  11     dropped       out (end excluded)
#   11   5.0   1     kept (2)      out
# In the window: kept 5, 7, 8 and dropped 6, 9: read 5, replayed 2 (5, 8), too_large 1,
# dropped_by_scaling 2 (6 over the whole log). Outside: 2, 11 kept and 1, 3, 4, 10 dropped: 6.
WINDOW_LOG = [(1, 0.0, 12), (2, 1.0, 2), (3, 1.2, 14), (4, 1.5, 15), (5, 2.0, 3), (6, 2.5, 10), (7, 3.0, 20),
              (8, 3.5, 9), (9, 3.9, 18), (10, 4.0, 11), (11, 5.0, 1)]


def test_counts_cover_only_the_window(tmp_path):
    """counts.read and dropped_by_scaling are the window's (docs/decisions.md), through the app."""
    log = tmp_path / "window.swf"
    # MaxNodes 9: scale=fit is 18 usable nodes / 9 = x2, so the app run covers fit as well.
    log.write_text("; MaxNodes: 9\n; MaxProcs: 9\n" + "".join(
        f"{i} {round(day * 86400)} -1 600 {p} -1 -1 {p} 1200 -1 1 1 1 -1 -1 -1 -1 -1\n" for i, day, p in WINDOW_LOG))
    cfg = {"name": "w", "path": str(log), "format": "swf", "cores_per_node": 1, "scale": 2,
           "window_start_days": 1, "window_days": 2}
    wl, counts = W.from_config(cfg, machine_nodes=18)
    assert counts == {"dropped_by_scaling": 2, "outside_window": 6, "scale_factor": 2.0}
    assert sorted(wl.jobs["job_id"].to_list()) == [5, 7, 8]
    # Without a window the whole log is the window: all six dropped jobs are counted.
    _, whole = W.from_config(dict(cfg, window_days=None, window_start_days=0), machine_nodes=18)
    assert whole == {"dropped_by_scaling": 6, "outside_window": 0, "scale_factor": 2.0}

    run = tmp_path / "results" / "run"  # the app writes under a results/ directory only
    out = forkcli.run("fattorus.sweep", [f"hydra.run.dir={run}", "+topo=ft6", "workload=file", f"workload.path={log}",
                                         "workload.cores_per_node=1", "workload.scale=fit",
                                         "workload.window_start_days=1", "workload.window_days=2", "progress=false"],
                      cwd=REPO, timeout=600)
    assert out.returncode == 0, out.stderr[-3000:]
    assert "(fit: 18 usable nodes / the log's machine of 9)" in out.stdout  # the header's MaxNodes
    assert "2 job(s) of the window dropped, scaled past the 18 usable nodes" in out.stdout
    summary = json.loads((run / "summary.json").read_text())
    assert summary["config"]["workload"]["scale_factor"] == 2.0
    assert summary["config"]["workload"]["outside_window"] == 6
    c = summary["counts"]
    assert (c["read"], c["replayed"], c["skipped"]["dropped_by_scaling"], c["skipped"]["too_large"]) == (5, 2, 2, 1)
    assert sum(c["skipped"].values()) == c["read"] - c["replayed"]
    assert sorted(pl.read_parquet(run / "jobs.parquet")["job_id"].to_list()) == [5, 8]


def test_from_config_needs_a_path():
    cfg = OmegaConf.load(REPO / "conf" / "workload" / "file.yaml")
    with pytest.raises(W.WorkloadError, match="path"):
        W.from_config(cfg)
    cfg.path = "data/traces/LLNL-Thunder-2007-1.1-cln.swf.gz"  # relative to the repo root
    cfg.cores_per_node = 4
    wl, _ = W.from_config(cfg)
    assert wl.lines == 121039


# ---------------------------------------------------------------------------------------
# Whole-file errors


def _one_line_error(excinfo, path):
    msg = str(excinfo.value)
    assert str(path) in msg and "\n" not in msg
    assert isinstance(excinfo.value, ValueError)


def test_truncated_gzip(tmp_path):
    data = (REPO / "data" / "traces" / "LLNL-Atlas-2006-2.1-cln.swf.gz").read_bytes()
    bad = tmp_path / "atlas-truncated.swf.gz"
    bad.write_bytes(data[: len(data) // 2])
    with pytest.raises(W.WorkloadError) as e:
        W.load(bad)
    _one_line_error(e, bad)


def test_corrupt_gzip(tmp_path):
    data = bytearray((REPO / "data" / "traces" / "LLNL-Thunder-2007-1.1-cln.swf.gz").read_bytes())
    for i in range(1000, 1100):
        data[i] ^= 0xFF
    bad = tmp_path / "thunder-corrupt.swf.gz"
    bad.write_bytes(bytes(data))
    with pytest.raises(W.WorkloadError) as e:
        W.load(bad)
    _one_line_error(e, bad)


@pytest.mark.parametrize(
    "content",
    [
        b"\x89PNG\r\n\x1a\n\x00\x00\x00\rIHDR\x00\x00\x00\x10\x00\x00\x00\x10\x08\x06\x00\x00\x00",
        b"Dear diary,\nToday I wrote a scheduler.\nIt was fine.\n",
        b"",
        b"\n\n   \n",
        b"a,b,c\n1,2,3\n",
    ],
)
@pytest.mark.parametrize("fmt", ["auto", "swf", "sacct"])
def test_not_a_workload(tmp_path, content, fmt):
    path = tmp_path / "notes.txt"
    path.write_bytes(content)
    with pytest.raises(W.WorkloadError) as e:
        W.load(path, fmt=fmt, cores_per_node=1)
    _one_line_error(e, path)


def test_missing_file_and_directory(tmp_path):
    for path in (tmp_path / "nope.swf", tmp_path):
        with pytest.raises(W.WorkloadError) as e:
            W.load(path)
        _one_line_error(e, path)


def test_cores_per_node_must_be_known(tmp_path):
    line = "1 0 -1 10 8 -1 -1 8 60 -1 1 1 1 -1 -1 -1 -1 -1\n"
    for header in ("", "; MaxNodes: 3\n; MaxProcs: 8\n"):
        path = tmp_path / "x.swf"
        path.write_text(header + line)
        with pytest.raises(W.WorkloadError, match="cores per node") as e:
            W.load(path)
        _one_line_error(e, path)
        assert W.load(path, cores_per_node=3).jobs["nodes"].to_list() == [3]
    with pytest.raises(W.WorkloadError, match="cores_per_node"):
        W.load(path, cores_per_node=0)


def test_a_machine_size_key_given_twice_must_agree(tmp_path):
    """MaxNodes twice with two numbers: one line naming both lines (the first was used without a
    word); the same number twice, or repeated free-text keys (Note, Queue), are read as before."""
    line = "1 0 -1 10 8 -1 -1 8 60 -1 1 1 1 -1 -1 -1 -1 -1\n"
    path = tmp_path / "x.swf"
    path.write_text("; Note: a\n; MaxNodes: 4\n; MaxProcs: 16\n; Note: b\n; MaxProcs: 32\n" + line)
    with pytest.raises(W.WorkloadError) as e:
        W.load(path, cores_per_node=4)  # refused even when the cores per node are given: scale=fit reads it
    _one_line_error(e, path)
    assert f"{path}, line 5: header field MaxProcs: '32' contradicts line 3 ('16')" in str(e.value)
    path.write_text("; Note: a\n; MaxNodes: 4\n; MaxProcs: 16\n; Note: b\n; MaxNodes: 4 nodes\n" + line)
    wl = W.load(path)
    assert wl.header["Note"] == "a\nb" and wl.header["MaxNodes"] == "4\n4 nodes"
    assert wl.jobs["nodes"].to_list() == [2]  # 16 / 4 = 4 cores per node, 8 procs


# ---------------------------------------------------------------------------------------
# SWF details and round trip


def test_swf_dirty_lines_counted_with_line_numbers(tmp_path):
    text = "\n".join(
        [
            "; MaxNodes: 4",  # 1
            "; MaxProcs: 16",  # 2
            "1 0 -1 100 4 -1 -1 -1 300 -1 1 7 2 -1 -1 -1 -1 -1",  # 3 ok; procs from field 5
            "",  # 4
            "2 5 -1 100 4 -1 -1 8 300 -1 1 7 2 -1 -1 -1 -1",  # 5 17 fields
            "3 5 -1 abc 4 -1 -1 8 300 -1 1 7 2 -1 -1 -1 -1 -1",  # 6 non-numeric
            "4 5 -1 100 4.5 -1 -1 8 300 -1 1 7 2 -1 -1 -1 -1 -1",  # 7 non-integer procs
            "5 5 -1 inf 4 -1 -1 8 300 -1 1 7 2 -1 -1 -1 -1 -1",  # 8 inf
            "\t6  7 -1 -1 -1 -1 -1 -1 -1 -1 5 -1 -1 -1 -1 -1 -1 -1 \r",  # 9 ok, all unknown
            "; a comment in the middle",  # 10
            "7 9.5 3 0.25 5 -1 -1 5 -1 -1 0 1 -1 -1 -1 -1 -1 -1",  # 11 ok
        ]
    )
    path = tmp_path / "dirty.swf"
    path.write_text(text)
    wl = W.load(path)
    assert wl.lines == 7
    assert wl.skipped.counts == {"wrong field count": 1, "non-numeric field": 2, "non-integer field": 1}
    assert [(e.line, e.reason) for e in wl.skipped.entries] == [
        (5, "wrong field count"), (6, "non-numeric field"), (7, "non-integer field"), (8, "non-numeric field")
    ]
    assert all(e.file == str(path) for e in wl.skipped.entries)
    assert wl.jobs.rows() == [
        (1, 0.0, 100.0, 300.0, 4, 1, 1, 7, 2),
        (6, 7.0, None, None, None, None, 5, None, None),
        (7, 9.5, 0.25, None, 5, 2, 0, 1, None),
    ]
    summary = wl.summary()
    assert "4 malformed" in summary and f"{path}:5" in summary


def test_swf_round_trip(tmp_path):
    jobs = pl.DataFrame(
        {
            "job_id": [1, 2, 3, 40],
            "submit_s": [0.0, 1.5, 2.0, 1e6],
            "runtime_s": [10.0, None, 0.125, 3600.0],
            "requested_s": [60.0, 60.0, None, 7200.0],
            "procs": [8, 16, None, 24],
            "nodes": [1, 2, None, 3],
            "status": [1, 5, None, 0],
            "user": [3, None, 4, 5],
            "group": [None, 1, 2, 3],
        },
        schema=W.SCHEMA,
    )
    for name in ("rt.swf", "rt.swf.gz"):
        path = tmp_path / name
        W.write_swf(jobs, path, header={"MaxNodes": "4", "MaxProcs": "32", "Note": "a\nb"})
        back = W.load(path)
        assert back.jobs.equals(jobs)
        assert back.header["Note"] == "a\nb" and back.lines == 4


# ---------------------------------------------------------------------------------------
# sacct


SACCT = """\
JobID|JobName|User|Group|Submit|Start|End|Elapsed|Timelimit|NNodes|NCPUS|State
100|sim|alice|phys|2024-01-02T03:04:05|2024-01-02T03:05:05|2024-01-02T04:05:05|01:00:00|02:00:00|4|32|COMPLETED
100.batch|batch|||2024-01-02T03:05:05|2024-01-02T03:05:05|2024-01-02T04:05:05|01:00:00||1|8|COMPLETED
100.extern|extern|||2024-01-02T03:05:05|2024-01-02T03:05:05|2024-01-02T04:05:05|01:00:00||4|32|COMPLETED
100.0|a.out|||2024-01-02T03:05:10|2024-01-02T03:05:10|2024-01-02T04:05:00|00:59:50||4|32|COMPLETED
101|big|bob|chem|2024-01-02T03:10:05|2024-01-02T03:20:05|2024-01-03T05:23:09|1-02:03:04|UNLIMITED|16|128|TIMEOUT
102_4|arr|alice|phys|2024-01-02T03:11:05|2024-01-02T03:12:05|2024-01-02T03:17:05|05:00|Partition_Limit|1|8|FAILED
102_4.batch|batch|||2024-01-02T03:12:05|2024-01-02T03:12:05|2024-01-02T03:17:05|05:00||1|8|FAILED
102_5|arr|alice|phys|2024-01-02T03:11:05|Unknown|Unknown|00:00:00|10:00|1|8|PENDING
103|run|bob|chem|2024-01-02T03:15:05|2024-01-02T03:16:05|Unknown|00:10:00|1-00:00:00|2|16|RUNNING
104|can|bob|chem|2024-01-02T03:16:05|None|2024-01-02T03:18:05|00:00:00|30:00|2|16|CANCELLED by 1001
105|oom|carol|phys|2024-01-02T03:00:05|2024-01-02T03:01:05|2024-01-02T03:01:35|00:00:30|1-12|3|24|OUT_OF_MEMORY
106|bad|bob|chem|2024-13-02T03:16:05|None|2024-01-02T03:18:05|00:00:00|30:00|2|16|COMPLETED
107|short
108|bad|bob|chem|2024-01-02T03:16:05|None|2024-01-02T03:18:05|00:00:00|ten minutes|2|16|COMPLETED
x9|bad|bob|chem|2024-01-02T03:16:05|None|2024-01-02T03:18:05|00:00:00|30:00|2|16|COMPLETED
102_[6-10%2]|arr|alice|phys|2024-01-02T03:11:05|Unknown|Unknown|00:00:00|10:00|1|8|PENDING

110|nn|bob|chem|2024-01-02T03:16:05|None|2024-01-02T03:18:05|00:00:00|30:00|two|16|COMPLETED
"""


@pytest.mark.parametrize("encoding", ["utf-16", "utf-16-be"])
def test_a_utf16_log_with_its_byte_order_mark_reads_as_its_utf8_text(tmp_path, encoding):
    """What Windows PowerShell's ``>`` writes (UTF-16 with a byte-order mark) was refused as a
    "binary file" (session 45): it reads as the same log in UTF-8 does, SWF and sacct, and
    keeps the digest of its own bytes."""
    for name, text in (("log.swf", "; MaxNodes: 4\n; MaxProcs: 8\n1 0 5 100 4 -1 -1 4 200 -1 1 1 1 -1 -1 -1 -1 -1\n"
                                    "2 10 -1 50 2 -1 -1 2 60 -1 1 1 1 -1 -1 -1 -1 -1\n"),
                       ("sacct.txt", SACCT)):
        plain, wide = tmp_path / f"u8-{name}", tmp_path / f"u16-{name}"
        plain.write_text(text, encoding="utf-8")
        raw = text.encode(encoding)
        wide.write_bytes(raw if encoding == "utf-16" else b"\xfe\xff" + raw)  # -be writes no mark itself
        a, b = W.load(plain), W.load(wide)
        assert b.jobs.equals(a.jobs) and b.lines == a.lines and b.skipped.counts == a.skipped.counts
        assert b.sha256 == hashlib.sha256(wide.read_bytes()).hexdigest()
    # The mark alone is an empty file (the fuzz test below found it raising an IndexError).
    (tmp_path / "mark.swf").write_bytes(b"\xfe\xff" if encoding == "utf-16-be" else b"\xff\xfe \x00\n\x00")
    with pytest.raises(W.WorkloadError, match="empty file, not a job log"):
        W.load(tmp_path / "mark.swf")


def test_a_sacct_job_id_past_int64_is_out_of_range(tmp_path):
    """docs/workloads.md: a job id beyond Int64 is ``integer out of range``; a plain id of 2^63
    was reported as ``bad job id`` (session 45). 2^63 - 1 is read as it is."""
    head, row = SACCT.splitlines()[:2]
    rest = row.partition("|")[2]
    path = tmp_path / "sacct.txt"
    path.write_text(f"{head}\n{2**63}|{rest}\n{2**63 - 1}|{rest}\n")
    wl = W.load(path)
    assert wl.skipped.counts == {"integer out of range": 1}
    (entry,) = wl.skipped.entries
    assert entry.line == 2 and str(2**63) in str(entry)
    assert wl.jobs["job_id"].to_list() == [2**63 - 1]


def test_sacct_fixture(tmp_path):
    path = tmp_path / "sacct.txt"
    path.write_text(SACCT)
    wl = W.load(path)
    assert wl.lines == 17  # data rows; the header and the blank line are not job lines
    assert wl.skipped.steps == 4
    assert wl.skipped.counts == {
        "unparseable time": 1, "wrong field count": 1, "unparseable duration": 1,
        "bad job id": 1, "unexpanded array range": 1, "non-numeric field": 1,
    }
    assert [e.line for e in wl.skipped.entries] == [13, 14, 15, 16, 17, 19]
    assert wl.jobs.height + wl.skipped.total + wl.skipped.steps == wl.lines
    # Earliest submit is job 105 at 03:00:05.
    array_id = (1 << 62) + 102 * (1 << 22)
    by_id = {r["job_id"]: r for r in wl.jobs.iter_rows(named=True)}
    assert sorted(by_id) == sorted([100, 101, array_id + 4, array_id + 5, 103, 104, 105])
    assert array_id + 4 == 4611686018855206916
    alice, bob, carol, chem, phys = 1, 2, 3, 1, 2  # names numbered in sorted order
    expect = {
        100: (240.0, 3600.0, 7200.0, 32, 4, 1, alice, phys),
        101: (600.0, 93784.0, None, 128, 16, 0, bob, chem),
        array_id + 4: (660.0, 300.0, None, 8, 1, 0, alice, phys),
        array_id + 5: (660.0, None, 600.0, 8, 1, None, alice, phys),
        103: (900.0, None, 86400.0, 16, 2, None, bob, chem),
        104: (960.0, 0.0, 1800.0, 16, 2, 5, bob, chem),
        105: (0.0, 30.0, 129600.0, 24, 3, 0, carol, phys),
    }
    cols = ["submit_s", "runtime_s", "requested_s", "procs", "nodes", "status", "user", "group"]
    for job_id, values in expect.items():
        assert tuple(by_id[job_id][c] for c in cols) == values, job_id
    assert wl.header["StartTime"] == "2024-01-02T03:00:05"
    assert dict(wl.jobs.schema) == W.SCHEMA


def test_sacct_without_nnodes_and_elapsed(tmp_path):
    text = (
        "JobID|Submit|Start|End|NCPUS|State|UID|GID|\n"  # --parsable: trailing '|'
        "7|2024-05-01T00:00:00|2024-05-01T00:00:10|2024-05-01T01:00:10|36|COMPLETED|1001|50|\n"
        "8|2024-05-01T00:01:00|None|2024-05-01T00:02:00|1|CANCELLED by 0|1002|50|\n"
    )
    path = tmp_path / "s.txt"
    path.write_text(text)
    with pytest.raises(W.WorkloadError, match="NNodes"):
        W.load(path)
    wl = W.load(path, cores_per_node=16)
    assert wl.jobs.select("job_id", "submit_s", "runtime_s", "nodes", "status", "user", "group").rows() == [
        (7, 0.0, 3600.0, 3, 1, 1001, 50),
        (8, 60.0, 0.0, 1, 5, 1002, 50),
    ]


def test_sacct_submit_before_1990_is_a_dirty_line(tmp_path):
    path = tmp_path / "s.txt"
    path.write_text("JobID|Submit|Elapsed|NNodes|State\n"
                    "1|2024-05-01T00:00:00|00:10:00|2|COMPLETED\n"
                    "2|1970-01-01T00:00:00|00:10:00|2|COMPLETED\n"
                    "3|2024-05-01T00:05:00|00:10:00|2|COMPLETED\n")
    wl = W.load(path)
    assert wl.jobs["job_id"].to_list() == [1, 3] and wl.jobs["submit_s"].to_list() == [0.0, 300.0]
    assert wl.skipped.counts == {"absurd submit time": 1} and wl.skipped.entries[0].line == 3


def test_sacct_missing_columns(tmp_path):
    path = tmp_path / "s.txt"
    path.write_text("JobID|Submit|NNodes\n1|2024-01-01T00:00:00|1\n")
    with pytest.raises(W.WorkloadError, match="State") as e:
        W.load(path)
    _one_line_error(e, path)


# ---------------------------------------------------------------------------------------
# Property tests: corrupted and random lines


GOOD_SWF = st.builds(
    lambda v: " ".join(str(x) for x in v),
    st.lists(st.integers(-1, 10**6), min_size=18, max_size=18),
)
BAD_SWF = st.one_of(
    st.lists(st.integers(-1, 99), min_size=1, max_size=30).filter(lambda v: len(v) != 18).map(lambda v: " ".join(map(str, v))),
    st.tuples(st.lists(st.integers(-1, 99), min_size=18, max_size=18), st.integers(0, 17), st.sampled_from(["x", "1a", "--", "nan", "inf", "1,5", "N/A"])).map(
        lambda t: " ".join(t[2] if i == t[1] else str(x) for i, x in enumerate(t[0]))
    ),
)
NOISE = st.text(alphabet=st.characters(blacklist_characters="\n", blacklist_categories=("Cs",)), max_size=60)


def _job_lines(text: str, blank=" \t\r\f\v") -> int:
    return sum(1 for line in text.split("\n") if line.strip(blank) and not line.strip(blank).startswith(";"))


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.lists(st.one_of(st.tuples(st.just("good"), GOOD_SWF), st.tuples(st.just("bad"), BAD_SWF), st.tuples(st.just("noise"), NOISE)), max_size=40))
def test_swf_reader_accounts_for_every_line(tmp_path_factory, lines):
    path = tmp_path_factory.mktemp("swf") / "fuzz.swf"
    text = "\n".join(line for _, line in lines)
    path.write_text(text, encoding="utf-8")
    n_good = sum(kind == "good" for kind, _ in lines)
    n_bad = sum(kind == "bad" for kind, _ in lines)
    try:
        wl = W.load(path, fmt="swf", cores_per_node=4)
    except W.WorkloadError as e:
        assert str(path) in str(e)
        assert n_good == 0  # only a file without a single good line may be refused
        return
    assert wl.lines == _job_lines(text)
    assert wl.jobs.height + wl.skipped.total == wl.lines
    if all(kind != "noise" for kind, _ in lines):
        # A good line whose job id (field 1, >= 0) an earlier good line had is a repeat.
        ids = [int(line.split()[0]) for kind, line in lines if kind == "good"]
        repeats = sum(1 for i, x in enumerate(ids) if x >= 0 and x in ids[:i])
        assert (wl.jobs.height, wl.skipped.total) == (n_good - repeats, n_bad + repeats)
        assert wl.skipped.counts.get("repeated job id", 0) == repeats


@settings(max_examples=40, deadline=None)
@given(st.binary(max_size=300))
def test_any_bytes_load_or_raise_workload_error(tmp_path_factory, data):
    path = tmp_path_factory.mktemp("bin") / "blob"
    path.write_bytes(data)
    for fmt in ("auto", "swf", "sacct"):
        try:
            wl = W.load(path, fmt=fmt, cores_per_node=2)
        except W.WorkloadError as e:
            assert str(path) in str(e) and "\n" not in str(e)
            continue
        assert wl.jobs.height + wl.skipped.total + wl.skipped.steps == wl.lines


SACCT_HEADER = "JobID|Submit|Start|End|Elapsed|Timelimit|NNodes|NCPUS|State"
TIME = st.one_of(
    st.sampled_from(["Unknown", "None"]),
    st.datetimes(min_value=datetime.datetime(2000, 1, 1), max_value=datetime.datetime(2030, 1, 1)).map(lambda d: d.strftime("%Y-%m-%dT%H:%M:%S")),
)
DURATION = st.one_of(
    st.sampled_from(["UNLIMITED", "Partition_Limit", ""]),
    st.tuples(st.integers(0, 30), st.integers(0, 23), st.integers(0, 59), st.integers(0, 59)).map(lambda t: f"{t[0]}-{t[1]:02d}:{t[2]:02d}:{t[3]:02d}"),
    st.tuples(st.integers(0, 99), st.integers(0, 59), st.integers(0, 59)).map(lambda t: f"{t[0]:02d}:{t[1]:02d}:{t[2]:02d}"),
    st.tuples(st.integers(0, 59), st.integers(0, 59)).map(lambda t: f"{t[0]:02d}:{t[1]:02d}"),
)
JOB_ID = st.one_of(st.integers(1, 10**9).map(str), st.tuples(st.integers(1, 10**9), st.integers(0, 10**6)).map(lambda t: f"{t[0]}_{t[1]}"))
STATE = st.sampled_from(["COMPLETED", "FAILED", "TIMEOUT", "CANCELLED by 42", "CANCELLED+", "RUNNING", "PENDING", "NODE_FAIL"])
GOOD_SACCT = st.builds(
    lambda j, s, a, b, e, t, n, c, x: "|".join([j, s, a, b, e, t, n, c, x]),
    JOB_ID, TIME, TIME, TIME, DURATION, DURATION, st.integers(1, 5000).map(str), st.integers(1, 10**5).map(str), STATE,
)
STEP_SACCT = st.tuples(GOOD_SACCT, st.sampled_from(["batch", "extern", "0", "17"])).map(
    lambda t: f"{t[0].split('|', 1)[0]}.{t[1]}|{t[0].split('|', 1)[1]}"
)
BAD_SACCT = st.one_of(
    GOOD_SACCT.map(lambda s: s + "|extra"),
    GOOD_SACCT.map(lambda s: s.rsplit("|", 2)[0]),
    GOOD_SACCT.map(lambda s: "|".join(["2024-99-99T00:00:00" if i == 1 else f for i, f in enumerate(s.split("|"))])),
    GOOD_SACCT.map(lambda s: "|".join(["12:xx" if i == 4 else f for i, f in enumerate(s.split("|"))])),
    GOOD_SACCT.map(lambda s: "|".join(["abc" if i == 0 else f for i, f in enumerate(s.split("|"))])),
    GOOD_SACCT.map(lambda s: "|".join(["-3" if i == 6 else f for i, f in enumerate(s.split("|"))])),
)
SACCT_NOISE = st.text(alphabet=string.ascii_letters + string.digits + "|:-_.[] \t", max_size=60)


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(
    st.lists(
        st.one_of(
            st.tuples(st.just("good"), GOOD_SACCT),
            st.tuples(st.just("step"), STEP_SACCT),
            st.tuples(st.just("bad"), BAD_SACCT),
            st.tuples(st.just("noise"), SACCT_NOISE),
        ),
        max_size=40,
    )
)
def test_sacct_reader_accounts_for_every_line(tmp_path_factory, lines):
    path = tmp_path_factory.mktemp("sacct") / "fuzz.txt"
    text = "\n".join([SACCT_HEADER, *(line for _, line in lines)])
    path.write_text(text)
    counts = {k: sum(kind == k for kind, _ in lines) for k in ("good", "step", "bad", "noise")}
    try:
        wl = W.load(path, fmt="sacct")
    except W.WorkloadError as e:
        assert str(path) in str(e)
        assert counts["good"] == 0
        return
    assert wl.lines == _job_lines(text) - 1  # the header is not a job line
    assert wl.jobs.height + wl.skipped.total + wl.skipped.steps == wl.lines
    if counts["noise"] == 0:
        ids = [line.split("|", 1)[0] for kind, line in lines if kind == "good"]
        repeats = sum(1 for i, x in enumerate(ids) if x in ids[:i])  # an earlier good line's JobID
        assert (wl.jobs.height, wl.skipped.steps, wl.skipped.total) == (
            counts["good"] - repeats, counts["step"], counts["bad"] + repeats)


# ---------------------------------------------------------------------------------------
# Transforms


def _table(**cols):
    n = len(next(iter(cols.values())))
    base = {k: [None] * n for k in W.SCHEMA}
    base["job_id"] = list(range(1, n + 1))
    base.update(cols)
    return pl.DataFrame(base, schema=W.SCHEMA)


def test_scale_nodes():
    jobs = _table(nodes=[1, 3, 4, 5, 9, None], procs=[8, 24, 32, 40, 72, None])
    scaled, dropped = W.scale_nodes(jobs, 2, machine_nodes=8)
    # 5 -> 10 is pushed past the machine and dropped; 9 was already too large: kept for the
    # replay to report; unknown stays unknown.
    assert dropped == 1
    assert scaled["job_id"].to_list() == [1, 2, 3, 5, 6]
    assert scaled["nodes"].to_list() == [2, 6, 8, 18, None]
    assert scaled["procs"].to_list() == [16, 48, 64, 144, None]
    assert scaled.schema == jobs.schema
    # a factor no node count can hold: one clear error, not an overflowing cast
    with pytest.raises(ValueError, match="larger than any node count"):
        W.scale_nodes(jobs, 1e9, machine_nodes=8)
    three, dropped3 = W.scale_nodes(jobs, 3, machine_nodes=None)
    assert dropped3 == 0 and three["nodes"].to_list() == [3, 9, 12, 15, 27, None]
    assert W.scale_nodes(jobs, 1, 2)[0].equals(jobs)
    with pytest.raises(ValueError):
        W.scale_nodes(jobs, 0, 8)


@pytest.mark.parametrize("factor", [1e308, 1.7976931348623157e308])
def test_a_scale_whose_product_is_infinite_is_the_same_one_line_as_a_large_one(factor):
    """``nodes x factor`` overflows to inf for a finite factor (1e308 x 9 nodes): refused as a
    factor past any node count, as 1e9 is, not an ``OverflowError`` from ``math.ceil``."""
    jobs = _table(nodes=[1, 9, None], procs=[8, 72, None])
    assert math.isinf(9 * factor)
    for machine in (8, None):
        with pytest.raises(ValueError, match=r"makes a 9-node job larger than any node count can be \(2\^31 - 1\); "
                                             r"use a factor below 2\.39e\+08"):
            W.scale_nodes(jobs, factor, machine_nodes=machine)


def test_an_infinite_scaled_size_is_one_line_through_the_app(tmp_path):
    log = tmp_path / "big.swf"
    log.write_text("; MaxNodes: 9\n; MaxProcs: 9\n" + "1 0 -1 600 9 -1 -1 9 1200 -1 1 1 1 -1 -1 -1 -1 -1\n")
    out = forkcli.run("fattorus.sweep", [f"hydra.run.dir={tmp_path / 'results' / 'run'}", "+topo=ft6", "workload=file",
                                         f"workload.path={log}", "workload.cores_per_node=1", "workload.scale=1e308",
                                         "progress=false"], cwd=tmp_path, timeout=600)
    lines = out.stderr.strip().splitlines()
    assert out.returncode == 2 and "Traceback" not in out.stderr, out.stderr[-3000:]
    assert len(lines) == 1 and lines[0].startswith("fattorus.sweep: error: scale factor 1e+308 makes a 9-node job")


def test_window_and_first_days():
    day = 86400.0
    jobs = _table(submit_s=[5 * day, 5 * day + 1, 6 * day - 1, 6 * day, 7.5 * day, None])
    assert W.window(jobs, 5 * day, day)["job_id"].to_list() == [1, 2, 3]
    assert W.window(jobs, 5 * day + 1, None)["job_id"].to_list() == [2, 3, 4, 5]
    # Day 0 is the first submit (5 days into the log).
    assert W.first_days(jobs, 1)["job_id"].to_list() == [1, 2, 3]
    assert W.first_days(jobs, 2, start_days=1)["job_id"].to_list() == [4, 5]
    assert W.first_days(jobs, None, start_days=2)["job_id"].to_list() == [5]
    # A window that can mean none (NaN kept every job, -1 none, silently; session 31 review).
    for days, start in ((float("nan"), 0.0), (-1, 0.0), (0, 0.0), (1, -2.0)):
        with pytest.raises(W.WorkloadError, match="workload.window_"):
            W.first_days(jobs, days, start_days=start)


def test_jobs_of_unknown_submit_time_are_counted_apart_by_a_window(tmp_path):
    """Without a window the replay skips a job of unknown submit time as bad_submit; a window
    (even one holding the whole log) left it out as outside_window without a word. A window
    still leaves it out (it cannot hold it), and the counts say how many such jobs there are
    (session 27 review); logs without such jobs get no new count."""
    log = tmp_path / "l.swf"
    line = "{} {} -1 50 2 -1 -1 2 60 -1 1 1 1 -1 1 -1 -1 -1\n"
    log.write_text("; MaxNodes: 4\n; MaxProcs: 4\n" + line.format(1, 0) + line.format(2, -1) + line.format(3, 100)
                   + line.format(4, -1))
    cfg = {"path": str(log), "cores_per_node": 1}
    _, whole = W.from_config(cfg, machine_nodes=4)
    assert whole == {"dropped_by_scaling": 0, "outside_window": 0, "scale_factor": 1.0}
    wl, windowed = W.from_config({**cfg, "window_days": 1000}, machine_nodes=4)
    assert windowed == {"dropped_by_scaling": 0, "outside_window": 2, "scale_factor": 1.0, "unknown_submit": 2}
    assert wl.jobs["job_id"].to_list() == [1, 3]


def test_with_estimate():
    jobs = _table(requested_s=[100.0, 100.0, None, 50.0, None], runtime_s=[50.0, 200.0, 30.0, None, None])
    assert W.with_estimate(jobs)["estimate_s"].to_list() == [100.0, 200.0, 30.0, 50.0, None]


def test_stray_nul_is_a_dirty_line_and_gzip_sacct_loads(tmp_path):
    good = "1 0 -1 10 8 -1 -1 8 60 -1 1 1 1 -1 -1 -1 -1 -1"
    path = tmp_path / "nul.swf"
    path.write_bytes(f"{good}\n\x00\x00garbage\n2{good[1:]}\n".encode())
    wl = W.load(path, cores_per_node=8)
    assert (wl.jobs.height, wl.skipped.total, wl.skipped.entries[0].line) == (2, 1, 2)
    gz = tmp_path / "sacct.txt.gz"
    gz.write_bytes(gzip.compress(SACCT.encode()))
    assert W.load(gz).jobs.height == 7


def test_scale_fit_and_machine_default():
    """fit: machine nodes / the log's machine (Atlas header MaxNodes 1152); machine: the caller's default."""
    cfg = OmegaConf.to_container(OmegaConf.load(REPO / "conf" / "workload" / "atlas.yaml"))
    base = W.load(REPO / cfg["path"], cores_per_node=8).jobs
    cfg["scale"] = "fit"
    wl, counts = W.from_config(cfg, machine_nodes=2304)
    assert counts["scale_factor"] == 2.0
    assert wl.jobs["nodes"].to_list() == [None if n is None else 2 * n for n in base["nodes"].to_list()]
    wl, counts = W.from_config(dict(cfg, log_nodes=576), machine_nodes=2304)
    assert counts["scale_factor"] == 4.0
    cfg["scale"] = "machine"
    _, counts = W.from_config(cfg, machine_nodes=5000, machine_scale=3)
    assert counts["scale_factor"] == 3.0
    synthetic = {"name": "s", "format": "synthetic", "scale": "fit", "synthetic": {"n_jobs": 10, "max_nodes": 8}}
    _, counts = W.from_config(synthetic, machine_nodes=80)  # the generator's header: MaxNodes 8
    assert counts["scale_factor"] == 10.0
    with pytest.raises(W.WorkloadError, match="machine's size"):
        W.from_config(dict(cfg, scale="fit"))


TABLE_II_XE = [1024, 512, 324, 576, 1372, 4116, 1, 2, 4, 8, 16, 32, 64, 100, 128, 256, 456, 640, 1368, 2000, 3272,
               1000, 7000, 3072, 4800, 5419, 456, 1386, 3298]


def test_waves_workload_is_the_torus_papers_table_ii():
    raw = OmegaConf.load(REPO / "conf" / "workload" / "bluewaters_table2.yaml")
    cfg = OmegaConf.to_container(raw)
    wl, _ = W.from_config(cfg, machine_nodes=22_548)
    # the config as OmegaConf hands it over (ListConfig instances) gives the same jobs
    assert W.from_config(raw, machine_nodes=22_548)[0].jobs.equals(wl.jobs)
    jobs = wl.jobs
    assert set(jobs["node_kind"]) == {"XE"} and sorted(set(jobs["submit_s"].to_list())) == [i * 900.0 for i in range(12)]
    first = jobs.filter(pl.col("submit_s") == 0)
    # every node count of Table II's XE rows (1 + 1 + 4 + 15 + 1 + 1 + 1 + 1 + 1 + 3 = 29) is in a wave
    assert sorted(set(first["nodes"].to_list())) == sorted(set(TABLE_II_XE))
    limits = dict(zip(first["app"].to_list(), first["requested_s"].to_list()))
    assert limits["Changa"] == 3600 and limits["DNS-DISTUF"] == 600 and limits["PSDNS"] == 1800
    assert (jobs["runtime_s"] <= jobs["requested_s"]).all()
    # the slides' statistics of the test: ~200 jobs a cycle over XE and XK, 38 % of them <= 8 nodes,
    # 91 % of jobs of one duration; the paper: most service units go to jobs of >= 512 nodes
    both, _ = W.from_config(dict(cfg, synthetic=dict(cfg["synthetic"], include_kinds=["XE", "XK"])), machine_nodes=22_548)
    wave = both.jobs.filter(pl.col("submit_s") == 0)
    assert 190 <= wave.height <= 210 and 0.35 <= (wave["nodes"] <= 8).mean() <= 0.42
    assert abs(both.jobs["runtime_s"].value_counts(sort=True)["count"][0] / both.jobs.height - 0.91) < 0.02
    su = both.jobs["nodes"] * both.jobs["runtime_s"]
    assert su.filter(both.jobs["nodes"] >= 512).sum() > 0.7 * su.sum()
    # the small NAMD counts come many times a wave, the largest entries once
    per = first.group_by("nodes").len()
    assert dict(zip(per["nodes"], per["len"]))[1] == 10 and dict(zip(per["nodes"], per["len"]))[7000] == 1


def test_waves_without_instances_or_same_runtime_give_one_job_per_entry():
    """The generator's original form (one instance per entry, run times spread over the limit)."""
    apps = [{"name": "A", "nodes": [1, 8], "time_limit_min": 30}, {"name": "B", "kind": "XK", "nodes": [4], "time_limit_min": 10},
            {"name": "C", "nodes": [64], "time_limit_min": 60, "instances": 3}]
    wl = waves.generate({"n_waves": 4, "wave_interval_s": 1800, "apps": apps})
    j = wl.jobs
    assert j.height == 4 * (2 + 3) and j["nodes"].to_list()[:5] == [1, 8, 64, 64, 64]
    assert j["user"].to_list()[:5] == [1, 2, 3, 3, 3]  # one "user" per entry, instances share it
    assert ((j["runtime_s"] >= 0.3 * j["requested_s"]) & (j["runtime_s"] <= j["requested_s"])).all()
    assert j["runtime_s"].n_unique() > 10
    same = waves.generate({"n_waves": 4, "apps": apps, "same_runtime": {"share": 1.0, "seconds": 900}}).jobs
    assert same["runtime_s"].to_list() == [900.0] * 20  # min(900 s, each limit >= 30 min)
    # an entry with no instances keeps its number: labels and "users" count table entries
    skip = waves.generate({"n_waves": 1, "apps": [{"name": "A", "nodes": [1, 8], "time_limit_min": 30,
                                                   "instances": [0, 2]}]})
    assert skip.jobs["user"].to_list() == [2, 2] and "entries=2,jobs_per_wave=2" in skip.path
    # the spread draws come first: adding same_runtime with share 0 leaves every job as it was
    none = waves.generate({"n_waves": 4, "wave_interval_s": 1800, "apps": apps, "same_runtime": {"share": 0, "seconds": 1}})
    assert none.jobs.equals(j)


@pytest.mark.parametrize("bad, says", [
    ({"apps": [{"name": "A", "nodes": [1, 2], "time_limit_min": 5, "instances": [1]}]}, "1 entries for 2 node counts"),
    ({"apps": [{"name": "A", "nodes": [1], "time_limit_min": 5, "instances": -1}]}, "instances >= 0"),
    ({"apps": [{"name": "A", "nodes": [1], "time_limit_min": 5}], "same_runtime": {"share": 2, "seconds": 5}}, "share in"),
    ({"apps": [{"name": "A", "nodes": [1], "time_limit_min": 5}], "same_runtime": 300}, "needs share and seconds"),
    ({"apps": [{"name": "A", "nodes": [1], "time_limit_min": 5}], "same_runtime": {"share": 1, "seconds": 5, "x": 1}},
     "needs share and seconds"),
    ({"apps": [{"name": "A", "nodes": [1, 2], "time_limit_min": 5, "instances": [1, 2.5]}]}, "whole numbers"),
    ({"apps": [{"name": "A", "nodes": [1], "time_limit_min": 5, "instances": True}]}, "whole numbers"),
    ({"apps": [{"name": "A", "nodes": [1], "time_limit_min": 5, "instances": float("inf")}]}, "whole numbers"),
    ({"apps": [{"name": "A", "nodes": [1], "time_limit_min": 5, "instances": 0}]}, "has instances > 0"),
])
def test_waves_config_mistakes_are_one_line(bad, says):
    with pytest.raises(W.WorkloadError, match=says) as e:
        waves.generate(bad)
    assert "\n" not in str(e.value)


def test_a_byte_order_mark_is_not_part_of_the_first_line(tmp_path):
    """A UTF-8 BOM (some editors write one) made an SWF header line a dirty job line and hid
    a sacct header (session 27): both read as without it."""
    bom = b"\xef\xbb\xbf"
    swf = "; MaxNodes: 4\n; MaxProcs: 16\n1 0 -1 50 8 -1 -1 8 60 -1 1 1 1 -1 1 -1 -1 -1\n"
    (tmp_path / "a.swf").write_bytes(bom + swf.encode())
    wl = W.load(tmp_path / "a.swf")
    assert (wl.jobs.height, wl.skipped.total, wl.lines) == (1, 0, 1) and wl.header["MaxNodes"] == "4"
    (tmp_path / "a.sacct").write_bytes(bom + SACCT.encode())
    (tmp_path / "b.sacct").write_text(SACCT)
    with_bom, without = W.load(tmp_path / "a.sacct", fmt="sacct"), W.load(tmp_path / "b.sacct", fmt="sacct")
    assert with_bom.jobs.equals(without.jobs) and with_bom.jobs.height > 0
    assert W.load(tmp_path / "a.sacct").jobs.height == without.jobs.height  # found by content, too


def test_a_repeated_job_is_a_dirty_line_naming_the_first(tmp_path):
    """Concatenated or overlapping dumps repeat jobs; each copy was replayed (twice the load,
    no word). A job id seen on an earlier job line is skipped as ``repeated job id``, naming
    that line; a dirty line does not count as an id's first (session 27)."""
    def swf(job, submit):
        return f"{job} {submit} -1 50 8 -1 -1 8 60 -1 1 1 1 -1 1 -1 -1 -1\n"
    text = "; MaxNodes: 4\n; MaxProcs: 16\n" + swf(1, 0) + swf(2, 5) + "3 x\n" + swf(1, 0) + swf(3, 9) + swf(2, 7)
    (tmp_path / "d.swf").write_text(text)
    wl = W.load(tmp_path / "d.swf")
    assert wl.jobs["job_id"].to_list() == [1, 2, 3] and wl.jobs["submit_s"].to_list() == [0, 5, 9]
    assert wl.skipped.counts == {"wrong field count": 1, "repeated job id": 2}
    repeats = [e for e in wl.skipped.entries if e.reason == "repeated job id"]
    assert [(e.line, e.detail) for e in repeats] == [(6, "field 1: 1 (as line 3)"), (8, "field 1: 2 (as line 4)")]
    # sacct: one dump's rows twice (its steps are steps again, not repeats).
    (tmp_path / "o.sacct").write_text(SACCT)
    (tmp_path / "d.sacct").write_text(SACCT + SACCT.split("\n", 1)[1])
    once, doubled = W.load(tmp_path / "o.sacct", fmt="sacct"), W.load(tmp_path / "d.sacct", fmt="sacct")
    assert doubled.jobs.equals(once.jobs) and doubled.skipped.steps == 2 * once.skipped.steps
    assert doubled.skipped.counts["repeated job id"] == once.jobs.height
