"""``Store.ingest``: everything a build found, stored once, whatever the number of ingests."""

from __future__ import annotations

import dataclasses
import sqlite3
import threading
from datetime import datetime, timezone

import timeline
from timeline.export import samples_to_dict
from timeline.store import IngestResult, open_store
from timeline.store.codec import FACETS
from timeline.store.machine import machine_of


def test_a_build_is_stored_and_the_same_logs_again_store_nothing(month_timeline, store_url):
    machine = machine_of(month_timeline, "node-1", "host-1")
    with open_store(store_url, {}) as store:
        first = store.ingest(month_timeline, machine)
        assert first == IngestResult(runs_added=45, runs_known=0, events_added=16, events_known=0, commits_added=25)
        again = store.ingest(month_timeline, machine)
        assert again == IngestResult(runs_added=0, runs_known=45, events_added=0, events_known=16, commits_added=0)
        assert len(store.read()[0].runs) == 45


def test_the_same_logs_from_another_machine_are_the_same_runs(month_timeline, store_url):
    with open_store(store_url, {}) as store:
        store.ingest(month_timeline, machine_of(month_timeline, "node-1", "h1"))
        other = store.ingest(month_timeline, machine_of(month_timeline, "node-2", "h2"))
        # a run is its lines: a copy of the logs ingested elsewhere is no new measurement; the
        # other machine's checkout is its own, so its events are
        assert (other.runs_added, other.runs_known, other.events_added, other.commits_added) == (0, 45, 16, 0)


def test_the_rows_a_user_queries_are_columns(month_timeline, tmp_path):
    path = tmp_path / "h.sqlite"
    with open_store(str(path), {}) as store:
        store.ingest(month_timeline, machine_of(month_timeline, "node-1", "h1"))
    with sqlite3.connect(path) as connection:
        rows = connection.execute(
            "SELECT m.name, r.workload, r.start, r.[commit], r.steady_value"
            " FROM runs r JOIN machines m ON m.id = r.machine_id ORDER BY r.start LIMIT 1"
        ).fetchall()
        blobs = connection.execute("SELECT count(*) FROM blobs").fetchone()[0]
        named = connection.execute(
            "SELECT count(DISTINCT config_id), count(DISTINCT messages_id), count(DISTINCT facets_id) FROM runs"
        ).fetchone()
        facets = connection.execute(f"SELECT count(*) FROM (SELECT DISTINCT {', '.join(FACETS)} FROM runs)").fetchone()
    first = month_timeline.runs[0]
    assert rows == [
        (
            "node-1",
            "Qwen3-235B-A22B-FP8 tp8 EAGLE3/2/1/3",
            "2026-04-01 10:00:00.000000",
            first.commit,
            first.steady.value,
        )
    ]
    # one server configuration and one set of messages for 45 runs; each distinct set of facets once
    assert named == (1, 1, facets[0]) and blobs == 2 + facets[0] and 23 <= facets[0] < 45  # 23 logs


def test_the_machine_keeps_every_nccl_version_its_ingests_showed(month_timeline, store_url):
    with open_store(store_url, {}) as store:
        store.ingest(month_timeline, machine_of(month_timeline, "node-1", "h1"))
        for run in month_timeline.runs:
            run.nccl_versions = ["2.28.3"]
        store.ingest(month_timeline, machine_of(month_timeline, "node-1", "h1b"))
        (machine,) = store.machines()
    assert (machine.host, machine.gpu_count, machine.nccl_versions) == ("h1b", 8, ("2.27.5", "2.28.3"))


def test_the_machine_keeps_every_driver_its_ingests_showed_oldest_first(month_timeline, store_url):
    """As ``machine_of`` joins one build's: an upgrade to 12.10 and a log of 12.8 ingested late
    leave all three, so the machine is not compared as if it had only ever run 12.10."""
    with open_store(store_url, {}) as store:
        for shown in (["12.10"], [], ["12.8", "12.10"]):
            for run in month_timeline.runs:
                run.cuda_driver_versions = shown
            store.ingest(month_timeline, machine_of(month_timeline, "node-1", "h1"))
        for run in month_timeline.runs:
            run.cuda_driver_versions = ["12.9"]
        store.ingest(month_timeline, machine_of(month_timeline, "node-1", "h1"))
        (machine,) = store.machines()
    assert machine.driver == "12.8, 12.9, 12.10"


def test_ingests_at_once_store_each_run_once(month_timeline, store_url):
    results: list[IngestResult] = []

    def ingest(name: str) -> None:
        with open_store(store_url, {}) as store:
            results.append(store.ingest(month_timeline, machine_of(month_timeline, name, name)))

    threads = [threading.Thread(target=ingest, args=(f"node-{n % 2}",)) for n in range(4)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert sorted(r.runs_added for r in results) == [0, 0, 0, 45]
    assert sum(r.events_added for r in results) == 32  # each machine's checkout once
    with open_store(store_url, {}) as store:
        assert sorted(len(h.runs) for h in store.read()) == [0, 45]


def test_an_event_stamped_past_2038_is_stored(month_timeline, store_url):
    """A reflog entry's seconds past 2**31 (a clock set wrong, an untrusted checkout's far-future
    stamp) fit the store: a 32-bit column stopped the ingest on PostgreSQL."""
    late = month_timeline.events[-1]
    late.time = datetime(2100, 1, 1, tzinfo=timezone.utc)
    late.ts = int(late.time.timestamp())
    with open_store(store_url, {}) as store:
        store.ingest(month_timeline, machine_of(month_timeline, "node-1", "host-1"))
        (stored,) = store.read()
    assert max(event.ts for event in stored.events) == late.ts > 2**31


def without_samples(run):
    return dataclasses.replace(run, samples=None)


def _growing_log(month, tmp_path, day=0):
    """A day's log (two runs), and a copy cut 10 lines into its second run: written while it ran."""
    day_log = sorted(month.logs.glob("*.log"))[day]
    lines = day_log.read_text().splitlines(keepends=True)
    second = timeline.build(day_log, log_tz="UTC", cache=False).runs[1]
    log = tmp_path / "logs" / f"server-{day}.log"
    log.parent.mkdir(exist_ok=True)
    log.write_text("".join(lines[: second.first_line + 9]))
    return log, lines


def _build(log, month):
    return timeline.build(log, repo=month.repo, log_tz="UTC", keep_samples=True, cache=False)


def test_a_run_still_being_written_when_ingested_is_replaced_by_its_longer_reading(month, tmp_path, store_url):
    log, lines = _growing_log(month, tmp_path)
    partial = _build(log, month)
    machine = machine_of(partial, "node-1", "h1")
    with open_store(store_url, {}) as store:
        assert store.ingest(partial, machine, keep_samples=True).runs_added == 2
        log.write_text("".join(lines))  # the run went on: the next night's ingest reads it whole
        grown = _build(log, month)
        assert partial.runs[1].last_line < grown.runs[1].last_line
        result = store.ingest(grown, machine, keep_samples=True)
        assert (result.runs_added, result.runs_replaced, result.runs_known) == (0, 1, 1)
        (history,) = store.read()
        assert [r.last_line for r in history.runs] == [r.last_line for r in grown.runs]
        assert [without_samples(r) for r in history.runs] == [without_samples(r) for r in grown.runs]
        assert [samples_to_dict(r.samples) for r in history.runs] == [samples_to_dict(r.samples) for r in grown.runs]
        again = store.ingest(grown, machine)
        assert (again.runs_added, again.runs_replaced, again.runs_known) == (0, 0, 2)
        # the shorter reading ingested after the longer one (two ingests at once): known, nothing changes
        late = store.ingest(partial, machine)
        assert (late.runs_added, late.runs_replaced, late.runs_known) == (0, 0, 2)
        assert [r.last_line for r in store.read()[0].runs] == [r.last_line for r in grown.runs]


def test_the_runs_of_several_logs_still_being_written_are_replaced_in_one_ingest(month, tmp_path, store_url):
    grown_logs = [_growing_log(month, tmp_path, day) for day in (0, 1, 2)]
    partial = _build(tmp_path / "logs", month)
    machine = machine_of(partial, "node-1", "h1")
    with open_store(store_url, {}) as store:
        assert store.ingest(partial, machine).runs_added == 6
        for log, lines in grown_logs:
            log.write_text("".join(lines))
        grown = _build(tmp_path / "logs", month)
        result = store.ingest(grown, machine)
        assert (result.runs_added, result.runs_replaced, result.runs_known) == (0, 3, 3)
        (history,) = store.read()
    assert [without_samples(r) for r in history.runs] == [without_samples(r) for r in grown.runs]
    assert [r.last_line for r in history.runs] != [r.last_line for r in partial.runs]


def test_a_run_whose_first_lines_changed_is_another_run(month, tmp_path, store_url):
    log, lines = _growing_log(month, tmp_path)
    partial = _build(log, month)
    machine = machine_of(partial, "node-1", "h1")
    second = partial.runs[1]
    with open_store(store_url, {}) as store:
        store.ingest(partial, machine)
        changed = lines[:]
        changed[second.last_line - 1] = changed[second.last_line - 1].rstrip("\n") + " \n"  # one of its lines rewritten
        log.write_text("".join(changed))
        result = store.ingest(_build(log, month), machine)
        assert (result.runs_added, result.runs_replaced, result.runs_known) == (1, 0, 1)
        other = store.ingest(_build(log, month), machine_of(partial, "node-2", "h2"))  # another machine's own log
        assert (other.runs_added, other.runs_replaced, other.runs_known) == (0, 0, 2)
        assert [len(h.runs) for h in store.read()] == [3, 0]


def test_the_shorter_and_longer_readings_ingested_at_once_leave_the_longer(month, tmp_path, store_url):
    log, lines = _growing_log(month, tmp_path)
    partial = _build(log, month)
    log.write_text("".join(lines))
    grown = _build(log, month)
    machine = machine_of(partial, "node-1", "h1")
    results: list[IngestResult] = []

    def ingest(built) -> None:
        with open_store(store_url, {}) as store:
            results.append(store.ingest(built, machine))

    threads = [threading.Thread(target=ingest, args=(built,)) for built in (partial, grown, partial, grown)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert len(results) == 4
    with open_store(store_url, {}) as store:
        (history,) = store.read()
    assert [(r.first_line, r.last_line) for r in history.runs] == [(r.first_line, r.last_line) for r in grown.runs]
