"""One parsing process against two, on the mixes of logs users have: when do workers pay?

Usage (from the repository root, in the project's virtualenv)::

    python benchmarks/workers_speed.py                  # every mix, 5 rounds
    python benchmarks/workers_speed.py --only small --only 30x10MB --repeat 3

The mixes (``benchmarks/gen.py``'s logs, shaped like real ones; kept in ``--work`` and reused):
one 400 MB log; 1,000 logs of 46 KB (under 64 KiB each), 200, 100 and 10 of them; 16, 4, 3 and
2 logs of one 3 MB launch each; 30, 5, 3 and 2 logs of 10 MB; 4 logs of 100 MB. Between them,
the logs besides the largest (what a second process can take over) hold from 0.4 MB to 300 MB. For each, ``timeline
build FOLDER --json /dev/null --no-cache`` with ``TIMELINE_JOBS=1`` (no workers: the main
process parses) and with ``TIMELINE_JOBS=2`` (two worker processes parse, the main one
assembles the results as they come), interleaved: each round runs both, so a change of load on
a shared machine hits them alike. Lowest of the rounds:

- ``wall``: what the user waits for, on this machine as loaded as it is;
- ``cpu``: user and system time of every process (main and workers: ``wait4``): the cost;
- ``main cpu``: the main process alone (``getrusage(RUSAGE_SELF)`` in it). With two workers
  on two otherwise idle cores, the build cannot end before the main process has done its part,
  nor before the workers have done theirs: ``max(main cpu, (cpu - main cpu) / 2)`` is the wall
  time to expect on such a machine (``idle``), whatever the load here. With one process it is
  ``cpu``.

A single log is parsed by one process whatever ``TIMELINE_JOBS`` says (no more workers than
logs), so the 400 MB row checks that two asked for cost nothing there. The machine line gives
the cores, CPU model, Python and load average.
"""

from __future__ import annotations

import argparse
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE.parent))
sys.path.insert(0, str(HERE))

from gen import GENERATOR_VERSION, write_decode_log, write_small_logs  # noqa: E402
from run import machine  # noqa: E402

# timeline's command line, run in a process that then reports its own CPU time (without the
# workers it forked and waited for) into the file named by the environment.
MAIN = r"""
import os, resource, sys
from timeline.__main__ import main
sys.argv = ["timeline", *sys.argv[1:]]
try:
    main()
finally:
    usage = resource.getrusage(resource.RUSAGE_SELF)
    with open(os.environ["WORKERS_SPEED_MAIN_CPU"], "w") as out:
        out.write(str(usage.ru_utime + usage.ru_stime))
"""

MIXES = {  # name: (what it is, count, bytes each, small-log generator: one short launch a file;
    # else whole launches of 3 MB until the size is reached: 1 byte is one launch)
    "400MB": ("one 400 MB log", 1, 400_000_000, False),
    "small": ("1,000 logs of 46 KB", 1000, 46_000, True),
    "200small": ("200 logs of 46 KB", 200, 46_000, True),
    "100small": ("100 logs of 46 KB", 100, 46_000, True),
    "10small": ("10 logs of 46 KB", 10, 46_000, True),
    "16x3MB": ("16 logs of 3 MB", 16, 1, False),
    "4x3MB": ("4 logs of 3 MB", 4, 1, False),
    "3x3MB": ("3 logs of 3 MB", 3, 1, False),
    "2x3MB": ("2 logs of 3 MB", 2, 1, False),
    "5x10MB": ("5 logs of 10 MB", 5, 10_000_000, False),
    "3x10MB": ("3 logs of 10 MB", 3, 10_000_000, False),
    "2x10MB": ("2 logs of 10 MB", 2, 10_000_000, False),
    "30x10MB": ("30 logs of 10 MB", 30, 10_000_000, False),
    "4x100MB": ("4 logs of 100 MB", 4, 100_000_000, False),
}


def folder_of(work: Path, name: str) -> Path:
    label, count, each, small = MIXES[name]
    folder = work / f"workers-{name}-v{GENERATOR_VERSION}"
    if folder.exists():
        return folder
    print(f"writing {label} to {folder} ...", flush=True)
    scratch = folder.with_name(folder.name + ".tmp")
    if small:
        write_small_logs(scratch, count, each)
    else:
        for i in range(count):
            write_decode_log(scratch / f"server-{i:04d}.log", each, seed=i)
    past = time.time() - 60  # a log modified in the last seconds is still being written
    for log in scratch.iterdir():
        os.utime(log, (past, past))
    scratch.rename(folder)
    return folder


def build(folder: Path, jobs: int, scratch: Path) -> tuple[float, float, float]:
    """Wall, CPU of every process, CPU of the main process (seconds) of one build."""
    report = scratch / "main-cpu"
    env = dict(os.environ, TIMELINE_JOBS=str(jobs), WORKERS_SPEED_MAIN_CPU=str(report))
    cmd = [sys.executable, "-c", MAIN, "build", str(folder), "--json", os.devnull, "--no-cache"]
    start = time.perf_counter()
    proc = subprocess.Popen(cmd, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, env=env)
    _, status, usage = os.wait4(proc.pid, 0)
    wall = time.perf_counter() - start
    if os.waitstatus_to_exitcode(status) not in (0, 3):
        raise SystemExit(f"failed ({os.waitstatus_to_exitcode(status)}): {' '.join(cmd[3:])}")
    return wall, usage.ru_utime + usage.ru_stime, float(report.read_text())


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--repeat", type=int, default=5, help="rounds (default 5; the lowest is shown)")
    ap.add_argument("--only", choices=list(MIXES), action="append", help="these mixes only (repeatable)")
    ap.add_argument("--work", type=Path, default=Path(tempfile.gettempdir()) / "timeline-bench")
    args = ap.parse_args()
    names = args.only or list(MIXES)
    args.work.mkdir(parents=True, exist_ok=True)
    folders = {name: folder_of(args.work, name) for name in names}
    print(f"machine: {machine()}")
    print(f"one process (TIMELINE_JOBS=1) against two workers (TIMELINE_JOBS=2), lowest of {args.repeat}, interleaved")
    print(f"  {'':30s} {'wall':>8s} {'cpu':>8s} {'main cpu':>9s} {'idle':>8s}")
    with tempfile.TemporaryDirectory(prefix="workers-speed-") as scratch:
        for name in names:
            folder = folders[name]
            megabytes = sum(p.stat().st_size for p in folder.iterdir()) / 1e6
            lowest = {jobs: [float("inf")] * 3 for jobs in (1, 2)}
            for _ in range(args.repeat):
                for jobs in (1, 2):
                    lowest[jobs] = [
                        min(a, b) for a, b in zip(lowest[jobs], build(folder, jobs, Path(scratch)), strict=True)
                    ]
            print(f"  {MIXES[name][0]} ({megabytes:.0f} MB)")
            (w1, c1, m1), (w2, c2, m2) = lowest[1], lowest[2]
            idle2 = max(m2, (c2 - m2) / 2)
            for label, (wall, cpu, main_cpu, idle) in (
                ("one process", (w1, c1, m1, c1)),
                ("two workers", (w2, c2, m2, idle2)),
            ):
                print(f"    {label:28s} {wall:6.2f} s {cpu:6.2f} s {main_cpu:7.2f} s {idle:6.2f} s")
            print(
                f"    two / one: wall {w2 / w1:.2f}x, cpu {c2 / c1:.2f}x, idle {idle2 / c1:.2f}x "
                f"(load average now {os.getloadavg()[0]:.1f})",
                flush=True,
            )


if __name__ == "__main__":
    main()
