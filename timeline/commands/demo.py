"""``timeline demo``: a real repository and real logs in a temporary folder, then ``build``."""

from __future__ import annotations

import os
import tempfile
from pathlib import Path

from rich.console import Console

from timeline.builder import build
from timeline.commands.build import FLAG_HINTS
from timeline.environment import Environment
from timeline.errors import UsageError
from timeline.exitcodes import ExitCode
from timeline.render.table import render_timeline, render_warnings
from timeline.scenario import build_demo


def run(*, out: Console, err: Console, keep: Path | None = None, env: Environment | None = None) -> ExitCode:
    if keep is not None and keep.exists() and any(keep.iterdir()):
        raise UsageError(f"{keep}: folder exists and is not empty")
    with tempfile.TemporaryDirectory(prefix="timeline-demo-") as scratch:
        root = (keep or Path(scratch)).resolve()
        scenario = build_demo(root)
        logs, repo = scenario.logs.relative_to(root), scenario.repo.relative_to(root)
        out.print(
            "A checkout whose reflog shows a clone, a `git pull` over 3 commits and a reset, written by\n"
            f"real git commands at fixed dates, and SGLang logs of four runs, in {root}:\n\n"
            f"$ timeline build {logs}/ --repo {repo} --log-tz UTC\n",
            markup=False,
            highlight=False,
        )
        # Relative paths, as a user in that folder would type them.
        previous = os.getcwd()
        os.chdir(root)
        try:
            timeline = build([logs], repo=repo, log_tz="UTC", env=env)
        finally:
            os.chdir(previous)
        render_timeline(timeline, out)
        render_warnings(timeline, err, FLAG_HINTS)  # as `timeline build` would say them
    return ExitCode.OK
