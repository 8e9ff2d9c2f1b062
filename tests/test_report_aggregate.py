"""The report's statistics (fattorus.report.aggregate) on tiny in-memory tables, against hand-computed values."""

from __future__ import annotations

import math

import polars as pl
import pytest

from fattorus.report import aggregate


def row(frame: pl.DataFrame, **keys) -> dict:
    """The one row of ``frame`` matching ``keys``."""
    hit = frame.filter(*[pl.col(k) == v for k, v in keys.items()])
    assert len(hit) == 1, (keys, hit)
    return hit.row(0, named=True)


def test_aph_stats_bins_quantiles_and_ideal_median():
    jobs = pl.DataFrame({
        "workload": ["w"] * 6, "label": ["A"] * 6,
        "nodes": [2, 4, 2, 10, 30, 30],
        "aph": [1.0, 2.0, float("nan"), 3.0, 4.0, 6.0],  # the NaN job has no APH: left out, ideal too
        "ideal_aph": [0.5, 1.0, 9.0, 1.5, None, 2.0],
    })  # fmt: skip
    stats = aggregate.aph_stats_of(jobs, edges=(8, 64))
    assert stats["bin"].to_list() == [0, 1]
    small = row(stats, bin=0)  # APH 1, 2: linear quantiles 1.25 / 1.5 / 1.75; ideal median of 0.5, 1.0
    assert (small["jobs"], small["min"], small["max"]) == (2, 1.0, 2.0)
    assert (small["p25"], small["median"], small["p75"]) == pytest.approx((1.25, 1.5, 1.75))
    assert small["ideal"] == pytest.approx(0.75)
    large = row(stats, bin=1)  # APH 3, 4, 6: p25 at position 0.5 -> 3.5, p75 at 1.5 -> 5; ideal of 1.5, 2.0
    assert (large["jobs"], large["min"], large["max"]) == (3, 3.0, 6.0)
    assert (large["p25"], large["median"], large["p75"]) == pytest.approx((3.5, 4.0, 5.0))
    assert large["ideal"] == pytest.approx(1.75)


def test_aph_stats_without_ideal_is_null():
    jobs = pl.DataFrame({"workload": ["w"], "label": ["A"], "nodes": [5], "aph": [2.0],
                         "ideal_aph": pl.Series([None], dtype=pl.Float64)})  # fmt: skip
    assert aggregate.aph_stats_of(jobs)["ideal"].to_list() == [None]


@pytest.mark.parametrize(
    ("maxes", "ideals", "top"),
    [
        ([3.2, 1.0], [1.9, None], 4.25),  # a fat-tree-like study: below 4 hops
        ([9.0, 7.5], [6.0, 5.0], 9.25),  # a torus: hop counts far above 4
        ([2.0], [2.5], 3.25),  # an ideal above every box still shows
        ([0.0], [0.0], aggregate.APH_AXIS_MIN_TOP),  # single-switch jobs only
        ([float("nan")], [None], aggregate.APH_AXIS_MIN_TOP),
    ],
)
def test_aph_axis_top_follows_the_data(maxes, ideals, top):
    stats = pl.DataFrame({"max": maxes, "ideal": pl.Series(ideals, dtype=pl.Float64)})
    assert aggregate.aph_axis_top(stats) == pytest.approx(top)


def test_aph_axis_top_of_no_jobs():
    empty = pl.DataFrame(schema={"max": pl.Float64, "ideal": pl.Float64})
    assert aggregate.aph_axis_top(empty) == aggregate.APH_AXIS_MIN_TOP


def test_utilization_stats_linear_quantiles():
    samples = pl.DataFrame({"workload": ["w"] * 5 + ["v"], "label": ["A"] * 6,
                            "utilization": [0.0, 0.25, 0.5, 0.75, 1.0, 0.3]})  # fmt: skip
    w = row(aggregate.utilization_stats_of(samples), workload="w")
    # positions q * (n - 1) over 0, .25, .5, .75, 1: p5 at 0.2 -> 0.05, p95 at 3.8 -> 0.95
    got = [w[k] for k in ("p05", "p25", "median", "p75", "p95", "mean")]
    assert got == pytest.approx([0.05, 0.25, 0.5, 0.75, 0.95, 0.5])
    v = row(aggregate.utilization_stats_of(samples), workload="v")
    assert v["p05"] == v["p95"] == v["mean"] == pytest.approx(0.3)


def test_wait_stats_mean_over_runs_of_bin_means():
    jobs = pl.DataFrame({"rid": [0, 0, 1], "workload": ["w"] * 3, "label": ["A"] * 3,
                         "nodes": [1, 100, 1], "wait_s": [3600.0, 7200.0, 10800.0]})  # fmt: skip
    overall = pl.DataFrame({"rid": [0, 1], "workload": ["w", "w"], "label": ["A", "A"], "wait_mean_h": [1.5, 3.0]})
    stats = aggregate.wait_stats_of(jobs, overall, edges=(8,))
    small = row(stats, bin=0)  # run 0: 1 h, run 1: 3 h
    assert (small["mean"], small["n"]) == (pytest.approx(2.0), 2)
    assert small["std"] == pytest.approx(math.sqrt(2.0))
    big = row(stats, bin=1)  # only run 0 has a big job: one run, no std
    assert (big["mean"], big["n"], big["std"]) == (pytest.approx(2.0), 1, None)
    every = row(stats, bin=2)  # "all jobs" = each run's overall mean: 1.5 h and 3 h
    assert (every["mean"], every["n"]) == (pytest.approx(2.25), 2)
    assert every["std"] == pytest.approx(1.5 / math.sqrt(2.0))


def test_over_seeds_and_table1_by_hand():
    runs = pl.DataFrame({"workload": ["w", "w", "w", "v"], "label": ["TA", "TA", "TO", "TA"],
                         "wait_mean_h": [1.0, 2.0, 4.0, 8.0]})  # fmt: skip
    seeds = aggregate.over_seeds(runs, "wait_mean_h")
    ta = row(seeds, workload="w", label="TA")
    assert (ta["mean"], ta["n"]) == (1.5, 2) and ta["std"] == pytest.approx(math.sqrt(0.5))
    table = aggregate.table1(runs)
    assert table.columns == ["workload", "TO", "TA", "TO std", "TA std", "TO n", "TA n"]
    assert table.rows() == [
        ("w", 4.0, 1.5, None, pytest.approx(math.sqrt(0.5)), 1, 2),
        ("v", None, 8.0, None, None, None, 1),
    ]
    assert aggregate.table1_labels(table) == ["TO", "TA"]
    # A label of its own ending in " n" or " std" stays a label (it was dropped by its suffix).
    odd = aggregate.table1(runs.with_columns(pl.col("label").replace({"TA": "TA n", "TO": "TO std"})))
    assert sorted(aggregate.table1_labels(odd)) == ["TA n", "TO std"]
