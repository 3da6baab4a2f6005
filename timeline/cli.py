"""The command line: parse arguments, call one function, render. Nothing else lives here."""

from __future__ import annotations

import gc
import os
import signal
import sys
import textwrap
import threading
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path

import typer
from rich.console import Console

from timeline import __version__
from timeline.collector import exit_unfreed, holding_to_exit, uncollected
from timeline.errors import Interrupted, TimelineError, UsageError
from timeline.exitcodes import ExitCode, exit_code_table
from timeline.render.safe import visible
from timeline.render.window import LATEST_RUNS, MAX_RUNS

# Under every command's help: the exit statuses, from the enum, fitted to 80 columns (\b keeps
# click from rewrapping them).
EXIT_CODES_EPILOG = "\b\nExit status:\n" + "\n".join(
    textwrap.fill(meaning, 76, initial_indent=f"  {status:<4} ", subsequent_indent=" " * 7)
    for status, meaning in exit_code_table()
)

app = typer.Typer(
    context_settings={"help_option_names": ["-h", "--help"]},
    no_args_is_help=True,
    pretty_exceptions_enable=False,
    rich_markup_mode=None,  # plain help: wraps to the terminal, fits 80 columns, copies cleanly (docs/cli.md)
    epilog=EXIT_CODES_EPILOG,
)


# Piped, with no COLUMNS: lines as long as their content (up to this), not cut at rich's default 80,
# so a log's path:lines and a command copy from the output whole.
PIPED_WIDTH = 320


def _consoles() -> tuple[Console, Console]:
    piped = not sys.stdout.isatty() and not os.environ.get("COLUMNS")
    # no emoji codes: a log's ":fire:" is text, and rich's table of codes took 5 ms to import
    return (
        Console(file=sys.stdout, highlight=False, emoji=False, width=PIPED_WIDTH if piped else None),
        Console(file=sys.stderr, highlight=False, emoji=False),
    )


def _flag(context: typer.Context, option: str) -> str:
    """The flag of the command's parameter named ``option`` (``json_path``: ``--json``)."""
    for parameter in context.command.params:
        if parameter.name == option and parameter.opts:
            return max(parameter.opts, key=len)
    return "--" + option.replace("_", "-")


def _fail(context: typer.Context, error: TimelineError) -> typer.Exit:
    message = str(error)
    if isinstance(error, UsageError) and error.option is not None:
        # the library names a parameter by its Python name; the CLI says its flag
        message = error.subject_as(_flag(context, error.option))
    print(f"timeline: error: {visible(message)}", file=sys.stderr)
    return typer.Exit(int(error.exit_code))


def _interrupt(signum: int, frame: object) -> None:
    raise Interrupted


@contextmanager
def _stopped_like_ctrl_c() -> Iterator[None]:
    """SIGTERM and SIGHUP stop the command as Ctrl-C does, so what it was writing is cleaned up
    (their default action ends the process on the spot, temporary files and all)."""
    if threading.current_thread() is not threading.main_thread():
        yield
        return
    previous = {sig: signal.signal(sig, _interrupt) for sig in (signal.SIGTERM, signal.SIGHUP)}
    try:
        yield
    finally:
        for sig, handler in previous.items():
            signal.signal(sig, handler)


def _wraps_an_interruption(error: BaseException) -> bool:
    """Whether ``error`` was raised because of a KeyboardInterrupt: CPython 3.11 turns whatever a
    descriptor's ``__set_name__`` raises into a RuntimeError caused by it (Objects/typeobject.c,
    type_new_set_names), so a signal landing there, while a module of dataclasses is imported,
    comes out as one."""
    cause = error.__cause__
    while cause is not None:
        if isinstance(cause, KeyboardInterrupt):
            return True
        cause = cause.__cause__
    return False


def _run(context: typer.Context, command: Callable[[], ExitCode]) -> typer.Exit:
    """Run a command: its exit status, a ``TimelineError`` as one line and its status, an
    interruption as one line and ``INTERRUPTED``."""
    try:
        with _stopped_like_ctrl_c():
            return typer.Exit(int(command()))
    except TimelineError as error:
        return _fail(context, error)
    except KeyboardInterrupt:
        return _interrupted()
    except Exception as error:
        if not _wraps_an_interruption(error):
            raise
        return _interrupted()


def _interrupted() -> typer.Exit:
    print("timeline: interrupted; no file was left half-written", file=sys.stderr)
    return typer.Exit(int(ExitCode.INTERRUPTED))


def _version(value: bool) -> None:
    if value:
        print(f"timeline {__version__}")
        raise typer.Exit(int(ExitCode.OK))


@app.callback()
def main_options(
    version: bool = typer.Option(
        False, "--version", "-V", callback=_version, is_eager=True, help="Print the version and exit."
    ),
) -> None:
    """Tie every LLM-serving benchmark run to the commit it ran on.

    \b
    Examples:
      timeline build logs/ --repo ~/sglang --log-tz UTC
      timeline build logs/ --repo ~/sglang --html report.html --csv runs.csv
      timeline ingest logs/ --repo ~/sglang --machine h100-a --log-tz UTC
      timeline history --since 30d --fail-on-regression
      timeline demo
    """


@app.command(
    "build", short_help="Tie each run in the logs to its commit, next to the code events.", epilog=EXIT_CODES_EPILOG
)
def build_command(
    context: typer.Context,
    paths: list[str] | None = typer.Argument(
        None,
        metavar="PATHS",
        help="Log files or folders (searched recursively for *.log, *.txt, *.out). Default: the current folder.",
    ),
    repo: str | None = typer.Option(
        None,
        "--repo",
        metavar="DIR",
        help="The checkout the server ran from: its root, a folder inside it, or a linked worktree.",
    ),
    log_tz: list[str] | None = typer.Option(
        None,
        "--log-tz",
        metavar="[PATTERN=]ZONE",
        help="Zone of the logs' wall-clock times: IANA name (Europe/Berlin), UTC, or +02:00; or PATTERN=ZONE "
        "for the logs whose path matches the glob (repeatable). Default: inferred from each file's mtime, "
        "else this machine's zone.",
    ),
    display_tz: str | None = typer.Option(
        None, "--display-tz", metavar="ZONE", help="Show the table's times in this zone (default: each log's own zone)."
    ),
    tolerance: float = typer.Option(
        60.0,
        "--tolerance",
        min=0.0,
        metavar="SECONDS",
        help="Seconds: a run starting this close to a HEAD move is 'ambiguous'.",
    ),
    json_path: str | None = typer.Option(
        None, "--json", metavar="FILE", help="Write the JSON document to FILE ('-' = stdout only)."
    ),
    samples: bool = typer.Option(False, "--samples", help="Include every parsed stats line in the JSON."),
    output_format: str = typer.Option(
        "table",
        "--format",
        "-f",
        metavar="FORMAT",
        help="What to print: table, json (the JSON document), csv (one row per run), markdown, or github "
        "(GitHub Actions: an annotation per shift on stdout, the markdown report appended to $GITHUB_STEP_SUMMARY).",
    ),
    csv_path: str | None = typer.Option(
        None, "--csv", metavar="FILE", help="Write one CSV row per run to FILE ('-' = stdout only)."
    ),
    html_path: str | None = typer.Option(
        None, "--html", metavar="FILE", help="Write a self-contained HTML report (charts and tables) to FILE."
    ),
    parquet_dir: str | None = typer.Option(
        None,
        "--parquet",
        metavar="DIR",
        help="Write runs, samples, events and shifts as Parquet files to DIR (for DuckDB, Spark, polars; "
        "keeps the samples for it; needs pyarrow: pip install 'timeline[parquet]').",
    ),
    fail_on_regression: bool = typer.Option(
        False, "--fail-on-regression", help="Exit with status 3 when a shift has the verdict 'regression' (for CI)."
    ),
    confirmed_only: bool = typer.Option(
        False,
        "--confirmed-only",
        help="With --fail-on-regression: only regressions measured on two or more runs a side fail the build "
        "(not the single-run ones marked 'rerun to confirm').",
    ),
    min_effect: float = typer.Option(
        3.0,
        "--min-effect",
        min=0.0,
        metavar="PCT",
        help="Percent: the smallest change between two versions that gets a verdict (regression, improvement).",
    ),
    all_events: bool = typer.Option(
        False,
        "--all-events",
        help="Show every code event of the reflog in the table, markdown and HTML (default: from the move that "
        f"set the code of the first run to the first move after the last; past {MAX_RUNS} runs, of those only the "
        "ones of the shifts and runs shown and around the latest; the JSON always has them all).",
    ),
    all_runs: bool = typer.Option(
        False,
        "--all-runs",
        help=f"Show every run and shift in the table, markdown and HTML (default, past {MAX_RUNS} runs: the runs "
        f"around each shift with a verdict and the latest {LATEST_RUNS}, and the shifts with a verdict; the JSON "
        "always has them all).",
    ),
    entry: list[str] | None = typer.Option(
        None,
        "--entry",
        metavar="MODULE",
        help="A module the server starts from, for judging which suspects' files it can import (repeatable). "
        "Default: sglang.launch_server for SGLang logs, vllm.entrypoints for vLLM logs.",
    ),
    no_host: bool = typer.Option(
        False,
        "--no-host",
        help="Leave this machine's name out of the JSON (which records the tool's version, the options and the host).",
    ),
    allow_empty: bool = typer.Option(
        False,
        "--allow-empty",
        help="No log under PATHS is an empty timeline and exit status 0 (for CI globs), not an error (status 1).",
    ),
    no_cache: bool = typer.Option(
        False,
        "--no-cache",
        help="Skip the parse cache: parse every log anew, store nothing. (The cache keeps each log's parse while the "
        "file is unchanged, in $TIMELINE_CACHE_DIR, else $XDG_CACHE_HOME/timeline, else ~/.cache/timeline.)",
    ),
) -> None:
    """Tie each run in the logs to the commit HEAD held when it started, next to the code events.

    Files given with --json, --csv and --html are written atomically (a reader sees the old file or the new one).

    \b
    Examples:
      timeline build logs/ --repo ~/sglang --log-tz UTC
      timeline build logs/ --repo ~/sglang --json out.json --html report.html
      timeline build logs/ --repo ~/sglang --format csv > runs.csv
      timeline build logs/ --repo ~/sglang --parquet tables/
      timeline build logs/ --log-tz 'node2/*=UTC' --log-tz Europe/Berlin
      timeline build logs/ -f github --fail-on-regression --confirmed-only
    """
    with uncollected():  # (a command's modules: see timeline.__main__)
        from timeline.commands import build

    out, err = _consoles()
    if confirmed_only and not fail_on_regression:
        raise _fail(
            context,
            UsageError("--confirmed-only needs --fail-on-regression: it says which regressions fail the build"),
        )
    raise _run(
        context,
        lambda: build.run(
            paths or ["."],
            repo=repo,
            log_tz=log_tz or [],
            display_tz=display_tz,
            tolerance_s=tolerance,
            json_path=json_path,
            samples=samples,
            out=out,
            err=err,
            output_format=output_format,
            csv_path=csv_path,
            html_path=html_path,
            parquet_dir=parquet_dir,
            fail_on_regression=fail_on_regression,
            confirmed_only=confirmed_only,
            min_effect=min_effect / 100,
            record_host=not no_host,
            cache=not no_cache,
            allow_empty=allow_empty,
            all_events=all_events,
            all_runs=all_runs,
            entries=entry or [],
        ),
    )


@app.command(
    "demo", short_help="Run build on a small real repository and logs made on the spot.", epilog=EXIT_CODES_EPILOG
)
def demo_command(
    context: typer.Context,
    keep: Path | None = typer.Option(
        None, "--keep", metavar="DIR", help="Build the demo in this (new) folder and keep it."
    ),
) -> None:
    """Build a small real repository and SGLang logs in a temporary folder, then run build on them.

    \b
    Examples:
      timeline demo
      timeline demo --keep /tmp/timeline-demo
    """
    with uncollected():  # (a command's modules: see timeline.__main__)
        from timeline.commands import demo

    out, err = _consoles()
    raise _run(context, lambda: demo.run(out=out, err=err, keep=keep))


@app.command(
    "bisect", short_help="Run a benchmark on commits in between; name the one that slowed it.", epilog=EXIT_CODES_EPILOG
)
def bisect_command(
    context: typer.Context,
    command: list[str] = typer.Argument(
        ..., metavar="COMMAND...", help="The benchmark to run in each checkout, after --."
    ),
    repo: str = typer.Option(..., "--repo", metavar="CHECKOUT", help="The checkout whose history is searched."),
    good: str | None = typer.Option(None, "--good", metavar="SHA", help="A fast commit (an id or a unique prefix)."),
    bad: str | None = typer.Option(
        None, "--bad", metavar="SHA", help="A slow commit (an id or a unique prefix). Default with --good: HEAD."
    ),
    from_path: str | None = typer.Option(
        None,
        "--from",
        metavar="FILE",
        help="A timeline build --json document: good and bad default to the two sides of its first "
        "regression shift (else improvement, else confounded).",
    ),
    runs: int = typer.Option(2, "--runs", min=1, metavar="N", help="Runs of COMMAND on each commit tested."),
    log_path: str | None = typer.Option(
        None,
        "--log",
        metavar="PATH",
        help="The log to read, relative to the checkout's root (default: COMMAND's stdout and stderr).",
    ),
    json_path: str | None = typer.Option(
        None, "--json", metavar="FILE", help="Write the whole bisection as JSON to FILE ('-' = stdout only)."
    ),
) -> None:
    """Find the commit that moved the throughput: git bisect with a benchmark, on the first-parent
    line from good (exclusive) to bad.

    This RUNS CODE: COMMAND, in a checkout of each commit tested (timeline build never runs the
    checkout's code). Each commit is written to a temporary folder of its own, never to your
    checkout: its files, HEAD, index and .git stay as they are. COMMAND runs there, in a process
    group of its own (stopped when it ends, and on Ctrl-C), with TIMELINE_BISECT_COMMIT and
    TIMELINE_BISECT_RUN set; its output (or --log) is read as a server log, and its steady decode
    throughput decides: good, bad, or skip when it fails or sits between the levels. Progress
    goes to stderr, the first bad commit to stdout. Exit status 4 when no commit can be named.

    \b
    Examples:
      timeline bisect --repo ~/sglang --good 1a2b3c4 --bad 9f8e7d6 -- ./bench.sh
      timeline bisect --repo ~/sglang --from out.json --runs 3 -- python bench.py
      timeline bisect --repo . --good 0c059dfe --log server.log -- ./serve.sh
    """
    with uncollected():  # (a command's modules: see timeline.__main__)
        from timeline.commands import bisect

    out, err = _consoles()
    raise _run(
        context,
        lambda: bisect.run(
            repo,
            command,
            good=good,
            bad=bad,
            from_path=from_path,
            runs=runs,
            log_path=log_path,
            json_path=json_path,
            out=out,
            err=err,
        ),
    )


@app.command(
    "ingest",
    short_help="Build, then keep the runs and code events in the store (for history).",
    epilog=EXIT_CODES_EPILOG,
)
def ingest_command(
    context: typer.Context,
    paths: list[str] | None = typer.Argument(
        None,
        metavar="PATHS",
        help="Log files or folders (searched recursively for *.log, *.txt, *.out). Default: the current folder.",
    ),
    repo: str = typer.Option(
        ...,
        "--repo",
        metavar="DIR",
        help="The checkout the server ran from: its root, a folder inside it, or a linked worktree.",
    ),
    store: str | None = typer.Option(
        None,
        "--store",
        metavar="URL",
        help="The store: a SQLite file path, sqlite:///FILE or postgresql://USER@HOST/DB (needs "
        "pip install 'timeline[postgres]'). Default: $TIMELINE_STORE, else history.sqlite in the user's data folder.",
    ),
    machine: str | None = typer.Option(
        None,
        "--machine",
        metavar="NAME",
        help="The name of the machine the logs come from (default: this host's name).",
    ),
    samples: bool = typer.Option(
        False, "--samples", help="Keep every parsed stats line too (default: each run's summaries and spread)."
    ),
    log_tz: list[str] | None = typer.Option(
        None,
        "--log-tz",
        metavar="[PATTERN=]ZONE",
        help="Zone of the logs' wall-clock times, as for build (repeatable). Default: inferred from each file's "
        "mtime, else this machine's zone.",
    ),
    tolerance: float = typer.Option(
        60.0,
        "--tolerance",
        min=0.0,
        metavar="SECONDS",
        help="Seconds: a run starting this close to a HEAD move is 'ambiguous'.",
    ),
    allow_empty: bool = typer.Option(
        False,
        "--allow-empty",
        help="No log under PATHS stores the checkout's events alone, exit status 0 (for CI globs).",
    ),
    no_cache: bool = typer.Option(False, "--no-cache", help="Skip the parse cache: parse every log anew."),
) -> None:
    """Run build on the logs and keep its runs (summaries and spread, not the stats lines unless
    --samples), code events with their commits, and the machine, in the store.

    Ingesting the same logs again stores nothing new: a run is known by its own lines and line
    range (a log appended to keeps its earlier runs). Ingests from several processes or machines
    at once into one store are safe. Prints one line of counts.

    \b
    Examples:
      timeline ingest logs/ --repo ~/sglang --log-tz UTC
      timeline ingest logs/ --repo ~/sglang --machine h100-a --samples
      timeline ingest logs/ --repo ~/vllm --store postgresql://ci@db/perf
    """
    with uncollected():  # (a command's modules: see timeline.__main__)
        from timeline.commands import ingest

    out, err = _consoles()
    raise _run(
        context,
        lambda: ingest.run(
            paths or ["."],
            repo=repo,
            store_url=store,
            machine=machine,
            samples=samples,
            log_tz=log_tz or [],
            tolerance_s=tolerance,
            out=out,
            err=err,
            cache=not no_cache,
            allow_empty=allow_empty,
        ),
    )


@app.command(
    "history",
    short_help="Find the shifts and culprits in everything the store holds, machine by machine.",
    epilog=EXIT_CODES_EPILOG,
)
def history_command(
    context: typer.Context,
    store: str | None = typer.Option(
        None,
        "--store",
        metavar="URL",
        help="The store: a SQLite file path, sqlite:///FILE or postgresql://USER@HOST/DB (needs "
        "pip install 'timeline[postgres]'). Default: $TIMELINE_STORE, else history.sqlite in the user's data folder.",
    ),
    machine: str | None = typer.Option(
        None, "--machine", metavar="NAME", help="Only this machine's runs (the name given to timeline ingest)."
    ),
    group: str | None = typer.Option(
        None,
        "--group",
        metavar="TEXT",
        help="Only the workloads whose label contains TEXT, case aside (e.g. 'Qwen3-235B' or 'tp8 EAGLE3').",
    ),
    since: str | None = typer.Option(
        None,
        "--since",
        metavar="DATE",
        help="Only runs and code events from DATE on: 2026-05-01, 2026-05-01T08:00+02:00 (UTC without an "
        "offset), or a span back from now: 30d, 2w, 12h.",
    ),
    repo: str | None = typer.Option(
        None,
        "--repo",
        metavar="DIR",
        help="A checkout holding the commits (any machine's, or a clone of the upstream they pull), to weigh "
        "the suspects on their code too (imports, flags). Without it, that evidence is left out.",
    ),
    display_tz: str | None = typer.Option(
        None, "--display-tz", metavar="ZONE", help="Show the table's times in this zone (default: the logs' own zone)."
    ),
    json_path: str | None = typer.Option(
        None, "--json", metavar="FILE", help="Write the JSON document to FILE ('-' = stdout only)."
    ),
    samples: bool = typer.Option(
        False, "--samples", help="Include the stats lines of the runs ingested with --samples in the JSON."
    ),
    output_format: str = typer.Option(
        "table",
        "--format",
        "-f",
        metavar="FORMAT",
        help="What to print: table, json, csv, markdown or github, as for build.",
    ),
    csv_path: str | None = typer.Option(
        None, "--csv", metavar="FILE", help="Write one CSV row per run to FILE ('-' = stdout only)."
    ),
    html_path: str | None = typer.Option(
        None, "--html", metavar="FILE", help="Write a self-contained HTML report (charts and tables) to FILE."
    ),
    parquet_dir: str | None = typer.Option(
        None,
        "--parquet",
        metavar="DIR",
        help="Write runs, samples, events and shifts as Parquet files to DIR (needs pyarrow).",
    ),
    fail_on_regression: bool = typer.Option(
        False, "--fail-on-regression", help="Exit with status 3 when a shift has the verdict 'regression' (for CI)."
    ),
    confirmed_only: bool = typer.Option(
        False,
        "--confirmed-only",
        help="With --fail-on-regression: only regressions measured on two or more runs a side fail.",
    ),
    min_effect: float = typer.Option(
        3.0,
        "--min-effect",
        min=0.0,
        metavar="PCT",
        help="Percent: the smallest change between two versions that gets a verdict (regression, improvement).",
    ),
    all_events: bool = typer.Option(
        False, "--all-events", help="Show every stored code event in the table, markdown and HTML."
    ),
    all_runs: bool = typer.Option(
        False,
        "--all-runs",
        help=f"Show every stored run and shift in the table, markdown and HTML (default, past {MAX_RUNS} runs: the "
        f"runs around each shift with a verdict and the latest {LATEST_RUNS}, and the shifts with a verdict; the "
        "JSON always has them all).",
    ),
    entry: list[str] | None = typer.Option(
        None,
        "--entry",
        metavar="MODULE",
        help="With --repo: a module the server starts from, for judging which suspects' files it can import.",
    ),
    no_host: bool = typer.Option(False, "--no-host", help="Leave this machine's name out of the JSON."),
) -> None:
    """Test every machine's stored runs for shifts between code versions, as build does, with the
    same verdicts, suspects, culprits and outputs: weeks of nightly runs after their logs are gone.

    Each machine's runs are tested between the versions its own checkout's reflog drew, and are
    never pooled with another machine's: every workload, shift and code event names its machine
    ('gpu-a: Qwen3-235B tp8'). The table starts with the machines, their GPUs, NCCL and driver, and
    which of them are alike. Without --repo, the evidence read from the code is left out; the
    commits each move brought in and the files they touched are in the store.

    \b
    Examples:
      timeline history
      timeline history --store postgresql://ci@db/perf --since 30d
      timeline history --machine h100-a --group Qwen3-235B --html report.html
      timeline history --since 30d -f github --fail-on-regression --confirmed-only
    """
    with uncollected():  # (a command's modules: see timeline.__main__)
        from timeline.commands import history

    out, err = _consoles()
    if confirmed_only and not fail_on_regression:
        raise _fail(
            context,
            UsageError("--confirmed-only needs --fail-on-regression: it says which regressions fail the run"),
        )
    raise _run(
        context,
        lambda: history.run(
            store_url=store,
            machine=machine,
            group=group,
            since=since,
            repo=repo,
            out=out,
            err=err,
            display_tz=display_tz,
            output_format=output_format,
            json_path=json_path,
            csv_path=csv_path,
            html_path=html_path,
            parquet_dir=parquet_dir,
            samples=samples,
            all_events=all_events,
            all_runs=all_runs,
            entries=entry or [],
            min_effect=min_effect / 100,
            fail_on_regression=fail_on_regression,
            confirmed_only=confirmed_only,
            record_host=not no_host,
        ),
    )


@app.command("schema", short_help="Print the JSON Schema of the JSON document.", epilog=EXIT_CODES_EPILOG)
def schema_command() -> None:
    """Print the JSON Schema (draft 2020-12) of the JSON document that --json writes.

    \b
    Examples:
      timeline schema > s.json
      timeline build logs/ --json - | check-jsonschema --schemafile s.json -
    """
    from timeline.schema import schema_text

    sys.stdout.write(schema_text())
    raise typer.Exit(int(ExitCode.OK))


def main() -> None:
    # numpy's wheels load OpenBLAS, which starts a thread a core when numpy is imported; timeline
    # never multiplies a matrix. With one thread numpy's import took 0.07 s, not 0.11 s, of every
    # build's start-up (2 cores, lowest of 12 interleaved). A user's own setting is kept.
    # (https://github.com/OpenMathLib/OpenBLAS#setting-the-number-of-threads-using-environment-variables)
    os.environ.setdefault("OPENBLAS_NUM_THREADS", "1")
    holding_to_exit()
    try:
        app()
    except SystemExit as ended:
        exit_unfreed(ended.code)  # returns unless a command held its answer (timeline history)
        raise
    except KeyboardInterrupt:
        # a signal handled while the command's own exit was unwinding: the same stop, said once
        sys.exit(int(ExitCode.INTERRUPTED))
    finally:
        # The command is over, its files written and closed: the collections the interpreter
        # makes on the way out would walk every object left (the modules, the runs) only for the
        # process to end. Frozen, they are not walked; objects still go by their reference
        # counts, and atexit still runs. Exiting after a build of benchmarks/gen.py's 400 MB log
        # took 0.06-0.14 s, 0.02 s frozen (https://docs.python.org/3/library/gc.html#gc.freeze).
        gc.freeze()
