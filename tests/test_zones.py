"""Time zones: the right instant for every log line, or an honest "ambiguous"."""

from __future__ import annotations

import json
import os
from datetime import datetime, timedelta, timezone
from pathlib import Path
from zoneinfo import ZoneInfo

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from typer.testing import CliRunner

from timeline.cli import app
from timeline.export import dumps
from timeline.loader import from_document
from timeline.model import ZoneReading
from timeline.scenario import Launch, sglang_launch_lines, write_sglang_log

BERLIN = ZoneInfo("Europe/Berlin")
CET = timezone(timedelta(hours=1))
runner = CliRunner()


def build_json(*args: str) -> dict:
    result = runner.invoke(app, ["build", *args, "--json", "-"], catch_exceptions=False)
    assert result.exit_code == 0, result.output
    return json.loads(result.stdout)


def make_checkout(root: Path, git_script, moves: list[datetime]) -> tuple[Path, list[str]]:
    """A clone at moves[0], then one upstream commit pulled at each later move; returns the shas HEAD held."""
    upstream, checkout = root / "upstream", root / "checkout"
    upstream.mkdir()
    git_script.git(upstream, "init", "-q", at=moves[0] - timedelta(hours=1))
    shas = [git_script.commit_file(upstream, "base", moves[0] - timedelta(hours=1))]
    git_script.git(root, "clone", "-q", str(upstream), str(checkout), at=moves[0])
    for number, moment in enumerate(moves[1:], 1):
        shas.append(git_script.commit_file(upstream, f"change {number}", moment - timedelta(minutes=30)))
        git_script.git(checkout, "pull", "-q", "origin", "main", at=moment)
    return checkout, shas


def write_log_written_at(path: Path, launch: Launch, zone) -> Path:
    """A log whose mtime is when its last line was really written (as a live server leaves it)."""
    write_sglang_log(path, [launch])
    last = datetime.strptime(sglang_launch_lines(launch, __import__("random").Random(0))[-1][1:20], "%Y-%m-%d %H:%M:%S")
    written = last.replace(tzinfo=zone).timestamp() + 2
    os.utime(path, (written, written))
    return path


@pytest.fixture
def berlin_story(tmp_path, git_script, monkeypatch):
    """Berlin wall-clock logs and a reflog written with +0100, analysed on a machine in UTC."""
    monkeypatch.setenv("TZ", "UTC")
    clone, pull = datetime(2026, 3, 2, 9, 0, tzinfo=CET), datetime(2026, 3, 2, 18, 10, tzinfo=CET)
    checkout, shas = make_checkout(tmp_path, git_script, [clone, pull])
    logs = tmp_path / "logs"
    write_log_written_at(logs / "before.log", Launch(datetime(2026, 3, 2, 17, 42), 20, 94.0), BERLIN)
    write_log_written_at(logs / "after.log", Launch(datetime(2026, 3, 2, 18, 40), 12, 60.0), BERLIN)
    return logs, checkout, shas


def by_file(document: dict) -> dict[str, dict]:
    return {Path(run["source"]).name: run for run in document["runs"]}


def test_berlin_logs_with_log_tz_are_tied_right(berlin_story):
    logs, checkout, (old, new) = berlin_story
    runs = by_file(build_json(str(logs), "--repo", str(checkout), "--log-tz", "Europe/Berlin"))
    assert (runs["before.log"]["commit"], runs["before.log"]["attribution"]) == (old, "exact")
    assert (runs["after.log"]["commit"], runs["after.log"]["attribution"]) == (new, "exact")
    start = datetime.fromisoformat(runs["before.log"]["start"])
    assert start == datetime(2026, 3, 2, 16, 42, tzinfo=timezone.utc)
    assert runs["before.log"]["start"] == "2026-03-02T17:42:00+01:00"
    assert (runs["before.log"]["tz"], runs["before.log"]["tz_source"]) == ("Europe/Berlin", "flag")


def test_berlin_logs_without_log_tz_get_the_zone_from_mtime_and_say_so(berlin_story):
    logs, checkout, (old, new) = berlin_story
    document = build_json(str(logs), "--repo", str(checkout))
    runs = by_file(document)
    assert (runs["before.log"]["commit"], runs["after.log"]["commit"]) == (old, new)
    assert {r["attribution"] for r in runs.values()} == {"exact"}
    assert {(r["tz"], r["tz_source"]) for r in runs.values()} == {("UTC+01:00", "inferred-mtime")}
    assert datetime.fromisoformat(runs["before.log"]["start"]) == datetime(2026, 3, 2, 16, 42, tzinfo=timezone.utc)
    said = [w["message"] for w in document["warnings"] if Path(w["source"]).name == "before.log"]
    assert "no zone given: inferred UTC+01:00 from the file's mtime" in said  # the library names no flag
    result = runner.invoke(app, ["build", str(logs), "--repo", str(checkout)])
    assert "log zone UTC+01:00 (inferred" in result.stdout
    assert "no zone given: inferred UTC+01:00 from the file's mtime (--log-tz sets it)" in result.stderr


def test_without_mtime_agreement_the_machine_zone_is_assumed_and_said(berlin_story):
    logs, checkout, _ = berlin_story
    os.utime(logs / "before.log", (1e9, 1e9))  # a copied file: mtime tells nothing
    document = build_json(str(logs), "--repo", str(checkout))
    run = by_file(document)["before.log"]
    assert (run["tz"], run["tz_source"]) == ("UTC", "machine-local")
    assert any("mtime does not match" in w["message"] for w in document["warnings"])


def test_an_mtime_unlike_the_reflogs_offsets_is_not_taken_as_the_zone(tmp_path, git_script, monkeypatch):
    monkeypatch.setenv("TZ", "UTC")
    checkout, _ = make_checkout(tmp_path, git_script, [datetime(2026, 3, 2, 9, 0, tzinfo=timezone.utc)])
    write_log_written_at(
        tmp_path / "logs" / "a.log", Launch(datetime(2026, 3, 2, 15, 0), 5, 90.0), ZoneInfo("Asia/Kolkata")
    )
    document = build_json(str(tmp_path / "logs"), "--repo", str(checkout))
    (run,) = document["runs"]
    assert (run["tz"], run["tz_source"]) == ("UTC", "machine-local")
    said = [w for w in document["warnings"] if w["code"] == "zone-unlike-reflog"]
    assert [w["message"] for w in said] == [
        "the file's mtime matches its last line at UTC+05:30, but the reflog around then was written at "
        "+00:00: the mtime is not taken as the zone (a copied file?); times read in this machine's zone, UTC"
    ]
    result = runner.invoke(app, ["build", str(tmp_path / "logs"), "--repo", str(checkout)])
    assert "this machine's zone, UTC (check --log-tz)" in result.stderr


@pytest.mark.parametrize("copied_hours", [2, 4])
def test_a_copy_time_that_lands_on_a_real_offset_is_no_zone(pacific_copy, copied_hours):
    # The Pacific logs again, each copied a few hours after its last line, at a moment that
    # happens to lie a whole real-world offset after it, to the second (the copy's mtime reads
    # as the last line at UTC-09:00 or UTC-11:00). Before, that was taken as the log's zone
    # (inferred-mtime): "before" came out on the new commit, exact, a confident wrong answer.
    logs, checkout, (old, new) = pacific_copy
    for path in logs.iterdir():
        lines = path.read_text().splitlines()
        last = datetime.strptime(lines[-1][1:20], "%Y-%m-%d %H:%M:%S").replace(tzinfo=PACIFIC)
        copied = last.timestamp() + copied_hours * 3600 + 1
        os.utime(path, (copied, copied))
    document = build_json(str(logs), "--repo", str(checkout))
    runs = by_file(document)
    # Near the pull, the reflog says -07:00 and the copy's offset is unlike it: no evidence, the
    # zone is assumed. Further from any HEAD move than any offset reaches, nothing can tell the
    # mtime wrong, nor could the zone change the commit: the mtime's offset stands.
    offset = f"UTC-{7 + copied_hours:02d}:00"
    assert {name: (r["tz"], r["tz_source"]) for name, r in runs.items()} == {
        "monday.log": (offset, "inferred-mtime"),
        "before.log": ("UTC", "machine-local"),
        "after.log": ("UTC", "machine-local"),
        "friday.log": (offset, "inferred-mtime"),
        "saturday.log": (offset, "inferred-mtime"),
    }
    for name in ("before.log", "after.log"):  # near the pull: the zone decides, and it was assumed
        run = runs[name]
        assert (run["commit"], run["attribution"], run["ambiguous_reasons"]) == (old, "ambiguous", ["zone-assumed"])
        assert run["candidate_commits"] == [old, new]
    for name, commit in (("monday.log", old), ("friday.log", new), ("saturday.log", new)):
        assert (runs[name]["commit"], runs[name]["attribution"]) == (commit, "exact")  # far from it: no matter
    said = {Path(w["source"]).name: w["message"] for w in document["warnings"] if w["code"] == "zone-unlike-reflog"}
    assert set(said) == {"before.log", "after.log"}
    assert said["before.log"].startswith(f"the file's mtime matches its last line at {offset}, but the reflog")
    # Where the user reads it: the run rows say the zone was assumed, and what each offset would make of it.
    table = runner.invoke(app, ["build", str(logs), "--repo", str(checkout)], env={"COLUMNS": "200"}).stdout
    assert table.count("(zone assumed)") == 2 and "this machine's zone, assumed" in table


def test_a_log_whose_mtime_is_its_last_line_at_the_reflogs_offset_is_read_in_it(pacific_copy):
    # The same logs as a live server leaves them (mtime = last line, in -07:00, a second later):
    # the mtime agrees with the reflog, so it is the zone, and every run is exact.
    logs, checkout, (old, new) = pacific_copy
    for path in logs.iterdir():
        last = datetime.strptime(path.read_text().splitlines()[-1][1:20], "%Y-%m-%d %H:%M:%S")
        written = last.replace(tzinfo=PACIFIC).timestamp() + 1
        os.utime(path, (written, written))
    runs = by_file(build_json(str(logs), "--repo", str(checkout)))
    assert {name: (r["tz"], r["tz_source"], r["commit"], r["attribution"]) for name, r in runs.items()} == {
        "monday.log": ("UTC-07:00", "inferred-mtime", old, "exact"),
        "before.log": ("UTC-07:00", "inferred-mtime", old, "exact"),
        "after.log": ("UTC-07:00", "inferred-mtime", new, "exact"),
        "friday.log": ("UTC-07:00", "inferred-mtime", new, "exact"),
        "saturday.log": ("UTC-07:00", "inferred-mtime", new, "exact"),
    }


def test_zones_by_pattern(tmp_path, git_script):
    pull = datetime(2026, 3, 2, 18, 10, tzinfo=timezone.utc)
    checkout, (old, new) = make_checkout(tmp_path, git_script, [pull - timedelta(hours=9), pull])
    # Both runs started at 17:50 UTC, before the pull; node1 logs Berlin time, node2 UTC.
    write_sglang_log(tmp_path / "logs" / "node1" / "a.log", [Launch(datetime(2026, 3, 2, 18, 50), 5, 90.0)])
    write_sglang_log(tmp_path / "logs" / "node2" / "a.log", [Launch(datetime(2026, 3, 2, 17, 50), 5, 90.0)])
    document = build_json(
        str(tmp_path / "logs"), "--repo", str(checkout), "--log-tz", "node2/*=UTC", "--log-tz", "Europe/Berlin"
    )
    runs = {Path(r["source"]).parent.name: r for r in document["runs"]}
    assert {name: (r["tz"], r["tz_source"], r["commit"]) for name, r in runs.items()} == {
        "node1": ("Europe/Berlin", "flag", old),
        "node2": ("UTC", "pattern", old),
    }
    assert runs["node1"]["start"] == "2026-03-02T18:50:00+01:00"


def test_run_10s_after_a_pull_is_ambiguous_naming_both_commits(tmp_path, git_script):
    pull = datetime(2026, 3, 2, 18, 10, tzinfo=timezone.utc)
    checkout, (old, new) = make_checkout(tmp_path, git_script, [pull - timedelta(hours=9), pull])
    write_sglang_log(tmp_path / "a.log", [Launch(datetime(2026, 3, 2, 18, 10, 10), 5, 90.0)])
    document = build_json(str(tmp_path / "a.log"), "--repo", str(checkout), "--log-tz", "UTC")
    (run,) = document["runs"]
    assert run["attribution"] == "ambiguous"
    assert set(run["candidate_commits"]) == {old, new}
    assert any("ambiguous" in w["message"] and w["line"] == 1 for w in document["warnings"])
    strict = build_json(str(tmp_path / "a.log"), "--repo", str(checkout), "--log-tz", "UTC", "--tolerance", "5")
    assert (strict["runs"][0]["attribution"], strict["runs"][0]["commit"]) == ("exact", new)


@pytest.mark.parametrize(
    "day, problem",
    [
        # 2026-10-25 02:30 happens twice in Berlin: 00:30 and 01:30 UTC.
        (25, "happens twice (autumn overlap)"),
        # 2026-03-29 02:30 never happens in Berlin; its readings are 00:30 and 01:30 UTC.
        (29, "never happens (spring-forward gap)"),
    ],
)
def test_dst_start_on_two_commits_is_ambiguous(tmp_path, git_script, day, problem):
    month = 10 if day == 25 else 3
    pull = datetime(2026, month, day, 1, 0, tzinfo=timezone.utc)  # between the two readings
    checkout, (old, new) = make_checkout(tmp_path, git_script, [pull - timedelta(hours=9), pull])
    write_sglang_log(tmp_path / "a.log", [Launch(datetime(2026, month, day, 2, 30), 10, 90.0)])
    document = build_json(str(tmp_path / "a.log"), "--repo", str(checkout), "--log-tz", "Europe/Berlin")
    (run,) = document["runs"]
    assert run["attribution"] == "ambiguous" and set(run["candidate_commits"]) == {old, new}
    assert any(problem in w["message"] for w in document["warnings"])


def test_run_across_the_autumn_change_keeps_its_real_duration(tmp_path):
    # 01:50 CEST to 02:20 CET wall-clock: 30 minutes on the wall, 90 minutes in reality.
    lines = [
        "[2026-10-25 01:50:00] server_args=ServerArgs(model_path='m', tp_size=1)",
        "[2026-10-25 02:40:00] Decode batch, #running-req: 1, #token: 10, token usage: 0.00, cuda graph: True, gen throughput (token/s): 90.00, #queue-req: 0",
        "[2026-10-25 02:10:00] Decode batch, #running-req: 1, #token: 10, token usage: 0.00, cuda graph: True, gen throughput (token/s): 91.00, #queue-req: 0",
        "[2026-10-25 02:20:00] Decode batch, #running-req: 1, #token: 10, token usage: 0.00, cuda graph: True, gen throughput (token/s): 92.00, #queue-req: 0",
    ]
    (tmp_path / "a.log").write_text("\n".join(lines) + "\n")
    document = build_json(str(tmp_path / "a.log"), "--log-tz", "Europe/Berlin", "--samples")
    (run,) = document["runs"]
    start, end = (datetime.fromisoformat(run[k]) for k in ("start", "end"))
    assert end - start == timedelta(minutes=90)
    times = [datetime.fromisoformat(s["time"]) for s in run["samples"]["decode"]]
    assert [t.astimezone(timezone.utc).strftime("%H:%M") for t in times] == ["00:40", "01:10", "01:20"]


def test_display_tz_changes_the_table_only(berlin_story):
    logs, checkout, _ = berlin_story
    shown = runner.invoke(
        app, ["build", str(logs), "--repo", str(checkout), "--log-tz", "Europe/Berlin", "--display-tz", "UTC"]
    ).stdout
    assert "times in UTC" in shown and "16:42:00" in shown
    default = runner.invoke(app, ["build", str(logs), "--repo", str(checkout), "--log-tz", "Europe/Berlin"]).stdout
    assert "times in Europe/Berlin" in default and "17:42:00" in default


def test_unknown_display_zone_is_exit_2(berlin_story):
    logs, _, _ = berlin_story
    result = runner.invoke(app, ["build", str(logs), "--display-tz", "Nowhere/Land"])
    assert result.exit_code == 2 and "Nowhere/Land" in result.stderr


def test_unknown_zone_in_a_pattern_is_exit_2_naming_it(berlin_story):
    logs, _, _ = berlin_story
    result = runner.invoke(app, ["build", str(logs), "--log-tz", "node2/*=Mars/Olympus"])
    assert result.exit_code == 2
    assert result.stderr.count("\n") == 1 and "'Mars/Olympus'" in result.stderr


@settings(max_examples=80, deadline=None)
@given(
    name=st.sampled_from(["Europe/Berlin", "Australia/Lord_Howe", "UTC"]),
    start=st.datetimes(min_value=datetime(2026, 3, 25), max_value=datetime(2026, 4, 10)),
    steps=st.lists(st.integers(-600, 7200) | st.none(), max_size=60),
)
def test_sample_times_placed_at_once_are_those_placed_one_by_one(name, start, steps) -> None:
    """Samples whose times see no zone transition get their zone all at once (for speed); the same
    instants, zones and folds as one by one, the repeated hour's second pass included."""
    from timeline import builder
    from timeline.clock import Zone
    from timeline.columns import SampleRows

    walls, at = [], start
    for step in steps:
        if step is not None:
            at += timedelta(seconds=step)
        walls.append(None if step is None else at)
    zone = Zone(name, ZoneInfo(name), "flag")

    def placed(steady_offset) -> list:
        rows = SampleRows({"time": wall, "line": i} for i, wall in enumerate(walls))
        with pytest.MonkeyPatch.context() as patch:
            patch.setattr(builder, "steady_offset", steady_offset)
            builder._instant_samples({"decode": rows}, zone)
        return [(t, t.utcoffset(), t.tzinfo, t.fold) if t is not None else None for t in rows.column("time")]

    assert placed(builder.steady_offset) == placed(lambda *_: False)


@pytest.mark.parametrize(
    ("options", "line"),
    [
        (["--log-tz", "=UTC"], "timeline: error: --log-tz '=UTC': empty pattern before '='\n"),
        (
            ["--log-tz", "UTC", "--log-tz", "Europe/Berlin"],
            "timeline: error: --log-tz given twice without a pattern: 'UTC' and 'Europe/Berlin'\n",
        ),
    ],
)
def test_bad_log_tz_options_print_the_flag_in_one_line(berlin_story, options, line):
    logs, _, _ = berlin_story
    result = runner.invoke(app, ["build", str(logs), *options])
    assert result.exit_code == 2
    assert result.stderr == line


PACIFIC = ZoneInfo("America/Los_Angeles")


@pytest.fixture
def pacific_copy(tmp_path, git_script, monkeypatch):
    """Logs written in US Pacific time (PDT, -07:00) next to a checkout whose reflog says -0700,
    then copied to a machine in UTC: their mtimes are the copy's, days later, and tell nothing."""
    monkeypatch.setenv("TZ", "UTC")
    clone, pull = datetime(2026, 7, 10, 9, 0, tzinfo=PACIFIC), datetime(2026, 7, 14, 18, 10, tzinfo=PACIFIC)
    checkout, shas = make_checkout(tmp_path, git_script, [clone, pull])
    logs = tmp_path / "logs"
    launches = {
        "monday.log": Launch(datetime(2026, 7, 12, 10, 0), 10, 94.0),  # 2 days from any move: old whatever the zone
        "before.log": Launch(datetime(2026, 7, 14, 17, 42), 10, 94.0),  # 28 minutes before the pull: old
        "after.log": Launch(datetime(2026, 7, 14, 18, 40), 10, 60.0),  # 30 minutes after it: new
        "friday.log": Launch(datetime(2026, 7, 17, 10, 0), 10, 60.0),  # 2.5 days after: new whatever the zone
        "saturday.log": Launch(datetime(2026, 7, 18, 10, 0), 10, 60.0),
    }
    copied = datetime(2026, 7, 20, 8, 0, tzinfo=timezone.utc).timestamp()
    for name, launch in launches.items():
        write_sglang_log(logs / name, [launch])
        os.utime(logs / name, (copied, copied))
    return logs, checkout, shas


def test_copied_pacific_logs_depend_on_the_zone_and_say_so(pacific_copy):
    logs, checkout, (old, new) = pacific_copy
    document = build_json(str(logs), "--repo", str(checkout))
    runs = by_file(document)
    assert {r["tz_source"] for r in runs.values()} == {"machine-local"}
    # Far from the pull, no real-world offset changes the commit: exact, as before.
    for name, commit in (("monday.log", old), ("friday.log", new), ("saturday.log", new)):
        assert (runs[name]["commit"], runs[name]["attribution"], runs[name]["ambiguous_reasons"]) == (
            commit,
            "exact",
            [],
        )
        assert runs[name]["zone_readings"] == []
    # Near it, read in UTC both land on the old commit; in -07:00 "after" ran on the new one.
    pull_utc = datetime(2026, 7, 15, 1, 10)
    for name in ("before.log", "after.log"):
        run = runs[name]
        assert (run["commit"], run["attribution"], run["ambiguous_reasons"]) == (old, "ambiguous", ["zone-assumed"])
        assert run["candidate_commits"] == [old, new]  # in time order
        wall = datetime.strptime(run["start_local"], "%Y-%m-%d %H:%M:%S")
        # the first offset putting the start at or after the pull, by the whole real-world list
        spans = [(r["commit"], r["min_offset"], r["max_offset"]) for r in run["zone_readings"]]
        assert [commit for commit, _, _ in spans] == [new, old]
        assert spans[0][1] == "-12:00" and spans[1][2] == "+14:00"
        last_new = datetime.strptime(spans[0][2], "%z").utcoffset()  # type: ignore[union-attr]
        first_old = datetime.strptime(spans[1][1], "%z").utcoffset()  # type: ignore[union-attr]
        assert wall - last_new >= pull_utc > wall - first_old
    assert (
        runs["after.log"]["zone_readings"][0]["max_offset"],
        runs["after.log"]["zone_readings"][1]["min_offset"],
    ) == (
        "-07:00",
        "-06:00",
    )
    said = [w["message"] for w in document["warnings"] if Path(w["source"]).name == "after.log"]
    assert any("ambiguous" in m and "zone was assumed" in m for m in said)
    # The shift is judged on the runs whose commit is firm; the others are named as left out.
    (shift,) = document["shifts"]
    assert (shift["from"]["commit"], shift["to"]["commit"]) == (old, new)
    assert sorted(shift["from"]["runs"] + shift["to"]["runs"]) == sorted(
        runs[n]["id"] for n in ("monday.log", "friday.log", "saturday.log")
    )
    assert any("depends on its log's zone" in note for note in shift["notes"])
    loaded = from_document(document)  # timeline.load reads it back as it was
    assert {r.id: r.zone_readings for r in loaded.runs}[runs["after.log"]["id"]][0] == ZoneReading(
        new, timedelta(hours=-12), timedelta(hours=-7)
    )
    assert json.loads(dumps(loaded)) == document


def test_copied_pacific_logs_say_zone_assumed_in_the_run_rows(pacific_copy, tmp_path):
    logs, checkout, (old, new) = pacific_copy
    table = runner.invoke(app, ["build", str(logs), "--repo", str(checkout)], env={"COLUMNS": "200"}).stdout
    assert table.count("(zone assumed)") == 2
    assert f"{new[:9]} at UTC-12:00 to -07:00, {old[:9]} at UTC-06:00 to +14:00" in table
    markdown = runner.invoke(app, ["build", str(logs), "--repo", str(checkout), "--format", "markdown"]).stdout
    rows = [line for line in markdown.splitlines() if "(zone assumed)" in line]
    assert len(rows) == 2 and all(line.startswith("| r") for line in rows)
    assert all("--log-tz settles it" in line for line in rows)
    html = tmp_path / "report.html"
    runner.invoke(app, ["build", str(logs), "--repo", str(checkout), "--html", str(html)])
    assert html.read_text(encoding="utf-8").count("ambiguous (zone assumed)") >= 2


def test_the_right_zone_makes_the_pacific_runs_exact(pacific_copy):
    logs, checkout, (old, new) = pacific_copy
    runs = by_file(build_json(str(logs), "--repo", str(checkout), "--log-tz", "America/Los_Angeles"))
    assert {name: (r["commit"], r["attribution"]) for name, r in runs.items()} == {
        "monday.log": (old, "exact"),
        "before.log": (old, "exact"),
        "after.log": (new, "exact"),
        "friday.log": (new, "exact"),
        "saturday.log": (new, "exact"),
    }
    assert all(r["zone_readings"] == [] and r["ambiguous_reasons"] == [] for r in runs.values())


def test_a_july_berlin_log_on_a_machine_with_a_copied_localtime_is_read_at_plus_two(tmp_path):
    """The usual Docker image: /etc/localtime is a copy of Europe/Berlin, not a link, and no TZ."""
    from test_clock import zone_file

    from timeline import build
    from timeline.environment import Environment

    localtime = tmp_path / "etc" / "localtime"
    localtime.parent.mkdir()
    localtime.write_bytes(zone_file("Europe/Berlin").read_bytes())
    log = write_sglang_log(tmp_path / "logs" / "a.log", [Launch(datetime(2026, 7, 14, 17, 42), 5, 90.0)])
    os.utime(log, (1e9, 1e9))  # copied: the mtime tells nothing
    timeline = build([log], env=Environment(environ={}, localtime=localtime), cache=False)
    (run,) = timeline.runs
    assert (run.tz, run.tz_source) == (str(localtime), "machine-local")
    assert run.start is not None and run.start.utcoffset() == timedelta(hours=2)
    assert run.start.astimezone(timezone.utc) == datetime(2026, 7, 14, 15, 42, tzinfo=timezone.utc)


def test_copied_pacific_logs_say_why_and_what_else_in_the_csv_frames_and_parquet(pacific_copy, tmp_path):
    # Before, the CSV and the frames said "ambiguous" and no more: not why, not which commit
    # under which offsets (the JSON, the table and the markdown did).
    import pandas as pd
    import pyarrow.parquet as pq

    import timeline

    logs, checkout, (old, new) = pacific_copy
    readings = {  # west to east: the pull at 18:10 -07:00
        "before.log": f"UTC-12:00..-08:00 {new[:9]}; UTC-07:00..+14:00 {old[:9]}",
        "after.log": f"UTC-12:00..-07:00 {new[:9]}; UTC-06:00..+14:00 {old[:9]}",
    }
    csv_file, parquet = tmp_path / "runs.csv", tmp_path / "parquet"
    result = runner.invoke(
        app, ["build", str(logs), "--repo", str(checkout), "--csv", str(csv_file), "--parquet", str(parquet)]
    )
    assert result.exit_code == 0, result.output
    rows = {Path(row["source"]).name: row for row in pd.read_csv(csv_file, keep_default_na=False).to_dict("records")}
    for name in ("before.log", "after.log"):
        assert (rows[name]["attribution"], rows[name]["ambiguous_reasons"]) == ("ambiguous", "zone-assumed")
        assert (rows[name]["candidate_commits"], rows[name]["zone_readings"]) == (f"{old} {new}", readings[name])
    assert (rows["friday.log"]["ambiguous_reasons"], rows["friday.log"]["zone_readings"]) == ("", "")
    frame = timeline.runs_frame(timeline.build([logs], repo=checkout)).assign(
        name=lambda f: [Path(s).name for s in f["source"]]
    )
    after = frame.set_index("name").loc["after.log"]
    assert (after["ambiguous_reasons"], after["candidate_commits"], after["zone_readings"]) == (
        ["zone-assumed"],
        [old, new],
        readings["after.log"],
    )
    assert frame["zone_readings"].dtype == "string"
    table = pq.read_table(parquet / "runs.parquet").to_pydict()
    by_name = {Path(s).name: i for i, s in enumerate(table["source"])}
    i = by_name["after.log"]
    assert (table["ambiguous_reasons"][i], table["candidate_commits"][i], table["zone_readings"][i]) == (
        ["zone-assumed"],
        [old, new],
        readings["after.log"],
    )
