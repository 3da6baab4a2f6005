"""The pandas API: runs_frame(Timeline), samples_frame(), events_frame(), shifts_frame()."""

from __future__ import annotations

import dataclasses
import subprocess
import sys
from datetime import datetime, timedelta, timezone
from pathlib import Path

import pandas as pd
import pytest

from timeline.export import timeline_to_dict
from timeline.frames import (
    RUN_CORE,
    RUN_KEYS,
    SHIFT_COLUMNS,
    SamplesNotKeptError,
    events_frame,
    runs_frame,
    samples_frame,
    shifts_frame,
)
from timeline.scenario import Launch, write_sglang_log

T = lambda hh, mm: datetime(2026, 3, 2, hh, mm, tzinfo=timezone.utc)  # noqa: E731
UTC = pd.DatetimeTZDtype("ns", "UTC")


@pytest.fixture
def story(tmp_path, reflog_repo):
    """Clone (c1, c2), a run, a pull of c3..c5, a run, a reset to c4, a run: all in UTC."""
    repo = reflog_repo([("clone", T(9, 0), 2), ("pull", T(12, 0), 3), ("reset", T(15, 0), "HEAD~1")])
    logs = tmp_path / "logs"
    write_sglang_log(logs / "a.log", [Launch(datetime(2026, 3, 2, 10, 0), 10, 100.0)], seed=1)
    write_sglang_log(
        logs / "b.log",
        [Launch(datetime(2026, 3, 2, 13, 0), 10, 90.0), Launch(datetime(2026, 3, 2, 16, 0), 10, 99.5)],
        seed=2,
    )
    return repo, logs


def test_runs_frame_has_one_typed_row_per_run(story, timeline_build):
    repo, logs = story
    frame = runs_frame(timeline_build(logs, repo=repo.path))
    assert list(frame["run_id"]) == ["r1", "r2", "r3"]
    assert list(frame["commit"]) == [repo.shas["c2"], repo.shas["c5"], repo.shas["c4"]]
    assert list(frame["commit_short"]) == [repo.shas[c][:9] for c in ("c2", "c5", "c4")]
    assert list(frame["commit_subject"]) == ["c2", "c5", "c4"]  # the reflog_repo fixture's subjects
    assert frame["start"].dtype == UTC and frame["end"].dtype == UTC
    assert frame["start"].iloc[0] == pd.Timestamp("2026-03-02T10:00:00Z")
    for column in ("commit", "attribution", "group", "run_kind"):
        assert isinstance(frame[column].dtype, pd.CategoricalDtype), column
    assert frame["decode_throughput_median"].dtype == "float64"
    assert frame["decode_throughput_n"].dtype == "Int64" and frame["tp_size"].dtype == "Int64"
    assert frame["decode_throughput_median"].tolist() == pytest.approx([100.0, 90.0, 99.5], rel=0.03)
    assert set(frame["attribution"]) == {"exact"}
    assert frame["group"].iloc[0] == "Qwen3-235B-A22B-FP8 tp8 EAGLE3/2/1/3"
    assert frame["events_during"].tolist() == [[], [], []]
    assert frame["nccl_versions"].tolist() == [["2.27.5"]] * 3
    # The analyses a notebook does in one line work on it.
    by_commit = frame.groupby("commit", observed=True)["decode_throughput_median"].mean()
    assert by_commit[repo.shas["c5"]] == pytest.approx(90.0, rel=0.03)


def test_samples_frame_has_one_row_per_stats_line(story, timeline_build):
    repo, logs = story
    built = timeline_build(logs, repo=repo.path, keep_samples=True)
    frame = samples_frame(built)
    runs = runs_frame(built)
    decode = frame[frame["kind"] == "decode"]
    assert len(decode) == int(runs["decode_throughput_n"].sum())
    assert len(frame) == len(decode) + int(runs["prefill_input_throughput_n"].fillna(0).sum())
    assert list(frame.columns[:9]) == [
        "run_id",
        "commit",
        "commit_short",
        "commit_subject",
        "group",
        "kind",
        "time",
        "line",
        "rank",
    ]
    assert frame["time"].dtype == UTC and frame["time"].is_monotonic_increasing
    assert frame["gen_throughput"].dtype == "float64" and frame["accept_len"].dtype == "float64"
    assert frame["running_req"].dtype == "Int64" and frame["line"].dtype == "Int64"
    assert frame["cuda_graph"].dtype == "boolean"
    for column in ("run_id", "commit", "kind", "rank"):
        assert isinstance(frame[column].dtype, pd.CategoricalDtype), column
    # Every sample carries its run's commit.
    r2 = frame[frame["run_id"] == "r2"]
    assert set(r2["commit"]) == {repo.shas["c5"]} and set(r2["commit_subject"]) == {"c5"}
    assert r2["gen_throughput"].median() == pytest.approx(
        runs.set_index("run_id").loc["r2", "decode_throughput_median"]
    )
    # Row for row the runs' samples (read column by column), in time order; a field a line lacks is missing.
    rows = [
        {"run": run.id, "kind": kind, **row}
        for run in built.runs
        for kind in sorted(run.samples)
        for row in run.samples[kind]
    ]
    rows.sort(key=lambda row: (row["time"], row["run"], row["line"]))
    assert frame["line"].tolist() == [row["line"] for row in rows] and frame["run_id"].tolist() == [
        row["run"] for row in rows
    ]
    for column in ("gen_throughput", "accept_len", "new_token"):
        got = frame[column].astype("float64").tolist()
        assert got == pytest.approx([row.get(column, float("nan")) for row in rows], nan_ok=True)


def test_samples_frame_without_kept_samples_says_how_to_get_them(story, timeline_build):
    repo, logs = story
    with pytest.raises(SamplesNotKeptError, match=r"keep_samples=True"):
        samples_frame(timeline_build(logs, repo=repo.path))


def test_events_frame(story, timeline_build):
    repo, logs = story
    frame = events_frame(timeline_build(logs, repo=repo.path))
    assert list(frame["kind"]) == ["clone", "pull", "reset"]
    assert isinstance(frame["kind"].dtype, pd.CategoricalDtype)
    assert frame["time"].dtype == UTC and frame["time"].iloc[1] == pd.Timestamp("2026-03-02T12:00:00Z")
    assert frame["changes_commit"].dtype == "boolean" and frame["n_commits"].dtype == "Int64"
    pull, reset = frame.iloc[1], frame.iloc[2]
    assert (pull["old"], pull["new"]) == (repo.shas["c2"], repo.shas["c5"])
    assert set(pull["commits"]) == {repo.shas[c] for c in ("c3", "c4", "c5")} and pull["n_commits"] == 3
    assert reset["commits_removed"] == [repo.shas["c5"]] and reset["n_commits_removed"] == 1


def test_shifts_frame_is_empty_but_typed_without_shifts(tmp_path, timeline_build):
    write_sglang_log(tmp_path / "one.log", [Launch(datetime(2026, 3, 2, 10, 0), 10, 100.0)])
    frame = shifts_frame(timeline_build(tmp_path))
    assert frame.empty
    assert list(frame.columns) == list(SHIFT_COLUMNS)
    assert frame["change_pct"].dtype == "float64"


def test_shifts_frame_matches_the_json_shifts(story, timeline_build):
    repo, logs = story
    built = timeline_build(logs, repo=repo.path)
    if not hasattr(built, "shifts"):
        pytest.skip("this timeline has no shift detection")
    shifts = timeline_to_dict(built)["shifts"]
    frame = shifts_frame(built)
    assert len(frame) == len(shifts) > 0
    assert list(frame["shift_id"]) == [s["id"] for s in shifts]
    assert list(frame["verdict"].astype(object)) == [s["verdict"] for s in shifts]
    assert frame["change_pct"].tolist() == pytest.approx([s["change_pct"] for s in shifts])
    assert list(frame["from_commit"].astype(object)) == [s["from"]["commit"] for s in shifts]
    assert frame["from_runs"].tolist() == [s["from"]["runs"] for s in shifts]
    assert frame["suspects"].tolist() == [[x["sha"] for x in s["suspects"]] for s in shifts]
    regression = frame[frame["verdict"] == "regression"].iloc[0]
    assert (regression["from_commit"], regression["to_commit"]) == (repo.shas["c2"], repo.shas["c5"])
    assert regression["change_pct"] < -5


def test_shifts_frame_reads_the_model(story, timeline_build, monkeypatch):
    from timeline.model import Confounder, Shift, ShiftSide, Suspect

    repo, logs = story
    built = timeline_build(logs, repo=repo.path)
    shift = Shift(
        id="s1",
        group="Qwen3-235B-A22B-FP8 tp8 EAGLE3/2/1/3",
        metric="decode_throughput",
        unit="tok/s",
        from_side=ShiftSide(repo.shas["c2"], ["r1"], 100.0, [repo.shas["c2"]]),
        to_side=ShiftSide(repo.shas["c5"], ["r2"], 90.0),
        change_pct=-10.0,
        p_value=0.001,
        verdict="regression",
        method="line-spread",
        single_run=True,
        events=["e2"],
        suspects=[Suspect(repo.shas["c5"], "c5", "arrived", "e2", paths=["changes/c5.txt"])],
        confounders=[Confounder("nccl_version", "2.27.5", float("inf"))],
    )
    monkeypatch.setattr(built, "shifts", [shift])
    frame = shifts_frame(built)
    row = frame.iloc[0]
    assert (row["shift_id"], row["verdict"], row["from_commit"], row["to_commit"]) == (
        "s1",
        "regression",
        repo.shas["c2"],
        repo.shas["c5"],
    )
    assert row["from_runs"] == ["r1"] and row["suspects"] == [repo.shas["c5"]] and row["n_suspects"] == 1
    assert row["from_commits"] == [repo.shas["c2"]] and row["to_commits"] == []
    assert row["confounders"] == [{"field": "nccl_version", "from": "2.27.5", "to": "inf"}]
    assert frame["change_pct"].dtype == "float64" and frame["single_run"].dtype == "boolean"
    assert isinstance(frame["verdict"].dtype, pd.CategoricalDtype)


def test_frames_of_an_empty_timeline(tmp_path, timeline_build):
    built = timeline_build(tmp_path, keep_samples=True, allow_empty=True)
    runs, samples, events = runs_frame(built), samples_frame(built), events_frame(built)
    assert runs.empty and samples.empty and events.empty
    assert runs["start"].dtype == UTC and events["time"].dtype == UTC
    assert "decode_throughput_median" in runs.columns


def test_import_timeline_does_not_import_pandas():
    code = "import sys, timeline, timeline.cli; print('pandas' in sys.modules)"
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert done.stdout.strip() == "False"


def test_commits_are_ordered_by_history_in_every_frame(story, timeline_build):
    repo, logs = story
    built = timeline_build(logs, repo=repo.path, keep_samples=True)
    history = [repo.shas[c] for c in ("c2", "c5", "c4")]  # clone, pull, then reset back to c4
    runs, samples, events, shifts = (f(built) for f in (runs_frame, samples_frame, events_frame, shifts_frame))
    for frame, column in ((runs, "commit"), (samples, "commit"), (events, "commit"), (shifts, "from_commit")):
        dtype = frame[column].dtype
        assert dtype.ordered and list(dtype.categories) == history, column
    assert list(runs["commit_short"].dtype.categories) == [sha[:9] for sha in history]
    # groupby and sort follow the history, not the hashes
    by_commit = runs.groupby("commit", observed=True)["steady_value"].mean()
    assert list(by_commit.index) == history
    assert list(runs.sort_values("commit")["run_id"]) == ["r1", "r2", "r3"]
    assert list(events["commit_subject"]) == ["c2", "c5", "c4"]


def test_runs_frame_has_the_steady_value_the_shifts_compare(story, timeline_build):
    repo, logs = story
    built = timeline_build(logs, repo=repo.path)
    runs = runs_frame(built)
    assert runs["steady_value"].tolist() == [run.steady.value for run in built.runs]
    assert set(runs["steady_unit"]) == {"tok/s"} and set(runs["steady_metric"]) == {"decode_throughput"}
    assert runs["steady_n"].dtype == "Int64" and runs["steady_value"].dtype == "float64"
    shift = shifts_frame(built).iloc[0]
    levels = runs.set_index("run_id")["steady_value"]
    assert shift["from_value"] == pytest.approx(levels[shift["from_runs"]].mean(), rel=1e-3)


def test_shifts_frame_has_the_window_the_level_moved_in(story, timeline_build):
    repo, logs = story
    shifts = shifts_frame(timeline_build(logs, repo=repo.path))
    first = shifts.iloc[0]
    assert shifts["start"].dtype == UTC and shifts["end"].dtype == UTC
    runs = runs_frame(timeline_build(logs, repo=repo.path)).set_index("run_id")
    assert first["start"] == runs.loc[first["from_runs"], "end"].max()  # the last run before: its end
    assert first["end"] == runs.loc[first["to_runs"], "start"].min()  # the first run after: its start
    assert first["start"] < pd.Timestamp("2026-03-02T12:00:00Z") < first["end"]  # the pull is inside
    assert (first["from_commit_subject"], first["to_commit_subject"]) == ("c2", "c5")
    assert first["to_commit_short"] == repo.shas["c5"][:9]


def test_samples_join_runs_on_their_shared_keys(story, timeline_build):
    repo, logs = story
    built = timeline_build(logs, repo=repo.path, keep_samples=True)
    samples, runs = samples_frame(built), runs_frame(built)
    assert set(samples.columns) & set(runs.columns) == set(RUN_KEYS)
    joined = samples.merge(runs)
    assert len(joined) == len(samples)
    assert not [c for c in joined.columns if c.endswith(("_x", "_y"))]
    r2 = joined[joined["run_id"] == "r2"]
    assert set(r2["steady_value"]) == {runs.set_index("run_id").loc["r2", "steady_value"]}


def test_the_core_columns_are_stable_and_other_metrics_are_named_by_pattern(story, timeline_build, captured_log):
    repo, logs = story
    assert tuple(runs_frame(timeline_build(logs, repo=repo.path)).columns) == RUN_CORE
    bench = timeline_build(captured_log("bench-serving-sglang-0.5-appended"))
    frame = runs_frame(bench)
    assert tuple(frame.columns[: len(RUN_CORE)]) == RUN_CORE
    extra = list(frame.columns[len(RUN_CORE) :])
    assert extra and all(c.startswith("metric.") and c.count(".") == 2 for c in extra)
    names = sorted({name for run in bench.runs for name in run.metrics} - {"decode_throughput", "accept_len"})
    assert f"metric.{names[0]}.median" in extra and frame[f"metric.{names[0]}.n"].dtype == "Int64"


@pytest.mark.parametrize(
    "as_given",
    [lambda a, b: str(a), lambda a, b: a, lambda a, b: [a], lambda a, b: [str(a), b]],
    ids=["str", "path", "list", "mixed-list"],
)
def test_build_takes_a_str_a_path_or_a_list(tmp_path, as_given):
    import timeline

    first = write_sglang_log(tmp_path / "a" / "a.log", [Launch(datetime(2026, 3, 2, 10, 0), 10, 100.0)])
    second = write_sglang_log(tmp_path / "b" / "b.log", [Launch(datetime(2026, 3, 2, 12, 0), 10, 100.0)])
    given = as_given(first.parent, second.parent)
    built = timeline.build(given, log_tz="UTC", cache=False)
    expected = [str(first), str(second)] if isinstance(given, list) and len(given) == 2 else [str(first)]
    assert [run.source for run in built.runs] == expected


def test_a_timeline_shows_briefly_and_as_an_escaped_table(tmp_path, story, timeline_build):
    repo, logs = story
    built = timeline_build(logs, repo=repo.path)

    def counted(items, noun):
        return f"{len(items)} {noun}{'' if len(items) == 1 else 's'}"

    assert repr(built) == (
        f"<Timeline: 3 runs, 3 events, {counted(built.shifts, 'shift')}, {counted(built.culprits, 'culprit')}, "
        f"{counted(built.warnings, 'warning')}; repo {repo.path} at {repo.shas['c4'][:9]}; log zone UTC>"
    )
    one = dataclasses.replace(built, runs=built.runs[:1], warnings=built.warnings[:1] or [None])
    assert repr(one).startswith("<Timeline: 1 run, 3 events, ") and ", 1 warning; " in repr(one)
    html = built._repr_html_()
    assert html.count("<tr>") == 4 and repo.shas["c5"][:9] in html and "90" in html
    hostile = tmp_path / "<script>alert(1)<" / "a.log"
    write_sglang_log(hostile, [Launch(datetime(2026, 3, 2, 10, 0), 10, 100.0)])
    shown = timeline_build(hostile)._repr_html_()
    assert "<script>" not in shown and "&lt;script&gt;" in shown
    # Escape sequences and bidi controls in a file name are written out, as in every other view
    # (before: HTML-escaped only, so ESC [2J and U+202E reached the notebook and the terminal).
    launch = Launch(datetime(2026, 3, 2, 10, 0), 10, 100.0)
    sequences = write_sglang_log(tmp_path / "x\x1b[2J\u202e" / "b.log", [launch])
    built = timeline_build(sequences, repo=repo.path)
    for text in (built._repr_html_(), repr(built)):
        assert "\x1b" not in text and "\u202e" not in text
    assert "x\\x1b[2J\\u202e" in built._repr_html_()


@pytest.mark.parametrize(
    "start",
    [datetime(2026, 7, 1, 10, 0), datetime(2026, 10, 25, 1, 30)],  # one offset; Berlin's clocks going back
    ids=["steady-offset", "dst-change"],
)
def test_sample_times_are_their_instants_in_utc(tmp_path, timeline_build, start):
    log = write_sglang_log(tmp_path / "night.log", [Launch(start, 150, 100.0)])
    built = timeline_build(log, log_tz="Europe/Berlin", keep_samples=True)
    frame = samples_frame(built)
    instants = sorted(
        row["time"].astimezone(timezone.utc) for run in built.runs for rows in run.samples.values() for row in rows
    )
    assert len(instants) > 50 and frame["time"].tolist() == [pd.Timestamp(moment) for moment in instants]
    assert {moment.utcoffset() for moment in (row["time"] for row in built.runs[0].samples["decode"])} == (
        {timedelta(hours=2)} if start.month == 7 else {timedelta(hours=2), timedelta(hours=1)}
    )


def test_runs_frame_carries_the_status_and_the_date_source(timeline_build):
    fixtures = Path(__file__).resolve().parents[1] / "fixtures" / "sglang"
    frame = runs_frame(timeline_build(fixtures / "sglang-0.4.3-startup-crash-then-relaunch.log"))
    assert list(frame["status"]) == ["crashed", "ok"] and frame["status"].dtype == "category"
    assert list(frame["date_source"]) == ["stamp", "stamp"] and frame["date_source"].dtype == "category"
    assert frame["error_line"].dtype == "Int64"
    assert frame["error_line"].iloc[0] == 22 and pd.isna(frame["error_line"].iloc[1])
    assert frame["error"].iloc[0] == "RuntimeError: Not enough memory. Please try to increase --mem-fraction-static."
    assert pd.isna(frame["error"].iloc[1])
