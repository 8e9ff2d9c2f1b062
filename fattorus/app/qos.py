"""The process-level QoS study app: ``python -m fattorus.qos [qos=small|medium|large] [...]``.

Runs the QoS paper's experiment (:mod:`fattorus.analysis.qos`) for ``qos.placements`` random
placements of its job mix on its fat-tree and writes, into the Hydra run directory under
``results/``:

* ``placements/p<k>.parquet`` — per job of placement ``k``: pattern, iterations isolated /
  default / QoS / final, ``W_default``, ``W_qos``, ``improvement`` (``I_Q / I_D − 1``) and
  ``improvement_final`` (the assignment the algorithm settled on); written as each placement
  finishes, so an interrupted run resumes there (re-run a multirun, or a single run with
  ``hydra.run.dir=`` its directory);
* ``jobs.parquet`` — all placements; ``history.parquet`` — per period: mode, score, levels in
  use; ``summary.json`` — per pattern medians and extremes, settings, wall time;
* ``improvement.png`` — the paper's two charts: ``W`` per job type (default vs QoS) and the
  per-job improvement over default, sorted (:mod:`fattorus.report.qos`).

Configuration errors end in one line on stderr (exit 2).
"""

from __future__ import annotations

import json
import logging
import sys
import time
from pathlib import Path
from typing import Any

import hydra
import numpy as np
import polars as pl
from hydra.core.hydra_config import HydraConfig
from omegaconf import DictConfig, OmegaConf

from fattorus import paths
from fattorus.app import cli
from fattorus.app import config as config_mod
from fattorus.files import atomic_write

config_mod.register()

SEED_MAX = 2**32 - 1


class UserError(Exception):
    """A configuration mistake: one line, exit 2."""


def _topology(cfg: DictConfig) -> Any:
    from fattorus import topology
    from fattorus.topology import TopologyError

    system = cfg.qos.get("system")
    if not isinstance(system, DictConfig):
        raise UserError("qos.system: give the fat-tree's fields (as in conf/topo/cab.yaml, without kind and name)")
    fields = dict(OmegaConf.to_container(system, resolve=True))
    try:
        topo = topology.from_config({"kind": "fattree", "name": str(cfg.qos.name), **fields})
    except (TopologyError, TypeError) as err:
        raise UserError(f"qos.system: {_squash(err)}") from None
    if topo.kind != "fattree":
        raise UserError("qos.system: the QoS study models fat-trees (the paper's InfiniBand systems)")
    return topo


def _experiment(cfg: DictConfig) -> Any:
    from fattorus.analysis import qos

    raw = OmegaConf.to_container(cfg.qos, resolve=True)
    try:
        return qos.experiment_from(raw)
    except ValueError as err:
        raise UserError(str(err)) from None


def _placement_seed(seed: int, k: int) -> int:
    """Seed of placement ``k``: derived from the run's seed (independent streams per k)."""
    return int(np.random.SeedSequence([seed, k]).generate_state(1)[0])


def run(cfg: DictConfig, out_dir: Path) -> dict[str, Any]:
    """Every placement (resuming finished ones), then the tables, summary and figure."""
    from fattorus.analysis import qos
    from fattorus.report import qos as qos_report

    seed = cfg.seed
    if not isinstance(seed, int) or not 0 <= seed <= SEED_MAX:
        raise UserError(f"seed={seed}: choose an integer between 0 and {SEED_MAX}")
    placements = cfg.qos.get("placements")
    if not isinstance(placements, int) or not 1 <= placements <= 10_000:
        raise UserError(f"qos.placements={placements!r}: choose an integer between 1 and 10000")
    topo = _topology(cfg)
    exp = _experiment(cfg)
    n_needed = exp.processes * sum(k for _, k in exp.jobs)
    if n_needed > topo.n_nodes:
        raise UserError(f"qos: {n_needed} processes need as many nodes; the system has {topo.n_nodes}")
    t0 = time.perf_counter()
    rows: list[dict[str, Any]] = []
    history: list[pl.DataFrame] = []
    solves, solve_s, unconverged = 0, 0.0, 0
    for k in range(placements):
        part = out_dir / "placements" / f"p{k}.parquet"
        hist = out_dir / "placements" / f"h{k}.parquet"
        if part.exists() and hist.exists():
            rows += pl.read_parquet(part).to_dicts()
            history.append(pl.read_parquet(hist))
            continue
        bar = _bar(cfg, exp.iterations, f"{cfg.qos.name} placement {k + 1}/{placements}")
        mix, res = qos.run_placement(topo, exp, _placement_seed(seed, k),
                                     progress=(lambda _i: bar.update(1)) if bar is not None else None)
        if bar is not None:
            bar.close()
        new = qos.job_rows(mix, res, placement=k)
        h = pl.DataFrame({"placement": k, "period": np.arange(exp.iterations), "mode": res.modes,
                          "score": res.scores, "prioritised": res.n_assigned})
        atomic_write(hist, lambda p: h.write_parquet(p))
        atomic_write(part, lambda p: pl.DataFrame(new).write_parquet(p))
        rows += new
        history.append(h)
        solves, solve_s = solves + res.solves, solve_s + res.solve_s
        if res.unconverged:
            print(f"fattorus.qos: warning: placement {k}: {res.unconverged} of {res.solves} rate solves ended at "
                  f"the midpoint of bounds up to {res.max_gap:.1%} wide (counted in summary.json)", file=sys.stderr)
        unconverged += res.unconverged
    jobs = pl.DataFrame(rows)
    atomic_write(out_dir / "jobs.parquet", lambda p: jobs.write_parquet(p))
    atomic_write(out_dir / "history.parquet", lambda p: pl.concat(history).write_parquet(p))
    qos_report.figure(rows, out_dir / "improvement.png", title=_title(cfg))
    summary = {"study": "qos", "system": str(cfg.qos.name), "nodes": topo.n_nodes, "seed": seed,
               "placements": placements, "settings": OmegaConf.to_container(cfg.qos, resolve=True),
               "wall_s": time.perf_counter() - t0, "solves_this_run": solves, "solve_s_this_run": solve_s,
               "unconverged_solves_this_run": unconverged,
               "by_pattern": qos.summarize(rows)}
    atomic_write(out_dir / "summary.json", json.dumps(summary, indent=2, default=float) + "\n")
    return summary


def _title(cfg: DictConfig) -> str:
    q = cfg.qos
    return (f"{q.name}: imbalance {q.imbalance}, compute {q.compute_fraction:g}, T {q.threshold:g}, "
            f"{q.routing} routing, {q.placements} placements x {q.iterations} periods")


def _bar(cfg: DictConfig, total: int, desc: str) -> Any:
    if not cfg.get("progress", True) or not sys.stderr.isatty():
        return None
    from tqdm import tqdm

    return tqdm(total=total, desc=desc, unit="period", leave=False)


def _one_line(summary: dict[str, Any]) -> str:
    a = summary["by_pattern"]["all"]
    return (f"{summary['system']}: {a['jobs']} jobs, improvement over default median {a['improvement_median']:+.1%} "
            f"(max {a['improvement_max']:+.1%}, min {a['improvement_min']:+.1%}); "
            f"settled assignment median {a['improvement_final_median']:+.1%}")


@hydra.main(config_path=str(paths.conf_dir()), config_name="qos_app", version_base="1.3")
def _app(cfg: DictConfig) -> dict[str, Any] | None:
    logging.getLogger("jax").setLevel(logging.WARNING)
    hc = HydraConfig.get()
    out_dir = Path(hc.runtime.output_dir)
    multirun = hc.mode.name == "MULTIRUN"
    if (out_dir / "summary.json").exists():
        print(f"[skip] {out_dir} already holds a finished run", flush=True)
        return json.loads((out_dir / "summary.json").read_text())
    t0 = time.perf_counter()
    try:
        summary = run(cfg, out_dir)
    except UserError as err:
        if multirun:
            raise
        cli.discard_stub(out_dir, "qos")
        sys.stderr.write(f"fattorus.qos: error: {_squash(err)}\n")
        sys.exit(2)
    prefix = "[done]" if multirun else "done:"
    print(f"{prefix} {_one_line(summary)} in {time.perf_counter() - t0:.1f} s -> {out_dir}", flush=True)
    return summary


def _squash(text: Any) -> str:
    return cli.squash(text)


def main() -> None:
    """Entry point: the Hydra app, every configuration error turned into one line."""
    cli.run_main(_app, "fattorus.qos", (UserError,), interrupted="finished placements are kept")


if __name__ == "__main__":
    main()
