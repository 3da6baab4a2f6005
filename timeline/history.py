"""``history``: every machine's stored runs and code events (timeline.store), tested as ``build``
tests one afternoon's logs. The one function behind ``timeline history``.

Each machine has its own checkout, so its runs are tested between the versions its own reflog
drew, and its runs are never pooled with another machine's: a workload is one machine's
(``Run.machine`` is part of the group, ``gpu-a: Qwen3-235B tp8``). The shifts of all machines
are then ranked together, so a commit that moved two machines is one culprit naming both.
Without a checkout (the logs and the checkout of last month may be gone), the evidence that
needs the code is left out; the rest (the commits each move brought in, the files they touched,
the flags and NCCL versions the runs printed) is in the store.
"""

from __future__ import annotations

import os
import re
from collections.abc import Sequence
from dataclasses import dataclass
from datetime import datetime, timedelta, timezone
from operator import attrgetter

from timeline.builder import cache_of, provenance, shifts_and_culprits
from timeline.collector import uncollected
from timeline.detect import DEFAULT_MIN_EFFECT, Settings
from timeline.environment import Environment
from timeline.errors import TimelineError, UsageError
from timeline.model import CodeEvent, Run, Timeline, run_order
from timeline.workload import workload_label

__all__ = ["History", "MachineSummary", "history", "parse_since", "EmptyStoreError"]


class EmptyStoreError(TimelineError):
    """The store holds no run of what was asked for (nothing ingested yet, or all before ``since``)."""


@dataclass(frozen=True)
class MachineSummary:
    """One machine of a history: what the store knows of it and how much of it was read."""

    name: str
    host: str | None
    gpu_count: int | None
    nccl_versions: tuple[str, ...]
    driver: str | None
    runs: int
    events: int
    # The other machines of the history with the same GPU count, NCCL versions and driver.
    matching: tuple[str, ...] = ()


@dataclass
class History:
    """``history``'s answer: one timeline of every machine's runs and events (each naming its
    ``machine``), with the shifts and culprits, and the machines it holds."""

    timeline: Timeline
    machines: list[MachineSummary]


_RELATIVE = re.compile(r"^\s*(\d+)\s*([dwh])\s*$")
_UNITS = {"h": timedelta(hours=1), "d": timedelta(days=1), "w": timedelta(weeks=1)}


def parse_since(text: str, now: datetime) -> datetime:
    """``--since``: an ISO 8601 date or time (``2026-05-01``, ``2026-05-01T08:00+02:00``; one
    without an offset is UTC) or a span back from ``now`` (``30d``, ``2w``, ``12h``)."""
    relative = _RELATIVE.match(text)
    if relative:
        return now - int(relative.group(1)) * _UNITS[relative.group(2)]
    try:
        moment = datetime.fromisoformat(text.strip())
    except ValueError:
        raise UsageError(
            f"{text!r}: not a date (2026-05-01, 2026-05-01T08:00+02:00) nor a span back (30d, 2w, 12h)",
            option="since",
            value=text,
        ) from None
    return moment if moment.tzinfo else moment.replace(tzinfo=timezone.utc)


def history(
    store_url: str | None = None,
    *,
    machine: str | None = None,
    group: str | None = None,
    since: datetime | None = None,
    repo: str | os.PathLike | None = None,
    entries: Sequence[str] | None = None,
    min_effect: float = DEFAULT_MIN_EFFECT,
    samples: bool = False,
    env: Environment | None = None,
    record_host: bool = True,
) -> History:
    """Read the store at ``store_url`` (None: ``TIMELINE_STORE``, else the user's SQLite file;
    timeline.store.open_store) and test every machine's runs for shifts, as ``build`` does.

    ``machine``: that machine only. ``group``: the workloads whose label (``Qwen3-235B-A22B-FP8
    tp8 EAGLE3/2/1/3``) contains it, case aside. ``since``: runs and events from then on (a naive
    time is UTC). ``repo``: a checkout holding the commits (any machine's, or a clone of the
    upstream they pull) to read the code evidence from; None leaves that evidence out.
    ``samples``: read the stats lines of the runs ingested with them. ``min_effect``, ``entries``
    and ``record_host``: as ``build``'s. Raises UsageError (an unknown machine or group),
    EmptyStoreError, and the store's own errors (timeline.store.StoreError).
    """
    from timeline.store import open_store  # imported where used: start-up under 0.5 s

    env = env or Environment()
    # the runs read and tested make millions of objects, all kept: no cycle collection meanwhile
    with uncollected():
        with open_store(store_url, env.environ) as store:
            stored = store.read(machine, since, with_samples=samples)
            shown_url = store.url
            if machine is not None and not stored:
                known = ", ".join(m.name for m in store.machines()) or "none yet"
                raise UsageError(f"{machine!r}: no such machine in {shown_url} (it has: {known})", option="machine")
        histories = [(h.machine, h.runs, h.events, h.repo) for h in stored]
        if group is not None:
            histories = _of_group(histories, group)
        if not any(runs for _, runs, _, _ in histories):
            after = f" since {since.isoformat()}" if since is not None else ""
            raise EmptyStoreError(f"{shown_url}: no run stored{after}: ingest a build first")
        runs, events = _numbered(histories)
        findings = shifts_and_culprits(
            [(m_runs, m_events) for _, m_runs, m_events, _ in histories],
            repo,
            entries=entries,
            settings=Settings(min_effect=min_effect),
            cache=cache_of(True, env) if repo is not None else None,
        )
        zones = sorted(zone for zone in set(map(attrgetter("tz"), runs)) if zone)  # 100,000 runs: no loop in Python
        sources = sorted(source for source in set(map(attrgetter("tz_source"), runs)) if source)
        machines = _summaries(histories)
        timeline = Timeline(
            generated_at=env.now(),
            log_tz=zones[0] if len(zones) == 1 else "mixed",
            log_tz_source=sources[0] if len(sources) == 1 else "mixed",
            # one machine: its checkout (as last ingested); several: each run and event names its machine
            repo=histories[0][3] if len(histories) == 1 else None,
            events=events,
            runs=runs,
            warnings=findings.warnings,
            shifts=findings.shifts,
            culprits=findings.culprits,
            provenance=provenance(
                env,
                record_host,
                {
                    "store": shown_url,
                    "machine": machine,
                    "group": group,
                    "since": None if since is None else since.isoformat(),
                    "repo": None if repo is None else os.fspath(repo),
                    "min_effect": min_effect,
                    "samples": samples,
                    "entries": list(entries or []),
                    "machines": {
                        m.name: {
                            "host": m.host,
                            "gpu_count": m.gpu_count,
                            "nccl_versions": list(m.nccl_versions),
                            "driver": m.driver,
                            "matching": list(m.matching),
                        }
                        for m in machines
                    },
                },
            ),
        )
        return History(timeline, machines)


_Stored = tuple  # (Machine, runs, events, RepoInfo | None) of one machine
_START = attrgetter("start")


def _of_group(histories: list[_Stored], group: str) -> list[_Stored]:
    """Each machine's runs of the workloads whose label contains ``group`` (case aside)."""
    wanted = group.casefold()
    kept = [
        (machine, [r for r in runs if wanted in workload_label(r.config).casefold()], events, repo)
        for machine, runs, events, repo in histories
    ]
    if not any(runs for _, runs, _, _ in kept):
        labels = sorted({workload_label(r.config) for _, runs, _, _ in histories for r in runs} - {""})
        raise UsageError(
            f"{group!r}: no stored workload has it in its label (they are: {'; '.join(labels) or 'none'})",
            option="group",
            value=group,
        )
    return kept


def _numbered(histories: list[_Stored]) -> tuple[list[Run], list[CodeEvent]]:
    """Every machine's runs and events, each naming its machine, numbered ``r1``... and
    ``e1``... across machines in time order (the store numbers each machine's from 1), and each
    run's events-during renamed with them."""
    renamed: dict[tuple[str, str], str] = {}
    events: list[CodeEvent] = []
    runs: list[Run] = []
    for machine, m_runs, m_events, _ in histories:
        name = machine.name
        for event in m_events:
            event.machine = name
        for run in m_runs:
            run.machine = name
        events.extend(m_events)
        runs.extend(m_runs)
    events.sort(key=lambda e: (e.ts, e.machine or "", e.line or 0))
    for number, event in enumerate(events, 1):
        renamed[(event.machine or "", event.id)] = f"e{number}"
        event.id = f"e{number}"
    if len(histories) > 1:  # one machine's runs come in this order already (Store.read)
        # each machine's runs are in run_order, the machines by name (Store.read): sorted by their
        # starts alone (a stable sort), so are they all, a tie by machine, then log and line, with
        # no run_order key made a run (100,000 runs)
        runs.sort(key=run_order if None in map(_START, runs) else _START)
    for number, run in enumerate(runs, 1):
        run.id = f"r{number}"
        if run.events_during:
            run.events_during = [renamed[(run.machine or "", e)] for e in run.events_during]
    return runs, events


def _summaries(histories: list[_Stored]) -> list[MachineSummary]:
    summaries = []
    for machine, runs, events, _ in histories:
        matching = tuple(
            other.name
            for other, _, _, _ in histories
            if other.name != machine.name and other.fingerprint == machine.fingerprint
        )
        summaries.append(
            MachineSummary(
                machine.name,
                machine.host,
                machine.gpu_count,
                tuple(machine.nccl_versions),
                machine.driver,
                len(runs),
                len(events),
                matching,
            )
        )
    return summaries
