"""``build``: logs and a checkout in, a Timeline out. The one function behind ``timeline build``."""

from __future__ import annotations

import os
import statistics
from collections.abc import Iterable, Sequence
from pathlib import Path

from parsers import parse_file
from parsers.records import ParsedRun
from timeline.clock import Zone, resolve_log_zone, to_instant
from timeline.correlate import attribute
from timeline.environment import Environment
from timeline.errors import UsageError
from timeline.model import Diagnostic, MetricSummary, RepoInfo, Run, Timeline

LOG_SUFFIXES = (".log", ".txt", ".out")
COMPRESSED_SUFFIXES = ("", ".gz", ".bz2", ".xz")


def is_log_name(name: str) -> bool:
    return any(name.endswith(s + c) for s in LOG_SUFFIXES for c in COMPRESSED_SUFFIXES)


def collect_logs(paths: Sequence[str | os.PathLike]) -> list[tuple[str, Path]]:
    """Files as given, and folders searched recursively for logs (hidden folders skipped).

    Returns (source as the user would recognise it, path) pairs; raises UsageError for a
    path that does not exist.
    """
    found: list[tuple[str, Path]] = []
    for given in paths:
        path = Path(given)
        if not path.exists():
            raise UsageError(f"{os.fspath(given)}: no such file or folder")
        if not path.is_dir():
            found.append((os.fspath(given), path))
            continue
        for folder, dirs, files in os.walk(path):
            dirs[:] = sorted(d for d in dirs if not d.startswith("."))
            for name in sorted(files):
                if is_log_name(name):
                    file = Path(folder) / name
                    found.append((os.fspath(file), file))
    return found


def summarize(values: Iterable[float], unit: str) -> MetricSummary | None:
    data = list(values)
    if not data:
        return None
    return MetricSummary(unit, len(data), statistics.median(data), statistics.fmean(data), min(data), max(data))


def build(
    paths: Sequence[str | os.PathLike],
    repo: str | os.PathLike | None = None,
    log_tz: str | None = None,
    keep_samples: bool = False,
    env: Environment | None = None,
) -> Timeline:
    """Parse every log under ``paths``, read the checkout's reflog, tie each run to a commit.

    ``log_tz`` names the zone the logs' wall-clock times are in (IANA name, UTC, or an offset);
    without it the analysing machine's zone is assumed and a warning says so.
    Raises UsageError (missing path, unknown zone) and GitError (not a repository).
    """
    env = env or Environment()
    zone = resolve_log_zone(log_tz, env.environ)
    sources = collect_logs(paths)
    warnings: list[Diagnostic] = []
    if zone.source == "machine-local":
        warnings.append(
            Diagnostic("--log-tz", None, f"no --log-tz given: log times read in this machine's zone, {zone.name}")
        )

    history = None
    if repo is not None:
        from timeline.git import read_history

        history = read_history(repo)
        warnings.extend(history.diagnostics)

    runs: list[Run] = []
    for source, path in sources:
        parsed = parse_file(path, source=source, keep_samples=keep_samples)
        warnings.extend(parsed.diagnostics)
        runs.extend(_to_run(source, p, zone, history.events if history else None) for p in parsed.runs)

    runs.sort(key=lambda r: (r.start is None, r.start.timestamp() if r.start else 0.0, r.source, r.first_line or 0))
    for number, run in enumerate(runs, 1):
        run.id = f"r{number}"
    return Timeline(
        generated_at=env.now(),
        log_tz=zone.name,
        log_tz_source=zone.source,
        repo=RepoInfo(history.path, history.head) if history else None,
        events=history.events if history else [],
        runs=runs,
        warnings=warnings,
    )


def _to_run(source: str, parsed: ParsedRun, zone: Zone, events) -> Run:
    start = to_instant(parsed.start, zone.tzinfo) if parsed.start else None
    end = to_instant(parsed.end, zone.tzinfo) if parsed.end else None
    tied = attribute(events, start, end)
    metrics = {}
    for name, values in parsed.series.items():
        summary = summarize(values, parsed.units.get(name, ""))
        if summary:
            metrics[name] = summary
    return Run(
        id="",
        source=source,
        kind=parsed.kind,
        start=start,
        end=end,
        start_local=parsed.start_text,
        tz=zone.name,
        tz_source="in-line" if parsed.start is not None and parsed.start.tzinfo else zone.source,
        first_line=parsed.first_line,
        last_line=parsed.last_line,
        commit=tied.commit,
        attribution=tied.attribution,
        events_during=tied.events_during,
        nccl_versions=list(parsed.nccl_versions),
        config=parsed.config,
        metrics=metrics,
        samples=_instant_samples(parsed.samples, zone) if parsed.samples is not None else None,
    )


def _instant_samples(samples, zone: Zone):
    for rows in samples.values():
        for row in rows:
            if row.get("time") is not None:
                row["time"] = to_instant(row["time"], zone.tzinfo)
    return samples
