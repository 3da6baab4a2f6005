"""Every file ``timeline`` writes, on every kind of path: one-line errors with the documented exit
status, nothing half-written, nothing the user had changed (permissions, links, the old file)."""

from __future__ import annotations

import errno
import json
import os
import pickle
import stat
from pathlib import Path

import pytest
from typer.testing import CliRunner

from timeline import export
from timeline.cli import app
from timeline.errors import OutputError
from timeline.exitcodes import ExitCode
from timeline.export import write_text_atomic

runner = CliRunner()
OPTIONS = ("--json", "--csv", "--html")


def build(demo, *args: str):
    return runner.invoke(
        app, ["build", str(demo.logs), "--repo", str(demo.repo), "--log-tz", "UTC", "--no-cache", *args]
    )


def one_line_error(result) -> str:
    lines = result.stderr.splitlines()
    assert len(lines) == 1, result.stderr
    assert lines[0].startswith("timeline: error: "), lines
    assert "Traceback" not in result.output
    return lines[0]


def leftovers(folder: Path) -> list[str]:
    return sorted(p.name for p in folder.iterdir() if p.name.endswith(".tmp"))


@pytest.mark.parametrize("option", OPTIONS)
def test_a_missing_folder_is_a_usage_error_before_any_work(demo, tmp_path, option):
    target = tmp_path / "missing" / "out.file"
    result = build(demo, option, str(target))
    assert result.exit_code == ExitCode.USAGE
    assert one_line_error(result) == f"timeline: error: {option} {target}: no such folder: {target.parent}"


@pytest.mark.parametrize("option", OPTIONS)
def test_a_folder_given_as_the_file_is_refused_and_nothing_is_written_beside_it(demo, tmp_path, option):
    folder = tmp_path / "reports"
    folder.mkdir()
    result = build(demo, option, str(folder))
    assert result.exit_code == ExitCode.USAGE
    assert one_line_error(result) == f"timeline: error: {option} {folder}: is a folder (give a file name)"
    assert leftovers(tmp_path) == [] and list(folder.iterdir()) == []


@pytest.mark.parametrize("option", OPTIONS)
def test_a_file_where_the_folder_should_be_is_a_usage_error(demo, tmp_path, option):
    (tmp_path / "plain").write_text("x")
    result = build(demo, option, str(tmp_path / "plain" / "out.file"))
    assert result.exit_code == ExitCode.USAGE
    assert "is not a folder" in one_line_error(result)


@pytest.mark.skipif(os.geteuid() == 0, reason="root writes in any folder; the write-time test covers it")
@pytest.mark.parametrize("option", OPTIONS)
def test_a_read_only_folder_is_a_usage_error(demo, tmp_path, option):
    folder = tmp_path / "ro"
    folder.mkdir()
    folder.chmod(0o555)
    try:
        result = build(demo, option, str(folder / "out.file"))
    finally:
        folder.chmod(0o755)
    assert result.exit_code == ExitCode.USAGE
    assert "cannot write in" in one_line_error(result)


@pytest.mark.parametrize("option", OPTIONS)
def test_permission_refused_at_write_time_is_the_same_usage_error(demo, tmp_path, monkeypatch, option):
    """The folder passed the check and then refused the file (root on a read-only mount, an
    ACL): the same status and one line, naming the folder."""

    def refused(*args, **kwargs):
        raise PermissionError(errno.EACCES, "Permission denied")

    monkeypatch.setattr(export, "_create", refused)
    result = build(demo, option, str(tmp_path / "out.file"))
    assert result.exit_code == ExitCode.USAGE
    assert one_line_error(result) == (
        f"timeline: error: {option} {tmp_path / 'out.file'}: cannot write in {tmp_path}: Permission denied"
    )


@pytest.mark.parametrize("option", OPTIONS)
def test_a_full_disk_keeps_the_previous_file_and_leaves_no_temporary_file(demo, tmp_path, monkeypatch, option):
    target = tmp_path / "out.file"
    target.write_text("the previous report\n")

    def disk_full(fd):
        raise OSError(errno.ENOSPC, "No space left on device")

    monkeypatch.setattr(export.os, "fsync", disk_full)
    result = build(demo, option, str(target))
    assert result.exit_code == ExitCode.ERROR
    assert one_line_error(result) == (
        f"timeline: error: {option} {target}: not written (No space left on device); the previous file is unchanged"
    )
    assert target.read_text() == "the previous report\n"
    assert leftovers(tmp_path) == []


def test_a_full_disk_on_a_new_file_leaves_nothing(demo, tmp_path, monkeypatch):
    def disk_full(fd):
        raise OSError(errno.ENOSPC, "No space left on device")

    monkeypatch.setattr(export.os, "fsync", disk_full)
    result = build(demo, "--json", str(tmp_path / "new.json"))
    assert result.exit_code == ExitCode.ERROR
    assert one_line_error(result).endswith("nothing was left")
    assert list(tmp_path.iterdir()) == []


def test_a_full_standard_output_is_one_line_and_status_1(demo):
    if not Path("/dev/full").exists():
        pytest.skip("no /dev/full")
    result = build(demo, "--json", "/dev/full")
    assert result.exit_code == ExitCode.ERROR
    assert one_line_error(result) == "timeline: error: --json /dev/full: not written (No space left on device)"


@pytest.mark.parametrize("option", OPTIONS)
def test_rewriting_a_private_output_keeps_it_private(demo, tmp_path, option):
    target = tmp_path / "out.file"
    target.write_text("old")
    target.chmod(0o600)
    result = build(demo, option, str(target))
    assert result.exit_code == 0, result.output
    assert stat.S_IMODE(target.stat().st_mode) == 0o600
    assert target.read_text() != "old"


def test_a_new_output_gets_the_umask_mode(tmp_path):
    previous = os.umask(0o027)
    try:
        write_text_atomic(tmp_path / "new.json", "{}\n")
    finally:
        os.umask(previous)
    assert stat.S_IMODE((tmp_path / "new.json").stat().st_mode) == 0o640


def test_an_output_that_is_a_symlink_stays_a_symlink(tmp_path):
    real = tmp_path / "store" / "report.json"
    real.parent.mkdir()
    real.write_text("old")
    link = tmp_path / "latest.json"
    link.symlink_to(real)
    write_text_atomic(link, "new")
    assert link.is_symlink() and real.read_text() == "new"


def test_an_exception_in_the_pieces_leaves_the_old_file_and_no_temporary(tmp_path):
    target = tmp_path / "out.json"
    target.write_text("old")

    def pieces():
        yield "{"
        raise ValueError("boom")

    with pytest.raises(ValueError):
        write_text_atomic(target, pieces())
    assert target.read_text() == "old" and leftovers(tmp_path) == []


def test_ctrl_c_during_the_write_leaves_the_old_file_and_no_temporary(tmp_path):
    target = tmp_path / "out.json"
    target.write_text("old")

    def pieces():
        yield "{"
        raise KeyboardInterrupt

    with pytest.raises(KeyboardInterrupt):
        write_text_atomic(target, pieces())
    assert target.read_text() == "old" and leftovers(tmp_path) == []


def test_bisect_json_into_a_missing_folder_fails_before_running_anything(tmp_path):
    marker = tmp_path / "ran"
    result = runner.invoke(
        app,
        ["bisect", "--repo", str(tmp_path), "--good", "a", "--bad", "b", "--json", str(tmp_path / "no" / "b.json")]
        + ["--", "touch", str(marker)],
    )
    assert result.exit_code == ExitCode.USAGE
    assert one_line_error(result).startswith(f"timeline: error: --json {tmp_path / 'no' / 'b.json'}: no such folder")
    assert not marker.exists()


def test_output_errors_survive_pickling_with_their_status():
    error = OutputError("x: not written", errno.ENOSPC, option="json_path")
    copy = pickle.loads(pickle.dumps(error))
    assert (copy.exit_code, copy.option, copy.errno, str(copy)) == (
        ExitCode.ERROR,
        "json_path",
        errno.ENOSPC,
        str(error),
    )


def test_a_json_output_is_complete_and_valid(demo, tmp_path):
    target = tmp_path / "out.json"
    result = build(demo, "--json", str(target))
    assert result.exit_code == 0, result.output
    assert json.loads(target.read_text())["schema_version"] == 3


def test_parquet_files_go_through_the_same_writer(demo, tmp_path):
    pytest.importorskip("pyarrow")
    folder = tmp_path / "tables"
    folder.mkdir()
    (folder / "runs.parquet").write_bytes(b"old")
    (folder / "runs.parquet").chmod(0o600)
    result = build(demo, "--parquet", str(folder))
    assert result.exit_code == 0, result.output
    assert stat.S_IMODE((folder / "runs.parquet").stat().st_mode) == 0o600
    assert (folder / "runs.parquet").read_bytes()[:4] == b"PAR1"
    assert leftovers(folder) == []


def test_parquet_into_a_file_is_a_usage_error(demo, tmp_path):
    pytest.importorskip("pyarrow")
    (tmp_path / "plain").write_text("x")
    result = build(demo, "--parquet", str(tmp_path / "plain"))
    assert result.exit_code == ExitCode.USAGE
    assert one_line_error(result).startswith(f"timeline: error: --parquet {tmp_path / 'plain'}: cannot make the folder")
