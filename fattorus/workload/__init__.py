"""Workloads: real job logs in (SWF, Slurm ``sacct``), the jobs table, and its transforms.

Spec: ``scenarios.md`` (workload sources and transforms) and ``scheduling.md`` ("Times",
"Input hygiene"). Formats and rules for users are in ``docs/workloads.md``.

Every reader returns a :class:`Workload` whose ``jobs`` is a Polars table with the typed
schema :data:`SCHEMA`, one row per well-formed job line. The reader keeps rows that are
well-formed but unusable (runtime unknown, cancelled before start, larger than any machine):
deciding what to replay is the replay's job, and it counts what it skips. The reader only
skips *malformed* lines, and counts each one by reason with its line number
(:class:`SkipReport`), so that ``rows read + lines skipped (+ sacct steps) == job lines``.

Parsing is vectorised (Polars expressions over all lines at once, no Python loop per line):
the 243,306-line SDSC-BLUE log loads in about 0.3 s on an idle core pair.

Transforms are pure functions over the table: :func:`scale_nodes` (the paper's Aug-2x /
Aug-3x), :func:`window` / :func:`first_days` (time windows) and :func:`with_estimate`
(the scheduler's walltime estimate). :func:`from_config` applies them from a Hydra
``workload`` config.
"""

from __future__ import annotations

import dataclasses
import datetime
import gzip
import hashlib
import math
import numbers
import os
import re
import stat
import zlib
from collections.abc import Mapping
from pathlib import Path
from typing import Any, NamedTuple

import polars as pl

SCHEMA: dict[str, pl.DataType] = {
    "job_id": pl.Int64(),
    "submit_s": pl.Float64(),  # seconds from the log's start
    "runtime_s": pl.Float64(),  # actual run time, s; null when unknown
    "requested_s": pl.Float64(),  # requested walltime, s; null when unknown or unlimited
    "procs": pl.Int64(),  # processors (cores); null when unknown
    "nodes": pl.Int32(),  # nodes; null when unknown
    "status": pl.Int32(),  # SWF status: 1 completed, 0 failed, 5 cancelled; null unknown
    "user": pl.Int64(),
    "group": pl.Int64(),
}
"""Column names and dtypes of every jobs table (the scheduler replay depends on them)."""

MAX_SKIP_ENTRIES = 1000
"""Skipped lines kept with their line numbers; counts by reason are always complete."""

SWF_FIELDS = 18
DAY_S = 86400.0

DEFAULT_MAX_RUNTIME_S = 366 * DAY_S
"""Ceiling on a job's run time and requested time (seconds). Real logs hold jobs of hours to
a few months; a value beyond a year is corruption (an unsigned ``-1``, a timestamp in a
duration field), so such a line is skipped and counted, not replayed. Configurable:
``workload.max_runtime_s``."""

MAX_SUBMIT_S = 100 * 366 * DAY_S
"""Submit times (seconds from the log's start) beyond a century are corruption: skipped."""

UINT32_MINUS_ONE = 4294967295.0
"""``-1`` written as an unsigned 32-bit integer: a corrupt "unknown", never a real value."""

# Largest value of the integer columns each SWF field feeds (job id, user, group: Int64;
# processors become Int32 node counts; status: Int32). Beyond it the line is corrupt.
_INT64_MAX, _INT32_MAX = 2.0**63 - 1024, 2.0**31 - 1
_SWF_INT_LIMIT = {1: _INT64_MAX, 5: _INT32_MAX, 8: _INT32_MAX, 11: _INT32_MAX, 12: _INT64_MAX, 13: _INT64_MAX}

# SWF fields (1-based, as the PWA documentation numbers them) that must hold integers.
_SWF_INT_FIELDS = (1, 5, 8, 11, 12, 13)

# sacct time values that mean "no such time" (pending, never started, still running).
_SACCT_NO_TIME = ("", "Unknown", "None", "N/A")
# sacct duration values that mean "no limit / not known" rather than a bad value.
_SACCT_NO_DURATION = ("", "UNLIMITED", "Partition_Limit", "INVALID", "NONE", "Unknown", "N/A")

# Slurm state (first word, trailing '+' removed) -> SWF status. SWF: 1 completed, 0 failed,
# 5 cancelled; states of jobs that have not finished (RUNNING, PENDING, ...) are unknown.
SACCT_STATUS: dict[str, int] = {
    "COMPLETED": 1,
    "FAILED": 0,
    "TIMEOUT": 0,
    "NODE_FAIL": 0,
    "OUT_OF_MEMORY": 0,
    "BOOT_FAIL": 0,
    "DEADLINE": 0,
    "PREEMPTED": 0,
    "CANCELLED": 5,
}

# Stable int64 ids for Slurm job ids that are not plain integers. Plain Slurm ids are
# uint32, so tagging with a bit above 2**32 can never collide with them.
ARRAY_TAG = 1 << 62  # array element A_T  -> ARRAY_TAG | A << TASK_BITS | T
HETJOB_TAG = 1 << 61  # het component A+K -> HETJOB_TAG | A << TASK_BITS | K
TASK_BITS = 22  # Slurm's MaxArraySize is at most 4,000,001 < 2**22


class WorkloadError(ValueError):
    """A file that cannot be read as a workload at all (missing, corrupt, not a job log)."""


class SkipEntry(NamedTuple):
    """One malformed line: where it is and why it was skipped."""

    file: str
    line: int  # 1-based line number in the (decompressed) file
    reason: str  # one of a few fixed reasons, the key of SkipReport.counts
    detail: str = ""  # the specific field or value


@dataclasses.dataclass(frozen=True)
class SkipReport:
    """Malformed lines a reader skipped, by reason, with line numbers.

    Attributes:
      counts: lines skipped per reason (complete).
      entries: the first :data:`MAX_SKIP_ENTRIES` skipped lines, in file order.
      steps: sacct job-step rows (``123.batch``, ``123.0``): not jobs and not malformed, so
        not counted in ``total``; reported so every line is accounted for.
    """

    counts: Mapping[str, int] = dataclasses.field(default_factory=dict)
    entries: tuple[SkipEntry, ...] = ()
    steps: int = 0

    @property
    def total(self) -> int:
        """Skipped (malformed) lines, steps excluded."""
        return sum(self.counts.values())

    def summary(self, max_lines: int = 5) -> str:
        """Human-readable report: counts by reason and the first few lines skipped."""
        parts = [f"{self.total} malformed line(s) skipped"]
        if self.counts:
            parts[0] += ": " + ", ".join(f"{reason} {n}" for reason, n in sorted(self.counts.items()))
        if self.steps:
            parts.append(f"{self.steps} job-step row(s) ignored (not jobs)")
        for e in self.entries[:max_lines]:
            parts.append(f"  {e.file}:{e.line}: {e.reason}" + (f" ({e.detail})" if e.detail else ""))
        if self.total > max_lines:
            parts.append(f"  ... {self.total - max_lines} more")
        return "\n".join(parts)


@dataclasses.dataclass(frozen=True, eq=False)
class Workload:
    """A job log loaded into a table.

    Attributes:
      jobs: one row per job, columns :data:`SCHEMA` (plus ``estimate_s`` after
        :func:`with_estimate`).
      header: SWF ``; Key: value`` header lines (repeated keys joined by newlines); for
        sacct, ``Format`` and ``StartTime`` (the earliest submit, the origin of ``submit_s``).
      path: the file read (``synthetic:...`` for generated workloads).
      sha256: hex digest of the file's bytes as stored (compressed if gzip).
      lines: job lines seen (comments and blank lines excluded; sacct: data rows including
        steps, header excluded).
      skipped: malformed lines skipped.
    """

    jobs: pl.DataFrame
    header: dict[str, str]
    path: str
    sha256: str
    lines: int
    skipped: SkipReport

    def summary(self) -> str:
        """One paragraph: lines, rows read, skips by reason."""
        head = f"{self.path}: {self.lines} job line(s), {self.jobs.height} read"
        return head + "\n" + self.skipped.summary()


def empty_jobs() -> pl.DataFrame:
    """A jobs table with no rows and the :data:`SCHEMA` columns."""
    return pl.DataFrame(schema=SCHEMA)


# ---------------------------------------------------------------------------------------
# Reading files


def _refuse_device(path: Path, mode: int) -> None:
    """A device (``workload.path=/dev/zero``) would be read without end: refused in one line.
    A pipe (a shell's ``<(zcat log)``) ends, and is read like a file."""
    if stat.S_ISCHR(mode) or stat.S_ISBLK(mode) or stat.S_ISSOCK(mode):
        raise WorkloadError(f"{path}: a device, not a job log file")


def _read_text(path: Path) -> tuple[str, str, bool]:
    """The file's text (gunzipped if gzip; UTF-8, or UTF-16 after its byte-order mark), the
    sha256 of its stored bytes, and whether it looks binary (NUL bytes near the start)."""
    try:
        _refuse_device(path, path.stat().st_mode)
        raw = path.read_bytes()
    except FileNotFoundError:
        raise WorkloadError(f"{path}: no such file") from None
    except IsADirectoryError:
        raise WorkloadError(f"{path}: is a directory, not a job log") from None
    except OSError as e:
        raise WorkloadError(f"{path}: cannot read ({e.strerror or e})") from None
    digest = hashlib.sha256(raw).hexdigest()
    data = raw
    if raw[:2] == b"\x1f\x8b":  # gzip magic: decide by content, not by file name
        try:
            data = gzip.decompress(raw)
        except (OSError, EOFError, zlib.error) as e:
            raise WorkloadError(f"{path}: corrupt or truncated gzip ({e})") from None
    # UTF-16 with its byte-order mark (what Windows PowerShell's redirection writes) is read as
    # the text it is (it was called a binary file for its NULs, session 45). utf-8-sig: a UTF-8
    # mark (some Windows editors write one) is not part of the first line; it made an SWF
    # header line a dirty job line and hid a sacct header.
    utf16 = data[:2] in (b"\xff\xfe", b"\xfe\xff")
    text = data.decode("utf-16" if utf16 else "utf-8-sig", errors="replace")
    if not (text if utf16 else data).strip():  # a UTF-16 mark alone is as empty as an empty file
        raise WorkloadError(f"{path}: empty file, not a job log")
    # A stray NUL in a text log is a dirty line, not a reason to refuse the file; NULs only
    # decide the message when nothing in the file reads as a job.
    return text, digest, not utf16 and b"\x00" in data[:65536]


# Whitespace is ASCII only (as SWF defines it), so that which lines are blank and how a line
# splits into fields does not depend on Unicode tables.
_BLANK = " \t\r\f\v"
_TOKEN_RE = r"[^ \t\r\f\v]+"


def _lines_frame(text: str) -> pl.DataFrame:
    """All lines with 1-based line numbers, surrounding whitespace stripped."""
    lines = text.split("\n")
    if lines and lines[-1] == "":
        lines.pop()  # the final newline ends the last line; it does not start a new one
    return pl.DataFrame({"line": pl.Series(lines, dtype=pl.Utf8)}).select(
        pl.int_range(1, pl.len() + 1, dtype=pl.Int64).alias("lineno"),
        pl.col("line").str.strip_chars(_BLANK).alias("line"),
    )


_NUMERIC_RE = re.compile(r"^[+-]?(\d+\.?\d*|\.\d+)([eE][+-]?\d+)?$")


def _sniff(text: str) -> str | None:
    """``"swf"``, ``"sacct"`` or None, from the first lines of the text."""
    n_seen = 0
    for raw in text.split("\n", 2000)[:2000]:
        line = raw.strip()
        if not line:
            continue
        if n_seen == 0:
            if line.startswith(";"):
                return "swf"
            if "|" in line and "jobid" in (f.strip().lower() for f in line.split("|")):
                return "sacct"
        n_seen += 1
        tokens = line.split()
        # A dirty first line should not hide an SWF log: any clean SWF line among the first
        # few hundred decides it.
        if len(tokens) == SWF_FIELDS and all(_NUMERIC_RE.match(t) for t in tokens):
            return "swf"
        if n_seen >= 200:
            break
    return None


def load(path: str | os.PathLike[str], fmt: str = "auto", cores_per_node: int | None = None,
         max_runtime_s: float = DEFAULT_MAX_RUNTIME_S) -> Workload:
    """Read a job log.

    Args:
      path: an SWF file (plain or gzip) or a Slurm ``sacct --parsable2`` dump (plain or gzip).
      fmt: ``"swf"``, ``"sacct"`` or ``"auto"`` (decided from the file's content).
      cores_per_node: processors per node, to turn processor counts into node counts
        (``nodes = ceil(procs / cores_per_node)``). SWF: defaults to the header's
        ``MaxProcs / MaxNodes``. sacct: only needed when ``NNodes`` is absent.
      max_runtime_s: run times and requested times above it (seconds) make a line dirty
        (:data:`DEFAULT_MAX_RUNTIME_S`).

    Returns:
      The :class:`Workload`.

    Raises:
      WorkloadError: the file is missing, unreadable, corrupt, not a job log, has no valid
        job line at all, or its node size cannot be determined.
    """
    p = Path(path).expanduser()
    if fmt not in ("auto", "swf", "sacct"):
        raise WorkloadError(f"{p}: unknown workload format {fmt!r} (use auto, swf or sacct)")
    if cores_per_node is not None:
        if isinstance(cores_per_node, bool) or not isinstance(cores_per_node, numbers.Integral) or cores_per_node < 1:
            raise WorkloadError(f"{p}: cores_per_node must be a positive integer, got {cores_per_node!r}")
        cores_per_node = int(cores_per_node)
    if isinstance(max_runtime_s, bool) or not isinstance(max_runtime_s, numbers.Real) or not max_runtime_s > 0:
        raise WorkloadError(f"{p}: max_runtime_s must be a positive number of seconds, got {max_runtime_s!r}")
    text, digest, binary = _read_text(p)
    not_text = WorkloadError(f"{p}: binary file, not a job log (SWF or sacct text expected)")
    kind = fmt if fmt != "auto" else _sniff(text)
    if kind is None:
        raise not_text if binary else WorkloadError(
            f"{p}: not a job log (neither SWF with {SWF_FIELDS} numeric fields per line nor "
            "sacct --parsable2 with a JobID header)"
        )
    reader = _parse_swf if kind == "swf" else _parse_sacct
    try:
        jobs, header, lines, skipped = reader(text, str(p), cores_per_node, float(max_runtime_s))
    except WorkloadError:
        if binary:
            raise not_text from None
        raise
    return Workload(jobs=jobs, header=header, path=str(p), sha256=digest, lines=lines, skipped=skipped)


def _skip_report(file: str, bad: pl.DataFrame, steps: int = 0) -> SkipReport:
    """Build the report from a frame of skipped lines (``lineno``, ``reason``, ``detail``)."""
    counts = {r: int(n) for r, n in bad.group_by("reason").len().iter_rows()}
    first = bad.sort("lineno").head(MAX_SKIP_ENTRIES)
    entries = tuple(SkipEntry(file, int(n), r, d or "") for n, r, d in first.select("lineno", "reason", "detail").iter_rows())
    return SkipReport(counts=counts, entries=entries, steps=steps)


def _first_failure(checks: list[tuple[pl.Expr, pl.Expr]]) -> tuple[pl.Expr, pl.Expr]:
    """(reason, detail) of the first failing check; each check is (ok, detail-if-not-ok)."""
    reason = pl.lit(None, dtype=pl.Utf8)
    detail = pl.lit(None, dtype=pl.Utf8)
    for ok, (why, what) in reversed(checks):
        reason = pl.when(~ok).then(pl.lit(why)).otherwise(reason)
        detail = pl.when(~ok).then(what).otherwise(detail)
    return reason, detail


def _mark_repeated(frame: pl.DataFrame, key: pl.Expr, shown: pl.Expr, eligible: pl.Expr) -> pl.DataFrame:
    """Mark as dirty (``repeated job id``) every job line of ``frame`` whose ``key`` an earlier
    job line had: the first line of an id is kept. Why: concatenated or overlapping log dumps
    repeat jobs, and each copy replayed would double that job's load without a word. Only lines
    that passed every other check (and are ``eligible``) count as an id's first line."""
    ok = pl.col("reason").is_null() & eligible & key.is_not_null()
    first = pl.when(ok).then(pl.col("lineno")).min().over(key)
    repeated = ok & (pl.col("lineno") != first)
    return frame.with_columns(
        reason=pl.when(repeated).then(pl.lit("repeated job id")).otherwise(pl.col("reason")),
        detail=pl.when(repeated).then(pl.format("{} (as line {})", shown, first)).otherwise(pl.col("detail")),
    )


def _no_jobs(file: str, kind: str, skipped: SkipReport) -> WorkloadError:
    """The error for a file without a single usable job row (nothing to replay)."""
    if not skipped.entries:
        steps = f" ({skipped.steps} job-step row(s) only)" if skipped.steps else ""
        return WorkloadError(f"{file}: no job lines in this {kind} log{steps}")
    first = skipped.entries[0]
    what = f"{first.reason}, {first.detail}" if first.detail else first.reason
    return WorkloadError(
        f"{file}: not a valid {kind} log: all {skipped.total} job line(s) are malformed (line {first.line}: {what})"
    )


# ---------------------------------------------------------------------------------------
# SWF


# Header keys that state the log's machine, read as numbers (cores per node, scale=fit): one
# value per log. Other keys (Note, Queue, Partition) repeat in real logs and are joined.
_SWF_MACHINE_KEYS = ("MaxProcs", "MaxNodes")


def _swf_header(comments: list[tuple[int, str]], file: str = "?") -> dict[str, str]:
    """``; Key: value`` comment lines (``(lineno, line)``) as a dict (repeated keys joined by
    newlines).

    Raises:
      WorkloadError: a machine-size key (:data:`_SWF_MACHINE_KEYS`) repeated with another
        number; why: the first would be used without a word and every node count derived
        from it would be wrong.
    """
    header: dict[str, str] = {}
    first_line: dict[str, int] = {}
    for lineno, c in comments:
        m = re.match(r"^;\s*([A-Za-z][\w\-]*)\s*:\s*(.*?)\s*$", c)
        if not m:
            continue
        key, value = m.groups()
        if key not in header:
            header[key], first_line[key] = value, lineno
            continue
        first = header[key].split("\n")[0]
        if key in _SWF_MACHINE_KEYS and _leading_int(value) != _leading_int(first):
            raise WorkloadError(
                f"{file}, line {lineno}: header field {key}: {value!r} contradicts line {first_line[key]} "
                f"({first!r}); a log has one machine: delete the wrong line"
            )
        header[key] = f"{header[key]}\n{value}"
    return header


def _leading_int(value: str | None) -> int | None:
    m = re.match(r"^\s*(\d+)", value or "")
    return int(m.group(1)) if m else None


def swf_cores_per_node(header: Mapping[str, str]) -> int | None:
    """``MaxProcs / MaxNodes`` from an SWF header, or None when absent or not a whole number."""
    procs, nodes = _leading_int(header.get("MaxProcs")), _leading_int(header.get("MaxNodes"))
    if not procs or not nodes or procs % nodes:
        return None
    return procs // nodes


def _parse_swf(text: str, file: str, cores_per_node: int | None,
               max_runtime_s: float = DEFAULT_MAX_RUNTIME_S) -> tuple[pl.DataFrame, dict[str, str], int, SkipReport]:
    frame = _lines_frame(text)
    is_comment = pl.col("line").str.starts_with(";")
    header = _swf_header(frame.filter(is_comment).select("lineno", "line").rows(), file)
    body = frame.filter(~is_comment & (pl.col("line") != ""))
    n_lines = body.height

    tok = pl.col("tok")
    fields = [tok.list.get(i, null_on_oob=True).cast(pl.Float64, strict=False).alias(f"f{i + 1}") for i in range(SWF_FIELDS)]
    parsed = body.with_columns(tok=pl.col("line").str.extract_all(_TOKEN_RE)).with_columns(
        tok.list.len().alias("n_fields"), *fields
    )
    def shown(i: int) -> pl.Expr:
        return pl.format("field {}: {}", pl.lit(i), tok.list.get(i - 1, null_on_oob=True))

    n_fields = pl.format("{} fields, expected 18", pl.col("n_fields"))
    checks = [(pl.col("n_fields") == SWF_FIELDS, ("wrong field count", n_fields))]
    # inf and nan parse as floats but are not SWF numbers
    checks += [
        (pl.col(f"f{i}").is_finite().fill_null(False), ("non-numeric field", shown(i)))
        for i in range(1, SWF_FIELDS + 1)
    ]
    checks += [(pl.col(f"f{i}") == pl.col(f"f{i}").round(0), ("non-integer field", shown(i))) for i in _SWF_INT_FIELDS]
    checks += _absurd_swf_checks(shown, max_runtime_s)
    reason, detail = _first_failure(checks)
    parsed = parsed.with_columns(reason=reason, detail=detail)
    parsed = _mark_repeated(parsed, pl.col("f1"), shown(1), pl.col("f1") >= 0)
    skipped = _skip_report(file, parsed.filter(pl.col("reason").is_not_null()))
    good = parsed.filter(pl.col("reason").is_null())
    if good.height == 0:
        raise _no_jobs(file, "SWF", skipped)

    cpn = cores_per_node or swf_cores_per_node(header)
    if cpn is None:
        raise WorkloadError(
            f"{file}: cannot determine cores per node from the header (MaxProcs={header.get('MaxProcs')!r}, "
            f"MaxNodes={header.get('MaxNodes')!r}); set workload.cores_per_node=N (--cores-per-node N for the tuner)"
        )
    jobs = _swf_columns(good, cpn)
    return jobs, header, n_lines, skipped


def _absurd_swf_checks(shown, max_runtime_s: float) -> list[tuple[pl.Expr, tuple[str, pl.Expr]]]:
    """Checks that turn absurd SWF values into dirty lines (each a reason of its own)."""
    checks = [
        (pl.col(f"f{i}") != UINT32_MINUS_ONE, ("unsigned -1 (4294967295)", shown(i)))
        for i in range(1, SWF_FIELDS + 1)
    ]
    checks += [(pl.col(f"f{i}").abs() <= limit, ("integer out of range", shown(i))) for i, limit in _SWF_INT_LIMIT.items()]
    checks += [
        (pl.col("f2") <= MAX_SUBMIT_S, ("absurd submit time", shown(2))),
        (pl.col("f4") <= max_runtime_s, ("run time beyond ceiling", shown(4))),
        (pl.col("f9") <= max_runtime_s, ("requested time beyond ceiling", shown(9))),
    ]
    return checks


def _known(col: str, min_value: float = 0.0) -> pl.Expr:
    """The SWF field, null where it is unknown (negative: SWF writes -1 for unknown)."""
    return pl.when(pl.col(col) >= min_value).then(pl.col(col))


def _swf_columns(good: pl.DataFrame, cores_per_node: int) -> pl.DataFrame:
    """Jobs table from validated SWF fields ``f1..f18`` (all finite floats)."""
    # Requested processors (8) fall back to allocated (5) when unknown, as in SOURCES.md.
    procs = pl.when(pl.col("f8") >= 0).then(pl.col("f8")).otherwise(_known("f5"))
    return good.select(
        pl.col("f1").cast(pl.Int64).alias("job_id"),
        _known("f2").alias("submit_s"),
        _known("f4").alias("runtime_s"),
        _known("f9").alias("requested_s"),
        procs.cast(pl.Int64).alias("procs"),
        (procs / cores_per_node).ceil().cast(pl.Int32).alias("nodes"),
        _known("f11").cast(pl.Int32).alias("status"),
        _known("f12").cast(pl.Int64).alias("user"),
        _known("f13").cast(pl.Int64).alias("group"),
    )


def _swf_number(col: str) -> pl.Expr:
    """SWF text of a column: -1 for null, integers without a decimal point."""
    x = pl.col(col).cast(pl.Float64)
    as_int = pl.when(x == x.round(0)).then(x.cast(pl.Int64).cast(pl.Utf8)).otherwise(x.cast(pl.Utf8))
    return as_int.fill_null("-1")


def write_swf(jobs: pl.DataFrame, path: str | os.PathLike[str], header: Mapping[str, str] | None = None) -> None:
    """Write a jobs table as SWF (gzip when ``path`` ends in ``.gz``).

    Fields written: 1 job id, 2 submit, 4 run time, 5 and 8 procs, 9 requested time,
    11 status, 12 user, 13 group; the rest -1. SWF stores processors, not nodes: pass
    ``header={"MaxProcs": ..., "MaxNodes": ...}`` (or ``cores_per_node`` to :func:`load`)
    so that node counts can be recovered.
    """
    minus = pl.lit("-1")
    cols = [
        _swf_number("job_id"), _swf_number("submit_s"), minus, _swf_number("runtime_s"),
        _swf_number("procs"), minus, minus, _swf_number("procs"), _swf_number("requested_s"), minus,
        _swf_number("status"), _swf_number("user"), _swf_number("group"), minus, minus, minus, minus, minus,
    ]
    body = jobs.select(pl.concat_str(cols, separator=" ").alias("line"))["line"].to_list()
    head = [f"; {k}: {line}" for k, v in (header or {}).items() for line in str(v).split("\n")]
    text = "\n".join([*head, *body]) + "\n"
    data = text.encode()
    p = Path(path)
    p.write_bytes(gzip.compress(data, mtime=0) if p.suffix == ".gz" else data)


# ---------------------------------------------------------------------------------------
# Slurm sacct --parsable2


#: Earliest plausible sacct Submit time, 1990-01-01T00:00:00 (seconds since the epoch).
SACCT_MIN_EPOCH_S = 631_152_000


def _sacct_time(name: str) -> tuple[pl.Expr, pl.Expr]:
    """(seconds since the epoch of the naive timestamp or null, ok) for a sacct time column."""
    raw = pl.col(name)
    dt = raw.str.strptime(pl.Datetime("us"), "%Y-%m-%dT%H:%M:%S", strict=False)
    secs = dt.dt.epoch("s").cast(pl.Float64)
    ok = raw.is_in(_SACCT_NO_TIME) | dt.is_not_null()
    return secs, ok


_DURATION_RE = r"^(?:(\d+)-)?(\d+)(?::(\d+(?:\.\d+)?))?(?::(\d+(?:\.\d+)?))?$"


def _sacct_duration(name: str) -> tuple[pl.Expr, pl.Expr]:
    """(seconds or null, ok) for a Slurm duration: ``[D-]HH:MM:SS``, ``MM:SS``, ``D-HH[:MM]``, minutes."""
    raw = pl.col(name)
    g = raw.str.extract_groups(_DURATION_RE)
    d, a, b, c = (g.struct.field(k).cast(pl.Float64) for k in ("1", "2", "3", "4"))
    # Slurm's own reading: with days, "D-H", "D-H:M", "D-H:M:S"; without, "M", "M:S", "H:M:S".
    with_days = d * DAY_S + a * 3600 + b.fill_null(0) * 60 + c.fill_null(0)
    hms = a * 3600 + b * 60 + c
    ms = a * 60 + b
    secs = (
        pl.when(d.is_not_null()).then(with_days)
        .when(c.is_not_null()).then(hms)
        .when(b.is_not_null()).then(ms)
        .otherwise(a * 60)
    )
    ok = raw.is_in(_SACCT_NO_DURATION) | a.is_not_null()
    return secs, ok


def _sacct_int(name: str) -> tuple[pl.Expr, pl.Expr]:
    raw = pl.col(name)
    value = raw.cast(pl.Int64, strict=False)
    return value, (raw == "") | (raw.str.contains(r"^\d+$") & value.is_not_null())


def _sacct_job_id(jid: pl.Expr) -> tuple[pl.Expr, pl.Expr]:
    """A sacct JobID's plain id (its digits as Int64; null for another form, or past Int64) and
    the job id it is read as: the plain id; an array task ``A_T`` as ``ARRAY_TAG | A << TASK_BITS
    | T``; a heterogeneous job's component ``A+K`` with ``HETJOB_TAG``; null for any other form."""
    plain = jid.str.extract(r"^(\d+)$").cast(pl.Int64, strict=False)
    arr = jid.str.extract_groups(r"^(\d+)_(\d+)$")
    het = jid.str.extract_groups(r"^(\d+)\+(\d+)$")
    arr_a, arr_t = (arr.struct.field(k).cast(pl.Int64, strict=False) for k in ("1", "2"))
    het_a, het_k = (het.struct.field(k).cast(pl.Int64, strict=False) for k in ("1", "2"))
    task_max = 1 << TASK_BITS
    job_id = (
        pl.when(plain.is_not_null()).then(plain)
        .when((arr_a < (1 << 40)) & (arr_t < task_max)).then(pl.lit(ARRAY_TAG) | (arr_a * task_max) | arr_t)
        .when((het_a < (1 << 39)) & (het_k < task_max)).then(pl.lit(HETJOB_TAG) | (het_a * task_max) | het_k)
    )
    return plain, job_id


def _parse_sacct(text: str, file: str, cores_per_node: int | None,
                 max_runtime_s: float = DEFAULT_MAX_RUNTIME_S) -> tuple[pl.DataFrame, dict[str, str], int, SkipReport]:
    frame = _lines_frame(text).filter(pl.col("line") != "")
    header_line = frame["line"][0]
    names = [n.strip() for n in header_line.split("|")]
    # Data columns get a prefix so that no sacct field name can clash with working columns.
    col_of = {n.lower(): f"c:{n}" for n in names if n}
    if len(col_of) != len([n for n in names if n]):
        raise WorkloadError(f"{file}: line {frame['lineno'][0]}: repeated column name in sacct header")
    missing = [c for c in ("JobID", "Submit", "State") if c.lower() not in col_of]
    if "elapsed" not in col_of and not {"start", "end"} <= col_of.keys():
        missing.append("Elapsed (or Start and End)")
    if "nnodes" not in col_of and not ("ncpus" in col_of and cores_per_node):
        missing.append("NNodes (or NCPUS with cores_per_node)")
    if missing:
        raise WorkloadError(f"{file}: line {frame['lineno'][0]}: sacct header lacks column(s) {', '.join(missing)}")

    body = frame.slice(1)
    n_lines = body.height
    expected = len(names)
    split = body.with_columns(tok=pl.col("line").str.split("|"))
    split = split.with_columns(
        pl.col("tok").list.len().alias("n_fields"),
        *(pl.col("tok").list.get(i, null_on_oob=True).str.strip_chars(_BLANK).alias(f"c:{n}") for i, n in enumerate(names) if n),
    )
    c = col_of  # lower-case field name -> its data column

    jid = pl.col(c["jobid"])
    step = jid.str.contains(r"^\d+(?:[_+]\d+)?\.")
    plain, job_id = _sacct_job_id(jid)

    times = {k: _sacct_time(c[k]) for k in ("submit", "start", "end") if k in c}
    durations = {k: _sacct_duration(c[k]) for k in ("elapsed", "timelimit") if k in c}
    ints = {k: _sacct_int(c[k]) for k in ("nnodes", "ncpus", "uid", "gid") if k in c}

    def field(k: str) -> pl.Expr:
        return pl.format("{}: {}", pl.lit(c[k][2:]), pl.col(c[k]))

    n_fields = pl.format("{} fields, expected {}", pl.col("n_fields"), pl.lit(expected))
    checks: list[tuple[pl.Expr, tuple[str, pl.Expr]]] = [
        (pl.col("n_fields") == expected, ("wrong field count", n_fields)),
        (jid != c["jobid"][2:], ("repeated header", pl.lit(""))),
        (~jid.str.contains(r"^\d+_\["), ("unexpanded array range", field("jobid"))),
        # A plain id of digits that Int64 cannot hold: out of range (the reason docs/workloads.md gives), not "bad".
        (~(jid.str.contains(r"^\d+$") & plain.is_null()), ("integer out of range", field("jobid"))),
        (job_id.is_not_null(), ("bad job id", field("jobid"))),
    ]
    checks += [(ok, ("unparseable time", field(k))) for k, (_, ok) in times.items()]
    checks += [(ok, ("unparseable duration", field(k))) for k, (_, ok) in durations.items()]
    checks += [(ok, ("non-numeric field", field(k))) for k, (_, ok) in ints.items()]
    checks = [(ok.fill_null(False), why) for ok, why in checks]
    # Absurd values are dirty lines too; a null (unknown) value passes.
    checks += [((v <= max_runtime_s).fill_null(True), (f"{k} beyond ceiling", field(k))) for k, (v, _) in durations.items()]
    checks += [((v <= _INT32_MAX).fill_null(True), ("integer out of range", field(k)))
               for k, (v, _) in ints.items() if k in ("nnodes", "ncpus")]
    # A submit time before 1990 (the epoch itself, a zeroed field) is corruption: kept, it would
    # stretch the replay over decades from one line.
    checks += [((times["submit"][0] >= SACCT_MIN_EPOCH_S).fill_null(True), ("absurd submit time", field("submit")))]
    reason, detail = _first_failure(checks)

    # Steps are recognised before any other check: a step is not a job, whatever it holds.
    split = split.with_columns(is_step=step.fill_null(False) & (pl.col("n_fields") == expected))
    split = split.with_columns(reason=pl.when(pl.col("is_step")).then(None).otherwise(reason), detail=detail)
    split = _mark_repeated(split, job_id, field("jobid"), ~pl.col("is_step"))
    n_steps = int(split["is_step"].sum())
    bad = split.filter(pl.col("reason").is_not_null())
    skipped = _skip_report(file, bad, steps=n_steps)
    good = split.filter(pl.col("reason").is_null() & ~pl.col("is_step"))
    if good.height == 0:
        raise _no_jobs(file, "sacct", skipped)

    jobs, header = _sacct_columns(good, c, times, durations, ints, job_id, cores_per_node)
    return jobs, header, n_lines, skipped


def _sacct_columns(
    good: pl.DataFrame,
    c: Mapping[str, str],
    times: Mapping[str, tuple[pl.Expr, pl.Expr]],
    durations: Mapping[str, tuple[pl.Expr, pl.Expr]],
    ints: Mapping[str, tuple[pl.Expr, pl.Expr]],
    job_id: pl.Expr,
    cores_per_node: int | None,
) -> tuple[pl.DataFrame, dict[str, str]]:
    """Jobs table from validated sacct job rows."""
    submit = times["submit"][0]
    start = times["start"][0] if "start" in times else None
    end = times["end"][0] if "end" in times else None
    if start is not None and end is not None:
        # Never started (Start None/Unknown) but ended: cancelled while pending, ran 0 s.
        from_times = pl.when(start.is_not_null()).then(end - start).when(end.is_not_null()).then(0.0)
    else:
        from_times = pl.lit(None, dtype=pl.Float64)
    runtime = pl.coalesce(durations["elapsed"][0], from_times) if "elapsed" in durations else from_times
    if end is not None:
        # Elapsed of an unfinished job is time so far, not its runtime.
        runtime = pl.when(end.is_not_null()).then(runtime)
    requested = durations["timelimit"][0] if "timelimit" in durations else pl.lit(None, dtype=pl.Float64)
    procs = ints["ncpus"][0] if "ncpus" in ints else pl.lit(None, dtype=pl.Int64)
    from_procs = (procs / cores_per_node).ceil() if cores_per_node else pl.lit(None, dtype=pl.Float64)
    nodes = pl.coalesce(ints["nnodes"][0], from_procs) if "nnodes" in ints else from_procs
    state = pl.col(c["state"]).str.extract(r"^([A-Za-z_]+)").str.to_uppercase()
    status = state.replace_strict(SACCT_STATUS, default=None, return_dtype=pl.Int32)

    def who(num: str, name: str) -> pl.Expr:
        # Numeric ids when present; else names numbered 1, 2, ... in sorted order (the PWA
        # anonymisation style), stable for a given file.
        if num in ints:
            return ints[num][0]
        if name in c:
            col = pl.col(c[name]).replace("", None)
            return col.rank("dense").cast(pl.Int64)
        return pl.lit(None, dtype=pl.Int64)

    out = good.select(
        job_id.alias("job_id"),
        submit.alias("abs_submit"),
        runtime.cast(pl.Float64).alias("runtime_s"),
        requested.cast(pl.Float64).alias("requested_s"),
        procs.cast(pl.Int64).alias("procs"),
        nodes.cast(pl.Int32).alias("nodes"),
        status.alias("status"),
        who("uid", "user").cast(pl.Int64).alias("user"),
        who("gid", "group").cast(pl.Int64).alias("group"),
    )
    origin = out["abs_submit"].min()
    header = {"Format": "sacct --parsable2"}
    if origin is not None:
        # sacct prints local wall time without a zone; it is kept as read (naive).
        header["StartTime"] = datetime.datetime.fromtimestamp(float(origin), datetime.UTC).strftime("%Y-%m-%dT%H:%M:%S")
    jobs = out.select(
        "job_id",
        (pl.col("abs_submit") - (origin if origin is not None else 0.0)).alias("submit_s"),
        *[k for k in SCHEMA if k not in ("job_id", "submit_s")],
    )
    return jobs.cast(SCHEMA), header  # type: ignore[arg-type]


# ---------------------------------------------------------------------------------------
# Transforms (pure: table in, table out)


INT32_MAX = 2**31 - 1  # node counts are Int32


def scale_nodes(jobs: pl.DataFrame, factor: float, machine_nodes: int | None) -> tuple[pl.DataFrame, int]:
    """Multiply every job's node (and processor) count; drop jobs it pushes past the machine.

    The paper's Aug-2x / Aug-3x workloads (Section IV-B). ``nodes' = ceil(nodes * factor)``
    (exact for integer factors). Jobs that fitted the machine before scaling and exceed
    ``machine_nodes`` after it are dropped and counted; jobs that were already too large are
    kept, so that the replay reports them as it would without scaling.

    Returns:
      ``(scaled jobs, number dropped)``.
    """
    scaled, dropped = _scale_split(jobs, factor, machine_nodes)
    return scaled, dropped.height


def check_scale(scale: Any) -> None:
    """Refuse a ``workload.scale`` that is not ``machine``, ``fit`` or a positive finite number
    (a one-line :class:`WorkloadError`); the replay app asks before it reads the log."""
    if scale in ("machine", "fit"):
        return
    if isinstance(scale, bool) or not isinstance(scale, numbers.Real) or not (math.isfinite(scale) and scale > 0):
        raise WorkloadError(f"workload.scale={scale!r}: the scale factor must be a positive finite number, "
                            "'fit' or 'machine'")


def _scale_split(jobs: pl.DataFrame, factor: float, machine_nodes: int | None) -> tuple[pl.DataFrame, pl.DataFrame]:
    """:func:`scale_nodes` that returns the dropped jobs themselves (scaled) instead of their
    number, so that :func:`from_config` can count those submitted in the run's window."""
    if not (factor > 0 and math.isfinite(factor)):
        raise ValueError(f"scale factor must be a positive finite number, got {factor!r}")
    if factor == 1:
        return jobs, jobs.clear()
    largest = jobs["nodes"].max()
    # Compared without math.ceil (ceil(x) > n iff x > n for a whole n): a finite factor can
    # still make an infinite product (1e308 x 1,140 nodes), past any node count too, and
    # math.ceil of it raised OverflowError (a traceback) instead of this one line.
    if largest is not None and float(largest) * factor > INT32_MAX:
        raise ValueError(f"scale factor {factor:g} makes a {largest}-node job larger than any node count "
                         f"can be (2^31 - 1); use a factor below {INT32_MAX / float(largest):.3g}")
    scaled = jobs.with_columns(
        (pl.col("nodes").cast(pl.Float64) * factor).ceil().cast(pl.Int32).alias("nodes"),
        (pl.col("procs").cast(pl.Float64) * factor).ceil().cast(pl.Int64).alias("procs"),
    )
    if machine_nodes is None:
        return scaled, scaled.clear()
    fitted = (jobs["nodes"] <= machine_nodes).fill_null(False)
    pushed_out = fitted & (scaled["nodes"] > machine_nodes).fill_null(False)
    return scaled.filter(~pushed_out), scaled.filter(pushed_out)


def log_machine_nodes(wl: Workload, cores_per_node: int | None = None) -> int | None:
    """Nodes of the machine that wrote the log: the SWF header's ``MaxNodes``, else
    ``ceil(MaxProcs / cores_per_node)``; None when the header says neither."""
    nodes = _leading_int(wl.header.get("MaxNodes"))
    if nodes and nodes > 0:
        return nodes
    procs = _leading_int(wl.header.get("MaxProcs"))
    if procs and procs > 0 and cores_per_node:
        return math.ceil(procs / cores_per_node)
    return None


def fit_factor(wl: Workload, machine_nodes: int | None, log_nodes: int | None, name: str = "?",
               cores_per_node: int | None = None) -> float:
    """``workload.scale=fit``: machine nodes / the log's machine nodes, so that the log loads
    the machine as it loaded its own (nodes' = ceil(nodes x factor), as any scale).

    ``log_nodes`` overrides the header (``workload.log_nodes``); one-line ``WorkloadError``
    when neither the header nor the config tells the log's machine size.
    """
    if machine_nodes is None:
        raise WorkloadError(f"workload {name!r}: scale=fit needs the machine's size")
    size = log_nodes if log_nodes is not None else log_machine_nodes(wl, cores_per_node)
    if isinstance(size, bool) or not isinstance(size, numbers.Integral) or size <= 0:
        if log_nodes is not None:  # the user's setting is wrong, whatever the header says
            raise WorkloadError(f"workload {name!r}: workload.log_nodes={log_nodes!r}: give the log's machine size, "
                                "a whole number of nodes >= 1 (or leave it unset to read the log's header)")
        if wl.header.get("Format") == "waves":  # generated: the table states its machine, or nothing does
            raise WorkloadError(f"workload {name!r}: scale=fit needs the size of the machine the waves table was "
                                "written for: set workload.synthetic.machine_nodes=N (or workload.log_nodes=N)")
        raise WorkloadError(f"workload {name!r}: scale=fit needs the log's machine size: its header has no "
                            "MaxNodes/MaxProcs; set workload.log_nodes=N")
    return int(machine_nodes) / int(size)


def window(jobs: pl.DataFrame, start_s: float, duration_s: float | None) -> pl.DataFrame:
    """Jobs submitted in ``[start_s, start_s + duration_s)`` (log seconds; None: no end).

    Submit times are left as they are (still seconds from the log's start). Jobs with an
    unknown submit time are outside every window (:func:`from_config` counts them apart:
    without a window the replay skips them as ``bad_submit``).
    """
    inside = pl.col("submit_s") >= start_s
    if duration_s is not None:
        inside &= pl.col("submit_s") < start_s + duration_s
    return jobs.filter(inside.fill_null(False))


def first_days(jobs: pl.DataFrame, days: float | None, start_days: float = 0.0) -> pl.DataFrame:
    """Jobs submitted in days ``[start_days, start_days + days)`` counted from the first submit.

    Day 0 is the earliest submit in the table, not the log's nominal start: cleaned PWA
    logs often begin weeks after their header's start time. ``days`` and ``start_days`` are
    checked as a workload config's window (:func:`check_window`: a NaN ``days`` kept every
    job, a negative one none, without a word).
    """
    start_days, days = _window_days({"window_start_days": start_days, "window_days": days})
    origin = jobs["submit_s"].min()
    if origin is None:
        return jobs.clear()
    return window(jobs, float(origin) + start_days * DAY_S, None if days is None else days * DAY_S)  # type: ignore[arg-type]


def with_estimate(jobs: pl.DataFrame) -> pl.DataFrame:
    """Add ``estimate_s = max(requested_s, runtime_s)`` (spec scheduling.md, "Times").

    Missing requested time: the runtime; missing runtime: the requested time; both missing:
    null. Computed from the *logged* runtime, so call it before any speedup scenario.
    """
    return jobs.with_columns(pl.max_horizontal("requested_s", "runtime_s").alias("estimate_s"))


# ---------------------------------------------------------------------------------------
# Configuration


def repo_root() -> Path:
    """The repository root (:func:`fattorus.paths.repo_root`)."""
    from fattorus import paths  # the one place that finds the checkout

    return paths.repo_root()


def resolve_path(path: str | os.PathLike[str]) -> Path:
    """Absolute path; relative paths are taken from the repo root, else the working directory."""
    p = Path(path).expanduser()
    if p.is_absolute():
        return p
    rooted = repo_root() / p
    return rooted if rooted.exists() or not p.exists() else p.resolve()


def check_window(cfg: Any) -> tuple[float, float | None]:
    """A workload config's window ``(window_start_days, window_days)`` (None: to the end), or a
    one-line :class:`WorkloadError` if it can mean no window; before any log is read."""
    return _window_days(cfg)


def _window_days(cfg: Any) -> tuple[float, float | None]:
    """``(window_start_days, window_days)`` of a workload config, checked."""
    start, days = _get(cfg, "window_start_days", 0.0), _get(cfg, "window_days")
    if isinstance(start, bool) or not isinstance(start, numbers.Real) or not (math.isfinite(start) and start >= 0):
        raise WorkloadError(f"workload.window_start_days must be a number >= 0, got {start!r}")
    if days is not None and (isinstance(days, bool) or not isinstance(days, numbers.Real)
                             or not (math.isfinite(days) and days > 0)):
        raise WorkloadError(f"workload.window_days must be a positive number of days (or null), got {days!r}")
    return float(start), None if days is None else float(days)


def _span_days(jobs: pl.DataFrame) -> float | None:
    """Days between the first and the last submission (None for an empty table)."""
    first, last = jobs["submit_s"].min(), jobs["submit_s"].max()
    return None if first is None else (float(last) - float(first)) / DAY_S  # type: ignore[arg-type]


def _get(cfg: Any, key: str, default: Any = None) -> Any:
    value = cfg.get(key, default) if hasattr(cfg, "get") else getattr(cfg, key, default)
    return default if value is None else value


def check_source(cfg: Mapping[str, Any]) -> None:
    """Refuse (one-line :class:`WorkloadError`), before anything is read, a workload config
    whose source cannot be: a generated format (``synthetic``, ``waves``) with a log's path
    still set, a log format without a path, or a path that does not exist, is a directory or
    a device. :func:`from_config` checks it; so does the replay's pre-check (a study's blocks
    are checked before the first runs)."""
    fmt = str(_get(cfg, "format", "auto"))
    path = _get(cfg, "path")
    if fmt in ("synthetic", "waves"):
        if path:
            # A generated workload reads no log: with a log's path still set (workload=atlas
            # workload.format=synthetic) the run would replay generated jobs under the log's name.
            raise WorkloadError(f"workload {_get(cfg, 'name', '?')!r}: format={fmt} generates its jobs and reads no "
                                f"log, but workload.path={path} is set (use workload="
                                f"{fmt if fmt == 'synthetic' else 'bluewaters_table2'}, or workload.path=null)")
        return
    if not path:
        raise WorkloadError(f"workload {_get(cfg, 'name', '?')!r}: no path given (set workload.path=...)")
    where = resolve_path(str(path))
    try:
        mode = where.stat().st_mode
    except FileNotFoundError:
        raise WorkloadError(f"{where}: no such file") from None
    except OSError as e:
        raise WorkloadError(f"{where}: cannot read ({e.strerror or e})") from None
    if stat.S_ISDIR(mode):
        raise WorkloadError(f"{where}: is a directory, not a job log")
    _refuse_device(where, mode)


def from_config(cfg: Mapping[str, Any], machine_nodes: int | None = None,
                machine_scale: float | str = 1) -> tuple[Workload, dict[str, Any]]:
    """Load and transform a workload from a ``workload`` config (``conf/workload/*.yaml``).

    Keys: ``name``, ``path``, ``format`` (``auto``/``swf``/``sacct``/``synthetic``/``waves``),
    ``cores_per_node``, ``scale`` (default 1; a number, ``fit`` — machine nodes over the log's
    machine nodes, :func:`fit_factor` — or ``machine``: ``machine_scale``, the machine's
    default load), ``log_nodes`` (for ``fit``), ``window_start_days`` (default 0),
    ``window_days`` (null: to the end), ``machine_nodes`` (the caller's machine size, for
    scaling; the ``machine_nodes`` argument wins), and for ``synthetic`` a ``synthetic``
    mapping of :class:`fattorus.synthetic.SyntheticParams` fields plus ``seed``.

    Returns:
      ``(workload with transformed jobs, counts)`` where counts are
      ``{"dropped_by_scaling": n, "outside_window": m, "scale_factor": f}``: ``n`` the jobs
      pushed past the machine by scaling *and submitted in the window* (the window is cut
      from the scaled table, so its day 0 is the first submission of a job that was kept),
      ``m`` the jobs (kept or dropped) submitted outside it; with a window, also
      ``"unknown_submit"``: how many of those ``m`` have no submit time (only when some do).
    """
    fmt = str(_get(cfg, "format", "auto"))
    machine = machine_nodes if machine_nodes is not None else _get(cfg, "machine_nodes")
    check_source(cfg)
    if fmt == "synthetic":
        from fattorus.workload import synthetic  # local import: synthetic builds on this module

        wl = synthetic.from_config(cfg)
    elif fmt == "waves":
        from fattorus.workload import waves  # local import: waves builds on this module

        wl = waves.generate(dict(_get(cfg, "synthetic") or {}, cores_per_node=_get(cfg, "cores_per_node", 32)))
    else:
        path = _get(cfg, "path")
        wl = load(resolve_path(str(path)), fmt=fmt, cores_per_node=_get(cfg, "cores_per_node"),
                  max_runtime_s=_get(cfg, "max_runtime_s", DEFAULT_MAX_RUNTIME_S))
    scale = _get(cfg, "scale", 1)
    if scale == "machine":  # the machine's default load (conf/topo: default_scale)
        scale = machine_scale
    if scale == "fit":
        scale = fit_factor(wl, machine, _get(cfg, "log_nodes"), str(_get(cfg, "name", "?")), _get(cfg, "cores_per_node"))
    check_scale(scale)
    jobs, dropped = _scale_split(wl.jobs, float(scale), None if machine is None else int(machine))
    start_days, days = _window_days(cfg)
    windowed_at_all = bool(start_days) or days is not None
    if windowed_at_all:
        windowed = first_days(jobs, days, start_days)
        span = _span_days(jobs)
        if windowed.height == 0 and span is not None and start_days >= span:
            raise WorkloadError(f"workload {_get(cfg, 'name', '?')!r}: window_start_days={start_days:g} starts after "
                                f"the log ends (its submissions span {span:.1f} days)")
        # The summary's counts cover the run's window only (counts.read includes the window's
        # dropped jobs), so the dropped jobs are cut by the same window. Day 0 stays first_days's,
        # the first submission of the scaled table (a dropped first job does not move it), so the
        # replayed jobs are the ones they always were.
        origin = jobs["submit_s"].min()
        dropped_in = dropped.clear() if origin is None else window(
            dropped, float(origin) + start_days * DAY_S, None if days is None else days * DAY_S)  # type: ignore[arg-type]
    else:
        windowed, dropped_in = jobs, dropped
    # A dropped job outside the window is left out by the window, like a kept one: every job
    # read from the log is in exactly one of counts.read and outside_window.
    counts = {"dropped_by_scaling": dropped_in.height,
              "outside_window": jobs.height - windowed.height + dropped.height - dropped_in.height,
              "scale_factor": float(scale)}
    unknown = jobs["submit_s"].null_count() + dropped["submit_s"].null_count()
    if windowed_at_all and unknown:
        # Of those, the jobs of unknown submit time: no window holds them (without a window the
        # replay counts them as bad_submit), said apart so that a window does not turn them into
        # "outside the window" without a word (session 27 review).
        counts["unknown_submit"] = unknown
    return dataclasses.replace(wl, jobs=windowed), counts


__all__ = [
    "DEFAULT_MAX_RUNTIME_S",
    "SCHEMA",
    "SkipEntry",
    "SkipReport",
    "Workload",
    "WorkloadError",
    "check_source",
    "empty_jobs",
    "first_days",
    "fit_factor",
    "from_config",
    "log_machine_nodes",
    "load",
    "resolve_path",
    "scale_nodes",
    "swf_cores_per_node",
    "window",
    "with_estimate",
    "write_swf",
]
