"""``timeline ingest`` as a user meets it, through typer's CliRunner: one line of counts, one-line errors."""

from __future__ import annotations

import socket

from typer.testing import CliRunner

from timeline.cli import app
from timeline.exitcodes import ExitCode
from timeline.store import open_store
from timeline.store.schema import HEAD_REVISION

runner = CliRunner()


def ingest(*args: str, env: dict[str, str] | None = None):
    return runner.invoke(app, ["ingest", *args], catch_exceptions=False, env=env)


def test_the_demo_is_stored_once_and_known_the_second_time(demo, tmp_path):
    store = tmp_path / "history.sqlite"
    args = (str(demo.logs), "--repo", str(demo.repo), "--log-tz", "UTC", "--store", str(store), "--machine", "h100-a")
    first = ingest(*args)
    assert first.exit_code == ExitCode.OK, first.output
    assert first.stdout == (f"h100-a: 4 runs added, 0 known; 3 code events added, 0 known; 4 commits added ({store})\n")
    again = ingest(*args)
    assert again.stdout == f"h100-a: 0 runs added, 4 known; 0 code events added, 3 known; 0 commits added ({store})\n"
    with open_store(str(store), {}) as opened:
        (history,) = opened.read()
    assert [r.steady.value for r in history.runs] == [94.065, 93.175, 60.37, 93.7]
    assert all(r.samples is None for r in history.runs)


def test_the_store_comes_from_the_environment_and_the_machine_is_the_host(demo, tmp_path):
    store = tmp_path / "env.sqlite"
    result = ingest(
        str(demo.logs), "--repo", str(demo.repo), "--log-tz", "UTC", "--samples", env={"TIMELINE_STORE": str(store)}
    )
    assert result.exit_code == ExitCode.OK, result.output
    assert result.stdout.startswith(f"{socket.gethostname()}: 4 runs added")
    with open_store(str(store), {}) as opened:
        (history,) = opened.read()
    assert history.machine.name == socket.gethostname() and history.machine.nccl_versions == ("2.27.5",)
    assert all(r.samples for r in history.runs)


def test_a_url_that_names_no_store_is_a_usage_error_in_one_line(demo, tmp_path):
    result = ingest(str(demo.logs), "--repo", str(demo.repo), "--store", "mysql://u:secret@db/x")
    assert result.exit_code == ExitCode.USAGE
    assert result.stderr == (
        "timeline: error: --store mysql://u:***@db/x: not a store URL (a file path, sqlite:///FILE or postgresql://...)\n"
    )
    assert not list(tmp_path.iterdir())


def test_a_server_that_does_not_answer_is_one_line(demo, tmp_path):
    result = ingest(str(demo.logs), "--repo", str(demo.repo), "--store", f"postgresql://ci@/timeline?host={tmp_path}")
    assert result.exit_code == ExitCode.ERROR
    assert (
        result.stderr.startswith("timeline: error: postgresql+psycopg://ci@/timeline")
        and result.stderr.count("\n") == 1
    )
    assert "cannot open the store" in result.stderr


def test_a_newer_store_is_refused_and_left_as_it_was(demo, tmp_path):
    import sqlite3

    store = tmp_path / "h.sqlite"
    open_store(str(store), {}).close()
    with sqlite3.connect(store) as connection:
        connection.execute("UPDATE timeline_version SET version_num = '0100'")
    result = ingest(str(demo.logs), "--repo", str(demo.repo), "--store", str(store))
    assert result.exit_code == ExitCode.ERROR
    assert result.stderr == (
        f"timeline: error: {store}: made by a newer timeline (schema 0100; this one knows up to {HEAD_REVISION}):"
        " upgrade timeline\n"
    )


def test_standard_input_cannot_be_ingested(demo, tmp_path):
    result = ingest("-", "--repo", str(demo.repo), "--store", str(tmp_path / "h.sqlite"))
    assert result.exit_code == ExitCode.USAGE
    assert "standard input" in result.stderr and result.stderr.count("\n") == 1
    assert not (tmp_path / "h.sqlite").exists()


def test_no_log_is_an_error_unless_allowed(demo, tmp_path):
    empty = tmp_path / "empty"
    empty.mkdir()
    store = str(tmp_path / "h.sqlite")
    assert ingest(str(empty), "--repo", str(demo.repo), "--store", store).exit_code == ExitCode.ERROR
    allowed = ingest(str(empty), "--repo", str(demo.repo), "--store", store, "--allow-empty")
    assert allowed.exit_code == ExitCode.OK and " 0 runs added, 0 known; 3 code events added" in allowed.stdout


def test_a_run_still_being_written_is_completed_by_the_next_ingest(demo, tmp_path):
    import shutil

    import timeline

    logs = tmp_path / "logs"
    shutil.copytree(demo.logs, logs)
    last = max(timeline.build(logs, log_tz="UTC", cache=False).runs, key=lambda r: (r.source, r.first_line))
    log = logs / last.source.rsplit("/", 1)[-1]
    whole = log.read_text()
    log.write_text("".join(whole.splitlines(keepends=True)[: last.first_line + 4]))  # its server still running
    args = (
        str(logs),
        "--repo",
        str(demo.repo),
        "--log-tz",
        "UTC",
        "--store",
        str(tmp_path / "h.sqlite"),
        "--machine",
        "n1",
    )
    assert ingest(*args).stdout.startswith("n1: 4 runs added, 0 known;")
    log.write_text(whole)
    assert ingest(*args).stdout.startswith("n1: 0 runs added, 1 completed, 3 known;")
    assert ingest(*args).stdout.startswith("n1: 0 runs added, 4 known;")


def test_the_driver_a_log_shows_is_the_machines_and_its_runs(demo, tmp_path):
    """NCCL's ``NCCL INFO cudaDriverVersion 12080`` line (NCCL_DEBUG=INFO) in a captured log: the
    run keeps ``12.8``, the machine's row says it, and history shows it from the store alone."""
    import json
    import shutil
    from pathlib import Path

    log = tmp_path / "logs" / "sglang-0.5-eagle3.log"
    log.parent.mkdir()
    shutil.copy(Path(__file__).parent.parent / "fixtures" / "sglang" / log.name, log)
    store = str(tmp_path / "h.sqlite")
    machine = ("--machine", "h100-a")
    result = ingest(str(log.parent), "--repo", str(demo.repo), "--log-tz", "UTC", "--store", store, *machine)
    assert result.exit_code == ExitCode.OK, result.output
    shutil.rmtree(log.parent)
    shown = runner.invoke(app, ["history", "--store", store, "--format", "json"], catch_exceptions=False)
    document = json.loads(shown.stdout)
    assert document["options"]["machines"]["h100-a"]["driver"] == "12.8"
    assert [run["cuda_driver_versions"] for run in document["runs"]] == [["12.8"]]
    table = runner.invoke(app, ["history", "--store", store], catch_exceptions=False, env={"COLUMNS": "200"})
    assert "8 GPUs, NCCL 2.27.5, driver CUDA 12.8" in table.stdout
