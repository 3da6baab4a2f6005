"""``Store.read``: what was ingested comes back as build made it, per machine, from a date on."""

from __future__ import annotations

import dataclasses
from datetime import datetime, timezone

from timeline.export import samples_to_dict
from timeline.store import open_store
from timeline.store.machine import machine_of


def without_samples(run):
    return dataclasses.replace(run, samples=None)


def test_build_ingest_read_gives_the_same_typed_runs_and_events(month_timeline, store_url):
    machine = machine_of(month_timeline, "node-1", "host-1")
    with open_store(store_url, {}) as store:
        store.ingest(month_timeline, machine, keep_samples=True)
        (history,) = store.read()
    assert history.machine == machine
    assert [without_samples(r) for r in history.runs] == [without_samples(r) for r in month_timeline.runs]
    assert [samples_to_dict(r.samples) for r in history.runs] == [
        samples_to_dict(r.samples) for r in month_timeline.runs
    ]
    assert history.events == month_timeline.events
    assert history.repo == month_timeline.repo
    assert history.runs[3].steady == month_timeline.runs[3].steady and history.runs[3].messages


def test_samples_are_stored_only_when_asked_for(month_timeline, store_url):
    with open_store(store_url, {}) as store:
        store.ingest(month_timeline, machine_of(month_timeline, "node-1", "h"))
        (history,) = store.read()
    assert all(run.samples is None for run in history.runs)
    assert all(run.metrics for run in history.runs)  # the summaries and spread are kept


def test_a_reading_of_several_ingests_is_numbered_as_one_build_of_them_all(month, month_timeline, store_url):
    import timeline

    days = sorted(month.logs.glob("*.log"))
    with open_store(store_url, {}) as store:
        for half in (days[len(days) // 2 :], days[: len(days) // 2]):  # the later days first
            store.ingest(
                timeline.build(half, repo=month.repo, log_tz="UTC", cache=False), machine_of(month_timeline, "n", "h")
            )
        (history,) = store.read()
    assert [(r.id, r.start, r.events_during) for r in history.runs] == [
        (r.id, r.start, r.events_during) for r in month_timeline.runs
    ]


def test_machines_are_read_apart_and_since_a_date(month_timeline, store_url):
    with open_store(store_url, {}) as store:
        store.ingest(month_timeline, machine_of(month_timeline, "node-a", "a"))
        since = datetime(2026, 4, 15, tzinfo=timezone.utc)
        (a,) = store.read(machine="node-a", since=since)
        assert a.runs and all(r.start >= since for r in a.runs)
        assert [r.id for r in a.runs] == [f"r{n}" for n in range(1, len(a.runs) + 1)]
        assert all(e.time >= since for e in a.events)
        assert store.read(machine="node-b") == []
        assert store.read(since=datetime(2026, 4, 15)) == [a]  # naive: UTC
