"""``timeline history``: every machine's stored runs tested for shifts, shown as build shows them."""

from __future__ import annotations

from collections.abc import Sequence

from rich.console import Console

from timeline.clock import parse_zone
from timeline.collector import hold_to_exit, uncollected
from timeline.commands.build import plan_outputs, write_outputs
from timeline.detect import DEFAULT_MIN_EFFECT
from timeline.environment import Environment
from timeline.exitcodes import ExitCode
from timeline.history import history, parse_since
from timeline.parquet import require_pyarrow
from timeline.render.machines import machines_table
from timeline.shifts import gate_failures


def run(
    *,
    store_url: str | None,
    machine: str | None,
    group: str | None,
    since: str | None,
    repo: str | None,
    out: Console,
    err: Console,
    env: Environment | None = None,
    display_tz: str | None = None,
    output_format: str = "table",
    json_path: str | None = None,
    csv_path: str | None = None,
    html_path: str | None = None,
    parquet_dir: str | None = None,
    samples: bool = False,
    all_events: bool = False,
    all_runs: bool = False,
    entries: Sequence[str] = (),
    min_effect: float = DEFAULT_MIN_EFFECT,
    fail_on_regression: bool = False,
    confirmed_only: bool = False,
    record_host: bool = True,
) -> ExitCode:
    env = env or Environment()
    display = parse_zone(display_tz) if display_tz else None
    since_at = parse_since(since, env.now()) if since is not None else None
    if parquet_dir is not None:
        require_pyarrow()
    to_stdout, files = plan_outputs(output_format, {"json": json_path, "csv": csv_path, "html": html_path})
    found = history(
        store_url,
        machine=machine,
        group=group,
        since=since_at,
        repo=repo,
        entries=entries,
        min_effect=min_effect,
        samples=samples or parquet_dir is not None,
        env=env,
        record_host=record_host,
    )
    # the outputs decode the summaries of each run they write (timeline.store.codec: a million
    # objects for 100,000 runs, kept, no cycles): their allocations set off full collections,
    # each walking every object of the answer (a third of the time of the JSON of 100,000 runs)
    with uncollected():
        if to_stdout == "table":
            out.print(machines_table(found.machines))
        write_outputs(
            found.timeline, to_stdout, files, display, all_events, parquet_dir, samples, out, err, env, all_runs
        )
    hold_to_exit(found)  # a million objects: freeing them one by one took 0.2 s of a 100,000-run history
    if fail_on_regression and gate_failures(found.timeline.shifts, confirmed_only):
        return ExitCode.REGRESSION
    return ExitCode.OK
