"""A gzip bomb given as a log: 16 MB of ``.gz`` that expands to 4 GB of SGLang stats lines. With
the default expansion budget (a compressed log is read up to 50 times its size,
``TIMELINE_MAX_EXPANSION``; README, "Log formats read") ``timeline build`` stops after 800 MB
of it and says so; without a budget it read all 4 GB: 138 s, and 554 s and 5.2 GB with
``--samples``.

Run (from the repository root, in the project's virtualenv)::

    python benchmarks/expansion_bomb.py                       # 4 GB expanded, 3 interleaved rounds
    python benchmarks/expansion_bomb.py --repeat 5 --expanded 1GB
    python benchmarks/expansion_bomb.py --unlimited           # also the whole bomb (minutes, GBs)

The bomb (written once into ``--work``, default ``$TMPDIR/timeline-bench``, and reused): one
SGLang launch, then ``Decode batch`` lines, 64 identical ones a second (the stamp and the
throughput change each second), gzip level 6: 248 times smaller than its text, the shape of the
issue's 16 MB to 4 GB. Each round runs, one after the other:

- ``floor``: ``gzip -dc BOMB | head -c BUDGET``: decompressing the bytes the budget lets through,
  and nothing else (the least a reader that stops there can cost);
- ``build``: ``timeline build BOMB --json /dev/null --no-cache`` with the default budget;
- ``build --samples``: the same, keeping every stats line;
- with ``--unlimited``, both again with ``TIMELINE_MAX_EXPANSION`` big enough for the whole bomb.

It prints the machine, each command's lowest wall and CPU time and lowest peak RSS over the
rounds, and each one's ratio to the floor of the same round, wall and CPU (the lowest over the
rounds; on a busy machine the CPU ratio is the steadier). Before the rounds, one
build checks that the budget stopped the read: exit status 0, the warning naming the file and
the variable. This is a benchmark, not a test: nothing here fails but that check.
"""

from __future__ import annotations

import argparse
import gzip
import os
import random
import subprocess
import sys
import tempfile
from datetime import datetime, timedelta
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE.parent))
sys.path.insert(0, str(HERE))

from run import machine, run, size_arg, timeline_cmd  # noqa: E402

from parsers.framing import MAX_EXPANSION, MIN_EXPANSION_BYTES  # noqa: E402
from timeline.scenario import Launch, sglang_launch_lines  # noqa: E402

BOMB_VERSION = 1  # bump when the bomb's text changes (cached files are named by it)
LINES_A_SECOND = 64
DECODE = (
    "[{stamp}] Decode batch, #running-req: 32, #token: 48213, token usage: 0.11, accept len: 3.12, "
    "cuda graph: True, gen throughput (token/s): {throughput:.2f}, #queue-req: 0\n"
)


def bomb(work: Path, expanded: int) -> Path:
    """The ``.gz`` log that expands to ``expanded`` bytes, written the first time."""
    path = work / f"bomb-{expanded}-v{BOMB_VERSION}.log.gz"
    if path.exists():
        return path
    work.mkdir(parents=True, exist_ok=True)
    start = datetime(2026, 3, 2, 10, 0)
    launch = Launch(start, minutes=1, throughput=90.0)
    header = "".join(line + "\n" for line in sglang_launch_lines(launch, random.Random(0))[:12])
    partial = path.with_suffix(".partial")
    with gzip.open(partial, "wb", compresslevel=6) as out:
        out.write(header.encode())
        written, second = len(header), 0
        moment = start + timedelta(seconds=90)
        while written < expanded:
            stamp = (moment + timedelta(seconds=second)).strftime("%Y-%m-%d %H:%M:%S")
            block = (DECODE.format(stamp=stamp, throughput=2400 + (second % 200) * 0.37) * LINES_A_SECOND).encode()
            out.write(block)
            written += len(block)
            second += 1
    partial.rename(path)
    return path


def check_the_budget_stops_it(cmd: list[str], log: Path) -> str:
    """The warning line of a build of the bomb with the default budget (exit status 0)."""
    done = subprocess.run(cmd, capture_output=True, text=True, check=False)
    warnings = [line for line in done.stderr.splitlines() if "TIMELINE_MAX_EXPANSION" in line]
    if done.returncode != 0 or len(warnings) != 1 or str(log) not in warnings[0]:
        raise SystemExit(f"the budget did not stop the read (exit {done.returncode}):\n{done.stderr[-2000:]}")
    return warnings[0]


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--expanded", type=size_arg, default=size_arg("4GB"), help="the bomb's text (default 4GB)")
    ap.add_argument("--repeat", type=int, default=3, help="rounds (default 3; the lowest of each is shown)")
    ap.add_argument("--unlimited", action="store_true", help="also build the whole bomb, as before the budget")
    ap.add_argument(
        "--work", type=Path, default=Path(tempfile.gettempdir()) / "timeline-bench", help="where the bomb is kept"
    )
    args = ap.parse_args()

    log = bomb(args.work, args.expanded)
    size = log.stat().st_size
    budget = max(MIN_EXPANSION_BYTES, int(MAX_EXPANSION * size))
    print(machine())
    print(f"bomb: {log} ({size / 1e6:.1f} MB, {args.expanded / 1e9:.2f} GB expanded, {args.expanded / size:.0f}x)")
    print(f"budget: {budget / 1e6:.0f} MB ({MAX_EXPANSION:g} times the file)")

    build = [*timeline_cmd(), "build", str(log), "--log-tz", "UTC", "--json", "/dev/null", "--no-cache"]
    print(check_the_budget_stops_it(build, log))
    commands = {
        "floor": (["sh", "-c", f'gzip -dc "$0" | head -c {budget} >/dev/null', str(log)], None),
        "build": (build, None),
        "build --samples": ([*build, "--samples"], None),
    }
    if args.unlimited:
        whole = dict(os.environ, TIMELINE_MAX_EXPANSION=str(args.expanded / size * 2))
        commands["build, no budget"] = (build, whole)
        commands["build --samples, no budget"] = ([*build, "--samples"], whole)
    rounds: dict[str, list[tuple[float, float, int]]] = {name: [] for name in commands}
    for _ in range(args.repeat):
        for name, (cmd, env) in commands.items():
            rounds[name].append(run(cmd, env=env))
    floor = rounds["floor"]
    print(f"{'':28} {'wall s':>8} {'CPU s':>8} {'peak RSS MB':>12}   to the floor, lowest: wall, CPU")
    for name, results in rounds.items():
        walls = min(w / f for (w, _, _), (f, _, _) in zip(results, floor, strict=True))
        cpus = min(c / f for (_, c, _), (_, f, _) in zip(results, floor, strict=True))
        print(
            f"{name:28} {min(r[0] for r in results):8.2f} {min(r[1] for r in results):8.2f} "
            f"{min(r[2] for r in results) / 1e6:12.0f}   {walls:.1f}x, {cpus:.1f}x"
        )


if __name__ == "__main__":
    main()
