"""``timeline build``: the time-ordered table, or the JSON v1 document."""

from __future__ import annotations

import os
from collections.abc import Sequence

from rich.console import Console

from timeline.builder import build
from timeline.clock import parse_zone
from timeline.environment import Environment
from timeline.exitcodes import ExitCode
from timeline.export import dumps, write_text_atomic
from timeline.render.table import render_timeline, render_warnings


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
    fail_on_regression: bool = False,
) -> ExitCode:
    display = parse_zone(display_tz) if display_tz else None
    timeline = build(paths, repo=repo, log_tz=log_tz, keep_samples=samples, tolerance_s=tolerance_s, env=env)
    if json_path is not None:
        write_text_atomic(json_path, dumps(timeline))
    if json_path != "-":
        render_timeline(timeline, out, display)
    render_warnings(timeline, err)
    if fail_on_regression and any(s.verdict == "regression" for s in timeline.shifts):
        return ExitCode.REGRESSION
    return ExitCode.OK
