"""``timeline build`` end to end, through typer's CliRunner, on real git repositories."""

from __future__ import annotations

import json
import os
import shutil
import tempfile
from datetime import datetime, timedelta, timezone
from pathlib import Path

import pytest
from typer.testing import CliRunner

from timeline.cli import app
from timeline.exitcodes import ExitCode
from timeline.scenario import PULLED_SUBJECTS, Launch, write_sglang_log

runner = CliRunner()


def invoke(*args: str):
    return runner.invoke(app, list(args), catch_exceptions=False)


def build_json(*args: str) -> dict:
    result = invoke("build", *args, "--json", "-")
    assert result.exit_code == 0, result.output
    return json.loads(result.stdout)


def runs_by_file(document: dict) -> dict[str, list[dict]]:
    found: dict[str, list[dict]] = {}
    for run in document["runs"]:
        found.setdefault(Path(run["source"]).name, []).append(run)
    return found


def test_runs_are_tied_to_the_commit_they_ran_on(demo):
    document = build_json(str(demo.logs), "--repo", str(demo.repo), "--log-tz", "UTC")
    runs = runs_by_file(document)

    (before,) = runs["sglang_eagle3_nccl_2step.log"]
    assert (before["commit"], before["attribution"]) == (demo.shas["base2"], "exact")
    assert before["start"] == "2026-03-02T16:42:00+00:00"

    (during,) = runs["sglang_eagle3_during_pull.log"]
    assert (during["commit"], during["attribution"]) == (demo.shas["base2"], "mixed")
    pull = next(e for e in document["events"] if e["kind"] == "pull")
    assert during["events_during"] == [pull["id"]]

    after_pull, after_reset = runs["sglang_eagle3_evening.log"]
    assert (after_pull["commit"], after_pull["attribution"]) == (demo.shas["pulled3"], "exact")
    assert (after_reset["commit"], after_reset["attribution"]) == (demo.shas["pulled2"], "exact")
    assert after_pull["metrics"]["decode_throughput"]["median"] == pytest.approx(60.0, rel=0.03)
    assert before["metrics"]["decode_throughput"]["median"] == pytest.approx(94.0, rel=0.03)
    assert before["nccl_versions"] == ["2.27.5"]
    assert before["config"]["speculative_algorithm"] == "EAGLE3"
    assert before["config"]["tp_size"] == 8


def test_pull_lists_the_commits_it_brought_in(demo):
    document = build_json(str(demo.logs), "--repo", str(demo.repo), "--log-tz", "UTC")
    pull = next(e for e in document["events"] if e["kind"] == "pull")
    assert pull["time"] == "2026-03-02T18:10:00+00:00"
    assert pull["old"] == demo.shas["base2"] and pull["new"] == demo.shas["pulled3"]
    assert pull["changes_commit"] is True
    commits = document["commits"]
    assert sorted(commits[i]["subject"] for i in pull["commits"]) == sorted(PULLED_SUBJECTS)
    assert {commits[i]["sha"] for i in pull["commits"]} == {demo.shas[f"pulled{i}"] for i in (1, 2, 3)}
    kinds = [e["kind"] for e in document["events"]]
    assert kinds == ["clone", "pull", "reset"]
    reset = document["events"][2]
    assert [commits[i]["subject"] for i in reset["commits_removed"]] == ["Fix PCG MoE Error"]
    # each commit described once, in the order first listed: the reset takes away one the pull brought in
    assert [*document["events"][0]["commits"], *pull["commits"]] == list(range(len(commits)))


def test_json_document_has_the_v3_shape(demo):
    document = build_json(str(demo.logs), "--repo", str(demo.repo), "--log-tz", "UTC", "--samples")
    assert document["schema_version"] == 3
    assert document["log_tz"] == "UTC"
    assert document["repo"]["head"] == demo.shas["pulled2"]
    datetime.fromisoformat(document["generated_at"])
    for run in document["runs"]:
        assert run["kind"] == "sglang-server"
        assert set(run["metrics"]["decode_throughput"]) == {
            "unit",
            "n",
            "median",
            "mean",
            "min",
            "max",
            "stddev",
            "p10",
            "p25",
            "p75",
            "p90",
            "iqr",
        }
        decode = run["samples"]["decode"]
        assert len(decode) == run["metrics"]["decode_throughput"]["n"]
        assert all(datetime.fromisoformat(s["time"]).utcoffset() == timedelta(0) for s in decode)
        assert {"gen_throughput", "accept_len", "running_req", "cuda_graph"} <= set(decode[0])
    without = build_json(str(demo.logs), "--repo", str(demo.repo), "--log-tz", "UTC")
    assert all("samples" not in run for run in without["runs"])


def test_table_shows_events_and_runs_in_time_order(demo):
    result = invoke("build", str(demo.logs), "--repo", str(demo.repo), "--log-tz", "UTC")
    assert result.exit_code == 0
    text = result.stdout
    order = [
        text.index(marker) for marker in ("clone", "16:42:00", "18:00:00", "pull", "19:40:00", "reset", "21:00:00")
    ]
    assert order == sorted(order)
    assert "Fix PCG MoE Error" in text
    assert "mixed" in text and "exact" in text


def test_log_zone_moves_every_run(demo):
    # The same wall-clock readings taken as Berlin time are one hour earlier in UTC.
    document = build_json(str(demo.logs), "--repo", str(demo.repo), "--log-tz", "Europe/Berlin")
    first = runs_by_file(document)["sglang_eagle3_nccl_2step.log"][0]
    assert first["start"] == "2026-03-02T16:42:00+01:00"
    assert first["start_local"] == "2026-03-02 16:42:00"
    evening = runs_by_file(document)["sglang_eagle3_evening.log"]
    assert evening[0]["attribution"] == "exact" and evening[0]["commit"] == demo.shas["pulled3"]


def test_without_log_tz_the_machine_zone_is_assumed_and_said(demo, monkeypatch):
    monkeypatch.setenv("TZ", "UTC")
    document = build_json(str(demo.logs), "--repo", str(demo.repo))
    assert (document["log_tz"], document["log_tz_source"]) == ("UTC", "machine-local")
    assert any(w["message"].startswith("no zone given, and the file's mtime") for w in document["warnings"])


def test_without_repo_runs_have_no_commit(demo):
    document = build_json(str(demo.logs), "--log-tz", "UTC")
    assert document["repo"] is None and document["events"] == []
    assert {r["attribution"] for r in document["runs"]} == {"no-repo"}
    assert {r["commit"] for r in document["runs"]} == {None}


def test_run_older_than_the_reflog_is_not_guessed(demo, tmp_path):
    write_sglang_log(tmp_path / "old.log", [Launch(datetime(2026, 3, 1, 12, 0), 5, 90.0)])
    document = build_json(str(tmp_path / "old.log"), "--repo", str(demo.repo), "--log-tz", "UTC")
    (run,) = document["runs"]
    assert (run["attribution"], run["commit"]) == ("before-reflog", None)


@pytest.mark.parametrize("where", ["root", "subfolder"])
def test_repo_may_be_named_by_a_folder_inside_it(demo, where):
    repo = demo.repo if where == "root" else demo.repo / "changes"
    document = build_json(str(demo.logs), "--repo", str(repo), "--log-tz", "UTC")
    assert document["repo"]["path"] == str(demo.repo)
    assert document["repo"]["head"] == demo.shas["pulled2"]


def test_linked_worktree_uses_its_own_head_log(tmp_path, git_script):
    t0 = datetime(2026, 3, 2, 9, 0, tzinfo=timezone.utc)
    main = tmp_path / "main"
    main.mkdir()
    git_script.git(main, "init", "-q", at=t0)
    first = git_script.commit_file(main, "first", t0)
    second = git_script.commit_file(main, "second", t0 + timedelta(minutes=5))
    worktree = tmp_path / "wt"
    git_script.git(main, "worktree", "add", "-q", "--detach", str(worktree), first, at=t0 + timedelta(minutes=10))
    write_sglang_log(tmp_path / "logs" / "a.log", [Launch(datetime(2026, 3, 2, 9, 30), 5, 90.0)])

    in_worktree = build_json(str(tmp_path / "logs"), "--repo", str(worktree), "--log-tz", "UTC")
    in_main = build_json(str(tmp_path / "logs"), "--repo", str(main), "--log-tz", "UTC")
    assert in_worktree["runs"][0]["commit"] == first
    assert in_main["runs"][0]["commit"] == second


def test_json_file_is_written_and_table_still_shown(demo, tmp_path):
    target = tmp_path / "out" / "timeline.json"
    target.parent.mkdir()
    result = invoke("build", str(demo.logs), "--repo", str(demo.repo), "--log-tz", "UTC", "--json", str(target))
    assert result.exit_code == 0
    assert "Timeline" in result.stdout
    assert json.loads(target.read_text())["schema_version"] == 3
    assert [p.name for p in target.parent.iterdir()] == ["timeline.json"]  # no temporary left behind


def test_missing_path_is_one_line_and_exit_2(tmp_path):
    result = invoke("build", str(tmp_path / "nope"))
    assert result.exit_code == ExitCode.USAGE == 2
    assert result.stderr.strip().count("\n") == 0
    assert "nope" in result.stderr and "Traceback" not in result.output


def test_unknown_zone_is_one_line_and_exit_2(demo):
    result = invoke("build", str(demo.logs), "--log-tz", "Mars/Olympus")
    assert result.exit_code == 2
    assert result.stderr.strip() == (
        "timeline: error: unknown time zone 'Mars/Olympus' "
        "(use an IANA name such as Europe/Berlin, UTC, or an offset such as +02:00)"
    )


def test_not_a_repository_is_one_line_and_exit_2(demo, tmp_path):
    result = invoke("build", str(demo.logs), "--repo", str(tmp_path), "--log-tz", "UTC")
    assert result.exit_code == ExitCode.USAGE
    assert result.stderr == f"timeline: error: --repo {tmp_path}: not a git repository (nor any parent folder)\n"


def test_a_missing_repo_has_the_status_of_a_missing_log_path(demo, tmp_path):
    """The same kind of mistake, the same status: a path on the command line that is not there."""
    missing_repo = invoke("build", str(demo.logs), "--repo", str(tmp_path / "nope"), "--log-tz", "UTC")
    missing_log = invoke("build", str(tmp_path / "nope"), "--log-tz", "UTC")
    assert missing_repo.exit_code == missing_log.exit_code == ExitCode.USAGE
    assert missing_repo.stderr == f"timeline: error: --repo {tmp_path / 'nope'}: no such file or folder\n"
    assert missing_log.stderr == f"timeline: error: {tmp_path / 'nope'}: no such file or folder\n"


def test_bad_files_are_warnings_and_the_others_are_still_analysed(demo, tmp_path):
    logs = tmp_path / "logs"
    logs.mkdir()
    for log in demo.logs.iterdir():
        (logs / log.name).write_bytes(log.read_bytes())
    (logs / "core.out").write_bytes(bytes(range(256)) * 64)
    (logs / "dangling.log").symlink_to(tmp_path / "gone.log")
    document = build_json(str(logs), "--repo", str(demo.repo), "--log-tz", "UTC")
    assert len(document["runs"]) == 4
    sources = {Path(w["source"]).name for w in document["warnings"]}
    assert {"core.out", "dangling.log"} <= sources


def test_json_to_stdout_is_only_json(demo):
    result = invoke("build", str(demo.logs), "--repo", str(demo.repo), "--json", "-")
    json.loads(result.stdout)
    assert "(--log-tz sets it)" in result.stderr  # warnings go to stderr, never into the document stream


def test_no_logs_says_so_and_exits_1_unless_allowed(tmp_path):
    # Before: a folder with no logs exited 0 and said nothing.
    (tmp_path / "notes.md").write_text("not a log\n")
    result = invoke("build", str(tmp_path), "--log-tz", "UTC")
    assert result.exit_code == ExitCode.ERROR
    assert (
        result.stderr.startswith(f"timeline: error: no logs found in {tmp_path} (") and result.stderr.count("\n") == 1
    )
    document = build_json(str(tmp_path), "--log-tz", "UTC", "--allow-empty")
    assert document["runs"] == [] and document["events"] == []


def test_a_fifo_named_like_a_log_is_a_warning_not_a_hang(demo, tmp_path):
    logs = tmp_path / "logs"
    shutil.copytree(demo.logs, logs)
    os.mkfifo(logs / "x.log")
    result = invoke("build", str(logs), "--log-tz", "UTC", "--json", "-")
    assert result.exit_code == 0 and len(json.loads(result.stdout)["runs"]) == 4
    assert f"warning: {logs / 'x.log'}: a FIFO, not a regular file: skipped, never opened" in result.stderr


def test_demo_runs_on_a_fresh_machine():
    result = invoke("demo")
    assert result.exit_code == 0, result.output
    assert "Fix PCG MoE Error" in result.stdout
    assert "mixed" in result.stdout
    # its warnings end as `timeline build`'s do, with the flag that settles them
    assert "imports not judged (--entry names the server's)" in result.stderr


def test_version():
    result = invoke("--version")
    assert result.exit_code == 0 and result.stdout.startswith("timeline ")


def test_nothing_in_the_checkout_changes(demo):
    def snapshot() -> dict[str, tuple[int, int]]:
        return {
            os.fspath(p): (p.stat().st_mtime_ns, p.stat().st_size) for p in sorted(demo.repo.rglob("*")) if p.is_file()
        }

    before = snapshot()
    build_json(str(demo.logs), "--repo", str(demo.repo), "--log-tz", "UTC")
    assert snapshot() == before


def test_repo_coverage_and_context_are_in_the_document(demo):
    document = build_json(str(demo.logs), "--repo", str(demo.repo), "--log-tz", "UTC")
    coverage = document["repo"]["coverage"]
    assert coverage["reason"] == "clone" and coverage["start"] == "2026-03-02T09:30:00+00:00"
    # The pull's fetch half moved origin/main: context, never a move of HEAD.
    assert any(x["ref"] == "refs/remotes/origin/main" and x["id"].startswith("x") for x in document["context"])
    assert all(e["ref"] == "HEAD" for e in document["events"])


@pytest.mark.skipif(os.geteuid() != 0, reason="needs root to hand the checkout to another user")
def test_checkout_owned_by_another_user_works_without_safe_directory(demo, tmp_path):

    foreign = tmp_path / "foreign"
    shutil.copytree(demo.repo, foreign, symlinks=True)
    for path in [foreign, *foreign.rglob("*")]:
        os.lchown(path, 65534, 65534)  # nobody: git itself would refuse it ("dubious ownership")
    document = build_json(str(demo.logs), "--repo", str(foreign), "--log-tz", "UTC")
    pull = next(e for e in document["events"] if e["kind"] == "pull")
    assert sorted(document["commits"][i]["subject"] for i in pull["commits"]) == sorted(PULLED_SUBJECTS)
    assert not any("safe.directory" in w["message"] or "dubious" in w["message"] for w in document["warnings"])


def test_each_warning_is_one_line_naming_its_file(tmp_path):
    (tmp_path / "core.out").write_bytes(bytes(range(256)) * 64)
    long_name = tmp_path / ("a-rather-long-folder-name-" * 4)
    long_name.mkdir()
    (long_name / "dump.log").write_bytes(b"\x00" * 100)
    result = runner.invoke(app, ["build", str(tmp_path), "--log-tz", "UTC"], env={"COLUMNS": "80"})
    lines = [line for line in result.stderr.splitlines() if line]
    assert len(lines) == 2 and all(line.startswith("warning: ") for line in lines)
    assert any(str(long_name / "dump.log") in line for line in lines)


def test_a_dp_attention_run_is_the_sum_of_its_ranks(tmp_path):
    """Each DP rank logs its own decode lines, TP peers repeat them: the run's steady throughput is
    the sum of the DP ranks' steady values, each alongside, in the JSON and in the table."""
    log = Path(__file__).resolve().parents[1] / "fixtures" / "sglang" / "sglang-dp-attention-tp-peers.log"
    document = build_json(str(log), "--log-tz", "UTC")
    launch = document["runs"][1]
    assert launch["steady"]["ranks"] == {"DP0": 401.3, "DP1": 390.2}
    assert launch["steady"]["value"] == pytest.approx(791.5) and launch["steady"]["n"] == 6
    assert launch["start"] < launch["end"] and document["runs"][0]["start"] < document["runs"][0]["end"]
    table = invoke("build", str(log), "--log-tz", "UTC").stdout
    assert "decode 791.5 tok/s (sum of 2 ranks)" in " ".join(table.split())


def test_logs_on_standard_input_plain_or_compressed(tmp_path, monkeypatch):
    import gzip

    monkeypatch.setattr(tempfile, "tempdir", str(tmp_path))  # where the copy of the input goes

    log = Path(__file__).parent.parent / "fixtures" / "sglang" / "sglang-0.4-tp2.log"
    from_file = build_json(str(log), "--log-tz", "UTC", "--no-cache")
    for piped in (log.read_bytes(), gzip.compress(log.read_bytes())):
        result = runner.invoke(app, ["build", "-", "--log-tz", "UTC", "--json", "-"], input=piped)
        assert result.exit_code == 0, result.output
        document = json.loads(result.stdout)
        assert [r["source"] for r in document["runs"]] == ["<stdin>"] * len(from_file["runs"])
        for run, expected in zip(document["runs"], from_file["runs"], strict=True):
            for field in ("start", "end", "metrics", "config", "nccl_versions"):
                assert run[field] == expected[field], field
    # the copy is gone
    assert not list(tmp_path.glob("timeline-stdin-*"))


def test_piped_output_keeps_a_long_path_on_one_line(tmp_path):
    """Piped with no COLUMNS, the table is not cut at 80 columns: a run's file:lines copies whole."""
    folder = tmp_path / "node-with-a-long-name" / "2026-03-02" / "eagle3-qwen3-235b-tp8"
    folder.mkdir(parents=True)
    log = folder / "sglang-server-launch-at-0930.log"
    shutil.copy(Path(__file__).parent.parent / "fixtures" / "sglang" / "sglang-0.4-tp2.log", log)
    where = f"{log}:1-57"
    assert len(where) > 80
    result = runner.invoke(app, ["build", str(log), "--log-tz", "UTC"], env={"COLUMNS": None})
    assert result.exit_code == 0, result.output
    assert any(where in line for line in result.stdout.splitlines())


def test_a_build_holds_its_timeline_to_the_end_of_the_process(tmp_path, monkeypatch):
    """From the console entry point (``timeline.cli.main``), a build's outputs written, the
    process ends without freeing the runs object by object (``collector.exit_unfreed``)."""
    from timeline import collector
    from timeline.model import Timeline

    monkeypatch.setattr(collector, "_held", None)
    collector.holding_to_exit()  # what timeline.cli.main does first
    log = Path(__file__).parent.parent / "fixtures" / "sglang" / "sglang-0.4-tp2.log"
    assert invoke("build", str(log), "--json", str(tmp_path / "t.json")).exit_code == ExitCode.OK
    assert [type(held) for held in collector._held] == [Timeline]
