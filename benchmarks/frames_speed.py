"""Speed and memory of ``timeline.samples_frame()`` on a big build (README, Speed).

Usage::

    python benchmarks/frames_speed.py                 # 400 MB log (about 2 million stats lines), 3 rounds
    python benchmarks/frames_speed.py --size 40MB --repeat 5

It writes the deterministic decode-heavy SGLang log of ``benchmarks/gen.py`` (kept in ``--work``,
default ``$TMPDIR/timeline-bench``, and reused), builds it once with ``keep_samples=True`` (no
parse cache), then times, interleaved, ``--repeat`` times each, in this one process:

* ``timeline.samples_frame(result)``: the frame, column by column from the typed sample store;
* the baseline, what a user would write without it: ``pandas.DataFrame`` of every sample row as
  a dict (``run.samples[kind]`` iterated), with the run id and kind, times made UTC.

For each it reports the lowest wall time of the rounds and the peak resident memory of the
process during the call (``VmHWM``, reset before each call through ``/proc/self/clear_refs``;
the built timeline itself is part of it, as it is in a notebook), and the ratio of the two
times. Targets (2 million stats lines): ``samples_frame`` under 3 s and under 800 MB peak.
"""

from __future__ import annotations

import argparse
import gc
import os
import sys
import tempfile
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE.parent))
sys.path.insert(0, str(HERE))

from gen import GENERATOR_VERSION, write_decode_log  # noqa: E402
from run import size_arg  # noqa: E402

import timeline  # noqa: E402


def peak_reset() -> bool:
    """Reset the process's peak RSS (Linux 4.0+); False where that cannot be done."""
    try:
        with open("/proc/self/clear_refs", "w") as handle:
            handle.write("5")
        return True
    except OSError:
        return False


def peak_rss() -> int:
    """The process's peak resident memory since the last reset, in bytes (``VmHWM``)."""
    with open("/proc/self/status") as handle:
        for line in handle:
            if line.startswith("VmHWM:"):
                return int(line.split()[1]) * 1024
    return 0


def baseline(result) -> object:
    """A frame of every sample the way a user would make one without ``samples_frame``."""
    import pandas as pd

    rows = [
        {"run_id": run.id, "kind": kind, **row}
        for run in result.runs
        for kind, samples in (run.samples or {}).items()
        for row in samples
    ]
    frame = pd.DataFrame(rows)
    frame["time"] = pd.to_datetime(frame["time"], utc=True)
    return frame


def measure(call, result) -> tuple[float, int, int]:
    """Wall time (s), peak RSS during the call (bytes) and rows of ``call(result)``."""
    gc.collect()
    peak_reset()
    start = time.perf_counter()
    frame = call(result)
    elapsed = time.perf_counter() - start
    peak = peak_rss()
    rows = len(frame)  # type: ignore[arg-type]
    del frame
    gc.collect()
    return elapsed, peak, rows


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--size", type=size_arg, default=size_arg("400MB"))
    parser.add_argument("--repeat", type=int, default=3)
    parser.add_argument("--work", type=Path, default=Path(tempfile.gettempdir()) / "timeline-bench")
    args = parser.parse_args()
    args.work.mkdir(parents=True, exist_ok=True)
    log = args.work / f"decode-{args.size}-v{GENERATOR_VERSION}.log"
    if not log.exists():
        write_decode_log(log, args.size)
    if not peak_reset():
        print("note: /proc/self/clear_refs is not writable here: peaks include everything before")

    start = time.perf_counter()
    result = timeline.build(log, log_tz="UTC", keep_samples=True, cache=False)
    lines = sum(len(rows) for run in result.runs for rows in (run.samples or {}).values())
    built_in = time.perf_counter() - start
    print(f"{log.name}: {log.stat().st_size / 1e6:.0f} MB, {lines:,} stats lines, built in {built_in:.1f} s")
    import pandas  # noqa: F401 - imported once, outside the timings

    gc.collect()
    with open("/proc/self/statm") as handle:
        resident = int(handle.read().split()[1]) * os.sysconf("SC_PAGE_SIZE")
    print(f"resident after the build: {resident / 2**20:.0f} MiB")
    runs: dict[str, list[tuple[float, int, int]]] = {"samples_frame": [], "baseline": []}
    for _ in range(args.repeat):
        runs["samples_frame"].append(measure(timeline.samples_frame, result))
        runs["baseline"].append(measure(baseline, result))
    best = {name: min(got) for name, got in runs.items()}
    for name, (elapsed, _, rows) in best.items():
        peak = min(p for _, p, _ in runs[name])
        print(
            f"{name:>14}: {elapsed:6.2f} s (lowest of {args.repeat}), peak RSS {peak / 2**20:6.0f} MiB, {rows:,} rows"
        )
    print(f"samples_frame / baseline: {best['samples_frame'][0] / best['baseline'][0]:.2f}x the time")


if __name__ == "__main__":
    main()
