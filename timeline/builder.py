"""``build``: logs and a checkout in, a Timeline out. The one function behind ``timeline build``."""

from __future__ import annotations

import errno
import functools
import math
import os
import platform
import re
import shutil
import stat
import statistics
import sys
import tempfile
from array import array
from collections.abc import Callable, Iterable, Iterator, Sequence
from dataclasses import dataclass, field
from datetime import datetime
from pathlib import Path
from typing import TYPE_CHECKING, Any, cast

from timeline import __version__
from timeline.clock import Zone, ZonePolicy, format_offset, steady_offset, wall_candidates
from timeline.columns import SampleRows
from timeline.correlate import DEFAULT_TOLERANCE_S, HeadIndex, assume_zone, attribute
from timeline.detect import DEFAULT_MIN_EFFECT, Settings, exact_sums, median, order_statistics
from timeline.environment import Environment
from timeline.errors import NoLogsError, UsageError
from timeline.model import (
    CodeEvent,
    Culprit,
    Diagnostic,
    MetricSummary,
    Provenance,
    RepoInfo,
    Run,
    Shift,
    Timeline,
    run_order,
)
from timeline.parsers import parse_file, preload
from timeline.records import ParsedFile, ParsedRun, SeriesDigest

if TYPE_CHECKING:
    from concurrent.futures import Executor

    from timeline.cache import Lookup, ParseCache

LOG_SUFFIXES = (".log", ".txt", ".out")
COMPRESSED_SUFFIXES = ("", ".gz", ".bz2", ".xz", ".zst")
_ROTATED = re.compile(r"(?:\.\d{1,4}|-\d{8}(?:-?\d{2,6})?)$")  # app.log.1, app.log-20250101 (logrotate)


def is_log_name(name: str) -> bool:
    """``x.log``, ``x.txt``, ``x.out``, compressed (``.gz``/``.bz2``/``.xz``/``.zst``) or rotated
    (``app.log.1``, ``app.log.2.gz``, ``app.log-20250101``). Only names of files found in folders
    are judged: a file given by name is read whatever its name, and its content decides the parser."""
    for suffix in COMPRESSED_SUFFIXES[1:]:
        if name.endswith(suffix):
            name = name[: -len(suffix)]
            break
    return name.endswith(LOG_SUFFIXES) or _ROTATED.sub("", name).endswith(LOG_SUFFIXES)


@dataclass
class LogInputs:
    """The logs to read, as (source as the user would recognise it, path) pairs, and what was
    said about the paths that are not read (``collect_logs``)."""

    files: list[tuple[str, Path]] = field(default_factory=list)
    diagnostics: list[Diagnostic] = field(default_factory=list)


# As a path: the logs come on standard input (``kubectl logs POD | timeline build -``). A pipe
# cannot be read twice nor sought, so it is copied to a temporary file first (compressed or not).
STDIN_PATHS = ("-", "/dev/stdin")
STDIN_SOURCE = "<stdin>"  # how runs and warnings name it


def collect_logs(paths: Sequence[str | os.PathLike]) -> LogInputs:
    """Files as given, and folders searched recursively for logs (hidden folders skipped).

    Only regular files are kept: a FIFO, socket or device is never opened (reading a FIFO blocks
    until a writer comes, forever), a symbolic link loop or a dangling link is named and skipped;
    the same file reached twice (two paths, a symbolic or hard link) is read once, under the first
    name met; a folder that cannot be listed is named. Raises UsageError for a path that does not
    exist. Standard input (``-``) is ``(STDIN_SOURCE, Path("-"))``, once.
    """
    inputs = LogInputs()
    seen: dict[tuple[int, int], str] = {}
    for given in paths:
        name = os.fspath(given)
        if name in STDIN_PATHS:
            if (STDIN_SOURCE, Path("-")) not in inputs.files:
                inputs.files.append((STDIN_SOURCE, Path("-")))
            continue
        try:
            os.lstat(name)
        except OSError:
            raise UsageError(f"{name}: no such file or folder") from None
        if os.path.isdir(name):
            _walk_folder(Path(name), inputs, seen)
        else:
            _keep_file(name, Path(name), inputs, seen)
    return inputs


def _walk_folder(folder: Path, inputs: LogInputs, seen: dict[tuple[int, int], str]) -> None:
    def unlisted(error: OSError) -> None:
        what = error.strerror.lower() if error.strerror else str(error)
        inputs.diagnostics.append(
            Diagnostic(
                os.fspath(error.filename or folder),
                None,
                f"cannot list this folder: {what}; its logs are not read",
                "unreadable-folder",
            )
        )

    for current, dirs, files in os.walk(folder, onerror=unlisted):
        dirs[:] = sorted(d for d in dirs if not d.startswith("."))
        for name in sorted(files):
            if is_log_name(name):
                file = Path(current) / name
                _keep_file(os.fspath(file), file, inputs, seen)


_NOT_REGULAR = (
    (stat.S_ISFIFO, "a FIFO"),
    (stat.S_ISSOCK, "a socket"),
    (stat.S_ISCHR, "a character device"),
    (stat.S_ISBLK, "a block device"),
    (stat.S_ISDIR, "a folder"),
)


def _keep_file(source: str, path: Path, inputs: LogInputs, seen: dict[tuple[int, int], str]) -> None:
    """Add ``path`` to ``inputs`` when it is a regular file not met before; else say why not."""
    try:
        st = os.stat(path)  # follows a link: what would be read
    except OSError as exc:
        if exc.errno == errno.ELOOP:
            why = "a symbolic link loop"
        elif os.path.islink(path):
            why = "a symbolic link to nothing"
        else:
            why = f"cannot be looked at ({exc.strerror or exc})"
        inputs.diagnostics.append(Diagnostic(source, None, f"{why}, skipped", "not-a-file"))
        return
    if not stat.S_ISREG(st.st_mode):
        kind = next((what for test, what in _NOT_REGULAR if test(st.st_mode)), "not a regular file")
        inputs.diagnostics.append(
            Diagnostic(source, None, f"{kind}, not a regular file: skipped, never opened", "not-a-file")
        )
        return
    key = (st.st_dev, st.st_ino)
    first = seen.get(key)
    if first is not None:
        inputs.diagnostics.append(Diagnostic(source, None, f"the same file as {first}: read once", "duplicate-input"))
        return
    seen[key] = source
    inputs.files.append((source, path))


def _no_logs_message(paths: Sequence[str | os.PathLike], skipped: list[Diagnostic]) -> str:
    where = ", ".join(os.fspath(p) for p in paths)
    message = f"no logs found in {where} (files named *.log, *.txt, *.out, also compressed or rotated)"
    if skipped:
        more = f" and {len(skipped) - 1} more" if len(skipped) > 1 else ""
        message += f"; skipped: {skipped[0]}{more}"
    return message


def summarize(values: Iterable[float], unit: str) -> MetricSummary | None:
    """Median, mean, min and max of the finite values: a log's ``inf`` or ``nan`` is not a
    measurement (the samples keep it as it was written), and JSON has no such numbers."""
    if getattr(values, "typecode", None) == "d":  # array("d"): a parser's compact series
        series = cast("array[float]", values)
        if len(series) > 64:
            fast = _summarize_array(series, unit)
            if fast is not None:
                return fast
    data = sorted(value for value in values if math.isfinite(value))
    if not data:
        return None
    low, high = data[0], data[-1]
    try:
        mean = statistics.fmean(data)
    except OverflowError:  # finite values whose sum is not (1e308 twice)
        mean = math.fsum(value / len(data) for value in data)
    try:
        stddev = statistics.stdev(data) if len(data) > 1 else None
    except OverflowError:
        scale = max(-low, high)
        stddev = statistics.stdev([value / scale for value in data]) * scale
    return _summary(unit, len(data), median(data), mean, low, high, stddev, data.__getitem__)


SPREAD_QUANTILES = (0.10, 0.25, 0.75, 0.90)


def _quantile_ranks(n: int) -> list[int]:
    """The order statistics (0-based) the spread's quantiles interpolate between."""
    ranks: set[int] = set()
    for q in SPREAD_QUANTILES:
        position = (n - 1) * q
        ranks.update((math.floor(position), min(math.floor(position) + 1, n - 1)))
    return sorted(ranks)


def _summary(
    unit: str, n: int, middle: float, mean: float, low: float, high: float, stddev: float | None, ranked
) -> MetricSummary:
    """The summary of ``n`` values (``mean`` kept within ``low`` and ``high``) with its stddev and
    quantiles; ``ranked(k)`` is the k-th smallest value (0-based). Quantile q sits at (n - 1) q
    between order statistics (Hyndman and Fan 1996, definition 7)."""
    quantiles = []
    for q in SPREAD_QUANTILES:
        position = (n - 1) * q
        below = math.floor(position)
        fraction = position - below
        a, b = ranked(below), ranked(min(below + 1, n - 1))
        value = a + (b - a) * fraction if fraction else a
        if not math.isfinite(value):  # b - a overflows (-1e308 and 1e308)
            value = a * (1 - fraction) + b * fraction
        quantiles.append(value)
    p10, p25, p75, p90 = quantiles
    iqr = p75 - p25
    # numpy's pairwise mean of a constant series can miss it by an ulp: never outside [min, max];
    # an iqr beyond the float range (p25 -1e308, p75 1e308): JSON has no number for it
    return MetricSummary(
        unit,
        n,
        middle,
        min(max(mean, low), high),
        low,
        high,
        stddev,
        p10,
        p25,
        p75,
        p90,
        iqr if math.isfinite(iqr) else None,
    )


def _summarize_array(values, unit: str) -> MetricSummary | None:
    """``summarize`` of a long ``array("d")`` without making a list: the median and the quantiles
    picked at once (``order_statistics``: the same values), the mean by numpy's pairwise sum
    (``statistics.fmean``'s exact ``math.fsum`` took half of a 400 MB log's summaries; the two agree
    to about 1e-15). A series with a zero (the prefill throughput of a launch's first batch, 0.0)
    keeps the list way's exact mean and stddev (``_exact_mean_stdev``): it was summarized the list
    way until the zero's sign was looked at, and its JSON stayed the same. None (the list way) for a
    ``-0.0``: it ties with 0.0, and which one is picked depends on the order."""
    import numpy as np

    data = np.frombuffer(values, dtype=np.float64)
    finite = np.isfinite(data)
    if not finite.all():
        data = data[finite]
    if not len(data):
        return None
    exact = None
    if not data.all():
        if np.signbit(data[data == 0]).any():
            return None
        try:
            exact = _exact_mean_stdev(data)
        except OverflowError:  # sums beyond the float range: the list way scales them
            return None
    n = len(data)
    half = n // 2
    middles = (half,) if n % 2 else (half - 1, half)
    kth = sorted({0, n - 1, *_quantile_ranks(n), *middles})  # the least and the greatest too
    picked = dict(zip(kth, order_statistics(data, kth), strict=True))
    middle = picked[half] if n % 2 else median([picked[half - 1], picked[half]])
    low, high = picked[0], picked[n - 1]
    if exact is not None:
        mean, stddev = exact
    else:
        with np.errstate(over="ignore", invalid="ignore"):
            mean = float(data.mean())
            stddev = float(data.std(ddof=1))
        if not math.isfinite(mean):  # finite values whose sum is not (1e308 twice)
            mean = float((data / n).sum())
        if not math.isfinite(stddev):  # squares beyond the float range: scaled down first
            scale = max(-low, high)
            stddev = float((data / scale).std(ddof=1)) * scale
    return _summary(unit, n, middle, mean, low, high, stddev, picked.__getitem__)


def _exact_mean_stdev(data) -> tuple[float, float]:
    """``statistics.fmean`` and ``statistics.stdev`` of a float array of two values or more, the
    same floats, from integers rather than a ``Fraction`` a value: each value is ``mantissa *
    2**exponent``, so the sums of the values and of their squares are exact as integers scaled by
    a power of two (``detect.exact_sums``), and the sample variance is one exact fraction, whose square
    root is rounded correctly as ``statistics.stdev`` rounds it (Python 3.11+). Raises
    OverflowError when the mean or the stddev is beyond the float range."""
    n = len(data)
    mean = statistics.fmean(data.tolist())
    total, squares, low = exact_sums(data)
    numerator, denominator = n * squares - total * total, n * (n - 1)
    scale = 2 * low  # each value is its integer times 2**low
    if scale >= 0:
        numerator <<= scale
    else:
        denominator <<= -scale
    return mean, _float_sqrt_of_fraction(numerator, denominator)  # correctly rounded: the same float, reduced or not


_SQRT_BITS = 2 * sys.float_info.mant_dig + 3


def _float_sqrt_of_fraction(n: int, m: int) -> float:
    """The square root of n/m as a float, correctly rounded: CPython 3.11's
    ``statistics._float_sqrt_of_frac`` (https://bugs.python.org/msg407078), round-to-odd
    integer square root with enough bits, then one rounding."""
    q = (n.bit_length() - m.bit_length() - _SQRT_BITS) // 2
    if q >= 0:
        numerator, denominator = _isqrt_round_to_odd(n, m << 2 * q) << q, 1
    else:
        numerator, denominator = _isqrt_round_to_odd(n << -2 * q, m), 1 << -q
    return numerator / denominator


def _isqrt_round_to_odd(n: int, m: int) -> int:
    root = math.isqrt(n // m)
    return root | (root * root * m != n)


def build(
    paths: str | os.PathLike | Sequence[str | os.PathLike],
    repo: str | os.PathLike | None = None,
    log_tz: str | Sequence[str] | None = None,
    keep_samples: bool = False,
    tolerance_s: float = DEFAULT_TOLERANCE_S,
    env: Environment | None = None,
    progress: Callable[[int, int], None] | None = None,
    cache: bool | ParseCache = True,
    entries: Sequence[str] | None = None,
    min_effect: float = DEFAULT_MIN_EFFECT,
    record_host: bool = True,
    allow_empty: bool = False,
    analyse_shifts: bool = True,
) -> Timeline:
    """Parse every log under ``paths``, read the checkout's reflog, tie each run to a commit.

    ``paths``: a log file or folder (a str or a path), or a list of them.

    ``log_tz`` says which zone the logs' wall-clock times are in: ``ZONE`` (IANA name, UTC, or an
    offset) for all logs and/or ``PATTERN=ZONE`` for the logs whose path matches (see
    timeline.clock.ZonePolicy). Logs without one get a zone inferred from their mtime, else the
    machine's zone; each run says which (``tz``, ``tz_source``) and a warning says so.
    ``tolerance_s``: a run starting this close to a HEAD move is ``ambiguous``.
    ``progress``, if given, is called now and then with (bytes of the logs read, their total size).
    ``cache``: reuse each log's parse while the file is unchanged (timeline.cache): True for the
    folder the environment names (``TIMELINE_CACHE_DIR``, ...), False for none, or a ParseCache.
    ``entries``: the modules the server starts from (``sglang.launch_server``), for judging which
    suspects' files it can import; default by the runs' server (timeline.imports.DEFAULT_ENTRIES).
    ``min_effect``: the smallest change (a fraction: 0.03 is 3%) a shift needs for a verdict.
    ``record_host``: name this machine in the result's provenance (the version, options, host).
    ``allow_empty``: no log under ``paths`` is an empty timeline rather than ``NoLogsError`` (no
    ``paths`` at all is one too: the checkout's events alone).
    ``analyse_shifts``: False leaves ``shifts`` and ``culprits`` empty (``timeline ingest`` stores the
    runs and events; ``timeline history`` finds the shifts over everything stored).
    Raises UsageError (missing path, unknown zone, not a repository), NoLogsError and GitError (a
    broken repository).
    """
    env = env or Environment()
    specs = [log_tz] if isinstance(log_tz, str) else list(log_tz or [])
    policy = ZonePolicy(specs, env.environ, env.localtime)
    given = [paths] if isinstance(paths, (str, os.PathLike)) else list(paths)
    inputs = collect_logs(given)
    if given and not inputs.files and not allow_empty:  # no paths at all: only the checkout asked for
        raise NoLogsError(_no_logs_message(given, inputs.diagnostics))
    sources = inputs.files
    warnings: list[Diagnostic] = list(inputs.diagnostics)

    history = None
    if repo is not None:
        from timeline.git import read_history

        history = read_history(repo)
        warnings.extend(history.diagnostics)
    events = history.events if history else None
    heads = HeadIndex(events) if events is not None else None  # built once: n log n for every run
    if heads is not None:
        warnings.extend(_clock_steps_said(heads))

    runs: list[Run] = []
    parse_cache = cache_of(cache, env)
    spool = _spool_stdin(sources, env)
    try:
        # _parsed first: zip then runs it to its end (the cache's prune, the last progress call).
        for parsed, (source, path) in zip(
            _parsed(sources, keep_samples, progress, env.environ, parse_cache), sources, strict=False
        ):
            warnings.extend(parsed.diagnostics)
            if not parsed.runs:
                continue
            zone = _zone_of(policy, source, path, parsed.runs, events, warnings)
            for parsed_run in parsed.runs:
                run, notes = _to_run(source, parsed_run, zone, heads, tolerance_s)
                run.steady = _steady_of(parsed_run)
                runs.append(run)
                warnings.extend(notes)
    finally:
        if spool is not None:
            spool.cleanup()
    from timeline.parsers import sglang_fast  # (imported by _parsed already)

    sglang_fast.hand_back_memory()  # the reading's heap, before the outputs' objects come

    runs.sort(key=run_order)
    for number, run in enumerate(runs, 1):
        run.id = f"r{number}"
    findings = shifts_and_culprits(
        [(runs, events or [])] if analyse_shifts else [],
        repo,
        entries=entries,
        settings=Settings(min_effect=min_effect),
        cache=parse_cache,
    )
    warnings.extend(findings.warnings)
    return Timeline(
        generated_at=env.now(),
        log_tz=policy.summary.name,
        log_tz_source=policy.summary.source,
        repo=_repo_info(history) if history else None,
        events=history.events if history else [],
        context=history.context if history else [],
        runs=runs,
        warnings=warnings,
        shifts=findings.shifts,
        culprits=findings.culprits,
        provenance=provenance(
            env,
            record_host,
            {
                "paths": [os.fspath(p) for p in given],
                "repo": None if repo is None else os.fspath(repo),
                "log_tz": specs,
                "tolerance_s": tolerance_s,
                "min_effect": min_effect,
                "samples": keep_samples,
                "entries": list(entries or []),
            },
        ),
    )


def provenance(env: Environment, record_host: bool, options: dict[str, Any]) -> Provenance:
    """What made a result: this version, Python, platform, the host (unless not to be recorded)
    and the options it was asked with."""
    return Provenance(
        version=__version__,
        python=platform.python_version(),
        platform=platform.platform(),
        host=env.host() if record_host else None,
        options=options,
    )


def _steady_of(parsed: ParsedRun):
    from timeline.shifts import steady_of  # imported where used: start-up under 0.5 s

    return steady_of(parsed)


@dataclass
class Findings:
    """What the runs say: the shifts between versions, the culprits ranked on them, and what
    reading the checkout's code raised (``shifts_and_culprits``)."""

    shifts: list[Shift] = field(default_factory=list)
    culprits: list[Culprit] = field(default_factory=list)
    warnings: list[Diagnostic] = field(default_factory=list)


def shifts_and_culprits(
    histories: Sequence[tuple[Sequence[Run], Sequence[CodeEvent]]],
    repo: str | os.PathLike | None = None,
    *,
    entries: Sequence[str] | None = None,
    settings: Settings = Settings(),
    cache: ParseCache | None = None,
) -> Findings:
    """The shifts of each checkout's runs between the versions its own events drew, then the code
    facts their suspects need (read from ``repo``'s objects, never run; each version's import
    graph kept in ``cache``), then the culprits of all of them ranked together.

    ``histories``: (runs, code events) of each checkout, run ids unique across them: ``build``
    has one, ``timeline.history`` one a machine. Shift ids run on across them (``s1``, ``s2``...).
    ``repo``: a checkout holding the commits; None leaves out the evidence that needs the code
    (imports, flags behind changed code, messages added), not the rest.
    """
    from timeline.shifts import find_shifts
    from timeline.suspects import DECISIVE, rank_culprits

    findings = Findings()
    for runs, events in histories:
        if runs:
            findings.shifts.extend(find_shifts(runs, events, settings, first=len(findings.shifts) + 1))
    shifts = findings.shifts
    decisive = [s for s in shifts if s.verdict in DECISIVE]
    code = None
    if repo is not None and decisive:
        from timeline.git.code import read_code
        from timeline.imports import DEFAULT_ENTRIES

        if not entries:
            kinds = {run.kind for runs, _ in histories for run in runs}
            entries = [e for kind, found in DEFAULT_ENTRIES.items() if kind in kinds for e in found]
        versions = sorted({c for s in decisive for c in (s.from_side.commit, s.to_side.commit) if c})
        # changed lines only serve the evidence that compares the sides: flags, arguments, messages
        compared = [
            s
            for s in decisive
            if s.confounders or s.arguments_added or s.arguments_gone or s.messages_added or s.messages_gone
        ]
        commits = sorted({x.sha for s in compared for x in s.suspects if x.cleared is None})
        code = read_code(repo, versions, commits, entries, cache=cache)
        findings.warnings.extend(Diagnostic(os.fspath(repo), None, problem) for problem in code.problems)
        lacking = [version[:12] for version, found in code.reach.items() if not found.entries_found]
        if lacking:  # one line for all: a checkout of another project lacks it in every version
            findings.warnings.append(
                Diagnostic(
                    os.fspath(repo),
                    None,
                    f"no entry module ({', '.join(entries)}) found in {', '.join(lacking)}; imports not judged",
                    "entry-not-found",
                )
            )
    findings.culprits = rank_culprits(shifts, code)
    return findings


# Workers when the logs other than the largest (what a second process can take over when the
# largest is read whole) hold this much, or the largest is big enough to be read in pieces, and
# the machine has a core to spare. benchmarks/workers_speed.py, two workers against one process, lowest of 5,
# interleaved, 2 cores, 2026-12-03, four sessions (load average 5-10): the wall time of a build
# on the cores as they were, 0.69x-1.39x with no trend from 3 MB to 300 MB besides the largest
# (the other work left no core idle), for up to 27% more CPU; on idle cores (each process's
# CPU: the main one's, or half the workers'): 0.79x-0.88x at 3 MB, 0.55x-0.85x at 4.5-20 MB,
# 0.48x-0.68x at 40-46 MB, 0.36x-0.40x at 290-300 MB. So: from 8 MiB, and only when the load
# average is under the cores, as ``make -l`` starts jobs
# (https://www.gnu.org/software/make/manual/html_node/Parallel.html).
WORKERS_MIN_SPARE_BYTES = 8 << 20
MAX_WORKERS = 8
# A log this big is read in pieces cut at its launches, the first here, the others by a worker
# each (timeline.pieces; a worker each when measured here). On benchmarks/gen.py's 400 MB log,
# benchmarks/run.py --only big --repeat 5, 2 cores (AMD EPYC, KVM), 2026-12-03, load average
# 0.7-0.8: the default (two pieces) 2.48x the hand loop at the lowest (rounds 3.23x, 3.44x,
# 2.53x, 4.13x, 2.48x; median 0.93 s, 3.28x), one worker 1.70x (median 1.39 s, 2.19x), the
# same CPU (1.50 against 1.49 s medians); at load average 1.5 and --repeat 3, 2.40x against
# 1.83x; at 1.7-2.0, 1.73x against 1.92x, the other work taking the second core. Two pieces
# against one process at 32-128 MB (load 1.3-1.9): 0.80x-1.59x, no gain to measure, the
# split's fixed cost (a process a piece, each judging the line shapes again) as large as what it
# saves; so from 64 MiB, where it starts to pay on a spare core, not below.
PIECE_MIN_BYTES = 64 << 20


def _jobs(sizes: Sequence[int], environ, whole: bool = False) -> int:
    """How many processes parse the logs of these ``sizes``: ``TIMELINE_JOBS`` if set, else one a
    core when the logs besides the largest hold ``WORKERS_MIN_SPARE_BYTES`` or the largest is read
    in pieces (``PIECE_MIN_BYTES``; not when ``whole``: none could be cut), and the load average
    of the last minute is under the machine's cores, else one."""
    count = len(sizes)
    in_pieces = not whole and bool(sizes) and max(sizes) >= PIECE_MIN_BYTES
    given = (environ or {}).get("TIMELINE_JOBS", "").strip()
    if given.isdigit() and int(given) >= 1:
        jobs = int(given)
    elif not in_pieces and (count < 2 or sum(sizes) - max(sizes) < WORKERS_MIN_SPARE_BYTES):
        return 1
    else:
        try:
            jobs = len(os.sched_getaffinity(0))
        except (AttributeError, OSError):
            jobs = os.cpu_count() or 1
        try:
            # no core to spare: the workers would only add their cost. The load average is the
            # whole machine's (a container's too, /proc/loadavg), so it is held against all of its
            # cores, not the few this process may run on: a container pinned to 2 of 64 cores on a
            # host at load 10 starts its workers. Whether those 2 cores are the busy ones, no
            # figure says; TIMELINE_JOBS decides where it matters
            if os.getloadavg()[0] >= (os.cpu_count() or jobs):
                return 1
        except (AttributeError, OSError):  # no load average here (Windows): not held back
            pass
    if not hasattr(os, "fork"):
        return 1
    return max(1, min(jobs, MAX_WORKERS, jobs if in_pieces else count))


def cache_of(cache: bool | ParseCache | None, env: Environment) -> ParseCache | None:
    """The parse cache ``build``'s ``cache`` argument stands for (True: the user's own), or None."""
    if cache is True:
        from timeline.cache import ParseCache  # imported where used: start-up under 0.5 s

        return ParseCache.from_environ(env.environ)
    return cache or None


def _spool_stdin(sources: list[tuple[str, Path]], env: Environment) -> tempfile.TemporaryDirectory | None:
    """Standard input copied to a file of a temporary folder (returned: the caller removes it), in
    place of its path in ``sources``. The file's time is when the input ended: a live stream's
    last line was written about then, an old log piped in was not (the zone is then not inferred
    from it: see timeline.clock)."""
    for index, (source, _) in enumerate(sources):
        if source == STDIN_SOURCE:
            scratch = tempfile.TemporaryDirectory(prefix="timeline-stdin-")
            spooled = Path(scratch.name) / "stdin"
            try:
                with open(spooled, "wb") as handle:
                    shutil.copyfileobj(env.stdin(), handle, 1 << 20)
            except BaseException:
                scratch.cleanup()
                raise
            sources[index] = (STDIN_SOURCE, spooled)
            return scratch
    return None


def _parsed(sources: list[tuple[str, Path]], keep_samples: bool, progress, environ, cache: ParseCache | None = None):
    """``parse_file`` of each log, in order; from ``cache`` for the logs it holds as they are now;
    the others in worker processes when there are many of them."""
    sizes = _sizes(sources)
    total = sum(sizes)
    expansion = max_expansion(environ)
    from timeline.parsers import sglang_fast  # imported where used: start-up under 0.5 s

    sglang_fast.prepare(total)  # (before the workers fork: they inherit numpy)
    looks: list[Lookup | None] = [None] * len(sources)
    if cache is not None and sources:
        # standard input's copy is new each time: nothing to look up, nothing worth keeping
        looks = [None if source == STDIN_SOURCE else cache.look(path, source, keep_samples) for source, path in sources]
    missing = [i for i, look in enumerate(looks) if look is None or not look.hit]
    configs: dict[str, Any] = {}  # the server_args texts read here: one config each for all the logs
    done = 0
    results: Any = iter(())
    pool = None
    planned: dict[int, int] = {}  # the logs read in pieces: how many
    items: list[tuple] = []  # the workers' tasks: a function and its arguments
    own: tuple | None = None  # a task of theirs this process does itself
    jobs = _jobs([sizes[i] for i in missing], environ)
    if jobs > 1:
        preload()  # imported once here, not once a worker
        from timeline.pieces import joined, read_piece

        for i in missing:
            source, path = sources[i]
            look = looks[i]
            whose = path if look is None else look.path  # (as _parse_one reads it)
            spans = _spans(whose, sizes[i], jobs)
            if spans is None:  # (_parse_one takes its arguments as one tuple; None: the worker's configs)
                items.append((_parse_one, ((path, source, keep_samples, cache, look, expansion, None),)))
            else:
                planned[i] = len(spans)
                finish_run = _run_finisher(keep_samples)
                items.extend((read_piece, (whose, span, source, keep_samples, finish_run)) for span in spans)
        if not planned:
            jobs = _jobs([sizes[i] for i in missing], environ, whole=True)
        if not _can_hand_over(items):
            jobs = 1
        elif list(planned.values()) == [len(items)]:
            # one log, read in pieces: the first is read here, not by a worker while this process
            # waits (one process fewer to fork; the first piece counts no lines before it)
            own = items.pop(0)
    if jobs > 1:
        import multiprocessing
        from concurrent.futures import ProcessPoolExecutor

        chunks = 1 if planned else max(1, min(16, len(items) // (4 * jobs)))
        workers = jobs if own is None else min(jobs - 1, len(items))
        try:
            pool = ProcessPoolExecutor(workers, mp_context=multiprocessing.get_context("fork"))
            results = _stopping_at_last(pool, pool.map(_work, items, chunksize=chunks), len(items))
        except Exception:  # noqa: BLE001 - workers that could not start: the logs are read here
            pool = None
    try:
        for index, (source, path) in enumerate(sources):
            if progress is not None:
                progress(done, total)
            look = looks[index]
            parsed = None
            if look is not None and look.hit:
                parsed = cache.load(look)  # type: ignore[union-attr]  # None: unreadable after all, parsed here
            elif pool is not None:
                try:
                    if index in planned:
                        read = [] if own is None else [_work(own)]
                        read.extend(next(results) for _ in range(planned[index] - len(read)))
                        parsed = joined(read, source, keep_samples)
                        if parsed is not None:
                            _keep(cache, look, parsed)
                    else:
                        parsed = next(results)
                # a worker killed (the kernel's OOM killer), a result the pool could not hand back:
                # the rest is read here
                except Exception:  # noqa: BLE001
                    pool.shutdown(wait=False, cancel_futures=True)
                    pool = None
            if parsed is None:
                tell = None if progress is None else functools.partial(_tell, progress, done, total)
                parsed = _parse_one((path, source, keep_samples, cache, look, expansion, configs), tell)
            yield parsed
            done += sizes[index]
    finally:
        if pool is not None:
            pool.shutdown(wait=True, cancel_futures=True)
    if cache is not None and any(looks[i] is not None for i in missing):  # something may have been stored
        cache.prune()
    if progress is not None:
        progress(total, total)


def max_expansion(environ) -> float | None:
    """``TIMELINE_MAX_EXPANSION``: how many times its size a compressed log may expand (None: the
    parsers' default, 50); raises UsageError for a value that is no number of at least 1."""
    given = (environ or {}).get("TIMELINE_MAX_EXPANSION", "").strip()
    if not given:
        return None
    try:
        value = float(given)
    except ValueError:
        value = math.nan
    if not value >= 1:  # nan too
        raise UsageError(f"TIMELINE_MAX_EXPANSION={given!r}: not a number of at least 1 (times a file's size)")
    return value


def digest_series(run: ParsedRun) -> None:
    """Replace the run's series by their ``SeriesDigest``: its summaries and steady value, worked
    out now, as the build would later, from the same numbers (``parse_file``'s ``finish_run``:
    without samples, a log's memory is a few hundred bytes a run, not 8 bytes a stats line a
    series)."""
    from timeline.shifts import AGGREGATED_METRIC, METRIC, steady_of  # imported where used: start-up under 0.5 s

    steady = steady_of(run)
    home = METRIC if METRIC in run.series else AGGREGATED_METRIC  # the series steady_of reads it back from
    run.series = {
        name: values
        if isinstance(values, SeriesDigest)
        else SeriesDigest(len(values), summarize(values, run.units.get(name, "")), steady if name == home else None)
        for name, values in run.series.items()
    }


def _work(item: tuple[Callable[..., Any], tuple]) -> Any:
    """A worker's task: a function and its arguments (a whole log, or a piece of one)."""
    function, arguments = item
    return function(*arguments)


def _stopping_at_last(pool: Executor, results: Iterator[Any], count: int) -> Iterator[Any]:
    """The pool's ``count`` results, its workers told to stop as the last one comes in: they exit
    while it is joined and read, and the build does not wait for them (``shutdown(wait=True)``
    took 4-5 ms of the 400 MB benchmark log's build)."""
    for n, result in enumerate(results, 1):
        if n == count:
            pool.shutdown(wait=False)
        yield result


def _can_hand_over(items: list[tuple]) -> bool:
    """Whether the workers can be sent these tasks: one of each function pickled here (a patched
    function, a lambda, cannot). A task that fails to pickle in the pool's feeder thread after the
    pool was shut down leaves its manager thread waiting for its result, and the process's exit
    with it, for good (https://github.com/python/cpython/issues/116685)."""
    import pickle

    try:
        for item in {item[0]: item for item in items}.values():
            pickle.dumps(item)
    except (pickle.PicklingError, AttributeError, TypeError):  # a lambda, a local object, a lock
        return False
    return True


def _spans(path: str | os.PathLike, size: int, jobs: int) -> list | None:
    """The pieces a log this big is read in by ``jobs`` processes (``timeline.pieces``), or None:
    read whole."""
    if size < PIECE_MIN_BYTES:
        return None
    from timeline.pieces import plan

    try:
        return plan(path, jobs, size)
    except (OSError, ValueError):  # (mmap of a file that shrank meanwhile) read whole, which says why
        return None


# A worker's configs (``_parse_one``): made empty before the fork (the main process never fills
# it), so shared by the logs one worker reads for one build, as they come back a chunk at a time.
_WORKER_CONFIGS: dict[str, Any] = {}


def _parse_one(item: tuple, progress=None) -> Any:
    """``parse_file`` of one log, kept in the cache when a look-up was made for it; without
    samples, each run's series digested as the run ends. The logs given the same ``configs``
    (None: in a worker, ``_WORKER_CONFIGS``) share the config of a ``server_args`` text: the
    JSON and the shifts then work on one a text, not one a log."""
    path, source, keep_samples, cache, look, expansion, configs = item
    if look is not None:  # the file the entry is keyed on (a link moved meanwhile: not another file's parse)
        path = look.path
    parsed = parse_file(
        path,
        source=source,
        keep_samples=keep_samples,
        progress=progress,
        max_expansion=expansion,
        finish_run=_run_finisher(keep_samples),
        configs=_WORKER_CONFIGS if configs is None else configs,
    )
    _keep(cache, look, parsed)
    return parsed


def _run_finisher(keep_samples: bool) -> Callable[[ParsedRun], None] | None:
    """What is done with each run as it ends (a whole log's or a piece's): without samples, its
    series digested (``digest_series``)."""
    return None if keep_samples else digest_series


def _keep(cache: ParseCache | None, look: Lookup | None, parsed: ParsedFile) -> None:
    """Keep a log's parse in the cache when a look-up was made for it."""
    if cache is not None and look is not None:
        cache.store(look, parsed)


def _sizes(sources: list[tuple[str, Path]]) -> list[int]:
    sizes = []
    for _, path in sources:
        try:
            sizes.append(path.stat().st_size)
        except OSError:
            sizes.append(0)
    return sizes


def _tell(progress: Callable[[int, int], None], before: int, total: int, position: int) -> None:
    progress(before + position, total)


def _repo_info(history) -> RepoInfo:
    coverage = history.coverage
    if coverage is None:
        return RepoInfo(history.path, history.head)
    return RepoInfo(history.path, history.head, coverage.reason, coverage.time, coverage.description)


def _zone_of(policy: ZonePolicy, source: str, path: Path, parsed: list[ParsedRun], events, warnings) -> Zone:
    """The file's zone, with a warning whenever it was not given explicitly."""
    ends = [r.end or r.start for r in parsed if (r.end or r.start) is not None]
    last_wall = ends[-1] if ends else None
    naive = [moment for r in parsed for moment in (r.start, r.end) if moment is not None and moment.tzinfo is None]
    try:
        mtime = path.stat().st_mtime
    except OSError:
        mtime = None
    zone = policy.zone_for(source, last_wall, mtime)
    if zone.source == "inferred-mtime":
        disagreeing = _reflog_offsets_near(events, (min(naive), max(naive)) if naive else None, zone)
        if not disagreeing:
            warnings.append(
                Diagnostic(source, None, f"no zone given: inferred {zone.name} from the file's mtime", "zone-inferred")
            )
            return zone
        # The checkout's own reflog was written at other offsets around then: an mtime that
        # falls on a real offset by chance (a copy) is no evidence. The zone is assumed, and
        # the runs say whether it matters (correlate.assume_zone).
        inferred, zone = zone, policy.machine
        warnings.append(
            Diagnostic(
                source,
                None,
                (
                    f"the file's mtime matches its last line at {inferred.name}, but the reflog around then "
                    f"was written at {', '.join(sorted(disagreeing))}: the mtime is not taken as the zone "
                    f"(a copied file?); times read in this machine's zone, {zone.name}"
                ),
                "zone-unlike-reflog",
            )
        )
    elif zone.source == "machine-local" and last_wall is not None and last_wall.tzinfo is None:
        warnings.append(
            Diagnostic(
                source,
                None,
                (
                    f"no zone given, and the file's mtime does not match its last line: "
                    f"times read in this machine's zone, {zone.name}"
                ),
                "zone-machine",
            )
        )
    return zone


# A log read at a wrong offset is off by at most the span of real-world offsets (-12:00 to
# +14:00): reflog entries further than that (and an hour) from its runs can neither change their
# commits nor tell its zone.
_ZONE_REACH_S = (26 + 1) * 3600


def _reflog_offsets_near(events, span: tuple[datetime, datetime] | None, zone: Zone) -> set[str]:
    """The offsets the reflog was written with around the log's runs (``span``: its earliest and
    latest wall-clock reading, within ``_ZONE_REACH_S``), when the log's offset is not one of them."""
    if not events or span is None:
        return set()
    start = span[0].replace(tzinfo=zone.tzinfo).timestamp() - _ZONE_REACH_S
    end = span[1].replace(tzinfo=zone.tzinfo).timestamp() + _ZONE_REACH_S
    offsets = {e.time.utcoffset() for e in events if start <= e.ts <= end}
    mine = zone.tzinfo.utcoffset(None)
    if not offsets or mine in offsets:
        return set()
    return {format_offset(o) for o in offsets if o is not None}


# How the warning about an ambiguous run says why (the views word the codes: render.wording).
_AMBIGUOUS_BECAUSE = {
    "clock-tolerance": "within {tolerance:g} s of a HEAD move",
    "dst": "a DST-ambiguous time",
    "zone-assumed": "its zone was assumed, and another UTC offset gives another commit",
    "reflog-clock-step": "the reflog's clock stepped back around then",
}


MAX_CLOCK_STEPS_SAID = 20  # a reflog whose clock jumps about all the time: the first ones, and a count


def _clock_steps_said(heads: HeadIndex) -> list[Diagnostic]:
    """One warning per place the reflog's clock stepped back (file:line), then how many more."""
    said = [
        Diagnostic(
            step.event.source,
            step.event.line,
            (
                f"the reflog's clock steps back {step.back_s} s here ({step.event.id}): HEAD's commit is "
                "uncertain for runs in the time read twice; they are ambiguous"
            ),
            "reflog-clock-step",
        )
        for step in heads.steps[:MAX_CLOCK_STEPS_SAID]
    ]
    if len(heads.steps) > MAX_CLOCK_STEPS_SAID:
        first = heads.steps[0].event
        more = len(heads.steps) - MAX_CLOCK_STEPS_SAID
        said.append(
            Diagnostic(first.source, None, f"the reflog's clock steps back {more} more times", "reflog-clock-step")
        )
    return said


def _to_run(
    source: str, parsed: ParsedRun, zone: Zone, heads: HeadIndex | None, tolerance_s: float
) -> tuple[Run, list[Diagnostic]]:
    notes: list[Diagnostic] = []
    starts: list[datetime] = []
    end = None
    if parsed.start is not None:
        starts, problem = wall_candidates(parsed.start, zone.tzinfo)
        if problem:
            notes.append(
                Diagnostic(
                    source,
                    parsed.first_line,
                    (f"the run's start {parsed.start_text} {problem} in {zone.name}: every reading was tried"),
                )
            )
    if parsed.end is not None:
        # An end in the repeated hour is taken as its later reading, so the run's window covers
        # every HEAD move that could have happened during it.
        end = max(wall_candidates(parsed.end, zone.tzinfo)[0], key=lambda moment: moment.timestamp())
    tied = attribute(heads, starts, end, tolerance_s)
    if heads is not None and zone.source == "machine-local" and parsed.start is not None and not parsed.start.tzinfo:
        tied = assume_zone(tied, heads, parsed.start, tolerance_s)
    if tied.attribution == "ambiguous":
        named = " or ".join(c[:12] for c in tied.candidate_commits) or "no commit"
        because = "; ".join(_AMBIGUOUS_BECAUSE[r].format(tolerance=tolerance_s) for r in tied.reasons)
        notes.append(
            Diagnostic(
                source,
                parsed.first_line,
                f"run starting {parsed.start_text} is ambiguous: it may have run on {named} ({because})",
            )
        )
    metrics = {}
    for name, values in parsed.series.items():
        summary = values.summary if isinstance(values, SeriesDigest) else summarize(values, parsed.units.get(name, ""))
        if summary:
            metrics[name] = summary
    run = Run(
        id="",
        source=source,
        kind=parsed.kind,
        start=starts[0] if starts else None,
        end=end,
        start_local=parsed.start_text,
        tz=zone.name,
        tz_source="in-line" if parsed.start is not None and parsed.start.tzinfo else zone.source,
        first_line=parsed.first_line,
        last_line=parsed.last_line,
        commit=tied.commit,
        attribution=tied.attribution,
        events_during=tied.events_during,
        candidate_commits=tied.candidate_commits,
        ambiguous_reasons=tied.reasons,
        zone_readings=tied.zone_readings,
        files_may_differ=tied.files_may_differ,
        nccl_versions=list(parsed.nccl_versions),
        cuda_driver_versions=list(parsed.cuda_driver_versions),
        messages=parsed.messages,
        status=parsed.status,
        error=parsed.error,
        error_line=parsed.error_line,
        date_source=parsed.date_source,
        config=parsed.config,
        metrics=metrics,
        samples=_instant_samples(parsed.samples, zone) if parsed.samples is not None else None,
    )
    return run, notes


def _instant_samples(samples: dict[str, SampleRows], zone: Zone) -> dict[str, SampleRows]:
    """Sample times as instants; in a repeated hour a reading earlier than the previous one is its second pass.
    Without a zone transition during the samples, all at once (a million samples: a second saved)."""
    for rows in samples.values():
        span = rows.time_span("time")
        if span is not None and steady_offset(zone.tzinfo, *span):
            rows.set_zone("time", zone.tzinfo)
            continue
        previous = None

        def instant(wall):
            nonlocal previous
            if wall is None:
                return None
            readings, _ = wall_candidates(wall, zone.tzinfo)
            moment = readings[0]
            # Same-zone aware datetimes compare by wall time, ignoring fold: compare instants.
            if previous is not None and len(readings) > 1 and moment.timestamp() < previous.timestamp():
                moment = max(readings, key=lambda m: m.timestamp())
            previous = moment
            return moment

        rows.map_column("time", instant)
    return samples
