"""Speed and memory of ``timeline build`` against what a user would do by hand (README, Speed).

Usage::

    python benchmarks/run.py                   # 400 MB log, 3 interleaved rounds, every section
    python benchmarks/run.py --size 40MB --repeat 5
    python benchmarks/run.py --only big        # just the big-log table (also: small, samples, startup, reflog)
    python benchmarks/run.py --only small --small 3000 --small-size 20KB

It writes a deterministic SGLang log of ``--size`` shaped like real ones (``benchmarks/gen.py``:
appended launches, dated and time-only stamps, about 90% ``Decode batch`` lines with ``accept
len``, 5% uvicorn access lines, most with a ``[date time]`` header; kept in ``--work``, default
``$TMPDIR/timeline-bench``, and reused), then times in one run, interleaved (each round runs
every command once, so a change of load on a shared machine hits them all alike), ``--repeat``
rounds:

* ``cat FILE`` and ``grep -c 'Decode batch' FILE`` (the floor: reading the bytes, finding lines);
* the one-field Python loop a user writes (``for line in f: if b'Decode batch' in line:
  re.search(gen throughput)``), run by this same Python;
* ``timeline build FILE --json /dev/null --no-cache`` (a subprocess; its peak RSS from ``wait4``),
  with the default workers and with one (``TIMELINE_JOBS=1``);
* the same with the parse cache warm (a cache folder of the benchmark's own, filled first).

It prints the machine (cores, CPU model, Python, load average: the ratios are what carry over from
a busy machine; whether the SGLang line scanner was compiled), each command's median, and each
round's ratio of the loop's time to timeline's with its lowest (targets: at least 3x the loop, 2x
with one worker; peak RSS at most 300 MB). Then: ``--small`` logs of ``--small-size`` (default
1,000 of 46 KB, under the 64 KiB of a block) in one folder against one file of the same lines, one
after the other (the same runs: target within 1.3x), default workers and one, in the same
interleaved rounds as ``cat``, ``grep -c`` and the loop over the folder's logs; start-up of
``timeline --help`` and of ``timeline build`` on an empty folder (target: under 0.5 s);
``--samples`` on a ``--samples-size`` log (40 MB: time, peak RSS, bytes a stats line); and the
reflog benchmark, ``benchmarks/reflog_speed.py``.
"""

from __future__ import annotations

import argparse
import multiprocessing
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE.parent))
sys.path.insert(0, str(HERE))

from gen import GENERATOR_VERSION, TIME_ONLY_EVERY, write_decode_log, write_small_logs  # noqa: E402

LOOP = r"""
import re, sys
pattern = re.compile(rb"gen throughput \(token/s\): ([0-9.]+)")
total = 0.0
count = 0
for name in sys.argv[1:]:
    with open(name, "rb") as f:
        for line in f:
            if b"Decode batch" in line:
                m = pattern.search(line)
                if m:
                    total += float(m.group(1))
                    count += 1
print(count, total / max(count, 1))
"""


def size_arg(text: str) -> int:
    units = {"KB": 10**3, "MB": 10**6, "GB": 10**9, "K": 10**3, "M": 10**6, "G": 10**9}
    upper = text.strip().upper()
    for unit, factor in units.items():
        if upper.endswith(unit):
            return int(float(upper[: -len(unit)]) * factor)
    return int(upper)


def timeline_cmd() -> list[str]:
    script = Path(sys.executable).with_name("timeline")
    return [str(script)] if script.exists() else [sys.executable, "-m", "timeline"]


def run(cmd: list[str], *, env: dict[str, str] | None = None) -> tuple[float, float, int]:
    """Wall time (s), CPU time (s: user and system, its worker processes included) and peak RSS
    (bytes) of one command, its output thrown away."""
    start = time.perf_counter()
    # stdout is a pipe, not /dev/null: GNU grep stops at the first match when it writes to /dev/null.
    proc = subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, env=env)
    assert proc.stdout is not None
    while proc.stdout.read(1 << 16):
        pass
    _, status, usage = os.wait4(proc.pid, 0)
    elapsed = time.perf_counter() - start
    proc.returncode = os.waitstatus_to_exitcode(status)
    if proc.returncode not in (0, 3):
        raise SystemExit(f"failed ({proc.returncode}): {' '.join(cmd)}")
    return elapsed, usage.ru_utime + usage.ru_stime, usage.ru_maxrss * 1024


Timings = dict[str, tuple[list[float], list[float], int]]  # name: (wall times, CPU times, peak RSS)


def interleaved(commands: dict[str, list[str]], repeat: int) -> Timings:
    """Each command's wall and CPU times (one a round) and largest peak RSS, the commands taking
    turns."""
    times: Timings = {name: ([], [], 0) for name in commands}
    for _ in range(repeat):
        for name, cmd in commands.items():
            elapsed, cpu, peak = run(cmd)
            walls, cpus, rss = times[name]
            walls.append(elapsed)
            cpus.append(cpu)
            times[name] = (walls, cpus, max(rss, peak))
    return times


def ratios(slow: list[float], fast: list[float]) -> str:
    """Round by round, how many times faster ``fast`` ran than ``slow`` (wall-clock: the user's
    wait): the lowest, and all."""
    each = [s / f for s, f in zip(slow, fast, strict=True)]
    return f"lowest {min(each):.2f}x (rounds: {', '.join(f'{r:.2f}x' for r in each)})"


def machine() -> str:
    model = "?"
    try:
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            if line.startswith("model name"):
                model = line.split(":", 1)[1].strip()
                break
    except OSError:
        pass
    load = ", ".join(f"{x:.1f}" for x in os.getloadavg())
    return (
        f"{os.cpu_count()} cores, {model}, Python {sys.version.split()[0]}, load average {load}, "
        f"SGLang line scanner: {scanner()}"
    )


def scanner() -> str:
    """Which line scanner the installed timeline reads SGLang blocks with (parsers/_scan.c is an
    optional extension: numpy does its work where it was not built)."""
    code = "from timeline.parsers import sglang_fast; print(sglang_fast.COMPILED_SCANNER)"
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, cwd=tempfile.gettempdir())
    return {"True": "compiled (parsers/_scan.c)", "False": "numpy (parsers/_scan.c not built)"}.get(
        done.stdout.strip(), "unknown"
    )


def one_worker(cmd: list[str]) -> list[str]:
    return ["env", "TIMELINE_JOBS=1", *cmd]


TIME_ONLY = [TIME_ONLY_EVERY]  # --time-only-every


def in_child(write, *args) -> None:
    """``write(*args)`` in a child process. Generating a log takes memory (a one-run log is held
    whole), which Python keeps; and Linux keeps a process's peak RSS across ``exec``, so every
    command started from this process would report at least that as its own peak."""
    child = multiprocessing.get_context("fork").Process(target=write, args=args)
    child.start()
    child.join()
    if child.exitcode:
        raise SystemExit(f"writing the benchmark's logs failed ({child.exitcode})")


def decode_log(work: Path, size: int, one_run: bool = False) -> Path:
    """The generated log of ``size`` bytes (``one_run``: one launch all through), written the first time."""
    every = TIME_ONLY[0]
    shape = ("-one-run" if one_run else "") + ("" if every == TIME_ONLY_EVERY else f"-t{every}")
    log = work / f"decode-{size}{shape}-v{GENERATOR_VERSION}.log"
    if not log.exists():
        print(f"writing {log} ...", flush=True)
        in_child(write_decode_log, log.with_suffix(".tmp"), size, 0, one_run, every)
        log.with_suffix(".tmp").rename(log)
        # A log modified in the last seconds is still being written: the parse cache skips it.
        past = time.time() - 60
        os.utime(log, (past, past))
    return log


def big(work: Path, size: int, repeat: int) -> None:
    log = decode_log(work, size)
    mb = log.stat().st_size / 1e6
    lines = subprocess.run(["wc", "-l", str(log)], capture_output=True, text=True).stdout.split()[0]
    print(f"\n== one SGLang log shaped like real ones: {mb:.0f} MB, {lines} lines ({repeat} rounds, interleaved)")
    # The parse cache (timeline.cache) of a folder of this run's own, filled before the timings.
    cache = work / "cache"
    shutil.rmtree(cache, ignore_errors=True)
    build = [*timeline_cmd(), "build", str(log), "--json", "/dev/null"]
    warm = ["env", f"TIMELINE_CACHE_DIR={cache}", *build]
    run(warm)
    commands = {
        "cat": ["cat", str(log)],
        "grep -c 'Decode batch'": ["grep", "-c", "Decode batch", str(log)],
        "one-field Python loop": [sys.executable, "-c", LOOP, str(log)],
        "timeline build --json /dev/null": [*build, "--no-cache"],
        "  the same, one worker": one_worker([*build, "--no-cache"]),
        "  the same, parse cache warm": warm,
    }
    results = interleaved(commands, repeat)
    shutil.rmtree(cache, ignore_errors=True)
    loop = results["one-field Python loop"][0]
    print(f"{'':34s} {'median s':>8s} {'MB/s':>8s} {'vs loop':>8s} {'CPU s':>6s} {'peak RSS':>9s}")
    for name, (times, cpus, peak) in results.items():
        seconds = statistics.median(times)
        print(
            f"{name:34s} {seconds:8.2f} {mb / seconds:8.0f} {statistics.median(loop) / seconds:7.2f}x "
            f"{statistics.median(cpus):6.2f} {peak / 2**20:6.0f} MB"
        )
    tl, one = results["timeline build --json /dev/null"], results["  the same, one worker"]
    grep = results["grep -c 'Decode batch'"][0]
    print(f"timeline vs loop: {ratios(loop, tl[0])} (target >= 3x)")
    print(f"  one worker:     {ratios(loop, one[0])} (target >= 2x)")
    print(f"  in CPU time:    {ratios(results['one-field Python loop'][1], tl[1])}")
    print(f"  one worker, CPU: {ratios(results['one-field Python loop'][1], one[1])}")
    print(
        f"timeline vs grep -c: {statistics.median(tl[0]) / statistics.median(grep):.1f}x slower; "
        f"peak RSS {tl[2] / 2**20:.0f} MB, one worker {one[2] / 2**20:.0f} MB (target <= 300 MB)"
    )


# timeline with every run's series kept to the end, as before runs were digested as they end. A
# function of __main__, not a lambda: a piece's task names it, and the workers are handed it by name.
KEEP_SERIES = """
import sys
from timeline import builder
def kept(run):
    return None
builder.digest_series = kept
from timeline.__main__ import main
sys.argv[0] = 'timeline'
main()
"""


def memory(work: Path, size: int, larger: int, repeat: int) -> None:
    """Peak RSS without ``--samples`` on a log and on a ``larger`` one (the same launches, more
    of them): flat, as each run's series is digested as it ends; against the same build with the
    series kept to the end (the former way), in the same run."""
    logs = [decode_log(work, size), decode_log(work, larger)]
    print(f"\n== memory without --samples: peak RSS ({repeat} rounds, interleaved)")
    commands = {}
    for log in logs:
        mb = log.stat().st_size / 1e6
        args = ["build", str(log), "--json", "/dev/null", "--no-cache"]
        commands[f"{mb:.0f} MB"] = [*timeline_cmd(), *args]
        commands[f"{mb:.0f} MB, series kept"] = [sys.executable, "-c", KEEP_SERIES, *args]
    results = interleaved(commands, repeat)
    for name, (times, cpus, peak) in results.items():
        print(
            f"{name:34s} {statistics.median(times):8.2f} s {statistics.median(cpus):6.2f} s CPU {peak / 2**20:6.0f} MB"
        )
    names = list(results)
    print(
        f"larger / smaller log peak RSS: {results[names[2]][2] / results[names[0]][2]:.2f}x "
        f"(target within 1.10x); series kept: {results[names[3]][2] / results[names[1]][2]:.2f}x"
    )


def small(work: Path, count: int, each: int, repeat: int) -> None:
    folder = work / f"small-{count}x{each}-v{GENERATOR_VERSION}"
    if not folder.exists():
        print(f"writing {count} logs to {folder} ...", flush=True)
        in_child(write_small_logs, folder.with_name(folder.name + ".tmp"), count, each)
        folder.with_name(folder.name + ".tmp").rename(folder)
    logs = sorted(folder.iterdir())
    total = sum(p.stat().st_size for p in logs)
    # The same lines in one file (the logs one after the other): the same runs and values, and
    # the cost of a file (opening, detecting, a parser, a worker's result) on top in the folder.
    # Not only that: a time-only launch (every third, gen.TIME_ONLY_EVERY) is dated from its own
    # log's mtime in the folder, and left without a time in one file, where a dated launch
    # follows it (the file's mtime dates its last lines only): the folder also dates a third of
    # the runs, and says so (1,333 warnings for the 1,000 logs against 2).
    one = work / f"{folder.name}-joined.log"
    if not one.exists():
        with open(one.with_suffix(".tmp"), "wb") as out:
            for log in logs:
                out.write(log.read_bytes())
        one.with_suffix(".tmp").rename(one)
    print(
        f"\n== {count} small logs ({total / count / 1e3:.0f} KB each) in one folder vs the same lines in one file "
        f"({total / 1e6:.0f} MB; {repeat} rounds, interleaved)"
    )
    build = [*timeline_cmd(), "build", "--json", "/dev/null", "--no-cache"]
    names = [str(log) for log in logs]
    results = interleaved(
        {
            "cat (the folder's logs)": ["cat", *names],
            "grep -c 'Decode batch' (the logs)": ["grep", "-c", "Decode batch", *names],
            "one-field Python loop (the logs)": [sys.executable, "-c", LOOP, *names],
            "folder": [*build, str(folder)],
            "one file": [*build, str(one)],
            "folder, one worker": one_worker([*build, str(folder)]),
            "one file, one worker": one_worker([*build, str(one)]),
        },
        repeat,
    )
    loop = results["one-field Python loop (the logs)"]
    print(f"{'':34s} {'median s':>8s} {'MB/s':>8s} {'vs loop':>8s} {'CPU s':>6s} {'peak RSS':>9s}")
    for name, (times, cpus, peak) in results.items():
        seconds = statistics.median(times)
        print(
            f"{name:34s} {seconds:8.2f} {total / 1e6 / seconds:8.0f} {statistics.median(loop[0]) / seconds:7.2f}x "
            f"{statistics.median(cpus):6.2f} {peak / 2**20:6.0f} MB"
        )
    print(f"folder vs loop: {ratios(loop[0], results['folder'][0])}")
    print(f"  one worker:   {ratios(loop[0], results['folder, one worker'][0])}")
    for label, (a, b), what in (
        ("folder / one file:", ("folder", "one file"), 0),
        ("  one worker:      ", ("folder, one worker", "one file, one worker"), 0),
        ("  in CPU time:     ", ("folder", "one file"), 1),
        ("  one worker, CPU: ", ("folder, one worker", "one file, one worker"), 1),
    ):
        each = [f / o for f, o in zip(results[a][what], results[b][what], strict=True)]
        print(f"{label} best round {min(each):.2f}x, worst {max(each):.2f}x (target <= 1.3x)")


def samples(work: Path, size: int, repeat: int) -> None:
    """``--samples``: every stats line kept (``timeline.columns.SampleRows``) and written to the JSON,
    on a log of one long run (the samples of a run are all kept until it ends)."""
    log = decode_log(work, size, one_run=True)
    mb = log.stat().st_size / 1e6
    with open(log, "rb") as f:
        stats = sum(1 for line in f if b"Decode batch" in line or b"Prefill batch" in line)
    out = work / "samples.json"
    print(f"\n== --samples: a {mb:.0f} MB log of one run, {stats} stats lines (median of {repeat}, interleaved)")
    results = interleaved(
        {
            "timeline build --json FILE": [*timeline_cmd(), "build", str(log), "--json", str(out), "--no-cache"],
            "  the same with --samples": [
                *timeline_cmd(),
                "build",
                str(log),
                "--json",
                str(out),
                "--no-cache",
                "--samples",
            ],
        },
        repeat,
    )
    written = out.stat().st_size / 1e6
    out.unlink()
    for name, (times, _, peak) in results.items():
        seconds = statistics.median(times)
        print(f"{name:34s} {seconds:8.2f} s {mb / seconds:8.1f} MB/s {peak / 2**20:6.0f} MB peak RSS")
    extra = results["  the same with --samples"][2] - results["timeline build --json FILE"][2]
    print(
        f"--samples: {extra / stats:.0f} bytes of peak RSS a stats line (a dict a line took about 1,000); "
        f"JSON {written:.0f} MB"
    )


def startup(work: Path, repeat: int) -> None:
    empty = work / "empty"
    empty.mkdir(exist_ok=True)
    print(f"\n== start-up (median of {max(repeat, 5)})")
    results = interleaved(
        {
            "timeline --help": [*timeline_cmd(), "--help"],
            "timeline build EMPTY --json /dev/null": [
                *timeline_cmd(),
                "build",
                str(empty),
                "--json",
                "/dev/null",
                "--allow-empty",  # (no log is an error without it: exit status 1)
            ],
            "python -c pass (floor)": [sys.executable, "-c", "pass"],
        },
        max(repeat, 5),
    )
    for name, (times, _, _) in results.items():
        print(f"{name:40s} {statistics.median(times):6.3f} s (target < 0.5 s)")
    print("import costs: python -X importtime -m timeline --help 2>&1 | sort -t'|' -k2 -n | tail")


def reflog(repeat: int) -> None:
    script = HERE / "reflog_speed.py"
    print("\n== 100,000-entry reflog")
    if script.exists():
        subprocess.run([sys.executable, str(script)], check=False)
        subprocess.run([sys.executable, str(script), "--checkout", "100000", "--history", "30000"], check=False)
    else:
        print("benchmarks/reflog_speed.py is not here (the reflog benchmark lives there): skipped")


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--size", type=size_arg, default=size_arg("400MB"), help="size of the big log (default 400MB)")
    ap.add_argument("--repeat", type=int, default=3, help="rounds of each timing (default 3; the median is shown)")
    ap.add_argument("--small", type=int, default=1000, help="how many small logs (default 1000)")
    ap.add_argument(
        "--small-size", type=size_arg, default=size_arg("46KB"), help="size of each (default 46KB: under 64 KiB)"
    )
    ap.add_argument(
        "--work",
        type=Path,
        default=Path(tempfile.gettempdir()) / "timeline-bench",
        help="where the generated logs are kept and reused",
    )
    ap.add_argument(
        "--samples-size",
        type=size_arg,
        default=size_arg("40MB"),
        help="size of the log built with --samples (default 40MB)",
    )
    ap.add_argument(
        "--only",
        choices=["big", "small", "samples", "memory", "startup", "reflog"],
        action="append",
        help="run only these sections (repeatable)",
    )
    ap.add_argument(
        "--memory-size", type=size_arg, default=None, help="the larger log of the memory section (default 4x --size)"
    )
    ap.add_argument(
        "--time-only-every",
        type=int,
        default=TIME_ONLY_EVERY,
        help=f"every Nth launch stamped with the time only (default {TIME_ONLY_EVERY}; 0: all dated)",
    )
    ap.add_argument("--clean", action="store_true", help="delete the generated logs first")
    args = ap.parse_args()
    TIME_ONLY[0] = args.time_only_every
    # An installed timeline runs from compiled bytecode: with PYTHONDONTWRITEBYTECODE set (some
    # shells and containers set it) every run would compile its modules again, tenths of a second
    # a run that a user never pays. Bytecode goes to the work folder, not into the checkout.
    os.environ.pop("PYTHONDONTWRITEBYTECODE", None)
    os.environ.setdefault("PYTHONPYCACHEPREFIX", str(args.work / "pycache"))
    if args.clean and args.work.exists():
        shutil.rmtree(args.work)
    args.work.mkdir(parents=True, exist_ok=True)
    only = set(args.only or ["big", "small", "samples", "memory", "startup", "reflog"])
    print(f"machine: {machine()}")
    if "big" in only:
        big(args.work, args.size, args.repeat)
    if "small" in only:
        small(args.work, args.small, args.small_size, args.repeat)
    if "samples" in only:
        samples(args.work, args.samples_size, args.repeat)
    if "memory" in only:
        memory(args.work, args.size, args.memory_size or 4 * args.size, args.repeat)
    if "startup" in only:
        startup(args.work, args.repeat)
    if "reflog" in only:
        reflog(args.repeat)


if __name__ == "__main__":
    main()
