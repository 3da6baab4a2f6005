"""How much reading each run at every real-world offset costs (``correlate.assume_zone``), when
the logs' zone was assumed: against one look-up of what HEAD held at each start (the floor of
any attribution), and against the naive way (every offset's readings looked up, for every run).

Run (from the repository root, in the project's virtualenv)::

    python benchmarks/zone_speed.py              # 100,000 runs, 20,000 reflog entries, best of 5
    python benchmarks/zone_speed.py 300000 2000 3   # other run count / entry count / repeats

It makes a reflog of ENTRIES moves of HEAD spread over a year, in file order with the clock
stepping back now and then (one entry in 200, by up to a minute), and RUNS starts drawn over
the same year, read as naive wall-clock times. Then it times, in this same process:

- ``baseline``: ``HeadIndex.commit_at`` of each start read as UTC (one look-up a run);
- ``assume``: ``assume_zone`` of each start (two look-ups for a start whose 26-hour window of
  offsets holds no move; one a real-world offset, with the tolerance, for the others);
- ``naive``: the commit at each of the 38 real-world offsets, with the tolerance either side, for
  every run (what re-running the attribution once an offset would at least cost).

Times are the best of N rounds (each round runs every step once), CPU time (``process_time``);
the ratio to the baseline is what to compare across machines. It also checks that ``assume``
and ``naive`` agree on which runs are ambiguous. This is a benchmark, not a test: nothing here
fails but a disagreement.
"""

from __future__ import annotations

import random
import sys
import time
from datetime import datetime, timedelta, timezone
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from timeline.clock import REAL_OFFSETS  # noqa: E402
from timeline.correlate import Attribution, HeadIndex, assume_zone  # noqa: E402
from timeline.model import CodeEvent  # noqa: E402

YEAR_START = datetime(2026, 1, 1, tzinfo=timezone.utc)
TOLERANCE_S = 60.0


def reflog(entries: int, rng: random.Random) -> list[CodeEvent]:
    events, ts, commit = [], YEAR_START.timestamp(), "0" * 40
    step = 365 * 86400 / entries
    for number in range(entries):
        ts += rng.expovariate(1 / step)
        written = ts - rng.uniform(0, 60) if rng.random() < 1 / 200 else ts  # a clock stepping back
        new = f"{rng.getrandbits(160):040x}"
        moment = datetime.fromtimestamp(int(written), timezone.utc)
        events.append(CodeEvent(f"e{number + 1}", moment, int(written), "pull", "pull", commit, new, True))
        commit = new
    return events


def main(runs: int = 100_000, entries: int = 20_000, repeats: int = 5) -> None:
    rng = random.Random(0)
    events = reflog(entries, rng)
    heads = HeadIndex(events)
    starts = [
        (YEAR_START + timedelta(seconds=rng.uniform(0, 365 * 86400))).replace(tzinfo=None, microsecond=0)
        for _ in range(runs)
    ]
    as_utc = [wall.replace(tzinfo=timezone.utc).timestamp() for wall in starts]

    def baseline():
        return [heads.commit_at(ts) for ts in as_utc]

    def assume():
        return [
            assume_zone(Attribution(commit, "exact"), heads, wall, TOLERANCE_S).attribution == "ambiguous"
            for commit, wall in zip(baseline(), starts, strict=True)
        ]

    def naive():
        offsets = [o.total_seconds() for o in REAL_OFFSETS]
        return [
            len({heads.commit_at(ts - o + d) for o in offsets for d in (-TOLERANCE_S, 0.0, TOLERANCE_S)}) > 1
            for ts in as_utc
        ]

    best: dict[str, float] = {}
    answers: dict[str, list] = {}
    for _ in range(repeats):
        for name, step in (("baseline", baseline), ("assume", assume), ("naive", naive)):
            began = time.process_time()
            answers[name] = step()
            best[name] = min(best.get(name, float("inf")), time.process_time() - began)
    if answers["assume"] != answers["naive"]:
        raise SystemExit("assume_zone and the naive way disagree on which runs are ambiguous")
    ambiguous = sum(answers["assume"])
    print(f"{runs:,} runs, {entries:,} reflog entries over a year; {ambiguous:,} ambiguous (zone assumed)")
    for name in ("baseline", "assume", "naive"):
        print(f"  {name:9s} {best[name]:7.3f} s CPU  x{best[name] / best['baseline']:6.1f} the baseline")


if __name__ == "__main__":
    main(*(int(a) for a in sys.argv[1:]))
