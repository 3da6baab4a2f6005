"""The views show the code events around the runs (timeline.render.window), not a long-lived
checkout's whole reflog; the JSON keeps them all; --all-events shows them all."""

from __future__ import annotations

import json
from datetime import datetime, timedelta, timezone
from pathlib import Path

import pytest
from typer.testing import CliRunner

from timeline import build
from timeline.cli import app
from timeline.render.window import WITHOUT_RUNS, event_window
from timeline.scenario import GitScript, Launch, write_sglang_log

runner = CliRunner()
DAY = datetime(2026, 5, 4, tzinfo=timezone.utc)


@pytest.fixture(scope="module")
def long_history(tmp_path_factory) -> tuple[Path, Path, dict[str, str]]:
    """30 commits over the morning, a run at 12:00-12:10 on c30, then c31 at 13:00, c32 at 14:00."""
    root = tmp_path_factory.mktemp("window")
    git, repo = GitScript(root / "home"), root / "checkout"
    repo.mkdir()
    git.git(repo, "init", "-q", at=DAY)
    shas = {f"c{i}": git.commit_file(repo, f"c{i}", DAY + timedelta(minutes=10 * i)) for i in range(1, 31)}
    shas["c31"] = git.commit_file(repo, "c31", DAY + timedelta(hours=13))
    shas["c32"] = git.commit_file(repo, "c32", DAY + timedelta(hours=14))
    logs = root / "logs"
    write_sglang_log(logs / "run.log", [Launch(datetime(2026, 5, 4, 12, 0), 10, 90.0)])
    return repo, logs, shas


def test_the_window_runs_from_the_move_that_set_the_code_to_the_first_move_after(long_history):
    repo, logs, shas = long_history
    timeline = build([logs], repo=repo, log_tz="UTC", cache=False)
    assert len(timeline.events) == 32
    window = event_window(timeline)
    assert [e.new for e in window.events] == [shas["c30"], shas["c31"]]
    assert (window.earlier, window.later) == (29, 1)
    assert window.note() == (
        "29 earlier and 1 later code events not shown (--all-events shows them; the JSON document has them all)"
    )
    assert event_window(timeline, all_events=True) == (timeline.events, 0, 0)


def test_without_runs_the_latest_events_are_shown(long_history):
    repo, _, _ = long_history
    timeline = build([], repo=repo, cache=False)
    window = event_window(timeline)
    assert window.events == timeline.events[-WITHOUT_RUNS:] and window.earlier == 32 - WITHOUT_RUNS


@pytest.mark.parametrize("fmt", ["table", "markdown"])
def test_the_views_say_what_they_leave_out_and_all_events_shows_it(long_history, fmt):
    repo, logs, shas = long_history
    args = ["build", str(logs), "--repo", str(repo), "--log-tz", "UTC", "--no-cache", "--format", fmt]
    shown = runner.invoke(app, args, env={"COLUMNS": "120"})
    assert shown.exit_code == 0, shown.output
    assert "29 earlier and 1 later code events not shown" in shown.stdout
    assert "e30" in shown.stdout and "e31" in shown.stdout and "e29 " not in shown.stdout
    every = runner.invoke(app, [*args, "--all-events"], env={"COLUMNS": "120"})
    assert "not shown" not in every.stdout and "e1 " in every.stdout and "e32 " in every.stdout


def test_the_json_document_and_the_html_report(long_history, tmp_path):
    repo, logs, _ = long_history
    out = tmp_path / "out.json"
    report = tmp_path / "report.html"
    result = runner.invoke(
        app,
        [
            "build",
            str(logs),
            "--repo",
            str(repo),
            "--log-tz",
            "UTC",
            "--no-cache",
            "--json",
            str(out),
            "--html",
            str(report),
        ],
    )
    assert result.exit_code == 0, result.output
    assert len(json.loads(out.read_text())["events"]) == 32
    html = report.read_text()
    assert "29 earlier and 1 later code events not shown" in html
    assert "<td>e30</td>" in html and "<td>e29</td>" not in html
