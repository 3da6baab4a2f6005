"""``timeline ingest``: build, then keep the result in the store; one line of counts."""

from __future__ import annotations

import os
from collections.abc import Sequence

from rich.console import Console

from timeline.builder import build, cache_of
from timeline.commands.build import FLAG_HINTS, ProgressBar, warn_cache_problem
from timeline.environment import Environment
from timeline.errors import UsageError
from timeline.exitcodes import ExitCode
from timeline.render.store_wording import ingest_text
from timeline.render.table import render_warnings
from timeline.store import machine_of, open_store


def run(
    paths: Sequence[str | os.PathLike],
    *,
    repo: str,
    store_url: str | None,
    machine: str | None,
    samples: bool,
    log_tz: Sequence[str],
    tolerance_s: float,
    out: Console,
    err: Console,
    env: Environment | None = None,
    cache: bool = True,
    allow_empty: bool = False,
) -> ExitCode:
    env = env or Environment()
    if any(os.fspath(path) == "-" for path in paths):
        # a run's identity is its lines, read again after the build (timeline.store.keys)
        raise UsageError("'-' (standard input) cannot be ingested: its runs are known by their lines, read again")
    bar = ProgressBar(err) if err.is_terminal else None
    parse_cache = cache_of(cache, env)
    with open_store(store_url, env.environ, now=env.now) as store:  # a bad URL fails before the build
        try:
            timeline = build(
                paths,
                repo=repo,
                log_tz=log_tz,
                keep_samples=samples,
                tolerance_s=tolerance_s,
                env=env,
                progress=bar,
                cache=parse_cache or False,
                allow_empty=allow_empty,
                analyse_shifts=False,
            )
        finally:
            if bar is not None:
                bar.close()
        render_warnings(timeline, err, FLAG_HINTS)
        warn_cache_problem(parse_cache, err)
        source = machine_of(timeline, machine, env.host() or None)
        result = store.ingest(timeline, source, keep_samples=samples)
        out.print(ingest_text(result, source.name, store.url), markup=False, highlight=False, soft_wrap=True)
    return ExitCode.OK
