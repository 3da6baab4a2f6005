"""``timeline build``: the time-ordered table, or the JSON document, CSV, markdown; files too."""

from __future__ import annotations

import os
from collections.abc import Sequence
from datetime import tzinfo
from typing import TYPE_CHECKING, cast

from rich.console import Console

from timeline.builder import build, cache_of
from timeline.clock import parse_zone
from timeline.collector import hold_to_exit
from timeline.detect import DEFAULT_MIN_EFFECT
from timeline.environment import Environment
from timeline.errors import TimelineError, UsageError
from timeline.exitcodes import ExitCode
from timeline.export import output_target, write_text_atomic
from timeline.model import Timeline
from timeline.records import DiagnosticCode
from timeline.render.formats import render_text
from timeline.render.table import render_timeline, render_warnings
from timeline.shifts import gate_failures

if TYPE_CHECKING:
    from rich.progress import Progress, TaskID

    from timeline.cache import ParseCache


def run(
    paths: Sequence[str | os.PathLike],
    *,
    repo: str | None,
    log_tz: Sequence[str],
    display_tz: str | None,
    tolerance_s: float,
    json_path: str | None,
    samples: bool,
    out: Console,
    err: Console,
    env: Environment | None = None,
    output_format: str = "table",
    csv_path: str | None = None,
    html_path: str | None = None,
    parquet_dir: str | None = None,
    fail_on_regression: bool = False,
    cache: bool = True,
    all_events: bool = False,
    entries: Sequence[str] = (),
    min_effect: float = DEFAULT_MIN_EFFECT,
    confirmed_only: bool = False,
    record_host: bool = True,
    allow_empty: bool = False,
    all_runs: bool = False,
) -> ExitCode:
    display = parse_zone(display_tz) if display_tz else None
    if parquet_dir is not None:
        from timeline.parquet import require_pyarrow  # imported where used: start-up

        require_pyarrow()  # before the work, not after it
    to_stdout, files = plan_outputs(output_format, {"json": json_path, "csv": csv_path, "html": html_path})
    # A progress bar for large inputs, on stderr when it is a terminal; never with JSON on stdout.
    bar = ProgressBar(err) if err.is_terminal and to_stdout != "json" else None
    env = env or Environment()
    parse_cache = cache_of(cache, env)  # made here too: its problem is warned about below
    try:
        timeline = build(
            paths,
            repo=repo,
            log_tz=log_tz,
            keep_samples=samples or parquet_dir is not None,
            tolerance_s=tolerance_s,
            env=env,
            progress=bar,
            cache=parse_cache or False,
            entries=entries,
            min_effect=min_effect,
            record_host=record_host,
            allow_empty=allow_empty,
        )
    finally:
        if bar is not None:
            bar.close()
    write_outputs(timeline, to_stdout, files, display, all_events, parquet_dir, samples, out, err, env, all_runs)
    # the process, when it is the console's, ends without freeing the runs one by one: 15-19 ms
    # after a 400 MB log's build, 4-5 ms held
    hold_to_exit(timeline)
    warn_cache_problem(parse_cache, err)
    if fail_on_regression and gate_failures(timeline.shifts, confirmed_only):
        return ExitCode.REGRESSION
    return ExitCode.OK


def write_outputs(
    timeline: Timeline,
    to_stdout: str,
    files: dict[str, str],
    display: tzinfo | None,
    all_events: bool,
    parquet_dir: str | None,
    samples: bool,
    out: Console,
    err: Console,
    env: Environment,
    all_runs: bool = False,
) -> None:
    """Write ``timeline`` as ``plan_outputs`` planned: the files, the Parquet folder, then standard
    output (``to_stdout``: table, json, csv, markdown or github), then the warnings on ``err``.
    ``samples``: keep the samples in the JSON (they were kept for the Parquet files only when False).
    ``all_events``, ``all_runs``: the views (table, markdown, HTML) show every event, every run."""
    if parquet_dir is not None:
        from timeline.parquet import write_parquet

        write_parquet(timeline, parquet_dir, option="parquet_dir")
        if not samples:  # kept for the Parquet files only: the JSON has them with --samples
            for run in timeline.runs:
                run.samples = None
    for fmt, path in files.items():
        write_text_atomic(
            path,
            render_text(timeline, fmt, display, all_events, all_runs),
            errors=TEXT_ERRORS[fmt],
            option=f"{fmt}_path",
        )
    if to_stdout == "table":
        render_timeline(timeline, out, display, all_events, all_runs)
    elif to_stdout == "github":
        from timeline.render.github import github_annotations

        write_text_atomic("-", github_annotations(timeline))
        _append_step_summary(env, timeline, all_events, all_runs, err)
    else:
        write_text_atomic(
            "-", render_text(timeline, to_stdout, display, all_events, all_runs), errors=TEXT_ERRORS[to_stdout]
        )
    render_warnings(timeline, err, FLAG_HINTS)


# The flag that settles a kind of warning, said after it on stderr (the library names no flag).
FLAG_HINTS: dict[DiagnosticCode, str] = {
    "zone-inferred": "--log-tz sets it",
    "zone-unlike-reflog": "check --log-tz",
    "zone-machine": "--log-tz sets it",
    "entry-not-found": "--entry names the server's",
}
STEP_SUMMARY = "GITHUB_STEP_SUMMARY"  # the file GitHub Actions shows on the job's page


def _append_step_summary(env: Environment, timeline: Timeline, all_events: bool, all_runs: bool, err: Console) -> None:
    """Append the markdown report to the job's step summary; GitHub's runner owns the file and
    other steps append to it too, so it is appended to, not replaced."""
    path = env.environ.get(STEP_SUMMARY)
    if not path:
        err.print(f"warning: {STEP_SUMMARY} is not set: no step summary written", markup=False, highlight=False)
        return
    text = render_text(timeline, "markdown", None, all_events, all_runs)
    try:
        with open(path, "a", encoding="utf-8") as handle:
            handle.write(text if isinstance(text, str) else "".join(text))
    except OSError as error:
        raise TimelineError(f"{path}: cannot append the step summary: {error.strerror or error}") from None


LARGE_INPUT_BYTES = 64 << 20  # inputs this large (in all) get a progress bar


class ProgressBar:
    """``build``'s progress callback: a rich progress bar on ``console``, started only once the
    logs turn out to hold ``LARGE_INPUT_BYTES`` or more, cleared when done."""

    def __init__(self, console: Console, threshold: int | None = None) -> None:
        self.console = console
        self.threshold = LARGE_INPUT_BYTES if threshold is None else threshold
        self.bar: Progress | None = None
        self.task: TaskID | None = None

    def __call__(self, done: int, total: int) -> None:
        if self.bar is None:
            if total < self.threshold:
                return
            from rich.progress import (
                BarColumn,
                DownloadColumn,
                Progress,
                TextColumn,
                TimeRemainingColumn,
                TransferSpeedColumn,
            )

            self.bar = Progress(
                TextColumn("reading logs"),
                BarColumn(),
                DownloadColumn(),
                TransferSpeedColumn(),
                TimeRemainingColumn(),
                console=self.console,
                transient=True,
            )
            self.bar.start()
            self.task = self.bar.add_task("logs", total=total)
        self.bar.update(cast("TaskID", self.task), completed=min(done, total))  # added with the bar

    def close(self) -> None:
        if self.bar is not None:
            self.bar.stop()
            self.bar = None


STDOUT_FORMATS = ("table", "json", "csv", "markdown", "github")  # --format
# A non-UTF-8 file name is kept in the JSON as Python's surrogate escape (PEP 383), which
# backslashreplace writes as the JSON escape "\udcff": valid JSON, and os.fsencode of the string
# read back gives the name's bytes. The other formats show it as "\xff" (render.safe).
TEXT_ERRORS = {"json": "backslashreplace", "csv": "strict", "markdown": "strict", "html": "strict"}
FILE_OPTIONS = {"json": "--json", "csv": "--csv", "html": "--html"}  # --json FILE, --csv FILE, --html FILE


def warn_cache_problem(parse_cache: ParseCache | None, err: Console) -> None:
    """The parse cache's problem (a folder it could not use), said once on stderr: it is about this
    machine, not the logs, so it is not in the JSON."""
    if parse_cache is not None and parse_cache.problem:
        err.print(
            f"warning: {parse_cache.problem} (--no-cache to skip it)", markup=False, highlight=False, soft_wrap=True
        )


def plan_outputs(fmt: str, files: dict[str, str | None]) -> tuple[str, dict[str, str]]:
    """What goes to standard output, and which files to write: ``(stdout format, {format: path})``.

    ``files`` maps ``json``/``csv``/``html`` to the path given with ``--json``/``--csv``/``--html``
    (or None); a path of ``-`` means standard output instead of the table, so it may not clash
    with another ``-`` or with a ``--format`` other than ``table``. A path that cannot take its file
    (a missing folder, a folder) fails here, before the work, not after it.
    """
    fmt = fmt.lower()
    if fmt not in STDOUT_FORMATS:
        raise UsageError(f"unknown --format {fmt!r} (use one of: {', '.join(STDOUT_FORMATS)})")
    stdout = fmt
    claimed_by = None if fmt == "table" else f"--format {fmt}"
    written: dict[str, str] = {}
    for kind, path in files.items():
        if path is None:
            continue
        if path != "-":
            written[kind] = path
            continue
        if claimed_by is not None and stdout != kind:
            raise UsageError(f"{FILE_OPTIONS[kind]} - and {claimed_by} both write to standard output: choose one")
        stdout, claimed_by = kind, f"{FILE_OPTIONS[kind]} -"
    for kind, path in written.items():
        output_target(path, option=f"{kind}_path")
    return stdout, written
