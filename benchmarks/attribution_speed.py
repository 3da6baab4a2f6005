"""How attribution grows with the reflog: n log n, not runs x entries.

Run (from the repository root, in the project's virtualenv)::

    python benchmarks/attribution_speed.py            # 100,000 and 1,000,000 entries, best of 3
    python benchmarks/attribution_speed.py 50000 5    # other smaller size / repeats

It makes a reflog of N moves (one every 30 s, the clock stepping back now and then as a
machine's clock does) and N / 10 runs at random times, then times, in this same process,
``timeline.correlate.attribute`` of every run against one ``HeadIndex`` (what ``build`` does),
for N and for 10 N. Ten times the entries and the runs cost about 10 x (log 10N / log N) times as
much when attribution is n log n, and 100 times as much when each run scans the reflog (how it
was: a 1,000,000-entry reflog did not finish in 600 s). It prints the ratio; the lowest time of
the rounds counts. For reference it also times the scan the index replaced, on the small size
only (``scan``: each run's head found by reading every entry).

This is a benchmark, not a test: nothing here fails.
"""

from __future__ import annotations

import random
import sys
import time
from datetime import datetime, timezone
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from timeline.correlate import HeadIndex, attribute  # noqa: E402
from timeline.model import CodeEvent  # noqa: E402

T0 = datetime(2026, 1, 1, tzinfo=timezone.utc)


def reflog(n: int, seed: int = 1) -> list[CodeEvent]:
    rng = random.Random(seed)
    commits = [f"{i:040x}" for i in range(1, 4097)]
    events: list[CodeEvent] = []
    ts = int(T0.timestamp())
    old = "0" * 40
    for i in range(n):
        ts += 30 if rng.random() > 0.001 else -600  # now and then the clock steps back 10 minutes
        new = rng.choice(commits)
        moment = datetime.fromtimestamp(ts, timezone.utc)
        events.append(CodeEvent(f"e{i + 1}", moment, ts, "checkout", "checkout", old, new, old != new))
        old = new
    return events


def runs(events: list[CodeEvent], count: int, seed: int = 2) -> list[tuple[datetime, datetime]]:
    rng = random.Random(seed)
    low, high = events[0].ts, events[-1].ts
    out = []
    for _ in range(count):
        start = rng.uniform(low, high)
        out.append((datetime.fromtimestamp(start, timezone.utc), datetime.fromtimestamp(start + 600, timezone.utc)))
    return out


def attribute_all(events: list[CodeEvent], spans: list[tuple[datetime, datetime]]) -> float:
    began = time.process_time()
    index = HeadIndex(events)
    for start, end in spans:
        attribute(index, [start], end)
    return time.process_time() - began


def scan_all(events: list[CodeEvent], spans: list[tuple[datetime, datetime]]) -> float:
    """The former way: each run's head found by reading every entry (runs x entries)."""
    began = time.process_time()
    for start, _ in spans:
        found = None
        for event in events:
            if event.ts <= start.timestamp():
                found = event
        assert found is None or found.new
    return time.process_time() - began


def best(rounds: int, measure) -> float:
    return min(measure() for _ in range(rounds))


def main() -> None:
    small = int(sys.argv[1]) if len(sys.argv) > 1 else 100_000
    rounds = int(sys.argv[2]) if len(sys.argv) > 2 else 3
    sizes = {}
    for n in (small, 10 * small):
        events = reflog(n)
        spans = runs(events, n // 10)
        sizes[n] = best(rounds, lambda e=events, s=spans: attribute_all(e, s))
        print(f"{n:>10,} entries, {n // 10:>9,} runs: {sizes[n]:7.2f} s CPU (best of {rounds})")
    ratio = sizes[10 * small] / sizes[small]
    print(f"10x the entries and runs: {ratio:.1f}x the time (n log n: about 10-13x; runs x entries: 100x)")
    few = reflog(small // 10)
    scan = best(1, lambda: scan_all(few, runs(few, small // 100)))
    indexed = best(rounds, lambda: attribute_all(few, runs(few, small // 100)))
    print(f"{small // 10:,} entries, {small // 100:,} runs: scan {scan:.2f} s, index {indexed:.3f} s CPU")


if __name__ == "__main__":
    main()
