"""Logs and a checkout from someone else, built to attack the outputs: escape sequences in commit
subjects, reflog messages, file names and server_args; a formula as the model path; HTML and
mentions in subjects; a non-UTF-8 file name; numbers at the edge of a double; stamps at the end
of the calendar. Every output stays text that shows them and obeys none of them."""

from __future__ import annotations

import csv
import io
import json
import os
import re
from datetime import datetime, timedelta, timezone
from pathlib import Path

import pytest
from typer.testing import CliRunner

from timeline.cli import app
from timeline.scenario import GitScript, Launch, write_sglang_log

DAY = datetime(2026, 5, 4, tzinfo=timezone.utc)
TERMINAL_CONTROL = "\x1b[2J\x1b]8;;http://evil.example\x1b\\click\x1b]8;;\x1b\\"
SUBJECTS = (
    f"Speed up decode {TERMINAL_CONTROL} \u202eexe.txt",
    '<script>alert(1)</script> @octocat fixes #12 =HYPERLINK("http://evil","x")',
    "Eight-bit CSI \x9b31m red\x07",
)
LOCAL_SUBJECT = "Local tweak \x1b[31mred\x1b[0m"
FORMULA = '=HYPERLINK("http://evil.example","click")'
LOG_NAME = os.fsdecode(b"node\xff\x1b[31m.log")  # not UTF-8, and an escape sequence
ACTING = re.compile("[\x00-\x08\x0b-\x1f\x7f-\x9f\u202a-\u202e\u2066-\u2069\ud800-\udfff]")

runner = CliRunner()


def at(hours: int, minutes: int = 0) -> datetime:
    return DAY + timedelta(hours=hours, minutes=minutes)


@pytest.fixture(scope="module")
def hostile(tmp_path_factory):
    root = tmp_path_factory.mktemp("hostile")
    git = GitScript(root / "home")
    upstream, checkout = root / "upstream", root / "checkout"
    upstream.mkdir()
    git.git(upstream, "init", "-q", at=at(8))
    git.commit_file(upstream, "Initial server", at(8, 5))
    git.git(root, "clone", "-q", str(upstream), str(checkout), at=at(9, 30))
    for number, subject in enumerate(SUBJECTS):
        git.commit_file(upstream, subject, at(12 + number))
    git.git(checkout, "pull", "-q", "origin", "main", at=at(18, 10))
    git.commit_file(checkout, LOCAL_SUBJECT, at(20, 0))  # its reflog message: "commit: " and the subject
    launch = dict(model_path=FORMULA, extra_args={"served_model_name": "x\x1b]0;pwned\x07"})
    logs = root / "logs"
    write_sglang_log(logs / "before.log", [Launch(datetime(2026, 5, 4, 16, 0), 12, 100.0, **launch)], seed=1)
    write_sglang_log(logs / LOG_NAME, [Launch(datetime(2026, 5, 4, 19, 0), 12, 60.0, **launch)], seed=2)
    write_sglang_log(logs / "local.log", [Launch(datetime(2026, 5, 4, 21, 0), 12, 61.0, **launch)], seed=3)
    return root


def build(root: Path, *args: str):
    result = runner.invoke(
        app,
        ["build", str(root / "logs"), "--repo", str(root / "checkout"), "--log-tz", "UTC", "--no-cache", *args],
        env={"COLUMNS": "400", "NO_COLOR": "1"},
    )
    assert result.exit_code == 0, result.output
    return result


def acting(text: str) -> list[str]:
    return sorted(set(ACTING.findall(text)))


@pytest.mark.parametrize("fmt", ["table", "markdown", "csv", "github"])
def test_no_control_character_reaches_the_terminal_or_the_file(hostile, fmt):
    result = build(hostile, "--format", fmt)
    assert acting(result.stdout) == []
    assert acting(result.stderr) == []
    if fmt == "github":  # the annotation names the top suspect: its subject, escaped
        assert "Speed up decode \\x1b[2J" in result.stdout or "\\x9b31m" in result.stdout
        return
    shown = result.stdout.replace("\\\\", "\\").replace("\\[", "[") if fmt == "markdown" else result.stdout
    assert "node\\xff\\x1b[31m.log" in shown  # shown, escaped: the reader sees what the name holds
    if fmt != "csv":  # (no commit subjects in the CSV)
        assert "\\x1b[2J" in shown and "\\u202e" in shown


def test_the_html_report_holds_no_control_character(hostile):
    target = hostile / "report.html"
    build(hostile, "--html", str(target))
    text = target.read_text(encoding="utf-8")
    assert acting(text) == [] and "<script>alert" not in text


def test_a_formula_cell_is_neutralised_in_the_csv(hostile):
    rows = list(csv.DictReader(io.StringIO(build(hostile, "--format", "csv").stdout)))
    assert {row["model"] for row in rows} == {"'" + FORMULA}
    for row in rows:
        for value in row.values():
            assert not value.startswith(("=", "+", "@", "\t", "\r")), value


def test_markdown_passes_no_html_and_notifies_nobody(hostile):
    text = build(hostile, "--format", "markdown").stdout
    assert "<script>" not in text and "\\<script\\>alert(1)\\</script\\>" in text
    assert "@octocat" not in text and "@&#8203;octocat" in text
    assert "#12" not in text and "#&#8203;12" in text
    assert "<br>" in text  # its own line breaks stay markup


def test_markdown_shows_paths_relative_to_the_folders_given(hostile):
    text = build(hostile, "--format", "markdown").stdout
    assert "Checkout `checkout`" in text
    assert "`logs/before.log:1-" in text
    for line in text.splitlines():
        if str(hostile) in line:  # only inside a reflog message (git wrote where it cloned from)
            assert "clone: from " + str(hostile) in line, line


def test_the_json_keeps_every_value_exactly(hostile):
    document = json.loads(build(hostile, "--json", "-").stdout)
    subjects = {document["commits"][i]["subject"] for e in document["events"] for i in e["commits"]}
    assert set(SUBJECTS) | {LOCAL_SUBJECT} <= subjects
    assert any(e["message"] == "commit: " + LOCAL_SUBJECT for e in document["events"])
    sources = {run["source"] for run in document["runs"]}
    assert str(hostile / "logs" / LOG_NAME) in sources  # os.fsencode of it opens the file
    assert {run["config"]["model_path"] for run in document["runs"]} == {FORMULA}


def test_a_json_file_with_a_non_utf8_name_in_it_is_written_and_valid(hostile):
    target = hostile / "out.json"
    build(hostile, "--json", str(target))
    raw = target.read_bytes()
    assert b"\\udcff" in raw  # the JSON escape of the byte's surrogate: ASCII on disk
    assert os.fsencode(LOG_NAME) in {os.fsencode(run["source"]).rsplit(b"/", 1)[-1] for run in json.loads(raw)["runs"]}


def _huge_log(path: Path) -> None:
    args = "[2026-05-04 10:00:00] server_args=ServerArgs(model_path='m', tp_size=1)\n"
    lines = [
        f"[2026-05-04 10:{1 + n // 6:02d}:{n % 6 * 10:02d} TP0] Decode batch, #running-req: 1, #token: 160, "
        f"token usage: 0.00, cuda graph: True, gen throughput (token/s): {1e308 if n % 2 else 1.5e308}, "
        "#queue-req: 0\n"
        for n in range(80)
    ]
    path.write_text(args + "".join(lines))


@pytest.mark.parametrize("fmt", ["json", "csv", "markdown", "table"])
def test_numbers_at_the_edge_of_a_double_give_valid_complete_outputs(tmp_path, fmt):
    _huge_log(tmp_path / "huge.log")
    result = runner.invoke(app, ["build", str(tmp_path), "--log-tz", "UTC", "--no-cache", "--format", fmt])
    assert result.exit_code == 0, result.output
    if fmt == "json":
        (run,) = json.loads(result.stdout)["runs"]
        summary = run["metrics"]["decode_throughput"]
        assert summary["median"] == pytest.approx(1.25e308) and summary["max"] == 1.5e308


def test_a_non_finite_number_computed_from_finite_ones_is_null_not_a_crash():
    from timeline.export import _finite

    assert _finite({"change_pct": float("inf"), "p": [float("nan"), 1.0], "n": 3}) == {
        "change_pct": None,
        "p": [None, 1.0],
        "n": 3,
    }


def test_the_written_document_has_null_where_a_run_or_shift_holds_a_non_finite_number(demo):
    import dataclasses

    from timeline import build
    from timeline.export import dumps

    timeline = build([demo.logs], repo=demo.repo, log_tz="UTC", cache=False)
    run = timeline.runs[0]
    decode = run.metrics["decode_throughput"]
    run.metrics = {**run.metrics, "decode_throughput": dataclasses.replace(decode, stddev=float("inf"))}
    timeline.shifts[0].change_pct = float("nan")
    document = json.loads(dumps(timeline))  # strict JSON: NaN and Infinity are not
    assert document["runs"][0]["metrics"]["decode_throughput"]["stddev"] is None
    assert document["runs"][0]["metrics"]["decode_throughput"]["median"] == decode.median
    assert document["shifts"][0]["change_pct"] is None


def _far_log(path: Path) -> None:
    lines = ["[9999-12-31 23:50:00] server_args=ServerArgs(model_path='m', tp_size=1)\n"]
    lines += [
        f"[9999-12-31 23:5{1 + n // 6}:{n % 6 * 10:02d} TP0] Decode batch, #running-req: 1, #token: 160, "
        f"token usage: 0.00, cuda graph: True, gen throughput (token/s): 50.0, #queue-req: 0\n"
        for n in range(30)
    ]
    path.write_text("".join(lines))


@pytest.mark.parametrize("zone", ["-12:00", "+14:00", "UTC"])
@pytest.mark.parametrize("fmt", ["table", "csv", "markdown", "json", "html"])
def test_stamps_at_the_end_of_the_calendar_are_shown_not_a_crash(tmp_path, zone, fmt):
    _far_log(tmp_path / "far.log")
    args = ["build", str(tmp_path), "--log-tz", zone, "--display-tz", "UTC", "--no-cache"]
    if fmt == "html":  # a file only: the report is never printed
        report = tmp_path / "out" / "report.html"
        report.parent.mkdir()
        result = runner.invoke(app, [*args, "--html", str(report)])
        assert result.exit_code == 0, result.output
        assert "9999-12-31" in report.read_text(encoding="utf-8")
        return
    result = runner.invoke(app, [*args, "--format", fmt])
    assert result.exit_code == 0, result.output
    assert "9999-12-31" in result.stdout
