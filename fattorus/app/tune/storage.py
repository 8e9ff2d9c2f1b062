"""Where a study lives: Optuna storage (any SQLAlchemy URL), heartbeats and retries, samplers,
pruners, and the bookkeeping of a study's trials.

* **Storage**: any SQLAlchemy URL (default ``sqlite:///results/tune/<name>.db``); the study is
  loaded if it exists, so re-running the same command adds trials. Passwords are masked in
  everything printed or written (:func:`mask`).
* **Faults**: a running trial beats every ``--heartbeat`` seconds; a trial silent for three
  heartbeats (its worker was killed) is failed the next time the study runs and its point is
  queued again (Optuna's ``RetryFailedTrialCallback``), so a resumed study retries it.
* **Drivers**: a bare ``postgresql://`` means the installed psycopg2 driver
  (:func:`engine_url`); the URL the user gave is what is shown and recorded.
* **Draws**: each trial's sampler is seeded from ``(--seed, trial number)``
  (:func:`make_sampler`), so a resumed study draws what an uninterrupted one would.
"""

from __future__ import annotations

import os
import re
import warnings
from pathlib import Path
from typing import TYPE_CHECKING, Any

from fattorus.app.tune.errors import TuneError
from fattorus.app.tune.windows import FINGERPRINT_DEFAULTS

if TYPE_CHECKING:
    import optuna

    from fattorus.app.tune.cli import Options

PRUNER_STARTUP_TRIALS = 5  # finished trials before the median pruner may prune
SAMPLERS = ("tpe", "nsga2", "random")
SETUP_ATTR = "fattorus_tune_setup"


def mask(url: str) -> str:
    """The storage URL without its password (safe to print and to write into files)."""
    try:
        from sqlalchemy.engine import make_url

        return make_url(url).render_as_string(hide_password=True)
    except Exception:  # noqa: BLE001 - not a URL SQLAlchemy understands: show nothing secret
        return re.sub(r"://[^@/]*@", "://***@", url)


#: The PostgreSQL driver the project installs (pyproject.toml: psycopg2-binary).
POSTGRES_DRIVER = "psycopg2"


def engine_url(url: str) -> str:
    """The URL handed to SQLAlchemy for the storage URL ``url`` the user gave.

    A bare ``postgresql://`` (no ``+driver``) becomes ``postgresql+psycopg2://``: SQLAlchemy
    2.1 reads the bare form as psycopg 3, which the project does not install, while the docs
    show the bare form and say the driver is included. Every other URL, an explicit
    ``postgresql+DRIVER://`` included, is returned unchanged. Only the scheme is rewritten
    (the rest of the string is kept byte for byte, so a password with special characters is
    not re-encoded)."""
    prefix = "postgresql://"
    if url.startswith(prefix):
        return f"postgresql+{POSTGRES_DRIVER}://{url[len(prefix):]}"
    return url


def storage_key(url: str) -> str:
    """What identifies the database of the storage URL ``url`` (as given, or masked as
    :func:`mask` writes it into an exported config's header): the URL SQLAlchemy connects to
    (:func:`engine_url`, so ``postgresql://`` and ``postgresql+psycopg2://`` are one database),
    without its password, a SQLite file's path made absolute against the current directory
    (``sqlite:///results/tune/x.db`` run from the repository is
    ``sqlite:////<repo>/results/tune/x.db``). Not a URL SQLAlchemy parses: the masked text."""
    try:
        from sqlalchemy.engine import make_url

        parsed = make_url(engine_url(url))
        database = parsed.database or ""
        if (parsed.get_backend_name() == "sqlite" and database and database != ":memory:"
                and not database.startswith("file:")):
            parsed = parsed.set(database=os.path.abspath(Path(database).expanduser()))
        return parsed.render_as_string(hide_password=True)
    except Exception:  # noqa: BLE001 - compared as text, as shown
        return mask(engine_url(url))


def check_url(url: str) -> None:
    """Refuse a storage URL that SQLAlchemy cannot parse, whose database kind (``bogus://``)
    it does not know, or whose driver is not installed: a :class:`TuneError` naming
    ``--storage``, raised while the options are checked.

    This needs only SQLAlchemy's URL parser and dialect registry (and an import of the
    driver module), no connection, so it is cheap enough to run before the workload loads;
    otherwise the same mistake surfaced in :func:`open_storage` after a second or more of
    loading. A reachable server, credentials and a creatable SQLite directory are still
    found out by :func:`open_storage`."""
    from sqlalchemy.engine import make_url
    from sqlalchemy.exc import NoSuchModuleError

    try:
        parsed = make_url(engine_url(url))  # the driver the storage will load, not SQLAlchemy's default
        dialect = parsed.get_dialect()
    except NoSuchModuleError:  # parsed, but the part before '://' names no database (or driver) SQLAlchemy knows
        raise TuneError(f"--storage {mask(url)}: unknown database or driver {parsed.drivername!r}; give a SQLAlchemy "
                        "URL such as sqlite:///results/tune/NAME.db or postgresql+psycopg2://user@host/db") from None
    except Exception as err:  # noqa: BLE001 - ArgumentError (not a URL) and the like: SQLAlchemy's words
        msg = " ".join(str(err).split("\n")[0].split())
        raise TuneError(f"--storage {mask(url)}: {type(err).__name__}: {msg}") from None
    try:
        dialect.import_dbapi()
    except ImportError as err:  # the dialect is known but its driver package is missing
        raise TuneError(f"--storage {mask(url)}: the database driver is not installed ({err}); install it, "
                        "or name an installed one in the URL (e.g. postgresql+psycopg2:// for PostgreSQL, whose "
                        "driver is a project dependency)") from None
    database = sqlite_file(url)
    if database is not None:
        from fattorus import paths

        # A SQLite file is written here: under a results/ directory, as everything this
        # command writes but the exported config (a server's database is its own business).
        if not paths.under_results(database):
            raise TuneError(f"--storage {mask(url)}: a SQLite file must lie under a results/ directory (nothing is "
                            f"written outside the results but the exported config), e.g. sqlite:///results/tune/"
                            f"{database.name}")


def sqlite_file(url: str) -> Path | None:
    """The file of the SQLite storage URL ``url`` (of a URI filename, ``?uri=true``, its path
    before the query), or None: in memory, or another database (a URL :func:`check_url`
    accepted)."""
    from sqlalchemy.engine import make_url

    parsed = make_url(engine_url(url))
    if parsed.get_backend_name() != "sqlite":
        return None
    database = parsed.database or ""
    if database.startswith("file:"):
        in_memory = database.startswith("file::memory:") or "mode=memory" in database
        database = "" if in_memory else database[len("file:"):].split("?", 1)[0]
    return Path(database).expanduser() if database and database != ":memory:" else None


def _engine_kwargs(url: str) -> dict[str, Any]:
    """SQLite files get their directory created and a long lock timeout (several worker
    processes write to the same file); server databases need nothing."""
    if url.startswith("sqlite:///") and not url.startswith("sqlite:///:memory:"):
        Path(url[len("sqlite:///"):]).expanduser().parent.mkdir(parents=True, exist_ok=True)
        return {"connect_args": {"timeout": 120}}
    return {}


def open_storage(url: str, heartbeat: float = 60.0) -> optuna.storages.BaseStorage:
    """An Optuna RDB storage for any SQLAlchemy URL; SQLite files get their directory created
    and a long lock timeout (several worker processes write to the same file).

    A running trial beats every ``heartbeat`` seconds; one silent for three heartbeats (its
    worker was killed) is marked failed when any process of the study next starts a trial,
    and :class:`optuna.storages.RetryFailedTrialCallback` puts its point back in the queue, so
    a resumed study retries it."""
    import optuna

    kwargs = _engine_kwargs(url)
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            retry = optuna.storages.RetryFailedTrialCallback(max_retry=3)
            return optuna.storages.RDBStorage(engine_url(url), engine_kwargs=kwargs or None,
                                              heartbeat_interval=max(1, round(heartbeat)),
                                              grace_period=max(3, round(3 * heartbeat)), failed_trial_callback=retry)
    except Exception as err:  # noqa: BLE001 - bad URL, missing driver, unreachable server
        msg = " ".join(str(err).split("\n")[0].split())
        raise TuneError(f"--storage {mask(url)}: {type(err).__name__}: {msg}") from None


def make_sampler(kind: str, seed: int, parallel: bool = False) -> optuna.samplers.BaseSampler:
    """The study's sampler: a :class:`~fattorus.app.tune.sampler.TrialSeededSampler` of ``kind``
    (:data:`SAMPLERS`), whose draws for trial ``n`` depend only on ``(seed, n)`` and the
    storage's contents, so a resumed study draws what an uninterrupted one would; TPE uses the
    constant liar when ``parallel``."""
    from fattorus.app.tune.sampler import TrialSeededSampler  # imports Optuna: only once a study runs

    return TrialSeededSampler(kind, seed, parallel)


def make_pruner(multi: bool) -> optuna.pruners.BasePruner:
    """Median pruning after each training window (none for multi-objective studies)."""
    import optuna

    if multi:
        return optuna.pruners.NopPruner()
    return optuna.pruners.MedianPruner(n_startup_trials=PRUNER_STARTUP_TRIALS, n_warmup_steps=0)


def open_study(opts: Options, storage: optuna.storages.BaseStorage, sampler: optuna.samplers.BaseSampler | None = None
               ) -> optuna.Study:
    """Create or load the study ``opts.name`` in ``storage``."""
    import optuna

    try:
        return optuna.create_study(storage=storage, study_name=opts.name, directions=opts.directions,
                                   sampler=sampler, pruner=make_pruner(opts.multi), load_if_exists=True)
    except Exception as err:  # noqa: BLE001
        raise TuneError(f"study {opts.name!r} in {mask(opts.storage)}: {' '.join(str(err).split())}") from None


def fail_dead_trials(study: optuna.Study) -> None:
    """Fail (and so re-queue, see :func:`open_storage`) trials whose worker stopped beating."""
    import optuna

    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # experimental API
        optuna.storages.fail_stale_trials(study)


def check_setup(study: optuna.Study, fp: dict[str, Any], name: str, url: str,
                defaults: dict[str, Any] | None = None) -> None:
    """Record the setup ``fp`` in a new study; refuse one that was made with another setup.

    A key missing from the study's record reads as its :data:`FINGERPRINT_DEFAULTS` value, or
    as ``defaults``'s (the setup's :attr:`~fattorus.app.tune.windows.Setup.config_defaults`:
    what a study recorded before the key existed is taken to have used). A study that differs
    from ``fp`` only by such keys resumes, and its record is completed with ``fp``.
    """
    old = study.user_attrs.get(SETUP_ATTR)
    if old is None:
        study.set_user_attr(SETUP_ATTR, fp)
        if not study.get_trials(deepcopy=False):  # a new study: its seeds skip replaced trials
            from fattorus.app.tune.sampler import SEEDS_ATTR

            study.set_user_attr(SEEDS_ATTR, "ordinal")
    elif old != fp:
        dflt = {**FINGERPRINT_DEFAULTS, **(defaults or {})}
        # Over both records' keys: a key at its default is left out of a record.
        keys = list(dict.fromkeys([*fp, *old]))
        diff = "; ".join(f"{k}: study {old.get(k, dflt.get(k))!r}{_unrecorded(k, old, defaults)}, "
                         f"now {fp.get(k, dflt.get(k))!r}"
                         for k in keys if old.get(k, dflt.get(k)) != fp.get(k, dflt.get(k)))
        if diff:
            raise TuneError(f"study {name!r} in {mask(url)} was made with another setup ({diff}); "
                            "use another --name or the original options")
        if any(k not in old for k in (defaults or {})):
            study.set_user_attr(SETUP_ATTR, fp)  # a study recorded before these keys: recorded now


def _unrecorded(key: str, old: dict[str, Any], defaults: dict[str, Any] | None) -> str:
    """Says when the study's value is not its record's but assumed (recorded before the key)."""
    return " (not recorded: the workload config's)" if key not in old and key in (defaults or {}) else ""


def trial_counts(study: optuna.Study) -> dict[str, int]:
    """Trials of the study by state (``total``, ``complete``, ``pruned``, ``fail``) and the
    number of distinct points among those that ran."""
    from optuna.trial import TrialState

    trials = study.get_trials(deepcopy=False)
    counts = {"total": len(trials), **{s.name.lower(): sum(t.state == s for t in trials)
                                       for s in (TrialState.COMPLETE, TrialState.PRUNED, TrialState.FAIL)}}
    ran = [t for t in trials if t.state in (TrialState.COMPLETE, TrialState.PRUNED)]
    counts["distinct_points"] = len({tuple(sorted(t.params.items())) for t in ran})
    return counts


def quiet_optuna() -> None:
    """Silence Optuna's per-trial logs and JAX's backend notices."""
    import optuna

    # The status line replaces Optuna's per-trial INFO logs; failed-trial warnings (an
    # interrupted trial) would print a traceback for a Ctrl-C.
    optuna.logging.set_verbosity(optuna.logging.ERROR)
    logging_jax()


def logging_jax() -> None:
    """JAX announces at INFO level each accelerator backend it does not find; not news."""
    import logging

    logging.getLogger("jax").setLevel(logging.WARNING)


__all__ = ["POSTGRES_DRIVER", "PRUNER_STARTUP_TRIALS", "SAMPLERS", "SETUP_ATTR", "check_setup", "check_url",
           "engine_url", "fail_dead_trials", "logging_jax", "make_pruner", "make_sampler", "mask", "open_storage",
           "open_study", "quiet_optuna", "sqlite_file", "storage_key", "trial_counts"]
