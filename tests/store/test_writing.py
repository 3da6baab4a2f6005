"""``Store.ingest``: everything a build found, stored once, whatever the number of ingests."""

from __future__ import annotations

import sqlite3
import threading
from datetime import datetime, timezone

from timeline.store import IngestResult, open_store
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
        configs = connection.execute("SELECT count(*) FROM blobs").fetchone()[0]
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
    assert configs == 2  # one server configuration and one set of messages for 45 runs


def test_the_machine_keeps_every_nccl_version_its_ingests_showed(month_timeline, store_url):
    with open_store(store_url, {}) as store:
        store.ingest(month_timeline, machine_of(month_timeline, "node-1", "h1"))
        for run in month_timeline.runs:
            run.nccl_versions = ["2.28.3"]
        store.ingest(month_timeline, machine_of(month_timeline, "node-1", "h1b"))
        (machine,) = store.machines()
    assert (machine.host, machine.gpu_count, machine.nccl_versions) == ("h1b", 8, ("2.27.5", "2.28.3"))


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
