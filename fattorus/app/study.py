"""Run a ready-made study from ``sweeps/*.yaml``: ``python -m fattorus.study sweeps/NAME.yaml``.

A study file names the study and lists ``common`` overrides, ``cases`` (machine and workload
settings) and ``arms`` (policy, speedup scenario, seeds); each entry is a list of Hydra
overrides whose comma-separated values are swept; ``app`` (optional) names the Hydra app,
``fattorus.sweep`` (replays, the default) or ``fattorus.qos`` (the QoS study). Every (case,
arm) pair becomes one ``python -m APP --multirun`` into ``results/sweeps/<study>/``, so the study is the
union of Cartesian products rather than one big product (TO runs need no speedup scenarios).
Trials that already finished are skipped: re-running an interrupted study resumes it.

Extra arguments are ``key=value`` overrides passed to every multirun (e.g. ``hydra/launcher=slurm
hydra.launcher.partition=pbatch`` to run on a Slurm cluster). Hydra's own flags (``--cfg``,
``--info``, ``--run``, ``--multirun``, ``--config-name``, ...) are refused in one line that
says what to run instead: a study runs each block as ``--multirun`` itself, and Hydra allows
one mode per run. For ``--cfg`` and ``--info`` the line is the first trial's own command line,
which shows its composed config.

Before the first block starts, the whole study is checked: the study name, every entry (one
``key=value`` Hydra override per entry) and every block's overrides composed with the app's
config (each value of a swept entry at least once; the replay app's settings also through
every check a run makes before reading its log, :func:`fattorus.app.sweep.check_run`). A mistake anywhere is one line naming the file
and the place, e.g. ``sweeps/x.yaml: arms[1][2]: ...`` (0-based indices), and exit code 2,
instead of a failure after earlier blocks have run.
"""

from __future__ import annotations

if __name__ == "__main__":  # first: a Ctrl-C while the imports below load is one line
    from fattorus import interrupt

    interrupt.on_start("fattorus.study")

import os
import re
import signal
import stat
import subprocess
import sys
import textwrap
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import yaml

from fattorus.app import cli


#: The Hydra apps a study file may run (``app:``; default the replay app).
APPS = ("fattorus.sweep", "fattorus.qos")

#: The fields of a study file (``common`` and ``app`` optional).
FIELDS = ("study", "app", "common", "cases", "arms")

#: The config each app composes (the ``config_name`` of its ``@hydra.main``).
CONFIGS = {"fattorus.sweep": "config", "fattorus.qos": "qos_app"}

#: The likely cause of a bare value among the entries: ``[a=1,2]`` in YAML is two entries.
_COMMA_HINT = " (YAML splits a [...] list at commas: quote an entry such as \"seed=0,1\")"

#: Quoted parts of an override: whitespace inside them belongs to the value.
_QUOTED = re.compile(r"'(?:[^'\\]|\\.)*'|\"(?:[^\"\\]|\\.)*\"")


#: The usage line (``-h``/``--help``, and the hint of a command line without a study file).
USAGE = "usage: python -m fattorus.study sweeps/NAME.yaml [key=value overrides for every block...]"

#: A study file's name ends in one of these (checked before reading: a job log or a results
#: folder's file given by mistake is named as such instead of failing as YAML or as UTF-8).
SUFFIXES = (".yaml", ".yml")

#: Hydra 1.3's own command-line flags (``hydra._internal.utils.get_args_parser``), by kind: a
#: study passes ``--multirun`` to every block itself, so none of them can be passed on (Hydra
#: allows one mode per run, and the rest change what the check composed).
_SHOW_FLAGS = {"--cfg": "--cfg job", "-c": "--cfg job", "--info": "--info", "-i": "--info",
               "--resolve": "--cfg job --resolve", "--package": "--cfg job --package PACKAGE",
               "-p": "--cfg job --package PACKAGE"}
_MODE_FLAGS = ("--multirun", "-m", "--run", "-r")
_CONFIG_FLAGS = ("--config-name", "-cn", "--config-path", "-cp", "--config-dir", "-cd")
_OTHER_FLAGS = ("--hydra-help", "--version", "--shell-completion", "-sc", "--experimental-rerun")


class StudyError(ValueError):
    """A malformed study file, or a command-line mistake."""


def load(path: str | Path) -> dict[str, Any]:
    """Read and check a study file; errors name the file and the field.

    The path is checked before it is read, so that each mistake is its own line: missing (with
    the ``.yaml`` name when that exists), a folder, not a regular file (a FIFO would block the
    read), another suffix than ``.yaml``/``.yml``, unreadable, not UTF-8 text.
    """
    from fattorus import paths

    p = Path(path)
    shipped = paths.repo_root() / p
    if not p.is_absolute() and not p.exists() and shipped.is_file():
        # A shipped study named from another folder (sweeps/smoke.yaml), as a workload's
        # relative path is read from the repository: its results still go under this folder.
        p = shipped
    try:
        mode = p.stat().st_mode
    except (FileNotFoundError, NotADirectoryError):
        near = next((q for q in (p.with_name(p.name + s) for s in SUFFIXES) if q.is_file()), None) if p.name else None
        hint = f"; did you mean {near}?" if near else f" (the shipped studies are in {paths.repo_root() / 'sweeps'})"
        raise StudyError(f"{p}: no such study file{hint}") from None
    except OSError as err:  # e.g. a folder on the way that may not be searched
        raise StudyError(f"{p}: cannot read the study file ({err.strerror or err})") from None
    if stat.S_ISDIR(mode):
        raise StudyError(f"{p}: is a folder, not a study file (a .yaml file such as sweeps/smoke.yaml)")
    if not stat.S_ISREG(mode):
        raise StudyError(f"{p}: not a regular file; a study file is a .yaml file (see sweeps/)")
    if p.suffix.lower() not in SUFFIXES:
        raise StudyError(f"{p}: not a study file: its name must end in .yaml or .yml (see sweeps/)")
    try:
        data = yaml.load(p.read_text(encoding="utf-8"), Loader=_UniqueKeyLoader)  # noqa: S506 - a SafeLoader
    except DuplicateKey as err:
        raise StudyError(f"{p}: {err}") from None
    except OSError as err:
        raise StudyError(f"{p}: cannot read the study file ({err.strerror or err})") from None
    except UnicodeDecodeError:
        raise StudyError(f"{p}: not a text file (a study file is UTF-8 YAML, see sweeps/)") from None
    except yaml.YAMLError as err:
        raise StudyError(f"{p}: not valid YAML ({' '.join(str(err).split())})") from None
    if not isinstance(data, dict) or not isinstance(data.get("study"), str):
        raise StudyError(f"{p}: needs a 'study' name")
    unknown = [str(k) for k in data if k not in FIELDS]
    if unknown:  # a misspelt optional field (`comon:`) would drop its overrides without a word
        from fattorus.args import did_you_mean

        raise StudyError(f"{p}: unknown field {unknown[0]!r}{did_you_mean(unknown[0], FIELDS)}; a study file has "
                         f"{', '.join(FIELDS)}")
    for field in ("common", "cases", "arms"):
        value = data.get(field, [] if field == "common" else None)
        ok = isinstance(value, list) and (field == "common" or all(isinstance(v, list) for v in value))
        if not ok or (field != "common" and not value):
            raise StudyError(f"{p}: field {field!r} must be a list{' of override lists' if field != 'common' else ''}")
    data.setdefault("common", [])
    app = data.setdefault("app", "fattorus.sweep")
    if app not in APPS:
        raise StudyError(f"{p}: field 'app' must be one of {', '.join(APPS)}, got {app!r}")
    from fattorus.app.config import safe_name

    try:  # the name becomes results/sweeps/<study>/: refused here, not when the first block starts
        safe_name(data["study"], "study")
    except ValueError as err:
        raise StudyError(f"{p}: field 'study': {err}") from None
    for place, entry in entries(data):
        why = override_error(entry)
        if why:
            raise StudyError(f"{p}: {place}: {why}")
    for place, entries_of in _lists(data):
        # One list setting a key twice: Hydra keeps the last and drops the other without a
        # word (cases: [[seed=0,1, seed=2]] ran seed 2 alone). Across lists a later one may
        # override an earlier (common, then case, then arm), as documented.
        seen: dict[str, int] = {}
        for k, entry in enumerate(entries_of):
            if str(entry).startswith("~"):
                continue  # a deletion, then a setting of the same key: Hydra applies both, in order
            key = cli.override_key(str(entry))
            if key in seen:
                raise StudyError(f"{p}: {place}[{seen[key]}] and {place}[{k}] both set {key}; the first would be "
                                 "dropped without a word (give one entry, e.g. a swept 'key=a,b')")
            seen[key] = k
    return data


def _lists(study: dict[str, Any]) -> Iterator[tuple[str, list[Any]]]:
    """Each override list of a study file and its place: ``common``, ``cases[i]``, ``arms[j]``."""
    yield "common", study["common"]
    for field in ("cases", "arms"):
        for i, entry_list in enumerate(study[field]):
            yield f"{field}[{i}]", entry_list


class DuplicateKey(Exception):
    """A key given twice in one mapping of a study file (PyYAML keeps the last silently)."""


class _UniqueKeyLoader(yaml.SafeLoader):
    """PyYAML's safe loader, refusing a mapping that holds a key twice (``study:`` twice ran
    under the second name without a word)."""

    def construct_mapping(self, node: yaml.MappingNode, deep: bool = False) -> dict[Any, Any]:
        seen: set[Any] = set()
        for key_node, _ in node.value:
            # Merge keys (<<: *anchor) are the base loader's to resolve; a key that is not a
            # plain value (a complex key) too, which it refuses as YAML.
            if key_node.tag == "tag:yaml.org,2002:merge" or not isinstance(key_node, yaml.ScalarNode):
                continue
            key = self.construct_object(key_node, deep=deep)
            if key in seen:
                raise DuplicateKey(f"line {key_node.start_mark.line + 1}: key {key!r} given twice")
            seen.add(key)
        return super().construct_mapping(node, deep=deep)


def entries(study: dict[str, Any]) -> Iterator[tuple[str, Any]]:
    """Every override entry of a study with its place: ``common[k]``, ``cases[i][k]``,
    ``arms[j][k]`` (0-based, as the file lists them)."""
    for place, entry_list in _lists(study):
        for k, entry in enumerate(entry_list):
            yield f"{place}[{k}]", entry


def override_error(entry: Any) -> str | None:
    """Why ``entry`` is not one Hydra override ``key=value`` (``~key`` deletes), or None.

    Each entry becomes one argument of the multirun, so whitespace before another ``key=``
    outside quotes means two overrides run together in one string (Hydra would read the rest
    as part of the value or fail in its grammar), and so does whitespace at either end; other
    whitespace is Hydra's (``seed=range(0, 3)``, ``x=[1, 2]``). A YAML mapping (``[policy:
    to]``) or number is no override at all.
    """
    from hydra.core.override_parser.overrides_parser import OverridesParser
    from hydra.errors import HydraException

    if not isinstance(entry, str):
        if isinstance(entry, dict) and len(entry) == 1:
            ((key, value),) = entry.items()
            value = "null" if value is None else str(value).lower() if isinstance(value, bool) else value
            return f"{entry!r} is a YAML mapping, not a 'key=value' string (write {key}={value})"
        return f"{entry!r} is not a 'key=value' string{_COMMA_HINT if isinstance(entry, (int, float)) else ''}"
    bare = _QUOTED.sub("''", entry)
    if re.search(r"^\s|\s$|\s[~+]{0,2}[A-Za-z_][\w.@/-]*=", bare):
        return f"{entry!r} holds whitespace: write one 'key=value' override per entry (quote a value with spaces)"
    if not bare.split("=", 1)[0].lstrip("~+") or ("=" not in bare and not bare.startswith("~")):
        return f"{entry!r} is not a 'key=value' override{_COMMA_HINT}"
    try:
        override = OverridesParser.create().parse_overrides([entry])[0]
        if override.is_sweep_override() and not override.is_discrete_sweep():
            return f"{entry!r}: a study sweeps lists of values (a,b,c or range(...)), not intervals"
    except HydraException as err:
        from fattorus.app.cli import squash

        return f"{entry!r}: {squash(err)}"
    from fattorus.app.cli import listed_group  # a group given a list: its block would refuse it

    return listed_group([entry])


def flag_error(args: list[str], study: dict[str, Any] | None = None) -> str | None:
    """The one-line refusal of the first Hydra flag (any argument starting with ``-``) among a
    study's extra arguments, or None when they are all overrides.

    The line names the flag as given and says what to do instead. For the flags that show a
    config (``--cfg``, ``--info``, ...) it gives the command line of the first trial of the
    first block, with ``study`` known, so that a user can see a composed config in one paste:
    Hydra shows configs of single runs only, and a block is a multirun.
    """
    flag = next((a for a in args if a.startswith("-")), None)
    if flag is None:
        return None
    name = flag.split("=", 1)[0]
    if name.startswith("--") and name not in _SHOW_FLAGS:  # argparse takes unique prefixes (--mult)
        longs = [f for f in (*_SHOW_FLAGS, *_MODE_FLAGS, *_CONFIG_FLAGS, *_OTHER_FLAGS)
                 if f.startswith("--") and f.startswith(name)]
        name = longs[0] if len(longs) == 1 else name
    app = study["app"] if study else "fattorus.sweep"
    if name in _SHOW_FLAGS:
        trial = " ".join(first_trial(study, args)) if study else "OVERRIDES (one value per swept key)"
        return (f"{flag}: Hydra shows configs of single runs only, and each block of a study is a --multirun; "
                f"to see a trial's config, run it alone: python -m {app} {trial} {_SHOW_FLAGS[name]}")
    if name in ("--multirun", "-m"):
        return f"{flag}: every block of a study already runs as a --multirun; leave {flag} out"
    if name in ("--run", "-r"):
        return f"{flag}: a study runs every block as a --multirun; to run one trial, use python -m {app} OVERRIDES"
    if name in _CONFIG_FLAGS:
        return (f"{flag}: a study composes its app's own config (the file's 'app:' picks the app); "
                f"give key=value overrides in the study file or after it instead")
    if name in _OTHER_FLAGS:
        return f"{flag} is a flag of the app's Hydra, not of a study; ask the app itself: python -m {app} {flag}"
    return (f"unknown option {flag}: after the study file come key=value overrides for every block "
            f"(e.g. hydra.launcher.n_jobs=1)")


def first_trial(study: dict[str, Any], extra: list[str]) -> list[str]:
    """The overrides of the first trial of the first block (the first value of each swept entry),
    with the override arguments among ``extra``: one single run's command line."""
    block = ([(None, f"study={study['study']}")] + [(None, str(o)) for o in study["common"]]
             + [(None, str(o)) for o in study["cases"][0]] + [(None, str(o)) for o in study["arms"][0]]
             + [(None, x) for x in extra if not x.startswith("-") and override_error(x) is None])
    return [text for _, text in _combinations(block)[0]]


def check_command_line(study: dict[str, Any], extra: list[str]) -> None:
    """What Hydra would refuse only inside a block, as one :class:`StudyError`: a ``+key=value``
    for a key the study file adds already (Hydra's "Multiple values for topo. To override a
    value use 'override topo: ...'"), and a Slurm launcher that cannot run here."""
    from fattorus.app.cli import launcher_problem

    entries = [str(e) for group in (study["common"], *study["cases"], *study["arms"]) for e in group]
    added = {e.split("=", 1)[0][1:] for e in entries if e.startswith("+") and not e.startswith("++") and "=" in e}
    for arg in extra:
        key, _, value = arg.partition("=")
        if key.startswith("+") and not key.startswith("++") and key[1:] in added:
            raise StudyError(f"argument {arg!r}: the study file adds {key[1:]} already ({key}=...); override it "
                             f"with {key[1:]}={value or '...'} (no '+')")
    problem = launcher_problem(["--multirun", *entries, *extra])  # every block is a multirun
    if problem:
        raise StudyError(problem)


def named_by_overrides(study: dict[str, Any], extra: list[str]) -> tuple[dict[str, Any], list[str]]:
    """The study as the command line names it: a trailing ``study=NAME`` (the last one, as Hydra
    reads it) renames it — where its results go and what its status lines say — and leaves the
    overrides; without one, the study and overrides as given."""
    names = [o.split("=", 1)[1] for o in extra if o.split("=", 1)[0].lstrip("+") == "study" and "=" in o]
    if not names:
        return study, extra
    return {**study, "study": names[-1]}, [o for o in extra if o.split("=", 1)[0].lstrip("+") != "study"]


def commands(study: dict[str, Any], extra: list[str]) -> list[list[str]]:
    """The ``--multirun`` command line of every (case, arm) pair (of ``fattorus.sweep``, or of
    the app the study file names in ``app:``)."""
    base = [sys.executable, "-m", study.get("app", "fattorus.sweep"), "--multirun", f"study={study['study']}"]
    return [
        base + [str(o) for o in study["common"]] + [str(o) for o in case] + [str(o) for o in arm] + extra
        for case in study["cases"]
        for arm in study["arms"]
    ]


def _combinations(overrides: list[tuple[str | None, str]]) -> list[list[tuple[str | None, str]]]:
    """Concrete override lists that take every value of every swept entry at least once:
    the first value of each, then each other value with the rest at their first.

    As Hydra's basic sweeper does, a later entry for the same key replaces an earlier one.
    Not the whole product (which can run to thousands of trials, ~60 ms a composition): a
    mistake that only a combination of two swept values shows still surfaces at block time.
    """
    from hydra.core.override_parser.overrides_parser import OverridesParser

    parser = OverridesParser.create()
    by_key: dict[str, tuple[str | None, list[str]]] = {}
    for place, text in overrides:
        override = parser.parse_overrides([text])[0]
        key = override.get_key_element()
        values = ([f"{key}={v}" for v in override.sweep_string_iterator()] if override.is_sweep_override()
                  else [text])
        by_key[key] = (place, values)
    slots = list(by_key.values())
    first = [(place, values[0]) for place, values in slots]
    combos = [first]
    for n, (place, values) in enumerate(slots):
        combos += [first[:n] + [(place, v)] + first[n + 1:] for v in values[1:]]
    return combos


def check_blocks(study: dict[str, Any], extra: list[str], path: str | Path) -> None:
    """Compose every block's overrides with the app's config, as its multirun will, without
    running anything (the replay app's settings also go through every check a run makes before
    reading its log, :func:`fattorus.app.sweep.check_run`: policy and machine, scale, logger,
    the batched engine's limits).

    Raises :class:`StudyError` naming the file and the entry to blame (the one whose removal
    lets the composition through), else the block; an extra argument is named as such.
    """
    from hydra import compose, initialize_config_dir
    from hydra.errors import HydraException
    from omegaconf.errors import OmegaConfBaseException

    from fattorus import paths
    from fattorus.app import config as config_mod

    config_mod.register()  # the schema and the resolvers the apps' configs use
    errors: tuple[type[BaseException], ...] = (HydraException, OmegaConfBaseException, ValueError, TypeError)
    check: Callable[[Any], None] = lambda cfg: None  # noqa: E731
    if study["app"] == "fattorus.sweep":
        from fattorus.app import sweep

        machines: dict[str, Any] = {}  # each machine built once over the blocks
        errors = errors + (sweep.UserError,)
        check = lambda cfg: sweep.check_run(cfg, machines)  # noqa: E731 - everything a run checks before its log
    elif study["app"] == "fattorus.qos":
        from fattorus.app import qos

        errors, check = errors + (qos.UserError,), qos.check_settings
    config_name = CONFIGS[study["app"]]

    def attempt(overrides: list[str]) -> str | None:
        if study["app"] == "fattorus.sweep" and (why := cli.other_apps_group(overrides) or cli.unchosen_group(overrides)):
            return why
        try:
            touches_hydra = any(cli.override_key(o).startswith("hydra") for o in overrides)
            cfg = compose(config_name=config_name, overrides=overrides, return_hydra_config=touches_hydra)
            check(_job_part(cfg) if touches_hydra else cfg)
        except errors as err:
            return cli.hydra_error(err)
        except cli.Refusal as err:
            return str(err)
        return None

    p = Path(path)
    # Extra arguments join every block, so they must all be overrides: a Hydra flag among them
    # would reach every block's multirun (--cfg job there is Hydra's ValueError).
    why = flag_error(extra, study)
    if why:
        raise StudyError(why)
    extra_overrides = [(f"argument {x!r}", x) for x in extra]
    for place, text in extra_overrides:
        why = override_error(text)
        if why:  # the hint about YAML lists is for entries of the file, not for arguments
            raise StudyError(f"{place}: {why.replace(_COMMA_HINT, '')}")
    tried: set[tuple[str, ...]] = set()
    with initialize_config_dir(config_dir=str(paths.conf_dir()), version_base="1.3", job_name="study_check"):
        for i, case in enumerate(study["cases"]):
            for j, arm in enumerate(study["arms"]):
                block = ([(None, f"study={study['study']}")]
                         + [(f"common[{k}]", str(o)) for k, o in enumerate(study["common"])]
                         + [(f"cases[{i}][{k}]", str(o)) for k, o in enumerate(case)]
                         + [(f"arms[{j}][{k}]", str(o)) for k, o in enumerate(arm)] + extra_overrides)
                for combo in _combinations(block):
                    texts = tuple(t for _, t in combo)
                    if texts in tried:
                        continue
                    tried.add(texts)
                    why = attempt(list(texts))
                    if why is not None:
                        raise StudyError(f"{_blame(attempt, combo, block, p) or f'{p}: cases[{i}] with arms[{j}]'}: {why}")


def _job_part(cfg: Any) -> Any:
    """A block's config composed with Hydra's own settings, checked where the block's multirun
    would write as its Hydra callbacks will (:class:`~fattorus.app.cli.Refusal`), then without
    them: the job's part, which the apps' checks read (they know no ``hydra`` setting)."""
    from omegaconf import open_dict

    from fattorus.app import callbacks

    callbacks.refuse_outside_results(cfg, "hydra.sweep.dir")
    callbacks.refuse_leaving_the_run(cfg, multirun=True)
    with open_dict(cfg):
        del cfg["hydra"]
    return cfg


def _blame(attempt: Callable[[list[str]], str | None], combo: list[tuple[str | None, str]],
           block: list[tuple[str | None, str]], p: Path) -> str | None:
    """The entry of a failing ``combo`` whose removal lets it through, the last one first, as
    an error names it (``FILE: cases[1][0] (value)``, or ``argument '...'``); None if none does."""
    texts = [t for _, t in combo]
    for n in reversed(range(len(combo))):
        place, text = combo[n]
        if place is not None and attempt([t for m, t in enumerate(texts) if m != n]) is None:
            shown = f" ({text})" if text != dict(block)[place] else ""
            return place + shown if place.startswith("argument") else f"{p}: {place}{shown}"
    return None


def _wait(block: subprocess.Popen) -> int:
    """The exit status of ``block`` (a multirun). A Ctrl-C meanwhile is passed on to it and
    re-raised once it has stopped (keeping its finished trials). Why not ``subprocess.call``:
    its wait blocks in ``waitpid``, and a SIGINT sent to this process alone (``kill -INT``, a
    job manager, ``timeout -s INT``) is taken by one of the threads JAX and Polars start, so
    the wait went on until the whole block had run; a wait with a timeout polls, and the main
    thread sees the interrupt at once. A Ctrl-C at a terminal reaches the block as well (same
    process group), which then stops on its own."""
    try:
        return block.wait(timeout=10**9)
    except KeyboardInterrupt:
        try:
            block.send_signal(signal.SIGINT)
            block.wait(timeout=120)
        except (KeyboardInterrupt, subprocess.TimeoutExpired, OSError):
            block.kill()
            block.wait()
        raise


def help_text() -> str:
    """``--help``: the usage line, what a study does, and the shipped studies (``sweeps/*.yaml``
    of this checkout), each with the first sentence of its header comment."""
    from fattorus import paths

    lines = [USAGE, "", "Runs a ready-made study: one Hydra multirun per (case, arm) block into results/sweeps/<study>/;",
             "finished trials are skipped, so re-running an interrupted study resumes it.", "", "Shipped studies:"]
    for path in sorted((paths.repo_root() / "sweeps").glob("*.yaml")):
        try:
            header = []
            for line in path.read_text().splitlines():
                if not line.startswith("#"):
                    break
                header.append(line.lstrip("#").strip())
        except OSError:
            continue
        first = re.split(r"\. |: ", " ".join(header))[0].rstrip(".")
        lines.append(f"  sweeps/{path.name}: {textwrap.shorten(first, 100, placeholder=' …')}")
    return "\n".join(lines)


def main() -> None:
    """Run every multirun of a study file, with a status line per block."""
    from fattorus import interrupt

    interrupt.armed()  # the start-up's leave-at-once handler (fattorus.interrupt) ends here
    args = sys.argv[1:]
    if any(a in ("-h", "--help") for a in args):  # anywhere, as argparse does; Hydra's app help is the app's
        print(help_text())
        sys.exit(0)
    try:
        if not args:
            raise StudyError(f"no study file given ({USAGE})")
        if args[0].startswith("-"):  # a flag before the file: refused as a flag, not as a missing file
            raise StudyError(flag_error(args) or "")
        study = load(args[0])
        check_command_line(study, args[1:])
        check_blocks(study, args[1:], args[0])  # a typo in the last block costs no replay
    except StudyError as err:
        sys.stderr.write(f"fattorus.study: error: {err}\n")
        sys.exit(2)
    except KeyboardInterrupt:
        sys.stderr.write("fattorus.study: interrupted while checking the study; nothing was run\n")
        sys.exit(130)
    from fattorus.args import EXIT_BROKEN_PIPE, reader_may_leave

    # A reader that leaves (| head -1) stops no block: each finishes its trials and says so
    # with exit 141 (fattorus.args), as the study does at its end.
    out = reader_may_leave()
    study, extra = named_by_overrides(study, args[1:])
    cmds = commands(study, extra)
    t0 = time.perf_counter()
    for i, cmd in enumerate(cmds, 1):
        shown = " ".join(cmd[3:])
        print(f"[study {study['study']}] block {i}/{len(cmds)} ({time.perf_counter() - t0:.0f} s): {shown}", flush=True)
        try:
            # The block leaves a Ctrl-C's line to the study (one line, from the command run).
            code = _wait(subprocess.Popen(cmd, env={**os.environ, interrupt.QUIET: "1"}))
        except KeyboardInterrupt:
            sys.stderr.write("fattorus.study: interrupted; finished trials are kept, re-run to resume\n")
            interrupt.finished(130)  # a second Ctrl-C while it leaves changes nothing
            sys.exit(130)
        if code == EXIT_BROKEN_PIPE:  # the block ran to its end; only its output found no reader
            out.left = True
        elif code != 0:
            sys.stderr.write(f"fattorus.study: block {i} failed (exit {code}): {shown}\n")
            sys.exit(code)
    print(f"[study {study['study']}] all {len(cmds)} blocks done in {time.perf_counter() - t0:.0f} s; "
          f"results in {', '.join(sweep_dirs(study, cmds))}", flush=True)
    if out.left:
        sys.exit(EXIT_BROKEN_PIPE)


def sweep_dirs(study: dict[str, Any], cmds: list[list[str]]) -> list[str]:
    """Where the blocks' trials went, in order of first use: each block's last
    ``hydra.sweep.dir=`` override (as Hydra reads it; a value swept over several is shown as
    written), else the apps' ``results/sweeps/<study>``."""
    out: list[str] = []
    for cmd in cmds:
        given = [a.split("=", 1)[1] for a in cmd if "=" in a and cli.override_key(a) == "hydra.sweep.dir"]
        where = given[-1] if given else f"results/sweeps/{study['study']}"
        if where not in out:
            out.append(where)
    return out


if __name__ == "__main__":
    main()
