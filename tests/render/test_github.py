"""timeline.render.github and ``build --format github``: annotations on stdout, the markdown report
appended to the step summary."""

from __future__ import annotations

import re

import pytest
from hypothesis import given
from hypothesis import strategies as st
from shift_stories import pull_and_reset
from typer.testing import CliRunner

from timeline.builder import build
from timeline.cli import app
from timeline.exitcodes import ExitCode
from timeline.render.github import escape_data, escape_property, github_annotations

runner = CliRunner()
# ::level title=T::message, nothing after: GitHub's workflow command grammar for one annotation
COMMAND = re.compile(r"^::(warning|notice) title=([^:,\n]*)::([^\n]*)$")


@pytest.fixture(scope="module")
def story(tmp_path_factory):
    return pull_and_reset(tmp_path_factory.mktemp("github"))


def _unescape(text: str) -> str:
    for code, char in (("%3A", ":"), ("%2C", ","), ("%0A", "\n"), ("%0D", "\r"), ("%25", "%")):
        text = text.replace(code, char)
    return text


@given(st.text())
def test_escaped_text_stays_on_one_line_and_comes_back(text):
    for escaped in (escape_data(text), escape_property(text)):
        assert "\n" not in escaped and "\r" not in escaped
        assert _unescape(escaped) == text
    assert ":" not in escape_property(text) and "," not in escape_property(text)


def test_one_annotation_per_shift_with_a_verdict(story):
    timeline = build([story.logs], repo=story.repo, log_tz="UTC", cache=False)
    lines = github_annotations(timeline).splitlines()
    assert len(lines) == 2
    regression, improvement = (COMMAND.match(line) for line in lines)
    assert regression and improvement
    assert regression.group(1) == "warning" and improvement.group(1) == "notice"
    assert _unescape(regression.group(2)).startswith("Throughput regression (s1, ")
    message = _unescape(regression.group(3))
    assert message.startswith("decode throughput -9.7%: ")
    assert story.shas["c2"][:9] in message and story.shas["c5"][:9] in message
    assert "rerun to confirm" in message
    # the commit that came with the drop and left with the recovery is named
    assert f"Top suspect (prime): {story.shas['c5'][:9]}" in message


def test_no_shift_no_annotation(tmp_path):
    flat = pull_and_reset(tmp_path, levels=(100.0, 100.0, 100.0))
    assert github_annotations(build([flat.logs], repo=flat.repo, log_tz="UTC", cache=False)) == ""


def test_format_github_appends_the_step_summary(story, tmp_path):
    summary = tmp_path / "summary.md"
    summary.write_text("## An earlier step\n", encoding="utf-8")
    args = ["build", str(story.logs), "--repo", str(story.repo), "--log-tz", "UTC", "--format", "github"]
    result = runner.invoke(app, [*args, "--fail-on-regression"], env={"GITHUB_STEP_SUMMARY": str(summary)})
    assert result.exit_code == ExitCode.REGRESSION
    assert [line.split(" ", 1)[0] for line in result.stdout.splitlines()] == ["::warning", "::notice"]
    text = summary.read_text(encoding="utf-8")
    assert text.startswith("## An earlier step\n# Timeline\n")  # appended: other steps' summaries stay
    assert "## Shifts" in text and "**regression**" in text


def test_format_github_without_a_step_summary_says_so(story):
    args = ["build", str(story.logs), "--repo", str(story.repo), "--log-tz", "UTC", "--format", "github"]
    result = runner.invoke(app, args, env={"GITHUB_STEP_SUMMARY": ""})
    assert result.exit_code == ExitCode.OK
    assert "GITHUB_STEP_SUMMARY is not set: no step summary written" in result.stderr
    assert result.stdout.startswith("::warning title=")


def test_step_summary_that_cannot_be_written_is_one_line(story, tmp_path):
    args = ["build", str(story.logs), "--repo", str(story.repo), "--log-tz", "UTC", "--format", "github"]
    result = runner.invoke(app, args, env={"GITHUB_STEP_SUMMARY": str(tmp_path)})  # a folder
    assert result.exit_code == ExitCode.ERROR
    assert result.stderr.startswith(f"timeline: error: {tmp_path}: cannot append the step summary")
    assert len(result.stderr.splitlines()) == 1
