"""Bad inputs and faults, through the real command lines (issue 10).

Every case runs ``python -m fattorus.<cli>`` as its own process (forked from a server that
imported the package, ``tests/forkcli.py``; a real subprocess where a process limit or a
dropped capability is set) whose working directory is a fresh folder, so the results root is
``<folder>/results``. For each case the test checks the
exit code, that stderr holds no traceback and (for errors) exactly one line naming the
mistake, that nothing was written outside the results root, and, for dirty logs, the skip
counts by reason in ``summary.json``. The cases run two at a time (one per core).
"""

from __future__ import annotations

import collections
import dataclasses
import gzip
import json
import os
import subprocess
import sys
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import pytest

import forkcli

CEILING_S = 366 * 86400
HEADER = "; MaxNodes: 54\n; MaxProcs: 54\n"


def swf_line(job: int | float, submit: float, run: float, procs: float, req: float = 100, status: float = 1,
             user: float = 1) -> str:
    """One SWF line (18 fields); floats are written as given."""
    f = [job, submit, 0, run, procs, -1, -1, procs, req, -1, status, user, 1, -1, 1, -1, -1, -1]
    return " ".join(str(int(v)) if isinstance(v, float) and v == int(v) else str(v) for v in f) + "\n"


GOOD = [swf_line(i, i * 10, 50, 1 + i % 9) for i in range(1, 40)]


@dataclasses.dataclass(frozen=True)
class Case:
    """One bad input or fault: the CLI and its arguments, what must come out."""

    id: str
    args: tuple[str, ...]
    rc: int  # expected exit code
    words: str = ""  # must appear in the one stderr line (errors) or the skip line
    skips: dict | None = None  # expected parse skips by reason (dirty logs)
    cli: str = "sweep"
    files: dict | None = None  # file name -> content written into the case folder first
    setup: str = ""  # name of a special set-up step (see _prepare)


def command_env() -> dict:
    """The environment of every command this file forks: this process' (PYTHONPATH: the checkout
    first, tests/conftest.py) with ``HYDRA_FULL_ERROR=1``, under which an error that reached Hydra
    would print in full (a traceback, not one line). One environment: the tests after the table
    fork from the table's servers (forkcli starts one per environment, ~2.5 s of imports)."""
    return {**os.environ, "HYDRA_FULL_ERROR": "1"}


def _log(*extra: str) -> str:
    return HEADER + "".join(GOOD) + "".join(extra)


#: A study on the small log (``log.swf`` in the case folder) whose first block runs a replay.
STUDY_HEAD = ("study: s\ncommon: [workload=file, workload.path=log.swf, workload.cores_per_node=1, +topo=ft6x6, "
              "progress=false, hydra.launcher.n_jobs=1]\ncases:\n  - [policy=to]\n")


W = ("workload=file", "workload.cores_per_node=1", "workload.path=log.swf", "+topo=ft6x6", "progress=false")


def bad(id: str, words: str, *args: str, rc: int = 2, files: dict | None = None, cli: str = "sweep",
        setup: str = "") -> Case:
    base = W if cli == "sweep" and not any(a.startswith("workload=") for a in args) else ()
    return Case(id, base + args, rc, words, files=files if files is not None else {"log.swf": _log()}, cli=cli,
                setup=setup)


#: Dirty lines of a log, each alone: (id, line, the reason it is skipped for). Each is read
#: in-process (:func:`test_a_dirty_line_is_skipped_for_its_reason`); all of them together go
#: through the command line once (the ``all_dirty_lines`` case): the reader is the same, so
#: one run checks the report, the counts by reason and that the run goes on.
DIRTY = [
    ("u32_runtime", swf_line(99, 500, 4294967295.0, 2), "unsigned -1 (4294967295)"),
    ("u32_procs", swf_line(99, 500, 50, 4294967295.0), "unsigned -1 (4294967295)"),
    ("u32_submit", swf_line(99, 4294967295.0, 50, 2), "unsigned -1 (4294967295)"),
    ("runtime_ceiling", swf_line(98, 500, CEILING_S + 1.0, 2, req=CEILING_S + 1.0), "run time beyond ceiling"),
    ("requested_ceiling", swf_line(98, 500, 50, 2, req=9e11), "requested time beyond ceiling"),
    ("absurd_submit", swf_line(96, 9e18, 50, 2), "absurd submit time"),
    ("procs_overflow", swf_line(97, 500, 50, 9e15), "integer out of range"),
    ("jobid_overflow", swf_line(10**20, 500, 50, 2), "integer out of range"),
    ("user_overflow", swf_line(95, 500, 50, 2, user=1e19), "integer out of range"),
    ("status_overflow", swf_line(94, 500, 50, 2, status=9e10), "integer out of range"),
    ("nan_field", swf_line(93, 500, "nan", 2), "non-numeric field"),
    ("inf_field", swf_line(93, 500, "inf", 2), "non-numeric field"),
    ("word_field", swf_line(93, 500, "abc", 2), "non-numeric field"),
    ("short_line", "1 2 3 4 5 6 7 8 9 10 11 12 13 14 15 16 17\n", "wrong field count"),
    ("long_line", "1 " * 19 + "\n", "wrong field count"),
    ("fraction_id", swf_line(1.5, 500, 50, 2), "non-integer field"),
    ("fraction_procs", swf_line(92, 500, 50, 2.5), "non-integer field"),
    ("nul_byte", "7\x00 1 2\n", "wrong field count"),
    ("u32_jobid", swf_line(4294967295.0, 500, 50, 2), "unsigned -1 (4294967295)"),
    ("fraction_status", swf_line(91, 500, 50, 2, status=1.5), "non-integer field"),
]


CASES = [
    # Dirty lines in a log: skipped, counted by reason, the run goes on.
    Case("all_dirty_lines", W, 0, DIRTY[0][2],  # the first dirty line's reason is reported first
         dict(collections.Counter(reason for _, _, reason in DIRTY)),
         files={"log.swf": _log(*(line for _, line, _ in DIRTY))}),
    Case("custom_ceiling", W + ("workload.max_runtime_s=40",), 0, "run time beyond ceiling",
         {"run time beyond ceiling": 1}, files={"log.swf": HEADER + swf_line(1, 0, 30, 1, req=30) + swf_line(2, 5, 60, 1, req=30)}),
    # Logs that are not logs, or hold no job: one line, exit 2.
    bad("missing_log", "no-such.swf", "workload.path=no-such.swf"),
    bad("device_log", "/dev/zero: a device, not a job log file", "workload.path=/dev/zero"),  # was read without end
    bad("log_is_dir", "log.swf", files={"log.swf/x": "a"}),
    bad("binary_log", "binary file", files={"log.swf": "\x00\x01\x02\xff" * 100}),
    bad("not_a_log", "not a job log", files={"log.swf": "hello world\nthis is prose\n"}),
    bad("header_only", "no job lines", files={"log.swf": HEADER}),
    # A machine-size key given twice with two numbers: the first was used without a word.
    bad("contradicting_header", "log.swf, line 3: header field MaxNodes: '60' contradicts line 1 ('54')",
        files={"log.swf": HEADER + "; MaxNodes: 60\n" + "".join(GOOD)}),
    bad("all_dirty", "are malformed", files={"log.swf": HEADER + swf_line(1, 0, "nan", 1)}),
    bad("bad_gzip", "log.swf.gz", "workload.path=log.swf.gz", files={"log.swf.gz": b"\x1f\x8b\x08\x00garbage"}),
    bad("all_too_large", "no job was replayed", files={"log.swf": HEADER + swf_line(1, 0, 50, 500)}),
    bad("sacct_no_header", "sacct header lacks", "workload.format=sacct",
        files={"log.swf": "JobID|Submit\n1|2024-01-01T00:00:00\n"}),
    # W&B settings that wandb.init refuses: one line before the replay (was a traceback after it).
    bad("wandb_bad_project", "logger.project='a/b': W&B takes 1 to 128 characters", "logger=wandb", "logger.project=a/b",
        "logger.mode=disabled"),
    bad("wandb_long_tag", "has 70 characters; W&B takes 1 to 64", "logger=wandb", f"logger.tags=[{'x' * 70}]",
        "logger.mode=disabled"),
    # A setting the run does not read: a warning, the run goes on (session 27).
    Case("log_nodes_without_fit", W + ("workload.log_nodes=9",), 0,
         "warning: workload.log_nodes=9 is read only with workload.scale=fit; this run scales by x1",
         files={"log.swf": _log()}),
    # Settings the chosen scenario or logger never reads: a warning each, the run goes on (session 42).
    Case("model_key_with_assumed_factors", W + ("+speedup=v2", "speedup.comm_fraction=0.5"), 0,
         "warning: speedup.comm_fraction=0.5 is ignored with speedup=v2 (it applies to speedup=model)",
         files={"log.swf": _log()}),
    Case("wandb_key_without_wandb", W + ("logger.mode=online",), 0,
         "warning: logger.mode=online is ignored without logger=wandb", files={"log.swf": _log()}),
    # A sacct dump with job steps: the steps are recorded, so that the line counts add up.
    Case("sacct_steps", ("workload=file", "workload.path=log.swf", "+topo=ft6x6", "progress=false"), 0,
         files={"log.swf": "JobID|Submit|Start|End|Elapsed|Timelimit|NNodes|NCPUS|State\n"
                           "7|2024-01-02T03:04:05|2024-01-02T03:05:05|2024-01-02T04:05:05|01:00:00|02:00:00|2|2|COMPLETED\n"
                           "7.batch|2024-01-02T03:05:05|2024-01-02T03:05:05|2024-01-02T04:05:05|01:00:00||1|1|COMPLETED\n"
                           "7.0|2024-01-02T03:05:05|2024-01-02T03:05:05|2024-01-02T04:05:05|01:00:00||2|2|COMPLETED\n"}),
    # Configuration mistakes: one line, exit 2.
    bad("scale_inf", "positive finite", "workload.scale=inf"),
    bad("scale_nan", "positive finite", "workload.scale=nan"),
    bad("scale_zero", "positive finite", "workload.scale=0"),
    bad("scale_negative", "positive finite", "workload.scale=-2"),
    bad("scale_word", "workload.scale", "workload.scale=abc"),
    bad("window_zero", "window_days", "workload.window_days=0"),
    bad("window_negative", "window_days", "workload.window_days=-3"),
    bad("window_nan", "window_days", "workload.window_days=nan"),
    bad("window_start_negative", "window_start_days", "workload.window_start_days=-1"),
    bad("window_after_end", "starts after the log ends", "workload.window_start_days=1000"),
    bad("ceiling_zero", "max_runtime_s", "workload.max_runtime_s=0"),
    bad("bins_empty", "bins=[]", "bins=[]"),
    bad("bins_unsorted", "strictly increasing", "bins=[64,18]"),
    bad("bins_zero", "strictly increasing", "bins=[0,5]"),
    bad("bins_repeated", "strictly increasing", "bins=[5,5]"),
    bad("seed_negative", "seed=-1", "seed=-1"),
    bad("seed_too_big", "seed=4294967296", "seed=4294967296"),
    bad("seed_word", "seed", "seed=abc"),
    bad("cores_zero", "cores_per_node", "workload.cores_per_node=0"),
    bad("format_unknown", "unknown workload format", "workload.format=xml"),
    bad("policy_unknown", "Available options in 'policy'", "policy=nosuch"),
    bad("sched_unknown", "Available options in 'sched'", "sched=nosuch"),
    bad("topo_unknown", "Available options in 'topo'", "+topo=nosuch", "workload=atlas"),
    bad("topo_without_plus", "+topo=cab", "topo=cab", "workload=atlas"),
    # The QoS app's group, listed in the replay's --help: Hydra's "use +qos=small", then "Key 'qos' not in 'Config'".
    bad("qos_group_in_the_replay", "qos=small: the qos group belongs to the fattorus.qos app, not the replay: "
        "python -m fattorus.qos qos=small", "qos=small"),
    bad("qos_group_appended_in_the_replay", "+qos=small: the qos group belongs to the fattorus.qos app", "+qos=small"),
    bad("qos_setting_in_the_replay", "qos.seed=3: the qos group belongs to the fattorus.qos app, not the replay: "
        "python -m fattorus.qos qos.seed=3", "qos.seed=3"),
    bad("default_policy_on_a_torus", "(policy 'ta' is the default: choose one with policy=NAME)", "+topo=torus8",
        "workload=atlas"),
    bad("speedup_unknown", "Available options in 'speedup'", "+speedup=nosuch"),
    # A path with '=' in it got Hydra's "mismatched input '=' expecting <EOF>" alone (session 45).
    bad("log_path_with_equals", "'workload.path=a=b.swf' ('=' in its value): quote the value inside shell quotes",
        "workload.path=a=b.swf"),
    # A documented bin key the shipped scenarios leave out: "unknown setting ... lo, hi" (session 45).
    bad("speedup_bin_p_without_plus", "speedup.classes[0].bins[0].p: the shipped scenario's bins have no p",
        "+speedup=v2", "speedup.classes.0.bins.0.p=0.3"),
    bad("fit_log_nodes_zero", "workload.log_nodes=0: give the log's machine size", "workload.scale=fit",
        "workload.log_nodes=0"),
    bad("model_unknown_pattern", "unknown pattern 'foo' in speedup.patterns", "+speedup=model", "speedup.patterns='foo=1'"),
    # speedup.kind is the scenario file's: another word ran a plain replay labelled "model", and a
    # kind against the file ran the other kind under its name (v2's draws and the model, "v2").
    bad("speedup_kind_unknown", "speedup.kind='foo': bins (assumed factors) or model", "+speedup=model",
        "speedup.kind=foo"),
    bad("speedup_kind_model_on_bins", "speedup.kind=model with speedup=v2's assumed-factor bins", "+speedup=v2",
        "speedup.kind=model"),
    bad("speedup_kind_model_on_none", "speedup.kind=model: speedup=none is an assumed-factor scenario", "+speedup=none",
        "speedup.kind=model"),
    bad("speedup_kind_bins_on_model", "speedup.kind=bins: speedup=model is a flow-model scenario", "+speedup=model",
        "speedup.kind=bins"),
    bad("model_no_pattern", "speedup.patterns names no pattern", "+speedup=model", "speedup.patterns=','"),
    # A 21,276-node all-to-all on Blue Waters (452 million flows) ran out of memory: a traceback.
    bad("model_pattern_past_memory", "speedup.patterns: pattern 'all_to_all' over a job of", "workload=atlas",
        "+topo=bluewaters", "policy=to", "+speedup=model", "speedup.patterns='all_to_all=1'", "workload.window_days=0.5"),
    bad("speedup_class_without_bins", "has no bins", "+speedup=v1", "speedup.classes=[{min_nodes:1,bins:[]}]"),
    bad("speedup_bad_bin", "need 0 <= lo <= hi < 1", "+speedup=v1",
        "speedup.classes=[{min_nodes:1,bins:[{lo:0.5,hi:2.0}]}]"),
    bad("ta_param_unknown", "policy.params.bogus", "policy.params.bogus=1"),
    bad("ta_param_misspelt", "unknown parameter(s) ['t1_pod_ordr'] (did you mean 't1_pod_order'?)",
        "+policy.params.t1_pod_ordr=most"),
    bad("ta_param_misspelt_without_plus", "unknown setting 'policy.params.t1_pod_ordr' (did you mean "
        "'policy.params.t1_pod_order'?)", "policy.params.t1_pod_ordr=most"),
    bad("ta_order_bad", "t1_pod_order", "policy.params.t1_pod_order=sideways"),
    bad("key_unknown", "nosuchkey", "nosuchkey=1"),
    # A misspelt key without '+': the closest setting, not Hydra's "use +key=value" (session 27).
    bad("key_misspelt_without_plus", "unknown setting 'workload.windw_days' (did you mean 'window_days'?)",
        "workload.windw_days=1"),
    # A key misspelt in a config without a schema (the QoS app's): the closest key it holds.
    bad("qos_key_misspelt", "unknown setting 'qos.imbalanc' (did you mean 'imbalance'?)", "qos.imbalanc=0.1",
        cli="qos", files={}),
    # ... and in a machine's config (no schema either).
    bad("topo_key_misspelt", "unknown setting 'topo.nodes_per_lef' (did you mean 'nodes_per_leaf'?)",
        "topo.nodes_per_lef=2"),
    bad("top_key_misspelt_without_plus", "unknown setting 'polcy' (did you mean 'policy'?)", "polcy=ta"),
    # A setting of an appended group that is not chosen (was OmegaConf's traceback for speedup).
    bad("speedup_key_without_speedup", "speedup.comm_fraction=0.5: sets a speedup scenario's setting, and no speedup "
        "scenario is chosen", "speedup.comm_fraction=0.5"),
    bad("topo_key_without_topo", "topo.pods=4: sets a machine's setting, and no machine is chosen", "workload=atlas",
        "topo.pods=4"),
    bad("study_speedup_key_without_speedup", "no speedup scenario is chosen", "s.yaml", "speedup.comm_fraction=0.5",
        cli="study", files={"log.swf": _log(), "s.yaml": STUDY_HEAD + "arms:\n  - [seed=0]\n"}),
    bad("topo_radix_cannot_wire", "radix", "topo.pods=40"),
    # A tiny factor given as a number: every job one node, a run (its scale line divided by it: a traceback).
    Case("scale_tiny", W + ("workload.scale=1e-308",), 0, files={"log.swf": _log()}),
    # A list for a config group merged the configs (the last machine ran); run directories
    # outside a results/ directory wrote there (session 31 review).
    bad("topo_list", "+topo=[cab,pinot]: choose one topo config; a list merges them", "+topo=[cab,pinot]"),
    bad("run_dir_outside_results", "hydra.run.dir=mine: must lie under a results/ directory", "hydra.run.dir=mine"),
    bad("sweep_dir_outside_results", "hydra.sweep.dir=mine: must lie under a results/ directory", "--multirun",
        "hydra.sweep.dir=mine"),
    # A file where the run's folder goes said only "File exists" / "Not a directory" (session 45).
    bad("run_dir_is_a_file", "hydra.run.dir=results/f/sub: results/f is a file, not a folder", "hydra.run.dir=results/f/sub",
        files={"log.swf": _log(), "results/f": "x"}),
    bad("sweep_dir_is_a_file", "hydra.sweep.dir=results/f: results/f is a file, not a folder", "--multirun",
        "hydra.sweep.dir=results/f", files={"log.swf": _log(), "results/f": "x"}),
    # Hydra's other output paths wrote outside the results (session 42's exploratory run): the
    # config copy, a trial's folder, a log file.
    bad("output_subdir_leaving_the_run", "hydra.output_subdir=../../../evil: must be a folder inside the run's",
        "hydra.output_subdir=../../../evil"),
    bad("output_subdir_absolute", "hydra.output_subdir=/tmp/fattorus-evil: must be a folder inside the run's",
        "hydra.output_subdir=/tmp/fattorus-evil"),
    bad("sweep_subdir_leaving_the_sweep", "hydra.sweep.subdir=../../../evil: must be a folder inside the run's",
        "--multirun", "hydra.sweep.subdir=../../../evil"),
    bad("log_file_outside_results", "hydra.job_logging.handlers.file.filename=mine.log: must lie under a results/",
        "hydra.job_logging.handlers.file.filename=mine.log"),
    # Tracebacks and unnamed settings found the same day.
    bad("launcher_n_jobs_zero", "hydra.launcher.n_jobs=0: trials run at once, a whole number >= 1", "--multirun",
        "hydra.launcher.n_jobs=0"),
    bad("another_policys_parameter", "policy.params.relax_after_s: not a parameter of the chosen policy (it is "
        "policy=ta's)", "policy=to", "policy.params.relax_after_s=5"),
    bad("synthetic_key_with_a_log", "workload.synthetic.seed: workload.synthetic is empty (null)",
        "workload.synthetic.seed=1"),
    bad("synthetic_format_with_a_log", "format=synthetic generates its jobs and reads no log, but workload.path=",
        "workload.format=synthetic"),
    bad("synthetic_seed_negative", "workload.synthetic.seed=-1: a whole number", "workload=synthetic",
        "+topo=ft6x6", "workload.synthetic.seed=-1"),
    # session 47's walkthrough: wrong types were TypeError tracebacks (range checks, NumPy)
    bad("synthetic_max_nodes_text", "workload.synthetic.max_nodes='abc' (an integer)", "workload=synthetic",
        "+topo=ft6x6", "workload.synthetic.max_nodes=abc"),
    bad("synthetic_n_jobs_fraction", "workload.synthetic.n_jobs=1.5 (an integer)", "workload=synthetic",
        "+topo=ft6x6", "workload.synthetic.n_jobs=1.5"),
    bad("synthetic_sigma_null", "workload.synthetic.runtime_sigma=None (a number)", "workload=synthetic",
        "+topo=ft6x6", "workload.synthetic.runtime_sigma=null"),
    bad("synthetic_too_many_jobs", "workload.synthetic.n_jobs=10000000000 (n_jobs: 1 ..", "workload=synthetic",
        "+topo=ft6x6", "workload.synthetic.n_jobs=10000000000"),
    # Paths that would leave the results root: refused or made one path component.
    # Hydra's flags: two modes, or a flag between overrides (its parser left the rest over, in a usage block).
    bad("two_mode_flags", "--multirun and --cfg cannot be given together", "--multirun", "--cfg", "job"),
    bad("flag_between_overrides", "put -m before the overrides", "-m", "seed=0"),
    # A value Hydra's grammar cannot read: a '~' a script left unexpanded (was Hydra's lexer's name).
    bad("tilde_path", "give the full path (a '~' left unexpanded)", "workload.path=~/x.swf"),
    bad("study_dotdot", "cannot name a results directory", "--multirun", "study=../../x"),
    bad("study_absolute", "cannot name a results directory", "--multirun", "study=/tmp/fattorus-escape"),
    Case("workload_name_dotdot", W + ("workload.name=../../../escape",), 0, files={"log.swf": _log()}),
    # A multirun over two logs named with '..' and '/' (each trial one path component), given W&B
    # settings too, which name no trial folder: they change where a run is logged, not what it
    # computes (test_wandb_settings_name_no_trial_folder).
    Case("multirun_value_slashes_and_wandb_settings",
         ("--multirun", "hydra.launcher.n_jobs=1", "logger=wandb", "logger.tags=[t]", "logger.mode=disabled",
          "workload.path=UP,HERE") + W[:2] + W[3:], 0, files={"log.swf": _log()}, setup="copy_log_up"),
    # Faults of the environment: one line, exit 1, nothing counted as done.
    bad("results_read_only", "ermission denied", rc=1, setup="read_only_results"),
    bad("disk_full", "cannot write the results", rc=1, setup="disk_full"),
    # Other command lines.
    bad("interference_not_a_run", "not a directory", "nosuchdir", cli="interference"),
    bad("interference_other_topo", "another machine", "RUN", "--topo", "cab", cli="interference", setup="run_dir"),
    bad("interference_unknown_topo", "--topo: unknown topology 'nosuch'", "RUN", "--topo", "nosuch", cli="interference",
        setup="run_dir"),
    bad("interference_bad_mix", "names no pattern", "RUN", "--pattern-mix", ",", cli="interference", setup="run_dir"),
    bad("study_file_missing", "nosuch.yaml", "nosuch.yaml", cli="study"),
    # Slurm's launcher off a cluster (no srun here, nor in CI), or on a single run: one line,
    # before Hydra makes a folder.
    bad("slurm_without_srun", "hydra/launcher=slurm needs a Slurm cluster, and this machine has no srun", "--multirun",
        "hydra/launcher=slurm", "study=s"),
    bad("slurm_single_run", "hydra/launcher=slurm launches a multirun's trials: add --multirun",
        "hydra/launcher=slurm"),
    bad("study_slurm_without_srun", "needs a Slurm cluster", "s.yaml", "hydra/launcher=slurm", cli="study",
        files={"log.swf": _log(), "s.yaml": STUDY_HEAD + "arms:\n  - [seed=0]\n"}),
    bad("study_bad_study_name", "argument 'study=../x': study='../x' cannot name a results directory", "s.yaml",
        "study=../x", cli="study", files={"log.swf": _log(), "s.yaml": STUDY_HEAD + "arms:\n  - [seed=0]\n"}),
    bad("study_nan_window", "argument 'workload.window_days=nan': workload.window_days must be a positive number",
        "s.yaml", "workload.window_days=nan", cli="study",
        files={"log.swf": _log(), "s.yaml": STUDY_HEAD + "arms:\n  - [seed=0]\n"}),
    bad("study_plus_topo_again", "argument '+topo=ft6': the study file adds topo already (+topo=...); override it with "
        "topo=ft6 (no '+')", "s.yaml", "+topo=ft6", cli="study",
        files={"log.swf": _log(), "s.yaml": STUDY_HEAD + "arms:\n  - [seed=0]\n"}),
    bad("study_file_slurm_without_srun", "needs a Slurm cluster", "s.yaml", cli="study",
        files={"log.swf": _log(), "s.yaml": STUDY_HEAD + "arms:\n  - [seed=0, hydra/launcher=slurm]\n"}),
    bad("report_not_results", "not a directory", "nosuchdir", cli="report"),
    # A study is checked whole before its first block runs (nothing may run: see test_case).
    bad("study_typo_in_last_arm", "s.yaml: arms[1][0]: unknown setting 'sede' (did you mean 'seed'?)", "s.yaml", cli="study",
        files={"log.swf": _log(), "s.yaml": STUDY_HEAD + "arms:\n  - [seed=0]\n  - [sede=0]\n"}),
    bad("study_swept_bad_value", "arms[0][1] (seed=abc)", "s.yaml", cli="study",
        files={"log.swf": _log(), "s.yaml": STUDY_HEAD + "arms:\n  - [policy=to, \"seed=0,abc\"]\n"}),
    bad("study_entry_is_mapping", "cases[0][0]: {'policy': 'to'} is a YAML mapping", "s.yaml", cli="study",
        files={"s.yaml": "study: s\ncases:\n  - [policy: to]\narms:\n  - [seed=0]\n"}),
    bad("study_two_overrides_in_one", "arms[0][0]: '+topo=ft6 workload=synthetic' holds whitespace", "s.yaml",
        cli="study", files={"s.yaml": "study: s\ncases: [[policy=to]]\narms:\n  - [\"+topo=ft6 workload=synthetic\"]\n"}),
    bad("study_comma_split_entry", "cases[0][1]: 2 is not a 'key=value' string", "s.yaml", cli="study",
        files={"s.yaml": "study: s\ncases:\n  - [workload.scale=1,2]\narms: [[seed=0]]\n"}),
    bad("study_name_dotdot", "s.yaml: field 'study': study='../evil'", "s.yaml", cli="study",
        files={"s.yaml": "study: ../evil\ncases: [[policy=to]]\narms: [[seed=0]]\n"}),
    bad("study_qos_unknown_option", "cases[1][0]: In 'qos_app': Could not find 'qos/smal'", "s.yaml", cli="study",
        files={"s.yaml": "study: q\napp: fattorus.qos\ncases: [[qos=small], [qos=smal]]\narms: [[]]\n"}),
    bad("study_bad_extra_argument", "argument 'sede=1'", "s.yaml", "sede=1", cli="study",
        files={"s.yaml": "study: s\ncases: [[policy=to]]\narms: [[seed=0]]\n"}),
    # The Monte Carlo table's command line.
    bad("montecarlo_misspelt_machine", "unknown topology 'pinto'", "pinto", cli="kernels.montecarlo"),
    # A YAML path that is not there: its name (it read "unknown topology" with conf/topo's list)
    bad("montecarlo_missing_machine_file", "nosuch.yaml: no such file", "nosuch.yaml", cli="kernels.montecarlo"),
    bad("montecarlo_extra_argument", "unrecognized arguments: extra", "ft6", "extra", cli="kernels.montecarlo"),
    bad("montecarlo_yaml_missing_keys", "missing key(s)", "m.yaml", cli="kernels.montecarlo",
        files={"m.yaml": "kind: fattree\nname: m\n"}),
    bad("montecarlo_yaml_not_a_mapping", "m.yaml: must be a mapping of settings", "m.yaml", cli="kernels.montecarlo",
        files={"m.yaml": "- a\n- b\n"}),
    bad("montecarlo_yaml_a_number", "m.yaml: must be a mapping of settings (name: ..., kind: ...), not a single value",
        "m.yaml", cli="kernels.montecarlo", files={"m.yaml": "5\n"}),
    bad("montecarlo_yaml_unparsed", "m.yaml:3:1: found duplicate key pods", "m.yaml", cli="kernels.montecarlo",
        files={"m.yaml": "pods: 1\nname: m\npods: 2\n"}),
    Case("montecarlo_machine_smaller_than_padding", ("m.yaml",), 0, cli="kernels.montecarlo",
         files={"m.yaml": "kind: fattree\nname: m\nradix: 4\nnodes_per_leaf: 2\nleaves_per_pod: 2\npods: 2\n"}),
    # The benchmarks: --out and --only are refused before any section runs.
    bad("bench_out_is_a_file", "--out results/notadir.txt: results/notadir.txt is a file", "--only", "torus", "--quick",
        "--out", "results/notadir.txt", cli="bench", files={"results/notadir.txt": "x"}),
    bad("bench_out_under_a_file", "results/notadir.txt is a file", "--only", "torus", "--quick", "--out",
        "results/notadir.txt/sub", cli="bench", files={"results/notadir.txt": "x"}),
    bad("bench_out_outside_results", "--out elsewhere/bench: must be a results/ directory or lie under one", "--only",
        "torus", "--quick", "--out", "elsewhere/bench", cli="bench"),
    bad("bench_only_comma", "--only ',' names no section", "--only", ",", "--quick", "--out", "results/bench",
        cli="bench"),
    bad("bench_only_empty", "--only '' names no section", "--only=", "--quick", "--out", "results/bench", cli="bench"),
    # the choices as --only takes them (it printed a Python list here, a comma list above)
    bad("bench_only_unknown", "unknown section(s) foo; choices: kernels,replay,", "--only", "foo", "--quick", "--out",
        "results/bench", cli="bench"),
    # Usage errors of every argparse entry point: one line (no usage block), exit 2.
    bad("usage_interference", "unrecognized arguments: --nosuch", "RUN", "--nosuch", cli="interference"),
    bad("usage_report", "unrecognized arguments: --nosuch", "x", "--nosuch", cli="report"),
    bad("usage_compare", "the following arguments are required: results", cli="app.compare"),
    bad("usage_network_study", "argument --workloads: invalid int value: 'many'", "--workloads", "many",
        cli="app.network_study"),
    bad("network_study_on_a_torus", "--machine bluewaters: a torus3d machine; the network study compares ta with to on "
        "fat-trees only", "--machine", "bluewaters", cli="app.network_study"),
    bad("network_study_unknown_machine", "--machine pinto: unknown machine; the fat-trees of conf/topo: cab, ft44, ",
        "--machine", "pinto", cli="app.network_study"),
    bad("usage_dragonfly_study", "unrecognized arguments: --nosuch", "--nosuch", cli="app.dragonfly_study"),
    bad("dragonfly_study_negative_valiant", "--valiant -1: must be >= 0", "--valiant", "-1", cli="app.dragonfly_study"),
    bad("usage_tune", "the following arguments are required", cli="tune"),
    bad("usage_bench", "unrecognized arguments: --nosuch", "--nosuch", cli="bench"),
]


# A full disk, as a process sees it: writes past 16 KiB fail with EFBIG (util-linux prlimit;
# CPython ignores SIGXFSZ, so the write fails instead of killing the process). No fork from
# this multithreaded test process: the limit is set by the command, not a preexec_fn.
FULL_DISK = ["prlimit", f"--fsize={16 * 1024}", "--"]


# Root ignores directory permissions unless it drops the capability to (util-linux setpriv).
RESPECT_PERMISSIONS = ["setpriv", "--bounding-set", "-dac_override,-dac_read_search", "--"] if os.geteuid() == 0 else []


def _prepare(case: Case, cwd: Path) -> tuple[list[str], dict]:
    """Write the case's files and do its set-up; returns the final arguments and Popen kwargs."""
    for name, content in (case.files or {}).items():
        path = cwd / name
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_bytes(content if isinstance(content, bytes) else content.encode())
    args = [a.replace("workload.path=log", f"workload.path={cwd}/log").replace("workload.path=no-such", f"workload.path={cwd}/no-such")
            for a in case.args]
    if "--multirun" in args:  # Hydra wants its flags first
        args = ["--multirun", *(a for a in args if a != "--multirun")]
    kwargs: dict = {}
    if case.setup == "read_only_results":
        (cwd / "results").mkdir()
        (cwd / "results").chmod(0o555)
        kwargs["prefix"] = RESPECT_PERMISSIONS
    elif case.setup == "disk_full":
        kwargs["prefix"] = FULL_DISK
        # A real log on Cab: tables far above the file size limit.
        args = ["workload=atlas", "workload.window_days=10", "+topo=cab", "progress=false"]
    elif case.setup == "copy_log_up":
        # A value with '..' and '/' in a multirun: its trial directory must stay one component.
        (cwd.parent / f"{cwd.name}-log.swf").write_text(_log())
        args = [a.replace("UP", f"{cwd}/../{cwd.name}-log.swf").replace("HERE", f"{cwd}/log.swf") for a in args]
    elif case.setup == "run_dir":  # the replay run of :func:`_make_shared_run`
        args = [str(cwd.parent / SHARED_RUN / "results" / "run") if a == "RUN" else a for a in args]
    return args, kwargs


#: The folder, beside the cases', of the one replay run the ``run_dir`` cases read (each of
#: them is refused, reading it only): made once before the cases, not once per case.
SHARED_RUN = "shared-run"


def _make_shared_run(base: Path) -> None:
    cwd = base / SHARED_RUN
    cwd.mkdir()
    (cwd / "log.swf").write_text(_log())
    made = forkcli.run("fattorus.sweep", [f"hydra.run.dir={cwd / 'results' / 'run'}", *W[:2],
                                          f"workload.path={cwd}/log.swf", *W[3:]],
                       cwd=cwd, env=command_env(), timeout=300)
    assert made.returncode == 0, made.stderr
    assert (cwd / "results" / "run" / "summary.json").is_file()


def _snapshot(root: Path) -> set[str]:
    return {str(p.relative_to(root)) for p in root.rglob("*")}


def run_case(case: Case, base: Path) -> dict:
    cwd = base / case.id
    cwd.mkdir()
    args, kwargs = _prepare(case, cwd)
    before_cwd, before_base = _snapshot(cwd), {p.name for p in base.iterdir()}
    env = command_env()
    prefix = kwargs.pop("prefix", [])
    if prefix:  # a process limit or dropped capability, set by the command that starts Python
        out = subprocess.run([*prefix, sys.executable, "-m", f"fattorus.{case.cli}", *args], cwd=cwd,
                             capture_output=True, text=True, timeout=600, env=env, **kwargs)
    else:
        out = forkcli.run(f"fattorus.{case.cli}", args, cwd=cwd, env=env, timeout=600)
    if case.setup == "read_only_results":
        (cwd / "results").chmod(0o755)
    created = _snapshot(cwd) - before_cwd
    outside = sorted(c for c in created if not c.startswith("results"))
    # Other cases run beside this one: their folders are expected in the base folder.
    expected = {c.id for c in CASES} | {f"{c.id}-log.swf" for c in CASES}
    new_in_base = sorted({p.name for p in base.iterdir()} - before_base - expected)
    found = sorted((cwd / "results").rglob("summary.json")) if (cwd / "results").is_dir() else []
    summaries = [json.loads(p.read_text()) for p in found]
    return dict(rc=out.returncode, stderr=out.stderr, stdout=out.stdout, outside=outside + new_in_base, summaries=summaries,
                summary_dirs=[p.parent.relative_to(cwd / "results").parts for p in found])


@pytest.fixture(scope="module")
def results(tmp_path_factory) -> dict[str, dict]:
    base = tmp_path_factory.mktemp("bad")
    _make_shared_run(base)
    with ThreadPoolExecutor(max_workers=2) as pool:
        done = pool.map(lambda c: (c.id, run_case(c, base)), CASES)
        return dict(done)


def test_the_table_is_large_enough():
    assert len(CASES) >= 60 and len({c.id for c in CASES}) == len(CASES)


@pytest.mark.parametrize("case", CASES, ids=[c.id for c in CASES])
def test_case(results, case: Case):
    r = results[case.id]
    err_lines = [line for line in r["stderr"].splitlines() if line.strip()]
    assert "Traceback" not in r["stderr"] + r["stdout"], r["stderr"][-2000:]
    assert r["rc"] == case.rc, r["stderr"][-2000:]
    assert r["outside"] == [], f"written outside the results root: {r['outside']}"
    if case.rc != 0:
        # One error line; the only other line a run may print first is the log's skip notice.
        errors = [line for line in err_lines if "dirty line" not in line]
        assert len(errors) == 1, r["stderr"]
        assert case.words in errors[0], errors
        if case.cli in ("sweep", "study"):  # nothing is counted as done: no summary.json anywhere
            assert r["summaries"] == []
    elif case.skips is not None:
        (summary,) = r["summaries"]
        wl = summary["config"]["workload"]
        assert wl["parse_skipped_by_reason"] == case.skips
        assert wl["parse_skipped"] == sum(case.skips.values())
        first = wl["parse_skipped_first"][0]
        assert first["reason"] == case.words and first["line"] >= 3 and first["file"].endswith("log.swf")
        skip_lines = [line for line in err_lines if "dirty line" in line]
        assert len(skip_lines) == 1 and case.words in skip_lines[0]
        assert f"skipped {sum(case.skips.values())} dirty line(s): " in skip_lines[0]
        assert all(f"{n} {reason}" in skip_lines[0] for reason, n in case.skips.items())  # each reason, counted
        # The dirty line is not replayed: every clean job is read.
        assert summary["counts"]["read"] == (1 if case.id == "custom_ceiling" else len(GOOD))
    elif case.cli == "sweep":  # the other command lines write no summary.json
        assert r["summaries"], r["stderr"][-2000:]
        assert case.words in r["stderr"], r["stderr"][-2000:]  # a warning the run gives, where the case names one


@pytest.mark.parametrize("line, reason", [(line, reason) for _, line, reason in DIRTY], ids=[d[0] for d in DIRTY])
def test_a_dirty_line_is_skipped_for_its_reason(tmp_path, line: str, reason: str):
    """Each dirty line alone in a clean log: skipped for its reason, at its line, every clean
    job read (the command line's report of the same reader: the ``all_dirty_lines`` case)."""
    from fattorus import workload

    path = tmp_path / "log.swf"
    path.write_text(_log(line))
    wl = workload.load(path, cores_per_node=1)
    assert wl.skipped.counts == {reason: 1}
    (entry,) = wl.skipped.entries
    assert entry.reason == reason and entry.line == 3 + len(GOOD) and entry.file == str(path)
    assert wl.jobs.height == len(GOOD)


def test_times_at_the_ceiling_are_read(tmp_path):
    """The ceiling is the longest time a clean line may hold (366 days by default): a run
    time and a requested time of exactly that are read; one second more is skipped
    (``runtime_ceiling`` above)."""
    from fattorus import workload

    path = tmp_path / "log.swf"
    path.write_text(_log(swf_line(90, 500, CEILING_S, 2, req=CEILING_S)))
    wl = workload.load(path, cores_per_node=1)
    assert wl.skipped.counts == {} and wl.jobs.height == len(GOOD) + 1


def test_a_log_without_header_whose_first_line_is_dirty_is_still_a_log(tmp_path):
    """A headerless log is recognised from its lines, not its first line alone: a garbled
    first line is one counted skip, and every clean line after it is read."""
    from fattorus import workload

    path = tmp_path / "log.swf"
    path.write_text("garbled first line\n" + "".join(GOOD))
    wl = workload.load(path, cores_per_node=1)
    assert wl.skipped.counts == {"wrong field count": 1} and wl.jobs.height == len(GOOD)


def test_paths_with_separators_stay_inside_their_directory(results):
    """The sanitised cases still wrote complete runs under results/ and each run directory is
    a single component right where runs go: ``runs/<run>`` for a single run, ``sweeps/<sweep>/
    <trial>`` for each multirun trial (no sub-folders made from the value's separators)."""
    single, multi = results["workload_name_dotdot"], results["multirun_value_slashes_and_wandb_settings"]
    assert len(single["summary_dirs"]) == 1 and len(multi["summary_dirs"]) == 2, (single, multi)
    for summary in single["summaries"] + multi["summaries"]:
        assert summary["counts"]["replayed"] > 0
    (run,) = single["summary_dirs"]
    assert len(run) == 2 and run[0] == "runs" and "escape" in run[1] and not run[1].startswith("."), run
    for trial in multi["summary_dirs"]:
        assert len(trial) == 3 and trial[0] == "sweeps" and "workload.path=" in trial[2], trial
        assert not trial[2].startswith("."), trial


def test_a_path_component_holds_no_separator():
    from fattorus.app.config import path_component

    import hashlib

    def tagged(escaped: str, value: str) -> str:  # an escaped value ends in ~ and its hash
        return escaped + "~" + hashlib.sha256(value.encode()).hexdigest()[:8]

    assert path_component("a/../b") == tagged("a_.._b", "a/../b")
    assert path_component("../x") == tagged("_.._x", "../x")
    assert path_component("a\\b") == tagged("a_b", "a\\b")
    assert path_component(".hidden") == tagged("_.hidden", ".hidden")
    assert path_component("") == tagged("_", "")
    assert path_component("seed=0,workload.path=log.swf") == "seed=0,workload.path=log.swf"  # nothing escaped


def test_values_that_escape_alike_get_their_own_folders():
    """``results/dirty/x.swf`` and ``results/dirty_x.swf`` made one folder name: in one
    multirun one trial's results replaced the other's, and a later run skipped the other log
    as finished (session 27)."""
    from fattorus.app.config import path_component

    names = [path_component(v) for v in ("workload.path=d/x.swf", "workload.path=d_x.swf", "workload.path=d\\x.swf",
                                         ".a", "_.a", "", "_")]
    assert len(set(names)) == len(names) and not any("/" in n or "\\" in n for n in names)


def test_a_configuration_error_ends_before_jax_loads(tmp_path):
    """A run refused by its settings check never imports JAX (~0.6 s of each such error, the
    table's cases included): the speedup, APH and sampling kernels are jitted at first use
    (:mod:`fattorus.lazyjit`) and a fat-tree checks its wiring without its routing module.
    The case refused last in the check: a bad policy parameter, after the machine, the
    scenario and the log's window were read."""
    (tmp_path / "log.swf").write_text(_log())
    args = [a.replace("workload.path=log", f"workload.path={tmp_path}/log") for a in W]
    code = ("import runpy, sys\n"
            f"sys.argv = ['fattorus.sweep', *{args + ['policy.params.t1_pod_order=sideways']!r}]\n"
            "try:\n"
            "    runpy.run_module('fattorus.sweep', run_name='__main__', alter_sys=True)\n"
            "except SystemExit as end:\n"
            "    print(end.code, 'jax' in sys.modules)\n")
    out = subprocess.run([sys.executable, "-c", code], cwd=tmp_path, capture_output=True, text=True, timeout=120)
    assert "t1_pod_order" in out.stderr and out.stdout.split() == ["2", "False"], (out.stdout, out.stderr)


@pytest.mark.parametrize("machine", [("+topo=ft6x6", "policy=ta", "+speedup=v2"), ("+topo=torus4", "policy=first_fit"),
                                     ("+topo=ft6x6", "policy=to", "+speedup=model")],
                         ids=["fat-tree-v2", "torus", "fat-tree-model"])
def test_a_plain_speedup_or_model_run_never_loads_jax(tmp_path, machine):
    """A whole replay, without speedups, under a speedup scenario (its draws made on the host
    with JAX's bits) or with run times from the flow model (host draws, host routes, the
    compiled solvers), its APH from the family's host rule, finishes and writes its results
    without importing JAX (~1 s and ~100 MB of each such process: single runs, Slurm array
    tasks, the main command). A run that loads JAX anyway would print True."""
    (tmp_path / "log.swf").write_text(_log())
    args = [a.replace("workload.path=log", f"workload.path={tmp_path}/log") for a in W if not a.startswith("+topo")]
    args += [*machine, f"hydra.run.dir={tmp_path}/results/run"]
    code = ("import runpy, sys\n"
            f"sys.argv = ['fattorus.sweep', *{args!r}]\n"
            "try:\n"
            "    runpy.run_module('fattorus.sweep', run_name='__main__', alter_sys=True)\n"
            "except SystemExit as end:\n"
            "    print('exit', end.code)\n"
            "print('jax' in sys.modules)\n")
    out = subprocess.run([sys.executable, "-c", code], cwd=tmp_path, capture_output=True, text=True, timeout=120)
    assert out.stdout.split()[-1:] == ["False"] and "exit" not in out.stdout, (out.stdout, out.stderr)
    assert (tmp_path / "results" / "run" / "jobs.parquet").is_file()


def _sweep(cwd: Path, *args: str) -> subprocess.CompletedProcess:
    return forkcli.run("fattorus.sweep", args, cwd=cwd, env=command_env(), timeout=600)


def test_a_multiruns_trials_in_one_process_warn_of_an_ignored_setting_once(tmp_path):
    """Three trials run in one process (``hydra.launcher.n_jobs=1``) with a setting their
    scenario never reads: one warning line, not one a trial (session 42's left item)."""
    (tmp_path / "log.swf").write_text(_log())
    args = ["--multirun", "hydra.launcher.n_jobs=1", "seed=0,1,2", "+speedup=v2", "speedup.comm_fraction=0.5",
            *(a.replace("workload.path=log", f"workload.path={tmp_path}/log") for a in W)]
    out = _sweep(tmp_path, *args)
    assert out.returncode == 0, out.stderr
    assert out.stderr.count("speedup.comm_fraction=0.5 is ignored with speedup=v2") == 1, out.stderr
    assert out.stdout.count("[done]") == 3, out.stdout


def test_two_single_runs_in_the_same_second_keep_both_results(tmp_path):
    (tmp_path / "log.swf").write_text(_log())
    args = [a.replace("workload.path=log", f"workload.path={tmp_path}/log") for a in W]
    env = dict(os.environ)  # PYTHONPATH: the checkout first (tests/conftest.py)
    procs = [subprocess.Popen([sys.executable, "-m", "fattorus.sweep", *args], cwd=tmp_path, env=env,
                              stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True) for _ in range(2)]
    outs = [p.communicate(timeout=600) for p in procs]
    assert [p.returncode for p in procs] == [0, 0], outs
    runs = sorted((tmp_path / "results" / "runs").iterdir())
    assert len(runs) == 2
    for run in runs:
        summary = json.loads((run / "summary.json").read_text())
        assert summary["counts"]["replayed"] == len(GOOD)
        assert (run / ".fattorus-run").read_text().strip() in {str(p.pid) for p in procs}


def test_a_refused_run_in_a_named_directory_leaves_it_free_for_the_corrected_command(tmp_path):
    """A single run into ``hydra.run.dir=DIR`` refused for its settings (here a log whose
    every job was cancelled before it started) takes its stubs away again, and DIR too when
    the run made it: the corrected command into the same DIR runs (it was refused as
    "already holds another run")."""
    cancelled = HEADER + "".join(swf_line(i, i * 10, -1, 4, status=5) for i in range(1, 4))
    (tmp_path / "bad.swf").write_text(cancelled)
    (tmp_path / "good.swf").write_text(_log())
    run_dir = tmp_path / "results" / "mine"
    common = [f"hydra.run.dir={run_dir}", *W[:2], *W[3:]]
    first = _sweep(tmp_path, *common, f"workload.path={tmp_path}/bad.swf")
    assert first.returncode == 2 and "no job was replayed" in first.stderr, first.stderr
    assert not run_dir.exists()  # made by the refused run: it goes again (was left empty)
    second = _sweep(tmp_path, *common, f"workload.path={tmp_path}/good.swf")
    assert second.returncode == 0, second.stderr
    assert json.loads((run_dir / "summary.json").read_text())["counts"]["replayed"] == len(GOOD)
    # A directory holding the user's own files: the stubs go, the user's file stays.
    mine = tmp_path / "results" / "mine2"
    mine.mkdir()
    (mine / "notes.txt").write_text("mine")
    common = [f"hydra.run.dir={mine}", *W[:2], *W[3:]]
    assert _sweep(tmp_path, *common, f"workload.path={tmp_path}/bad.swf").returncode == 2
    assert sorted(p.name for p in mine.iterdir()) == ["notes.txt"]
    assert _sweep(tmp_path, *common, f"workload.path={tmp_path}/good.swf").returncode == 0
    # An empty directory that was there before the run stays, empty.
    empty = tmp_path / "results" / "mine3"
    empty.mkdir()
    assert _sweep(tmp_path, f"hydra.run.dir={empty}", *W[:2], *W[3:], f"workload.path={tmp_path}/bad.swf").returncode == 2
    assert list(empty.iterdir()) == []


def test_a_refused_run_takes_away_only_the_folders_it_made(tmp_path):
    """A first run refused in a fresh folder leaves no ``results/runs/`` behind; a folder that
    was there before the run stays, also in the app's own place (the review of session 43:
    ``results/runs/mine``, made by the user, was removed)."""
    (tmp_path / "bad.swf").write_text(HEADER + "".join(swf_line(i, i * 10, -1, 4, status=5) for i in range(1, 4)))
    args = [*W[:2], *W[3:], f"workload.path={tmp_path}/bad.swf"]
    fresh = tmp_path / "fresh"
    fresh.mkdir()
    assert _sweep(fresh, *args).returncode == 2
    assert list(fresh.iterdir()) == []  # results/runs/<run> and the results/runs/ it made: gone
    mine = tmp_path / "results" / "runs" / "mine"
    mine.mkdir(parents=True)
    assert _sweep(tmp_path, f"hydra.run.dir={mine}", *args).returncode == 2
    assert mine.is_dir() and list(mine.iterdir()) == []


def test_resume_reruns_damaged_trials_with_a_warning(tmp_path):
    (tmp_path / "log.swf").write_text(_log())
    args = ["--multirun", "hydra.launcher.n_jobs=1", "seed=0,1,2,3",
            *(a.replace("workload.path=log", f"workload.path={tmp_path}/log") for a in W)]
    assert _sweep(tmp_path, *args).returncode == 0
    trials = sorted(d for d in (tmp_path / "results" / "sweeps" / "adhoc").iterdir() if d.is_dir())
    assert len(trials) == 4
    jobs = trials[0] / "jobs.parquet"
    jobs.write_bytes(jobs.read_bytes()[:100])  # truncated table
    (trials[1] / "summary.json").write_text("{not json")  # damaged summary
    (trials[3] / "utilization.parquet").write_bytes(b"")  # emptied table
    again = _sweep(tmp_path, *args)
    assert again.returncode == 0 and "Traceback" not in again.stderr
    warnings = [line for line in again.stderr.splitlines() if "damaged trial" in line]
    assert sorted(w.split(":")[2].strip() for w in warnings) == sorted(str(t) for t in (trials[0], trials[1], trials[3]))
    assert again.stdout.count("[skip]") == 1 and again.stdout.count("[done]") == 3
    for t in trials:  # every trial is whole again
        summary = json.loads((t / "summary.json").read_text())
        assert summary["files"]["jobs.parquet"]["rows"] == summary["counts"]["replayed"] == len(GOOD)


def test_sacct_steps_are_recorded_so_line_counts_add_up(results):
    """summary.json records the sacct job-step rows (neither jobs nor dirty lines): lines =
    jobs read + dirty lines + steps (session 27 review)."""
    (summary,) = results["sacct_steps"]["summaries"]
    wl = summary["config"]["workload"]
    assert (wl["lines"], wl["parse_skipped"], wl["parse_steps"], summary["counts"]["read"]) == (3, 0, 2, 1)


def test_wandb_settings_name_no_trial_folder(results):
    """``logger.tags=[t]`` in a multirun named every trial folder after it, so changing a tag
    re-ran every replay into new folders (session 27 review). The multirun over two logs of
    ``multirun_value_slashes_and_wandb_settings`` gives them."""
    dirs = results["multirun_value_slashes_and_wandb_settings"]["summary_dirs"]
    assert len(dirs) == 2 and all("logger" not in part for d in dirs for part in d), dirs


@pytest.mark.parametrize("argv, words", [
    (["--multirun", "--cfg", "job"], "--multirun and --cfg cannot be given together"),
    (["a=1", "-m", "b=2"], "put -m before the overrides"),
    (["a=1", "--cfg", "job", "b=2"], "put --cfg job before the overrides"),  # the flag's value goes with it
    (["a=1", "-cn", "other", "b=2"], "put -cn other before the overrides"),
    (["--cfg", "job", "a=1", "--", "b=2"], None),  # '--' ends the flags: Hydra takes the rest
    (["--help", "--cfg", "job", "-m"], None),  # Hydra prints its help
    (["-m", "a=1,2", "~logger", "+x=-1"], None),
    (["a=1", "b=2", "--multirun"], None),  # a flag last: Hydra takes it
])
def test_hydra_flag_order(argv, words):
    """The flag checks before Hydra (``cli.flag_problem``): by hand, what Hydra's own parser
    refuses with a traceback or a usage block, and what it accepts."""
    from fattorus.app import cli

    got = cli.flag_problem(argv)
    assert (got is None) if words is None else (got is not None and words in got), got


def test_a_misspelt_key_names_the_key_the_lookup_failed_on(tmp_path):
    """``qos.sytem.radix``: the closest key to ``sytem`` (was "settings there" without a hint,
    the last part ``radix`` looked up); ``polcy.name``: ``policy``."""
    env = command_env()
    qos = forkcli.run("fattorus.qos", ["--cfg", "job", "qos.sytem.radix=4"], cwd=tmp_path, env=env, timeout=120)
    assert qos.returncode == 2 and "unknown setting 'qos.sytem' (did you mean 'system'?)" in qos.stderr, qos.stderr
    sweep = forkcli.run("fattorus.sweep", ["--cfg", "job", "polcy.name=ta"], cwd=tmp_path, env=env, timeout=120)
    assert sweep.returncode == 2 and "unknown setting 'polcy' (did you mean 'policy'?)" in sweep.stderr, sweep.stderr
    assert not any(tmp_path.iterdir())


def test_cfg_hydra_resolve_says_why_its_interpolations_fail(tmp_path):
    """``--cfg hydra --resolve``: Hydra resolves its node alone, so the run directory's name
    (``${policy.name}``, ...) is "not found"; the line says so and names ``--cfg all``, which
    works (a session-45 exploratory report: the bare "Interpolation key 'policy.name' not found")."""
    env = command_env()
    for flags in (["--cfg", "hydra", "--resolve"], ["-c", "hydra", "--resolve"]):
        out = forkcli.run("fattorus.sweep", [*flags, "+topo=pinot"], cwd=tmp_path, env=env, timeout=120)
        lines = out.stderr.strip().splitlines()
        assert out.returncode == 2 and len(lines) == 1 and "use --cfg all --resolve" in lines[0], out.stderr
    out = forkcli.run("fattorus.sweep", ["--cfg", "all", "--resolve", "+topo=pinot"], cwd=tmp_path, env=env,
                      timeout=120)
    assert out.returncode == 0 and "pinot-ta-easy" in out.stdout, out.stderr
    out = forkcli.run("fattorus.sweep", ["--cfg", "job", "+topo=pinot", "policy=nope"], cwd=tmp_path, env=env,
                      timeout=120)
    assert out.returncode == 2 and "--cfg all" not in out.stderr  # only that failure gets the hint
    assert not any(tmp_path.iterdir())


def test_tune_refuses_an_unknown_machine_before_any_progress_line(tmp_path):
    """``--topo caab``: one line on stderr and nothing on stdout (its "loading ..." line came
    first)."""
    out = forkcli.run("fattorus.tune", ["--name", "x", "--topo", "caab", "--workload", "atlas", "--train", "0:1",
                                         "--test", "1:2", "--trials", "1"], cwd=tmp_path, env=command_env(),
                      timeout=120)
    assert out.returncode == 2 and out.stdout == "", out.stdout
    assert out.stderr.count("\n") == 1 and "--topo caab: unknown topology 'caab'" in out.stderr
    assert not any(tmp_path.iterdir())
