"""``timeline build``: the time-ordered table, or the JSON v1 document, CSV, markdown; files too."""

from __future__ import annotations

import os
from collections.abc import Sequence

from rich.console import Console

from timeline.builder import build
from timeline.clock import parse_zone
from timeline.environment import Environment
from timeline.exitcodes import ExitCode
from timeline.export import write_text_atomic
from timeline.render.formats import plan_outputs, render_text
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
    output_format: str = "table",
    csv_path: str | None = None,
    html_path: str | None = None,
    fail_on_regression: bool = False,
) -> ExitCode:
    display = parse_zone(display_tz) if display_tz else None
    to_stdout, files = plan_outputs(output_format, {"json": json_path, "csv": csv_path, "html": html_path})
    timeline = build(paths, repo=repo, log_tz=log_tz, keep_samples=samples, tolerance_s=tolerance_s, env=env)
    for fmt, path in files.items():
        write_text_atomic(path, render_text(timeline, fmt, display))
    if to_stdout == "table":
        render_timeline(timeline, out, display)
    else:
        write_text_atomic("-", render_text(timeline, to_stdout, display))
    render_warnings(timeline, err)
    if fail_on_regression and any(s.verdict == "regression" for s in timeline.shifts):
        return ExitCode.REGRESSION
    return ExitCode.OK
