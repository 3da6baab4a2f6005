"""The progress bar of ``timeline build`` on large inputs (hundreds of MB): stderr only, terminals only."""

from __future__ import annotations

import io
import json
from datetime import datetime
from pathlib import Path

from rich.console import Console
from typer.testing import CliRunner

from timeline.cli import app
from timeline.commands import build as build_command
from timeline.commands.build import ProgressBar
from timeline.scenario import Launch, write_sglang_log


def _log(tmp_path: Path) -> Path:
    path = tmp_path / "server.log"
    write_sglang_log(path, [Launch(datetime(2026, 1, 1, 8, 0), minutes=30, throughput=90.0, decode_every_s=1.0)])
    return path


def _run(path: Path, *, json_path: str | None, terminal: bool) -> tuple[str, str]:
    out, err = io.StringIO(), io.StringIO()
    code = build_command.run(
        [str(path)],
        repo=None,
        log_tz=["UTC"],
        display_tz=None,
        tolerance_s=60.0,
        json_path=json_path,
        samples=False,
        out=Console(file=out, width=100),
        err=Console(file=err, force_terminal=terminal, width=100),
    )
    assert code == 0
    return out.getvalue(), err.getvalue()


def test_a_large_input_shows_a_bar_on_a_terminal(tmp_path, monkeypatch):
    monkeypatch.setattr(build_command, "LARGE_INPUT_BYTES", 1)
    out, err = _run(_log(tmp_path), json_path=None, terminal=True)
    assert "reading logs" in err
    assert "reading logs" not in out and "r1" in out


def test_no_bar_for_small_inputs_or_without_a_terminal(tmp_path, monkeypatch):
    path = _log(tmp_path)
    _, err = _run(path, json_path=None, terminal=True)
    assert "reading logs" not in err  # the default threshold: far more than this log
    monkeypatch.setattr(build_command, "LARGE_INPUT_BYTES", 1)
    _, err = _run(path, json_path=None, terminal=False)
    assert "reading logs" not in err


def test_never_with_json_on_stdout(tmp_path, monkeypatch, capsys):
    monkeypatch.setattr(build_command, "LARGE_INPUT_BYTES", 1)
    _, err = _run(_log(tmp_path), json_path="-", terminal=True)
    assert "reading logs" not in err
    document = json.loads(capsys.readouterr().out)
    assert len(document["runs"]) == 1
    result = CliRunner().invoke(app, ["build", str(tmp_path / "server.log"), "--json", "-"], catch_exceptions=False)
    assert result.exit_code == 0 and json.loads(result.stdout)["runs"]


def test_the_bar_follows_the_bytes_read(tmp_path):
    console = Console(file=io.StringIO(), force_terminal=True, width=100)
    bar = ProgressBar(console, threshold=100)
    bar(0, 50)
    assert bar.bar is None  # under the threshold: nothing shown
    bar(0, 1000)
    bar(600, 1000)
    assert bar.bar is not None and bar.bar.tasks[0].completed == 600
    bar(2000, 1000)
    assert bar.bar.tasks[0].completed == 1000
    bar.close()
    assert bar.bar is None
