"""The shared front door of the Hydra apps: every user mistake is one line, never a traceback.

:func:`run_main` runs a ``@hydra.main`` function and maps what escapes it to one line on
stderr and an exit code: a configuration mistake (the app's own error types, Hydra's and
OmegaConf's) exits 2; an environment failure (the app's run errors, ``OSError``) exits 1;
Ctrl-C exits 130 with a line saying that finished work is kept.
"""

from __future__ import annotations

import os
import shutil
import sys
from collections.abc import Callable, Iterable, Sequence
from pathlib import Path
from typing import Any, NoReturn


def squash(text: Any) -> str:
    """One line of an error message (Hydra appends its config search path to "could not find"
    errors: noise for a user)."""
    text = str(text).split("Config search path")[0].split(" full_key:")[0]
    return " ".join(text.replace("ValueError raised while resolving interpolation: ", "").split())


class Refusal(BaseException):
    """A configuration mistake found by a Hydra callback (:mod:`fattorus.app.callbacks`):
    Hydra turns an ``Exception`` escaping a callback into a warning and carries on, so the
    refusal must not be one; :func:`run_main` reports it as a user error (one line, exit 2)."""


#: What a single run's directory holds before the run writes anything: Hydra's config copy,
#: the app's claim file and its (empty) log.
STUB_ENTRIES = frozenset({".hydra", ".fattorus-run", "sweep.log", "qos.log"})


def _holds_only_stubs(out_dir: Path) -> bool:
    """Whether ``out_dir`` holds nothing but :data:`STUB_ENTRIES`, its logs empty."""
    try:
        entries = {p.name for p in out_dir.iterdir()}
        return entries <= STUB_ENTRIES and all((out_dir / n).stat().st_size == 0 for n in entries if n.endswith(".log"))
    except OSError:
        return False


#: A single run's directory (absolute) that did not exist when the run started, and the
#: topmost folder Hydra had to make for it (the directory itself or a missing parent):
#: noted by :func:`note_run_dir` before Hydra makes them.
_MADE: dict[Path, Path] = {}


def note_run_dir(run_dir: Path) -> None:
    """Note, before Hydra makes it, whether ``run_dir`` (``hydra.run.dir``) already exists:
    a directory this run makes goes again with its stubs (:func:`discard_stub`), one that
    was there before stays."""
    run_dir = Path(os.path.abspath(run_dir))
    top = _topmost_missing(run_dir)
    if top is not None:
        _MADE[run_dir] = top
    else:
        _EXISTED.add(run_dir)


def _topmost_missing(path: Path) -> Path | None:
    """The highest folder of absolute ``path`` (inclusive) that does not exist, the first
    Hydra would make on the way to it; None if ``path`` exists."""
    top = None
    for d in (path, *path.parents):
        if d.exists():
            break
        top = d
    return top


#: Run directories that existed when their run started (:func:`note_run_dir`): never removed.
_EXISTED: set[Path] = set()

#: The topmost folders Hydra had to make above a run directory whose name only the job
#: resolves (the apps' default ``results/runs/<time>_...``): noted by :func:`note_run_parent`.
_MADE_ABOVE: list[Path] = []


def note_run_parent(parent: Path) -> None:
    """Note, before Hydra makes it, the topmost missing folder of ``parent`` (inclusive), the
    folder a run directory whose full name is resolved later goes in: a refused first run
    takes away the ``results/runs/`` it made (:func:`discard_stub`)."""
    top = _topmost_missing(Path(os.path.abspath(parent)))
    if top is not None:
        _MADE_ABOVE.append(top)


def discard_stub(out_dir: Path, results_subdir: str) -> None:
    """Remove the run directory a refused or interrupted single run leaves behind (Hydra made
    it before the app could check the settings), if it holds only stubs and was made by this
    run (:func:`note_run_dir`; the empty parents it made go too, e.g. a first run's
    ``results/runs/``), or, where no note was taken, sits where the app names its runs
    (``results/<results_subdir>/``); a directory that existed before the run, and anything
    else, is left alone."""
    here = Path(os.path.abspath(out_dir))
    if not _holds_only_stubs(out_dir) or here in _EXISTED:  # a folder that was there before stays
        return
    top = _MADE.get(here)
    if top is None and not (out_dir.parent.name == results_subdir and out_dir.parent.parent.name == "results"):
        return  # neither noted as made nor in the app's own place
    shutil.rmtree(out_dir, ignore_errors=True)
    # The parents this run made go too while empty: the noted one's, or (the app's own place,
    # whose name Hydra resolves again after the note: another second, another name) those of
    # any directory noted (a first run's results/runs/).
    tops = [top] if top is not None else [*_MADE.values(), *_MADE_ABOVE]
    for d in here.parents:
        if not any(d == t or t in d.parents for t in tops):
            break
        try:
            d.rmdir()  # only when empty: another run may have written beside it since
        except OSError:
            break


def discard_named_stub(out_dir: Path) -> None:
    """Take away the stubs a refused single run left in a directory the user named
    (``hydra.run.dir=...``), so that the corrected command may run there: this run's claim
    (``.fattorus-run``), Hydra's config copy (``.hydra/``, written anew by every run) and an
    empty log. Whatever else the directory holds stays, and so does the directory: it may
    have been the user's before the run. Call it only for a directory this process claimed,
    never for one another run holds."""
    shutil.rmtree(out_dir / ".hydra", ignore_errors=True)
    (out_dir / ".fattorus-run").unlink(missing_ok=True)
    for name in STUB_ENTRIES:
        log = out_dir / name
        try:
            if name.endswith(".log") and log.is_file() and log.stat().st_size == 0:
                log.unlink()
        except OSError:
            pass


def discard_trial_stub(out_dir: Path, sweep_dir: Path) -> None:
    """Remove the directory of a refused multirun trial when it holds only Hydra's stubs (its
    config copy and empty log) and sits directly in the sweep directory: the counterpart, for
    trials, of :func:`discard_stub` (which only knows single runs' places)."""
    try:
        in_sweep = out_dir.resolve().parent == sweep_dir.resolve()
    except OSError:
        return
    if in_sweep and _holds_only_stubs(out_dir):
        shutil.rmtree(out_dir, ignore_errors=True)


class _TrialNote:
    """A stand-in for ``sys.stderr`` that keeps Hydra's "Error executing job with overrides:
    [...]" line (written just before a failed multirun trial's error is re-raised) so that the
    trial's overrides join the one error line instead of taking a line of their own."""

    PREFIX = "Error executing job with overrides: "

    def __init__(self, stream: Any) -> None:
        self.stream, self.trial = stream, ""

    def write(self, text: str) -> int:
        if text.startswith(self.PREFIX):
            self.trial = text[len(self.PREFIX):].strip()
            return len(text)
        return self.stream.write(text)

    def __getattr__(self, name: str) -> Any:
        return getattr(self.stream, name)


def unknown_setting(keys: Iterable[Any], known: Sequence[str], where: str) -> str | None:
    """The one-line refusal of the first of ``keys`` that is not in ``known`` (a setting appended
    with '+', which Hydra accepts for any new key), naming the closest known one; None when
    every key is known. ``where`` prefixes the key (``"qos."``)."""
    from fattorus.args import did_you_mean

    for key in keys:
        if key not in known:
            return f"unknown setting {where + str(key)!r}{did_you_mean(key, known)}; settings there: {', '.join(known)}"
    return None


def _parameter_tables() -> dict[str, set[str]]:
    """Policy name -> the parameter names of its table (``TAParams``, ``PrismParams``)."""
    import dataclasses

    from fattorus.sched.policy.fattree.ta import TAParams
    from fattorus.sched.policy.torus.prism import PrismParams

    return {policy: {f.name for f in dataclasses.fields(cls)} for policy, cls in (("ta", TAParams),
                                                                                 ("prism", PrismParams))}


def _policy_parameters() -> list[str]:
    """The parameter names the allocation policies take (``policy.params.*``), sorted."""
    return sorted(set().union(*_parameter_tables().values()) | {"ordering", "features", "min_nodes"})


def _parameter_owners(name: str) -> list[str]:
    """The policies whose parameter table has ``name``."""
    return [policy for policy, names in _parameter_tables().items() if name in names]


def _hydra_alone_hint(argv: Sequence[str], err: BaseException) -> str:
    """Why ``--cfg hydra --resolve`` failed, when it did: Hydra resolves its own node alone,
    and the run and sweep directories' names read the run's settings (``policy.name``, ...),
    so every such interpolation is "not found"; ``--cfg all --resolve`` shows them resolved."""
    args = list(argv)
    shown = {args[i + 1] for i, a in enumerate(args[:-1]) if a in ("--cfg", "-c")}
    shown |= {a.split("=", 1)[1] for a in args if a.startswith("--cfg=")}
    if "hydra" not in shown or not {"--resolve"} & set(args) or "Interpolation key" not in str(err):
        return ""
    return ("; --cfg hydra --resolve resolves Hydra's settings alone, and the run directory's name reads the "
            "run's settings: use --cfg all --resolve")


def hydra_error(err: BaseException) -> str:
    """One line for a Hydra or OmegaConf error, its cause appended. A misspelt key without '+'
    (``workload.windw_days=1``) reads as :func:`unknown_setting` does for one with '+' — the
    closest known setting — instead of Hydra's "To append to your config use
    +workload.windw_days=1", which would only move the mistake (session 27 review)."""
    import dataclasses
    import re

    from fattorus.app import config as schema

    text, cause = str(err), "" if err.__cause__ is None else str(err.__cause__)
    asked = re.match(r"Could not override '([^']+)'\.\s+To append to your config use \+", text)
    where = re.search(r"Key '[^']+' not in '(\w+)'", cause)
    cls = getattr(schema, where.group(1), None) if where else None
    if asked and dataclasses.is_dataclass(cls):
        parent, _, name = asked.group(1).rpartition(".")
        failed = _missing_key(err.__cause__)
        if failed:  # the key the lookup failed on (``polcy`` of ``polcy.name``), not the last one asked
            parent, name = failed[0][:len(failed[0]) - len(failed[1])].rstrip("."), failed[1]
        why = unknown_setting([name], [f.name for f in dataclasses.fields(cls)], parent + "." if parent else "")
        if why:
            return why
    if asked and asked.group(1).startswith("policy.params."):  # the closest parameter of any policy
        from fattorus.args import did_you_mean

        name = asked.group(1).removeprefix("policy.params.")
        if name in _policy_parameters():  # another policy's parameter: "did you mean" would name it again
            owners = _parameter_owners(name)
            return (f"policy.params.{name}: not a parameter of the chosen policy"
                    + (f" (it is {' and '.join('policy=' + o for o in owners)}'s)" if owners else ""))
        hint = did_you_mean(name, _policy_parameters(), "policy.params.")
        if hint:
            return f"unknown setting {asked.group(1)!r}{hint}"
    missing = _missing_key(err.__cause__)
    if asked and missing:
        # a config without a schema (the QoS app's, a machine's): the node where the lookup
        # failed names the closest key it holds
        full, name, known = missing
        if name == "p" and re.fullmatch(r"speedup\.classes\[\d+\]\.bins\[\d+\]\.p", full):
            # A documented key that the shipped scenarios leave out (uniform bins): appended.
            return (f"{full}: the shipped scenario's bins have no p (a bin's probability; without it the bins are "
                    f"equally likely): add it with '+', to every bin of the class: +{asked.group(1)}=...")
        why = unknown_setting([name], known, full[:len(full) - len(name)])
        if why:
            return why
    if asked:  # a key the config there does not hold (policy.params, a machine): not Hydra's '+' hint
        return f"unknown setting {asked.group(1)!r} ({squash(cause)})"
    why = _wrong_type(text, err.__cause__, cause) or _group_given_as_file(text)
    if why:
        return why
    unread = re.search(r"LexerNoViableAltException: (.*?)\s+\^", text)
    if unread:  # a character Hydra's override grammar does not take unquoted
        key, _, value = unread.group(1).partition("=")
        if value.startswith("~"):
            return f"Hydra cannot read the override {unread.group(1)!r}: give the full path (a '~' left unexpanded)"
        return (f"Hydra cannot read the override {unread.group(1)!r}: quote its value inside shell quotes, "
                f"e.g. '{key}=\"{value}\"'")
    mismatched = re.match(r"mismatched input '(.+?)' expecting", text)
    culprit = None if mismatched is None else next(
        (a for a in sys.argv[1:] if "=" in a and mismatched.group(1) in a.partition("=")[2]), None)
    if culprit is not None:  # e.g. a path with '=' in it: Hydra's grammar error names no override
        key, _, value = culprit.partition("=")
        return (f"Hydra cannot read the override {culprit!r} ({mismatched.group(1)!r} in its value): quote the value "
                f"inside shell quotes, e.g. '{key}=\"{value}\"'")
    return f"{squash(err)}{f' ({squash(cause)})' if cause else ''}"


def _wrong_type(text: str, cause_err: BaseException | None, cause: str) -> str | None:
    """An override's value of the wrong type in words, or None. OmegaConf's type errors name
    the node they failed on (``full_key``): the override's key, a list element (``bins[0]``)
    or a parent of the key that holds a single value (``seed`` of ``seed.x``)."""
    import re

    merging = re.match(r"Error merging override ([\w.]+)=(\S*)", text)
    node = str(getattr(cause_err, "full_key", "") or "")
    wrong = re.search(r"could not be converted to (\w+)|is not a valid (\w+)|Cannot convert '\w+' to (\w+)"
                      r"|(is not a ListConfig)", cause)
    if not (merging and wrong and node):
        return None
    key, value = merging.group(1), merging.group(2)
    kind = {"integer": "an integer", "float": "a number", "bool": "true or false", "str": "a string",
            "string": "a string"}.get((wrong.group(1) or wrong.group(2) or wrong.group(3) or "").lower(),
                                      "a list, e.g. [a,b]" if wrong.group(4) else "another type")
    if key.startswith(node + "."):  # a setting inside a single value (trials.batch=8)
        inner = key[len(node) + 1:]
        return f"{key}={value}: {node} is a single value ({kind}), it holds no setting {inner!r}; give {node}=VALUE"
    if node == key or node.startswith(key + "["):  # the value, or an element of the list given
        return f"{key}={value}: {node} takes {kind}"
    return None


def _group_given_as_file(text: str) -> str | None:
    """For ``+topo=/path/machine.yaml`` (Hydra: "Could not find 'topo//path/machine.yaml'"):
    a config group takes a name, not a file; the search-path form to use, or the rename a
    shipped config of the file's name asks for. None for another error."""
    import re

    from fattorus import paths

    as_file = re.search(r"Could not find '(\w+)/(.*?\.ya?ml)'", text)
    if not as_file:
        return None
    group, given = as_file.group(1), Path(as_file.group(2))
    plus = "+" if group in APPENDED_GROUPS else ""
    if paths.config_file(group, given.stem).is_file():  # the search path would be refused as hidden
        return (f"{group}={given}: a config group takes a name, not a file, and conf/{group}/{given.stem}.yaml is "
                f"a shipped config of this file's name: rename the file (and its name: field), then put its "
                f"folder DIR/{group}/ on the search path: 'hydra.searchpath=[file://DIR]' {plus}{group}=NEWNAME")
    folder = given.resolve().parent
    if folder.name == group:  # already in a folder named for its group
        where = f"give 'hydra.searchpath=[file://{folder.parent}]' {plus}{group}={given.stem}"
    else:
        where = (f"put the file in a folder DIR/{group}/ and give 'hydra.searchpath=[file://DIR]' "
                 f"{plus}{group}={given.stem}")
    return f"{group}={given}: a config group takes a name, not a file; {where} (or copy it into conf/{group}/)"


def _missing_key(cause: BaseException | None) -> tuple[str, str, list[str]] | None:
    """``(full key, key, keys held there)`` of an OmegaConf lookup that failed on a node with
    keys, or None (no such node, or one that holds none)."""
    node, key = getattr(cause, "parent_node", None), getattr(cause, "key", None)
    full = getattr(cause, "full_key", None) or key
    if node is None or not hasattr(node, "keys") or not isinstance(key, str) or not isinstance(full, str):
        return None
    known = [str(k) for k in node.keys()]
    return (full, key, known) if known and full.endswith(key) else None


def override_key(override: str) -> str:
    """The key an override sets: ``+topo=cab`` -> ``topo``, ``~workload.path`` -> ``workload.path``."""
    return override.split("=", 1)[0].lstrip("+~")


#: Config groups of the replay app that a command line appends with '+' (none by default).
APPENDED_GROUPS = ("topo", "speedup")


def unchosen_group(overrides: Iterable[str], groups: Sequence[str] = APPENDED_GROUPS) -> str | None:
    """Why an override sets a key inside an appended group that no override chooses
    (``speedup.comm_fraction=0.5`` without ``+speedup=model``), or None. Hydra applies it to a
    group that is not there: a ``speedup`` key ended in OmegaConf's traceback ("Unexpected
    type for root: NoneType"), a ``topo`` one in "To append to your config use +topo.radix=4",
    although the default machine is filled in only after the overrides (session 27 review)."""
    given = [o for o in overrides if "=" in o and not o.startswith("-")]
    chosen = {override_key(o) for o in given}
    for o in given:
        key = override_key(o)
        group = key.split(".", 1)[0]
        if group in groups and "." in key and group not in chosen:
            what, example = {"topo": ("machine", "cab"), "speedup": ("speedup scenario", "model")}.get(group, (group, "NAME"))
            return (f"{o}: sets a {what}'s setting, and no {what} is chosen: choose one with +{group}=NAME first, "
                    f"e.g. +{group}={example} {o.lstrip('+')}")
    return None


#: Config groups in conf/ that belong to another app than the replay (its command).
OTHER_APPS_GROUPS = {"qos": "fattorus.qos"}


def other_apps_group(overrides: Iterable[str], groups: dict[str, str] = OTHER_APPS_GROUPS) -> str | None:
    """Why an override of the replay chooses a config group of another app (``qos=small``), or
    None. Hydra's help lists every group of conf/; choosing ``qos`` in the replay ended in "No
    match in the defaults list. To append ... use +qos=small", and that in "Key 'qos' not in
    'Config'" (session 44's exploratory run)."""
    for o in overrides:
        if "=" not in o or o.startswith("-"):
            continue
        group = override_key(o).split(".", 1)[0]
        if group in groups:
            return (f"{o}: the {group} group belongs to the {groups[group]} app, not the replay: "
                    f"python -m {groups[group]} {o.lstrip('+')}")
    return None


def listed_group(overrides: Iterable[str]) -> str | None:
    """Why an override gives a config group a list (``+topo=[cab,pinot]``), or None: Hydra
    merges the listed configs, the last one's values winning, so the run silently used the
    last machine (review, session 31); several values are a multirun's comma list."""
    from fattorus import paths

    groups = {p.name for p in paths.conf_dir().iterdir() if p.is_dir() and p.name != "hydra"}
    for o in overrides:
        key, _, value = o.partition("=")
        if key.lstrip("+~") in groups and value.strip().startswith("["):
            group = key.lstrip("+~")
            return (f"{o}: choose one {group} config; a list merges them (the last one's values win). "
                    f"To run each, use --multirun {key}=" + value.strip().strip("[]").replace(" ", ""))
    return None


def is_interrupt(err: BaseException) -> bool:
    """Whether ``err`` is a Ctrl-C in disguise: one that landed inside a JAX host callback
    (the QoS model's sparse solves) reaches Python as ``ValueError: INTERNAL: CpuCallback
    error calling callback: ... KeyboardInterrupt``, not as a :class:`KeyboardInterrupt`."""
    return (isinstance(err.__cause__, KeyboardInterrupt) or isinstance(err.__context__, KeyboardInterrupt)
            or ("CpuCallback" in str(err) and "KeyboardInterrupt" in str(err)))


#: What an interrupted single run says it kept, set by the app once it knows (:func:`kept_on_interrupt`);
#: None: :func:`run_main`'s ``interrupted`` (a multirun's words: re-running it resumes).
_kept_note: list[str | None] = [None]


def kept_on_interrupt(text: str) -> None:
    """Set what a Ctrl-C's line says was kept and how to go on (a single run: its directory is
    named by time, so the same command would not resume it)."""
    _kept_note[0] = text


def launcher_problem(argv: list[str]) -> str | None:
    """Why the launcher settings cannot run, or None: ``hydra.launcher.n_jobs=0`` (joblib
    refused it with a traceback), and ``hydra/launcher=slurm`` here: it launches a multirun's trials as
    a Slurm job array, so a single run would replay here regardless, and without ``srun`` on
    the PATH submitit fails inside Hydra with a traceback, after Hydra has made the sweep's
    folder (session 26 review). Checked before Hydra starts."""
    n_jobs = [a.split("=", 1)[1] for a in argv if "=" in a and override_key(a) == "hydra.launcher.n_jobs"]
    if n_jobs and is_multirun(argv):  # joblib: "n_jobs == 0 has no meaning", a traceback
        try:
            zero = float(n_jobs[-1]) == 0
        except ValueError:
            zero = False  # not a number: Hydra's own check of the launcher's settings says so
        if zero:
            return f"hydra.launcher.n_jobs={n_jobs[-1]}: trials run at once, a whole number >= 1 (or -1: one per core)"
    chosen = [a.split("=", 1)[1] for a in argv if "=" in a and override_key(a) == "hydra/launcher"]
    shows_only = {"--cfg", "-c", "--info", "-i", "--help", "-h", "--hydra-help"}  # Hydra prints, runs nothing
    if not chosen or chosen[-1] != "slurm" or shows_only & set(argv):
        return None
    if not is_multirun(argv):
        return "hydra/launcher=slurm launches a multirun's trials: add --multirun (a single run replays here)"
    if shutil.which("srun") is None:
        return ("hydra/launcher=slurm needs a Slurm cluster, and this machine has no srun: run it on a Slurm login "
                "node, or drop it (the trials then run here, one per core)")
    return None


#: Hydra's flags that pick what a command does: it accepts one of them per command line.
_MODE_FLAGS = {"-r": "--run", "--run": "--run", "-m": "--multirun", "--multirun": "--multirun", "-c": "--cfg",
               "--cfg": "--cfg", "-i": "--info", "--info": "--info", "-sc": "--shell-completion",
               "--shell-completion": "--shell-completion"}


#: Hydra's flags that take a value (``--info``'s is optional: a value without '=' only).
_VALUE_FLAGS = {"-c", "--cfg", "-cn", "--config-name", "-cp", "--config-path", "-cd", "--config-dir", "-p",
                "--package", "-i", "--info", "-sc", "--shell-completion"}


def flag_problem(argv: list[str]) -> str | None:
    """Why Hydra would refuse ``argv``'s flags with a traceback or a usage block, in one line,
    or None: two of its mode flags (``--multirun --cfg job``), or a flag between overrides
    (``a=1 -m b=2``: its parser takes the overrides in one run, so ``b=2`` is left over).
    A help flag, or ``--`` (the end of the flags), leaves the command line to Hydra."""
    if any(a in ("-h", "--help", "--hydra-help") for a in argv):
        return None
    flags = argv[:argv.index("--")] if "--" in argv else argv
    modes = list(dict.fromkeys(_MODE_FLAGS[a] for a in flags if a in _MODE_FLAGS))
    if len(modes) > 1:
        return (f"{' and '.join(modes)} cannot be given together: a command does one of --run, --multirun, --cfg, "
                "--info (--cfg job shows a single run's composed config)")
    first = next((i for i, a in enumerate(flags) if "=" in a and not a.startswith("-")), None)
    if first is not None:
        flag = next((i for i in range(first + 1, len(flags)) if flags[i].startswith("-")), None)
        if flag is not None and any("=" in a and not a.startswith("-") for a in flags[flag + 1:]):
            shown = flags[flag]
            if shown in _VALUE_FLAGS and flag + 1 < len(flags) and "=" not in flags[flag + 1]:
                shown += " " + flags[flag + 1]
            return f"put {shown} before the overrides: Hydra reads its flags first"
    return None


def finished_note(out_dir: Any) -> str:
    """A single run's Ctrl-C line once its results are written (its last line may not be out)."""
    return f"the run had finished: its results are in {out_dir}"


def is_multirun(argv: list[str]) -> bool:
    """Whether a Hydra app's command line asks for a multirun (``-m``, ``--multirun``,
    ``hydra.mode=MULTIRUN``)."""
    return any(a in ("-m", "--multirun") or a.replace(" ", "").upper() == "HYDRA.MODE=MULTIRUN" for a in argv)


def _interrupted(note: Any, prog: str, kept: str, single: str | None, exit_at_once: bool) -> NoReturn:
    """Say the run was interrupted (``kept``: what a multirun keeps; ``single``: what a single
    run keeps; unless the app said otherwise with :func:`kept_on_interrupt`) and leave with
    status 130 (see :func:`run_main`'s ``exit_at_once``)."""
    from fattorus import interrupt

    sys.stderr = note.stream
    if _kept_note[0] is None and single is not None and not is_multirun(sys.argv[1:]):
        _kept_note[0] = single  # a Ctrl-C before the app knew more (its first second)
    interrupt.say(f"{prog}: interrupted; {_kept_note[0] or kept + ', re-run to resume'}")
    if exit_at_once:
        sys.stdout.flush()
        sys.stderr.flush()
        os._exit(130)
    sys.exit(130)


def _null_parent_key(err: AssertionError) -> str | None:
    """The override key of OmegaConf's ``Unexpected type for root: NoneType`` (an override
    that sets a key inside a setting that is null here, e.g. ``workload.synthetic.seed=1`` with
    the default ``workload=atlas``), read off the failing ``OmegaConf.update`` call; None for
    any other assertion."""
    if not str(err).startswith("Unexpected type for root"):
        return None
    tb = err.__traceback__
    while tb is not None:
        if tb.tb_frame.f_code.co_name == "update" and "omegaconf" in tb.tb_frame.f_code.co_filename:
            key = tb.tb_frame.f_locals.get("key")
            return str(key) if key is not None else None
        tb = tb.tb_next
    return None


def _composition_error(err: BaseException) -> str | None:
    """The one line for what Hydra's composition raised outside its own exceptions: a config
    file that does not parse (PyYAML's error: file, line, column), or OmegaConf's assertion
    on a key set inside a null node (``workload.synthetic.seed`` with a log's workload); None
    for anything else (a fault: its traceback)."""
    from fattorus import yamlfile

    line = yamlfile.syntax_error(err)
    if line is not None:
        return line
    key = _null_parent_key(err) if isinstance(err, AssertionError) else None
    if key is None:
        return None
    hint = " (workload.synthetic.* belongs to workload=synthetic)" if key.startswith("workload.synthetic.") else ""
    return f"{key}: {key.rpartition('.')[0]} is empty (null) in this configuration; nothing to set in it{hint}"


def run_main(app: Callable[[], Any], prog: str, user_errors: tuple[type[BaseException], ...],
             run_errors: tuple[type[BaseException], ...] = (), interrupted: str = "finished runs are kept",
             exit_at_once: bool = False, single: str | None = None) -> None:
    """Run ``app`` (a ``@hydra.main`` function) with one-line errors (module docstring).

    A Ctrl-C's line says what was kept: ``interrupted`` for a multirun (re-running it resumes),
    ``single`` for a single run until the app says more (:func:`kept_on_interrupt`): a Ctrl-C
    in the first second, before the app's own handler, read "re-run to resume" for a run that
    kept nothing and that the same command would not resume (session 26 review).

    ``exit_at_once``: after a Ctrl-C, leave without the interpreter's teardown (``os._exit``,
    streams flushed first). For a single-process app holding JAX work: tearing it down after an
    interrupt crashed now and then (SIGSEGV, 1 of 4 tries of ``fattorus.qos``), turning exit
    status 130 into 139; the replay's single runs too (a ``trials=N`` batch's threads inside
    XLA: exit 134). Not for a multirun, whose launcher's workers are stopped at exit."""
    import yaml
    from hydra.errors import HydraException
    from omegaconf.errors import OmegaConfBaseException

    from fattorus import interrupt

    interrupt.armed()  # the start-up's leave-at-once handler (fattorus.interrupt) ends here
    problem = flag_problem(sys.argv[1:]) or launcher_problem(sys.argv[1:]) or listed_group(sys.argv[1:])
    if problem:
        sys.stderr.write(f"{prog}: error: {problem}\n")
        sys.exit(2)
    # Let Hydra's exceptions reach us instead of its multi-line reports.
    os.environ.setdefault("HYDRA_FULL_ERROR", "1")
    from fattorus.args import leave_piped, reader_may_leave

    note = _TrialNote(sys.stderr)
    sys.stderr = note
    out = reader_may_leave()  # stdout's reader may leave (| head -1): the run goes on, its files written
    try:
        app()
        out.flush()
    except BrokenPipeError:  # stderr's reader left: quiet, as a Unix filter (fattorus.args)
        sys.stderr = note.stream
        leave_piped()
    except (*user_errors, Refusal) as err:
        sys.stderr = note.stream
        trial = f"trial {note.trial}: " if note.trial else ""
        sys.stderr.write(f"{prog}: error: {trial}{squash(err)}\n")
        sys.exit(2)
    except run_errors as err:
        sys.stderr = note.stream
        trial = f"trial {note.trial}: " if note.trial else ""
        sys.stderr.write(f"{prog}: error: {trial}{squash(err)}\n")
        sys.exit(1)
    except (HydraException, OmegaConfBaseException) as err:  # before OSError: some are IOErrors
        sys.stderr = note.stream
        sys.stderr.write(f"{prog}: error: {hydra_error(err)}{_hydra_alone_hint(sys.argv[1:], err)}\n")
        sys.exit(2)
    except (AssertionError, yaml.YAMLError) as err:
        line = _composition_error(err)
        if line is None:
            raise
        sys.stderr = note.stream
        sys.stderr.write(f"{prog}: error: {line}\n")
        sys.exit(2)
    except OSError as err:  # e.g. Hydra cannot create the run directory (read-only, disk full)
        sys.stderr = note.stream
        where = f": {err.filename}" if getattr(err, "filename", None) else ""
        sys.stderr.write(f"{prog}: error: {squash(err.strerror or err)}{where}\n")
        sys.exit(1)
    except KeyboardInterrupt:
        _interrupted(note, prog, interrupted, single, exit_at_once)
    except (ValueError, RuntimeError) as err:
        if not is_interrupt(err):
            raise
        _interrupted(note, prog, interrupted, single, exit_at_once)
    finally:
        sys.stderr = note.stream
    if out.left:  # done, and what it printed found no reader: the exit status says so (fattorus.args)
        leave_piped()
    interrupt.done(0)  # done: a Ctrl-C while the workers are joined at exit changes nothing
