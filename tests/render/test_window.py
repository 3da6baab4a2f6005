"""The views show the code events around the runs (timeline.render.window), not a long-lived
checkout's whole reflog; the JSON keeps them all; --all-events shows them all."""

from __future__ import annotations

import dataclasses
import json
from datetime import datetime, timedelta, timezone
from pathlib import Path

import pytest
from typer.testing import CliRunner

from timeline import build
from timeline.cli import app
from timeline.model import Clearing
from timeline.render import window
from timeline.render.window import WITHOUT_RUNS, event_window, run_window
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
    assert event_window(timeline, all_events=True) == (timeline.events, 0, 0, 0)


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


# --- the run window: a store's 100,000 runs are not a table -------------------------------------


def _six_runs_a_version(root: Path, levels: tuple[float, ...]) -> tuple[Path, Path]:
    """Commits c1, c2... (one a version, at ``levels`` tok/s) and a log of six runs on each, one an hour."""
    git, repo = GitScript(root / "home"), root / "checkout"
    repo.mkdir()
    git.git(repo, "init", "-q", at=DAY)
    launches = []
    for number, level in enumerate(levels):
        version_start = DAY + timedelta(hours=1 + 7 * number)
        git.commit_file(repo, f"c{number + 1}", version_start - timedelta(minutes=30))
        launches += [
            Launch((version_start + timedelta(hours=k)).replace(tzinfo=None), 10, level, noise=0.005) for k in range(6)
        ]
    logs = root / "logs"
    write_sglang_log(logs / "runs.log", launches)
    return repo, logs


@pytest.fixture(scope="module")
def many_runs(tmp_path_factory) -> tuple[Path, Path]:
    """Six runs on each of c1 (100 tok/s), c2 (80: a regression) and c3 (80: no change), one an hour."""
    return _six_runs_a_version(tmp_path_factory.mktemp("runs"), (100.0, 80.0, 80.0))


@pytest.fixture
def small_bounds(monkeypatch):
    """A window past 10 runs, with the latest 2: the 18 runs of ``many_runs`` are past it."""
    monkeypatch.setattr(window, "MAX_RUNS", 10)
    monkeypatch.setattr(window, "LATEST_RUNS", 2)


def test_past_the_bound_the_runs_around_each_verdict_and_the_latest_are_shown(many_runs, small_bounds):
    repo, logs = many_runs
    timeline = build([logs], repo=repo, log_tz="UTC", cache=False)
    assert [s.verdict for s in timeline.shifts] == ["regression", None]
    shown = run_window(timeline)
    assert [run.id for run in shown.runs] == ["r4", "r5", "r6", "r7", "r8", "r9", "r17", "r18"]
    assert shown.hidden == 10
    assert [s.id for s in shown.shifts] == ["s1"] and shown.quiet == 1  # s2: no change
    assert shown.note() == (
        "10 runs not shown, only those around each shift with a verdict and the latest 2; 1 shift without a "
        "verdict not shown (--all-runs shows them; the JSON has them all, the CSV and Parquet every run)"
    )
    assert run_window(timeline, all_runs=True) == (timeline.runs, 0, timeline.shifts, 0)


def test_a_shift_without_a_verdict_that_a_culprit_names_stays(many_runs, small_bounds):
    repo, logs = many_runs
    timeline = build([logs], repo=repo, log_tz="UTC", cache=False)
    (culprit,) = [c for c in timeline.culprits if "s1" in c.shifts]
    named = dataclasses.replace(culprit, shifts=[*culprit.shifts, "s2"])
    shown = run_window(dataclasses.replace(timeline, culprits=[named]))
    assert [s.id for s in shown.shifts] == ["s1", "s2"] and shown.quiet == 0


def test_a_shift_without_a_verdict_that_cleared_a_suspect_stays(many_runs, small_bounds):
    # "cleared: came at s2 with no change" under s1: s2 is shown, not named and hidden
    repo, logs = many_runs
    timeline = build([logs], repo=repo, log_tz="UTC", cache=False)
    regression = timeline.shifts[0]
    suspect = dataclasses.replace(
        regression.suspects[0], cleared=Clearing("moved-with-no-change", regression.id, "s2", "arrived", 0.1)
    )
    cleared = dataclasses.replace(regression, suspects=[suspect, *regression.suspects[1:]])
    shown = run_window(dataclasses.replace(timeline, shifts=[cleared, *timeline.shifts[1:]], culprits=[]))
    assert [s.id for s in shown.shifts] == ["s1", "s2"] and shown.quiet == 0


def test_under_the_bound_every_run_is_shown(many_runs):
    repo, logs = many_runs
    timeline = build([logs], repo=repo, log_tz="UTC", cache=False)
    assert run_window(timeline) == (timeline.runs, 0, timeline.shifts, 0) and run_window(timeline).note() is None


@pytest.mark.parametrize("fmt", ["table", "markdown"])
def test_the_views_say_which_runs_they_leave_out_and_all_runs_shows_them(many_runs, small_bounds, fmt):
    repo, logs = many_runs
    args = ["build", str(logs), "--repo", str(repo), "--log-tz", "UTC", "--no-cache", "--format", fmt]
    shown = runner.invoke(app, args, env={"COLUMNS": "200"})
    assert shown.exit_code == 0, shown.output
    assert "10 runs not shown" in shown.stdout
    assert "r4 " in shown.stdout and "r9 " in shown.stdout and "r18 " in shown.stdout
    assert "r3 " not in shown.stdout and "r10 " not in shown.stdout
    assert "s1" in shown.stdout and "s2" not in shown.stdout  # no change between c2 and c3
    every = runner.invoke(app, [*args, "--all-runs"], env={"COLUMNS": "200"})
    assert "runs not shown" not in every.stdout and "r1 " in every.stdout and "r10 " in every.stdout
    assert "s2" in every.stdout


def test_the_json_csv_keep_every_run_and_the_html_shows_the_window(many_runs, small_bounds, tmp_path):
    repo, logs = many_runs
    out, report = tmp_path / "out.json", tmp_path / "report.html"
    args = ["build", str(logs), "--repo", str(repo), "--log-tz", "UTC", "--no-cache"]
    result = runner.invoke(app, [*args, "--json", str(out), "--html", str(report), "--format", "csv"])
    assert result.exit_code == 0, result.output
    assert len(json.loads(out.read_text())["runs"]) == 18
    assert len(result.stdout.splitlines()) == 1 + 18
    html = report.read_text()
    assert "18 runs," in html and "10 runs not shown" in html
    assert "<td>r4</td>" in html and "<td>r3</td>" not in html


def test_history_shows_the_same_window_and_all_runs_shows_every_stored_run(many_runs, small_bounds, tmp_path):
    repo, logs = many_runs
    store = str(tmp_path / "history.sqlite")
    ingested = runner.invoke(
        app, ["ingest", str(logs), "--repo", str(repo), "--log-tz", "UTC", "--store", store, "--machine", "gpu-a"]
    )
    assert ingested.exit_code == 0, ingested.output
    args = ["history", "--store", store, "--format", "markdown"]
    shown = runner.invoke(app, args)
    assert shown.exit_code == 0, shown.output
    assert "10 runs not shown" in shown.stdout and "| r4 |" in shown.stdout and "| r3 |" not in shown.stdout
    every = runner.invoke(app, [*args, "--all-runs"])
    assert "runs not shown" not in every.stdout and "| r3 |" in every.stdout


def test_past_the_bound_the_events_shown_are_those_of_the_shifts_and_runs_shown(tmp_path, small_bounds):
    # c1 100 tok/s, c2 80 (s1: a regression), c3 and c4 80: the runs of s1 and the latest 2 (on
    # c4) are shown, and of the commits' four moves those between s1's sides (e2) and the one
    # that set the latest runs' code (e4); e1 before them, e3 between hidden runs
    repo, logs = _six_runs_a_version(tmp_path, (100.0, 80.0, 80.0, 80.0))
    timeline = build([logs], repo=repo, log_tz="UTC", cache=False)
    runs = run_window(timeline)
    assert [run.id for run in runs.runs] == ["r4", "r5", "r6", "r7", "r8", "r9", "r23", "r24"]
    shown = runs.of(timeline)
    window = event_window(shown, runs_hidden=True)
    assert [e.id for e in window.events] == ["e2", "e4"] and window[1:] == (1, 0, 1)
    assert window.note() == (
        "2 code events not shown, only those between the sides of each shift shown, during the runs shown and "
        "around the latest 2 runs (--all-events shows them; the JSON document has them all)"
    )
    assert [e.id for e in event_window(shown).events] == ["e1", "e2", "e3", "e4"]
    assert event_window(shown, all_events=True, runs_hidden=True) == (timeline.events, 0, 0, 0)
    args = ["build", str(logs), "--repo", str(repo), "--log-tz", "UTC", "--no-cache"]
    report = tmp_path / "report.html"
    table = runner.invoke(app, [*args, "--html", str(report)], env={"COLUMNS": "200"})
    assert table.exit_code == 0, table.output
    html = report.read_text()
    assert "<td>e2</td>" in html and "<td>e3</td>" not in html and "2 code events not shown" in html
    assert "e2 commit" in table.stdout and "e4 commit" in table.stdout
    assert "e1 commit" not in table.stdout and "e3 commit" not in table.stdout
    assert "2 code events not shown, only those between the sides" in table.stdout
    every = runner.invoke(app, [*args, "--all-events"], env={"COLUMNS": "200"})
    assert "e3 commit" in every.stdout and "code events not shown" not in every.stdout
