"""``timeline build``: the time-ordered table, or the JSON v1 document."""

from __future__ import annotations

import os
from collections.abc import Sequence

from rich.console import Console

from timeline.builder import build
from timeline.environment import Environment
from timeline.exitcodes import ExitCode
from timeline.export import dumps, write_text_atomic
from timeline.render.table import render_timeline, render_warnings


def run(
    paths: Sequence[str | os.PathLike],
    *,
    repo: str | None,
    log_tz: str | None,
    json_path: str | None,
    samples: bool,
    out: Console,
    err: Console,
    env: Environment | None = None,
) -> ExitCode:
    timeline = build(paths, repo=repo, log_tz=log_tz, keep_samples=samples, env=env)
    if json_path is not None:
        write_text_atomic(json_path, dumps(timeline))
    if json_path != "-":
        render_timeline(timeline, out)
    render_warnings(timeline, err)
    return ExitCode.OK
