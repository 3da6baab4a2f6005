"""Four processes ingest into one new store at once, on SQLite and on PostgreSQL: two machines of
two processes each, 50 runs a process in 5 ingests of one log each, and one log of each machine
ingested by both its processes at the same moment. Afterwards every run is there exactly once,
every code event once per machine, and the store reads back exactly as the same builds ingested
one after another: nothing lost, nothing duplicated, nothing half-written."""

from __future__ import annotations

import multiprocessing
import queue
from collections import Counter
from dataclasses import astuple, dataclass
from datetime import datetime, timedelta, timezone
from pathlib import Path

import pytest

import timeline
from timeline.model import Timeline
from timeline.scenario import GitScript, Launch, write_sglang_log
from timeline.store import IngestResult, StoredHistory, open_store
from timeline.store.machine import machine_of

MACHINES = ("gpu-a", "gpu-a", "gpu-b", "gpu-b")  # the machine of each process
OWN_LOGS = 4  # a process's own logs, each ingested by it alone
RUNS_PER_LOG = 10  # every process ingests (OWN_LOGS + 1 shared log) x 10 = 50 runs
DAY = datetime(2026, 5, 4)  # a Monday; log times are UTC wall-clock
# Bounds, not expectations: a process that has not answered by then is stuck (a lock never freed).
PROCESS_SECONDS = 180


@dataclass(frozen=True)
class Plan:
    """What each process ingests, in order: its machine's shared log first (both processes of the
    machine race on it), then its own logs."""

    checkout: Path
    shared: dict[str, Timeline]  # machine -> the build of the log both its processes ingest
    own: list[list[Timeline]]  # process -> the builds of its own logs


def _launches(first: datetime) -> list[Launch]:
    # Short runs (6 minutes, a decode line every 30 s), 15 minutes apart; throughputs all differ.
    return [
        Launch(first + timedelta(minutes=15 * number), 6, 80.0 + number + first.hour / 10, decode_every_s=30)
        for number in range(RUNS_PER_LOG)
    ]


def _checkout(root: Path) -> Path:
    """A checkout cloned the evening before and pulled twice during the day: events to store."""
    git = GitScript(root / "home")
    upstream, checkout = root / "upstream", root / "sglang"
    upstream.mkdir(parents=True)
    utc = DAY.replace(tzinfo=timezone.utc)
    git.git(upstream, "init", "-q", at=utc - timedelta(days=2))
    git.commit_file(upstream, "Add EAGLE-3 verify path", utc - timedelta(days=2))
    git.git(root, "clone", "-q", str(upstream), str(checkout), at=utc - timedelta(hours=4))
    for hour, subjects in ((9, ("RadixTree refactor", "Fix PCG MoE Error")), (15, ("Bump flashinfer",))):
        for number, subject in enumerate(subjects):
            git.commit_file(upstream, subject, utc + timedelta(hours=hour - 2, minutes=number))
        git.git(checkout, "pull", "-q", "origin", "main", at=utc + timedelta(hours=hour))
    return checkout


def _build(log: Path, checkout: Path) -> Timeline:
    return timeline.build(log, repo=checkout, log_tz="UTC", cache=False, record_host=False)


@pytest.fixture(scope="module")
def plan(tmp_path_factory: pytest.TempPathFactory) -> Plan:
    root = tmp_path_factory.mktemp("concurrent-ingest")
    checkout = _checkout(root)
    logs = root / "logs"
    shared = {}
    for number, machine in enumerate(sorted(set(MACHINES))):
        log = write_sglang_log(logs / f"{machine}-shared.log", _launches(DAY.replace(hour=1 + number)), seed=number)
        shared[machine] = _build(log, checkout)
    own = []
    for process in range(len(MACHINES)):
        builds = []
        for number in range(OWN_LOGS):
            first = DAY.replace(hour=3 + 5 * number, minute=process)
            log = write_sglang_log(
                logs / f"p{process}-{number}.log", _launches(first), seed=100 + 10 * process + number
            )
            builds.append(_build(log, checkout))
        own.append(builds)
    for build in [*shared.values(), *(b for builds in own for b in builds)]:
        assert len(build.runs) == RUNS_PER_LOG and build.events, "the logs and checkout are not what the test needs"
    return Plan(checkout, shared, own)


def ingest_process(url: str, machine: str, builds: list[Timeline], start: object, results: object) -> None:
    """One process: wait for the others, open the (new) store, ingest each build; put its
    IngestResults, or the error it met, on ``results``."""
    try:
        start.wait(timeout=PROCESS_SECONDS)  # type: ignore[attr-defined]
        with open_store(url, {}) as store:
            done = [astuple(store.ingest(build, machine_of(build, machine, "host-" + machine))) for build in builds]
        results.put((machine, done, None))  # type: ignore[attr-defined]
    except BaseException as error:  # reported to the test, which fails with it
        results.put((machine, [], f"{type(error).__name__}: {error}"))  # type: ignore[attr-defined]


def _identities(history: StoredHistory) -> Counter:
    return Counter((Path(run.source).name, run.first_line, run.last_line) for run in history.runs)


def _read(url: str) -> list[StoredHistory]:
    with open_store(url, {}) as store:
        return store.read()


def test_four_processes_ingesting_at_once_lose_nothing_and_duplicate_nothing(plan, store_url, tmp_path):
    context = multiprocessing.get_context("spawn")  # no engine or lock inherited from this process
    start, results = context.Barrier(len(MACHINES)), context.Queue()
    work = [[plan.shared[machine], *plan.own[process]] for process, machine in enumerate(MACHINES)]
    processes = [
        context.Process(target=ingest_process, args=(store_url, machine, builds, start, results))
        for machine, builds in zip(MACHINES, work, strict=True)
    ]
    for process in processes:
        process.start()
    answers = []
    try:
        for _ in processes:
            answers.append(results.get(timeout=PROCESS_SECONDS))
    except queue.Empty:
        pytest.fail(f"only {len(answers)} of {len(processes)} ingests answered within {PROCESS_SECONDS} s")
    finally:
        for process in processes:
            process.join(timeout=30)
            if process.is_alive():
                process.kill()
                process.join()
    assert [error for _, _, error in answers if error] == []
    assert [process.exitcode for process in processes] == [0] * len(processes)

    totals = [sum(column) for column in zip(*(result for _, done, _ in answers for result in done), strict=True)]
    totals_by_name = dict(zip(IngestResult.__dataclass_fields__, totals, strict=True))
    distinct_runs = len(MACHINES) * OWN_LOGS * RUNS_PER_LOG + len(plan.shared) * RUNS_PER_LOG
    assert totals_by_name["runs_added"] == distinct_runs == 180
    assert totals_by_name["runs_known"] == len(plan.shared) * RUNS_PER_LOG  # each shared log's second ingest
    events = len(plan.shared["gpu-a"].events)
    assert totals_by_name["events_added"] == events * len(plan.shared)  # once per machine
    assert totals_by_name["events_known"] == events * (len(MACHINES) * (OWN_LOGS + 1) - len(plan.shared))

    stored = _read(store_url)
    assert [history.machine.name for history in stored] == sorted(set(MACHINES))
    for history in stored:
        expected = Counter(
            (Path(run.source).name, run.first_line, run.last_line)
            for process, machine in enumerate(MACHINES)
            if machine == history.machine.name
            for build in work[process]
            for run in build.runs
        )
        assert _identities(history) == Counter(dict.fromkeys(expected, 1)), f"{history.machine.name}: lost or twice"
        assert len(history.events) == events

    # Consistent: what the store holds is what the same builds ingested one at a time give.
    serial = f"sqlite:///{tmp_path / 'serial.sqlite'}"
    with open_store(serial, {}) as store:
        for machine, builds in zip(MACHINES, work, strict=True):
            for build in builds:
                store.ingest(build, machine_of(build, machine, "host-" + machine))
    assert stored == _read(serial)
