"""Every launch is a run, as a user meets it through ``timeline build`` (typer's CliRunner, real git
repositories): its status (a launch that would not start, one that never logged stats) and where its
dates come from, in the table, JSON, CSV and markdown."""

from __future__ import annotations

import csv
import io
import json
import os
import shutil
from datetime import datetime, timezone
from pathlib import Path

from typer.testing import CliRunner

import timeline
from timeline.cli import app
from timeline.export import dumps
from timeline.scenario import Launch, server_args_repr, write_sglang_log

runner = CliRunner()
FIXTURES = Path(__file__).resolve().parents[1] / "fixtures"
ERROR = "RuntimeError: Not enough memory. Please try to increase --mem-fraction-static."


def invoke(*args: str):
    # wide enough that a crash's error line is not folded across the table's rows
    result = runner.invoke(app, ["build", *args], catch_exceptions=False, env={"COLUMNS": "400"})
    assert result.exit_code == 0, result.output
    return result


def crashed_launch(path: Path, start: datetime, launch: Launch) -> None:
    """An SGLang launch that dies while it starts: the scheduler's traceback, the launcher's sigquit."""
    stamp = start.strftime("%Y-%m-%d %H:%M")
    path.write_text(
        "\n".join(
            [
                f"[{stamp}:00] server_args={server_args_repr(launch)}",
                f"[{stamp}:07 TP0] Init torch distributed begin.",
                f"[{stamp}:40 TP0] Scheduler hit an exception: Traceback (most recent call last):",
                '  File "/sgl-workspace/sglang/python/sglang/srt/managers/scheduler.py", line 2553, in run',
                "    raise RuntimeError(",
                ERROR,
                "",
                f"[{stamp}:41] Received sigquit from a child process. It usually means the child failed.",
            ]
        )
        + "\n"
    )


def test_the_launch_that_would_not_start_after_the_pull(reflog_repo, tmp_path: Path) -> None:
    """Fast before the pull, a crash right after it, slow once it starts: the crash is a run tied to
    the pulled commit, shown with its error; the shift compares the runs with values and says why
    the crashed one is left out."""
    at = lambda hour: datetime(2026, 3, 2, hour, tzinfo=timezone.utc)  # noqa: E731
    repo, shas = reflog_repo([("clone", at(9)), ("pull", at(12), 3)])
    logs = tmp_path / "logs"
    write_sglang_log(logs / "a-before.log", [Launch(datetime(2026, 3, 2, 10, 0), 10, 94.0)])
    crashed_launch(logs / "b-crash.log", datetime(2026, 3, 2, 13, 0), Launch(datetime(2026, 3, 2, 13), 1, 1.0))
    write_sglang_log(logs / "c-after.log", [Launch(datetime(2026, 3, 2, 14, 0), 10, 60.0)])

    table = invoke(str(logs), "--repo", str(repo), "--log-tz", "UTC").stdout
    assert "r2 run" in table and "crashed" in table
    assert f"line 6: {ERROR}" in table
    assert "r2 left out: it crashed" in table

    document = json.loads(invoke(str(logs), "--repo", str(repo), "--log-tz", "UTC", "--json", "-").stdout)
    crash = document["runs"][1]
    assert (crash["source"].endswith("b-crash.log"), crash["status"], crash["error"], crash["error_line"]) == (
        True,
        "crashed",
        ERROR,
        6,
    )
    assert (crash["commit"], crash["attribution"], crash["steady"], crash["metrics"]) == (
        shas["c4"],
        "exact",
        None,
        {},
    )
    assert [(r["status"], r["date_source"]) for r in document["runs"]] == [
        ("ok", "stamp"),
        ("crashed", "stamp"),
        ("ok", "stamp"),
    ]
    (shift,) = document["shifts"]
    assert (shift["from"]["runs"], shift["to"]["runs"], shift["verdict"]) == (["r1"], ["r3"], "regression")

    rows = list(csv.DictReader(io.StringIO(invoke(str(logs), "--repo", str(repo), "--format", "csv").stdout)))
    assert [(r["status"], r["error_line"], r["error"]) for r in rows] == [
        ("ok", "", ""),
        ("crashed", "6", ERROR),
        ("ok", "", ""),
    ]
    markdown = invoke(str(logs), "--repo", str(repo), "--log-tz", "UTC", "--format", "markdown").stdout
    assert f"| crashed (line 6: {ERROR}) |" in markdown

    saved = tmp_path / "timeline.json"
    invoke(str(logs), "--repo", str(repo), "--log-tz", "UTC", "--json", str(saved))
    loaded = timeline.load(saved)  # the status and the error come back, the document byte for byte
    assert [(r.status, r.error_line, r.date_source) for r in loaded.runs] == [
        ("ok", None, "stamp"),
        ("crashed", 6, "stamp"),
        ("ok", None, "stamp"),
    ]
    assert dumps(loaded) == saved.read_text(encoding="utf-8")


def test_a_launch_that_never_logged_stats(tmp_path: Path) -> None:
    logs = tmp_path / "logs"
    logs.mkdir()
    shutil.copy(FIXTURES / "sglang" / "sglang-0.5.2-pd-decode-transfer-failed.log", logs)
    shutil.copy(FIXTURES / "sglang" / "sglang-access-only.log", logs)
    result = invoke(str(logs), "--log-tz", "UTC")
    assert result.stdout.count("no stats") == 2
    assert "not counted as a run" not in result.output
    document = json.loads(invoke(str(logs), "--log-tz", "UTC", "--json", "-").stdout)
    assert [(r["status"], r["error"], r["steady"]) for r in document["runs"]] == [("no-stats", None, None)] * 2


def placed(tmp_path: Path, name: str, mtime: str) -> Path:
    """A copy of a fixture with its modification time (local wall-clock) set."""
    copy = tmp_path / "logs" / Path(name).name
    copy.parent.mkdir(exist_ok=True)
    shutil.copy(FIXTURES / name, copy)
    stamp = datetime.fromisoformat(mtime).timestamp()
    os.utime(copy, (stamp, stamp))
    return copy


def test_dates_from_file_time_are_said_in_every_view(tmp_path: Path) -> None:
    log = placed(tmp_path, "vllm/vllm-0.10.2-engine-failed-to-start.log", "2025-09-18T10:40:00")
    table = invoke(str(log), "--log-tz", "UTC").stdout
    assert "dates from file time" in table and "crashed" in table
    assert "line 19: ValueError: To serve at least one request" in table

    (run,) = json.loads(invoke(str(log), "--log-tz", "UTC", "--json", "-").stdout)["runs"]
    assert (run["date_source"], run["start"], run["status"]) == ("mtime", "2025-09-18T10:33:50+00:00", "crashed")
    (row,) = csv.DictReader(io.StringIO(invoke(str(log), "--log-tz", "UTC", "--format", "csv").stdout))
    assert row["date_source"] == "mtime"
    markdown = invoke(str(log), "--log-tz", "UTC", "--format", "markdown").stdout
    assert "| 2025-09-18 10:33:50+00:00 (dates from file time) |" in markdown


def test_a_date_note_shared_by_every_run_is_said_once(tmp_path: Path) -> None:
    placed(tmp_path, "vllm/vllm-0.10.2-engine-failed-to-start.log", "2025-09-18T10:40:00")
    placed(tmp_path, "sglang/sglang-0.3-time-only.log", "2026-02-03T08:05:00")
    table = invoke(str(tmp_path / "logs"), "--log-tz", "UTC").stdout
    assert table.count("dates from file time") == 1
    assert "every run: dates from file time" in table
    placed(tmp_path, "sglang/sglang-access-only.log", "2026-02-03T11:05:00")
    table = invoke(str(tmp_path / "logs"), "--log-tz", "UTC").stdout
    assert table.count("dates from file time") == 2 and "every run: dates" not in table
