"""How fast ``timeline history`` answers on 100,000 stored runs (SQLite), against a bare
``SELECT`` of the same rows (README, Speed).

Usage::

    python benchmarks/history_speed.py                  # 100,000 runs on 4 machines, 5 rounds
    python benchmarks/history_speed.py --runs 10000 --repeat 3

The store is made once and kept in ``--work`` (default ``$TMPDIR/timeline-bench``), then reused:
a checkout whose reflog moves over ``--versions`` commits (``git merge --ff-only``, dated), and
on each of 4 machines (two alike, two with other NCCL versions) a log a version holding that
version's runs (SGLang EAGLE-3 launches of a few decode lines; the level steps now and then),
each machine's logs built and ingested as ``timeline ingest`` does (``build`` with the shifts
left for later, ``Store.ingest``).

Then, interleaved (each round runs every step once, so a change of load hits them all alike),
``--repeat`` rounds, in this process:

* ``select``: the floor, ``SELECT * FROM runs`` with Python's ``sqlite3``, every row fetched;
* ``read``: ``Store.read()``, every machine's runs and events back as typed model objects;
* ``history``: ``timeline.history.history(url)``, the answer: read, shifts, culprits;
* ``cli json``: ``timeline history --store URL --format json > /dev/null`` in a subprocess
  (start-up, the answer, the JSON document written);
* ``cli table``: ``timeline history --store URL > /dev/null`` with ``COLUMNS=120``, the default
  view (start-up, the answer, the machines, the table of the run window, the shifts).

The commands run from compiled bytecode (kept in ``--work``), as an installed timeline does.

It prints, for each, the slowest round and the median, and each one's ratio to ``select``'s (the
ratios carry over between machines and loads). The store is read once before the rounds, so no
round pays for a cold page cache. Target: ``history`` under 2 s in its slowest round (and the
default view too, start-up included). This is a benchmark, not a test: nothing here fails.
"""

from __future__ import annotations

import argparse
import os
import random
import sqlite3
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable
from datetime import datetime, timedelta, timezone
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE.parent))

from timeline.builder import build  # noqa: E402
from timeline.history import history  # noqa: E402
from timeline.scenario import FastCommit, GitScript, Launch, fast_import, sglang_launch_lines  # noqa: E402
from timeline.store import machine_of, open_store  # noqa: E402

STORE_VERSION = 4  # bump when what the store holds changes: the kept store is made again
START = datetime(2026, 1, 5, tzinfo=timezone.utc)
MACHINES = (("h100-a", "2.27.5"), ("h100-b", "2.27.5"), ("h100-c", "2.26.2"), ("a100-a", "2.21.5"))
RUN_EVERY = timedelta(minutes=3)


def make_store(root: Path, runs: int, versions: int) -> Path:
    """The store of ``runs`` runs over ``versions`` versions on each of the ``MACHINES``."""
    per_version = max(1, runs // (versions * len(MACHINES)))
    span = RUN_EVERY * (per_version + 2)
    git = GitScript(root / "home")
    upstream, checkout = root / "upstream", root / "checkout"
    upstream.mkdir(parents=True)
    git.git(upstream, "init", "-q", at=START - timedelta(days=1))
    commits = [
        FastCommit(n, (n - 1,) if n > 1 else (), int((START + span * (n - 1) - timedelta(hours=1)).timestamp()), "f")
        for n in range(1, versions + 1)
    ]
    shas = fast_import(upstream, commits, git.env)
    first = shas[1]
    git.git(root, "clone", "-q", "--no-checkout", str(upstream), str(checkout), at=START - timedelta(hours=2))
    git.git(checkout, "reset", "-q", "--hard", first, at=START - timedelta(hours=1, minutes=30))
    for n in range(2, versions + 1):
        git.git(checkout, "merge", "-q", "--ff-only", shas[n], at=START + span * (n - 1) - timedelta(minutes=30))
    url = f"sqlite:///{root / 'history.sqlite'}"
    rng = random.Random(7)
    with open_store(url, {}) as store:
        for index, (name, nccl) in enumerate(MACHINES):
            level = 90.0 + 5 * index
            logs = root / name
            logs.mkdir()
            for version in range(versions):
                if rng.random() < 0.05:  # a step now and then: something for the detection to find
                    level *= rng.choice((0.85, 0.92, 1.08, 1.15))
                with open(logs / f"v{version:04d}.log", "w", encoding="utf-8") as handle:
                    for number in range(per_version):
                        at = START + span * version + RUN_EVERY * (number + 1)
                        launch = Launch(at.replace(tzinfo=None), 2.5, level * (1 + rng.uniform(-0.01, 0.01)), nccl=nccl)
                        handle.write("\n".join(sglang_launch_lines(launch, rng)) + "\n")
            built = build(logs, repo=checkout, log_tz="UTC", cache=False, analyse_shifts=False)
            result = store.ingest(built, machine_of(built, name, name))
            print(f"  {name}: {result.runs_added:,} runs, {result.events_added:,} events stored", flush=True)
    return root / "history.sqlite"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--runs", type=int, default=100_000)
    parser.add_argument("--versions", type=int, default=100, help="commits the checkout moves over")
    parser.add_argument("--repeat", type=int, default=5)
    parser.add_argument("--work", type=Path, default=Path(tempfile.gettempdir()) / "timeline-bench")
    args = parser.parse_args()
    # The commands run from compiled bytecode, as an installed timeline does (as in run.py: with
    # PYTHONDONTWRITEBYTECODE set, each start compiled the package's modules again, 0.1-0.15 s).
    os.environ.pop("PYTHONDONTWRITEBYTECODE", None)
    os.environ.setdefault("PYTHONPYCACHEPREFIX", str(args.work / "pycache"))
    root = args.work / f"history-{args.runs}-{args.versions}-v{STORE_VERSION}"
    path = root / "history.sqlite"
    if not path.exists():
        if root.exists():  # a store left half-made: made again
            import shutil

            shutil.rmtree(root)
        print(f"making the store in {root} (once)", flush=True)
        start = time.perf_counter()
        make_store(root, args.runs, args.versions)
        print(f"  made in {time.perf_counter() - start:.0f} s")
    url = f"sqlite:///{path}"
    with open_store(url, {}) as store:
        histories = store.read(with_samples=False)
    stored = sum(len(h.runs) for h in histories)
    print(
        f"store: {path} ({path.stat().st_size / 1e6:.0f} MB), {stored:,} runs, "
        f"{sum(len(h.events) for h in histories):,} events, {len(histories)} machines"
    )
    # let go before the rounds: 100,000 runs kept alive here would be walked by every full
    # cycle collection the steps set off, a cost no user's command pays
    del histories
    print(f"machine: {os.cpu_count()} cores, load average {' '.join(f'{x:.1f}' for x in os.getloadavg())}")

    def select() -> int:
        with sqlite3.connect(path) as connection:
            return len(connection.execute("SELECT * FROM runs").fetchall())

    def read() -> int:
        with open_store(url, {}) as store:
            return sum(len(h.runs) for h in store.read(with_samples=False))

    def answer() -> int:
        found = history(url)
        return len(found.timeline.shifts)

    script = Path(sys.executable).with_name("timeline")
    command = [str(script)] if script.exists() else [sys.executable, "-m", "timeline"]

    def cli(*options: str, environ: dict[str, str] | None = None) -> Callable[[], int]:
        def step() -> int:
            with open(os.devnull, "w") as sink:
                return subprocess.run(
                    [*command, "history", "--store", url, *options], stdout=sink, env=environ
                ).returncode

        return step

    steps = {
        "select": select,
        "read": read,
        "history": answer,
        "cli json": cli("--format", "json"),
        "cli table": cli(environ={**os.environ, "COLUMNS": "120"}),
    }
    times: dict[str, list[float]] = {name: [] for name in steps}
    said: dict[str, int] = {}
    for _ in range(args.repeat):
        for name, step in steps.items():
            start = time.perf_counter()
            said[name] = step()
            times[name].append(time.perf_counter() - start)
    print(f"load average after: {' '.join(f'{x:.1f}' for x in os.getloadavg())}")
    worst_floor, median_floor = max(times["select"]), statistics.median(times["select"])
    print(f"{'step':<10} {'worst s':>8} {'x select':>9} {'median s':>9} {'x select':>9}  what")
    notes = {
        "select": f"{said['select']:,} rows fetched",
        "read": f"{said['read']:,} runs as model objects",
        "history": f"{said['history']} shifts found",
        "cli json": f"exit status {said['cli json']}",
        "cli table": f"exit status {said['cli table']}",
    }
    for name in steps:
        worst, median = max(times[name]), statistics.median(times[name])
        print(
            f"{name:<10} {worst:8.2f} {worst / worst_floor:9.1f} {median:9.2f} {median / median_floor:9.1f}  "
            f"{notes[name]}"
        )
    for name in ("history", "cli table"):
        worst = max(times[name])
        print(f"target: {name} under 2 s (slowest round {worst:.2f} s): {'met' if worst < 2 else 'NOT met'}")


if __name__ == "__main__":
    main()
