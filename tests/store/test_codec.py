"""The store's compact form of runs, events and commits: every field kept, exactly."""

from __future__ import annotations

import dataclasses
import json
from datetime import datetime, timedelta, timezone

from timeline.model import CodeEvent, CommitInfo, MetricSummary, RepoInfo, Run, SteadyValue, ZoneReading
from timeline.store import codec

BERLIN = timezone(timedelta(hours=2))


def full_run() -> Run:
    """A run with every field set to something other than its default."""
    return Run(
        id="r7",
        source="logs/node 2/server.log.gz",
        kind="sglang-server",
        start=datetime(2026, 3, 29, 2, 30, 0, 123456, tzinfo=BERLIN),
        end=datetime(2026, 3, 29, 4, 0, tzinfo=BERLIN),
        start_local="2026-03-29 02:30:00",
        tz="Europe/Berlin",
        tz_source="mtime",
        first_line=12,
        last_line=980,
        commit="a" * 40,
        attribution="ambiguous",
        events_during=["e3"],
        candidate_commits=["a" * 40, "b" * 40],
        ambiguous_reasons=["dst", "zone-assumed"],
        zone_readings=[
            ZoneReading("a" * 40, timedelta(hours=-12), timedelta(hours=1, minutes=30)),
            ZoneReading(None, timedelta(hours=2), timedelta(hours=14)),
        ],
        files_may_differ=True,
        nccl_versions=["2.21.5", "2.27.3+cuda12.9"],
        cuda_driver_versions=["12.8"],
        config={"tp_size": 8, "model_path": "Qwen/Qwen3", "ratio": float("inf"), "nested": {"a": [1, 2]}, "none": None},
        metrics={
            "decode_throughput": MetricSummary("tok/s", 3, 94.0, 94.1, 93.0, 95.0, 1.0, 93.2, 93.5, 94.5, 94.8, 1.0),
            "accept_len": MetricSummary("tokens", 1, 3.1, 3.1, 3.1, 3.1),
        },
        steady=SteadyValue("decode_throughput", "tok/s", 188.5, 6, 2, 0.012, "decode-lines", {"0": 94.0, "1": 94.5}),
        messages=["Load weight end. mem usage=# GB", "ünïcode \u2028 line"],
        status="crashed",
        error="RuntimeError: CUDA out of memory",
        error_line=977,
        date_source="mtime",
    )


def test_every_field_of_a_run_is_kept_in_the_array_or_apart():
    names = {f.name for f in dataclasses.fields(Run)}
    assert set(codec.RUN_FIELDS) | set(codec.KEPT_APART) == names
    assert not set(codec.RUN_FIELDS) & set(codec.KEPT_APART)


def test_every_field_of_an_event_is_kept():
    names = {f.name for f in dataclasses.fields(CodeEvent)}
    assert set(codec.EVENT_FIELDS) | set(codec.EVENT_APART) == names


def test_a_run_with_every_field_set_round_trips_exactly():
    run = full_run()
    doc = codec.encode_run(run, {"e3": "digest-of-e3"})
    back = codec.decode_run(doc, run.config, run.messages, {"digest-of-e3": "e3"}, run_id="r7")
    assert back == run
    assert back.start.utcoffset() == timedelta(hours=2) and back.start.microsecond == 123456
    assert back.metrics["accept_len"].stddev is None and back.steady.ranks == {"0": 94.0, "1": 94.5}


def test_a_bare_run_round_trips():
    run = Run("r1", "-", "bench-client", None, None, None, None, None, None, None, None, "no-time")
    assert codec.decode_run(codec.encode_run(run, {}), {}, [], {}, "r1") == run


def test_the_events_during_a_run_take_this_readings_ids():
    run = full_run()
    back = codec.decode_run(codec.encode_run(run, {"e3": "X"}), {}, [], {"X": "e11"})
    assert back.events_during == ["e11"]


def test_an_event_and_its_commits_round_trip():
    commit = CommitInfo(
        "c" * 40,
        "Fix PCG MoE Error",
        "Ann",
        "ann@x",
        datetime(2026, 3, 1, 9, tzinfo=BERLIN),
        datetime(2026, 3, 1, 10, tzinfo=timezone.utc),
        ("a.py", "b/c.py"),
    )
    assert codec.decode_commit(commit.sha, codec.encode_commit(commit)) == commit
    bare = CommitInfo("d" * 40, "x")
    assert codec.decode_commit(bare.sha, codec.encode_commit(bare)) == bare
    time = datetime(2026, 3, 2, 18, 10, tzinfo=BERLIN)
    event = CodeEvent(
        "e2",
        time,
        int(time.timestamp()),
        "pull",
        "pull: Fast-forward",
        "a" * 40,
        "c" * 40,
        True,
        commits=[commit],
        source=".git/logs/HEAD",
        line=2,
        detail="fast-forward",
        note="n",
        old_inferred=True,
    )
    assert codec.decode_event(codec.encode_event(event), "e2", [commit], []) == event


def test_an_events_identity_is_its_reflog_entry():
    time = datetime(2026, 3, 2, 18, 10, tzinfo=timezone.utc)
    one = CodeEvent("e1", time, int(time.timestamp()), "pull", "pull: Fast-forward", "a" * 40, "c" * 40, True)
    renumbered = dataclasses.replace(one, id="e9", note="another build's words")
    assert codec.event_entry(one) == codec.event_entry(renumbered)
    assert codec.event_entry(one) != codec.event_entry(dataclasses.replace(one, message="pull: Merge"))


def test_a_checkout_round_trips():
    repo = RepoInfo("/src/sglang", "a" * 40, "clone", datetime(2026, 3, 1, tzinfo=BERLIN), "cloned here")
    assert codec.decode_repo(codec.encode_repo(repo)) == repo


class _Docs:
    """``run``'s array, as a reading's docs give it (timeline.store.reading), and the places asked for."""

    def __init__(self, run: Run) -> None:
        self.array = codec.encode_run(run, {"e3": "digest-of-e3"})
        self.asked: list[int] = []

    def doc(self, place: int) -> str:
        self.asked.append(place)
        return self.array


def _reader(run: Run, docs: _Docs | None = None) -> codec.ColumnReader:
    """A reader of ``run``'s rows, its facets the blob 7."""
    return codec.ColumnReader(
        {"digest-of-e3": "e3"},
        {7: json.loads(codec.run_facets(codec.run_values(run, {"e3": "digest-of-e3"})))},
        docs or _Docs(run),
    )


def test_a_runs_facets_are_the_values_of_its_columns():
    # migrations 0006 and 0007 make the facets of the runs stored before them from their columns: the same blob
    run = full_run()
    columns = codec.run_columns(codec.run_values(run, {"e3": "digest-of-e3"}))
    assert json.loads(codec.run_facets(codec.run_values(run, {"e3": "digest-of-e3"}))) == [
        json.loads(columns[name]) if name.endswith(("_during", "_versions")) else columns[name] for name in codec.FACETS
    ]
    assert json.loads(codec.run_facets(codec.run_values(run, {"e3": "digest-of-e3"})))[5] == ["digest-of-e3"]


def test_a_run_made_from_its_columns_is_the_run_its_summaries_read_from_the_array_when_asked():
    run = full_run()
    columns = codec.run_columns(codec.run_values(run, {"e3": "digest-of-e3"}))
    docs = _Docs(run)
    back = _reader(run, docs).run([columns[name] for name in codec.RUN_COLUMNS], 12, run.config, run.messages, 7)
    back.id = run.id
    names = {f.name for f in dataclasses.fields(Run)}
    assert set(vars(back)) == names - set(codec.FROM_ARRAY) | {"_row", "_docs"}  # the summaries not fetched yet
    assert docs.asked == []
    assert back == run and docs.asked == [12]  # fetched once, by the place the reading gave it
    assert back == run and run == back and back != dataclasses.replace(run, error_line=978)
    assert back.metrics == run.metrics and vars(back)["zone_readings"] == run.zone_readings
    assert dataclasses.replace(back, id="r1") == dataclasses.replace(run, id="r1")


def test_a_field_set_on_a_stored_run_before_its_array_is_read_keeps_the_value_set():
    run = full_run()
    columns = codec.run_columns(codec.run_values(run, {"e3": "digest-of-e3"}))
    back = _reader(run).run([columns[name] for name in codec.RUN_COLUMNS], 0, {}, [], 7)
    back.status, back.error = "ok", None
    assert back.metrics == run.metrics  # the array read now
    assert (back.status, back.error, back.error_line) == ("ok", None, 977)
