"""How fast a 100,000-entry reflog is read, against plain ``bytes.split`` of the same file.

Run (from the repository root, in the project's virtualenv)::

    python benchmarks/reflog_speed.py            # 100,000 entries, best of 5
    python benchmarks/reflog_speed.py 250000 3   # other entry count / repeats

It builds a realistic ``logs/HEAD`` in memory (commits, checkouts, pulls, a rebase burst every
so often; 40-hex ids; ~160 bytes a line), then times, in this same process:

- ``baseline``: ``data.split(b"\\n")`` -- the floor any line-based reader pays;
- ``parse``: ``timeline.git.reflog.parse_reflog`` (tolerant parser, entries in file order);
- ``group``: ``timeline.git.classify.group_entries`` (message -> kind, burst collapse);
- ``events``: the whole reading pipeline of ``read_history`` minus git object queries
  (``_build`` on a real checkout whose HEAD log is this file, commit listing disabled).

Times are the best of N rounds (each round runs every step once, so a change of load hits
them all alike), wall-clock and CPU (``process_time``, which other processes on a busy machine
do not inflate); the CPU ratio to the baseline is what to compare across machines. This is a
benchmark, not a test: nothing here fails; the issue's target is "well under a second" for
``events``.
"""

from __future__ import annotations

import os
import random
import subprocess
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from timeline.git import history as history_module  # noqa: E402
from timeline.git.classify import group_entries  # noqa: E402
from timeline.git.reflog import parse_reflog  # noqa: E402


def build_log(entries: int, seed: int = 4) -> bytes:
    rng = random.Random(seed)
    shas = [f"{rng.getrandbits(160):040x}" for _ in range(2000)]
    lines: list[bytes] = []
    ts = 1_700_000_000
    cur = shas[0]
    i = 0
    while len(lines) < entries:
        ts += rng.randint(1, 900)
        i += 1
        roll = rng.random()
        if roll < 0.02 and len(lines) + 4 <= entries:          # a pull --rebase burst
            a, b = rng.choice(shas), rng.choice(shas)
            for old, new, msg in ((cur, a, f"pull --rebase origin main (start): checkout {a}"),
                                  (a, b, "pull --rebase origin main (pick): local change"),
                                  (b, b, "pull --rebase origin main (finish): returning to refs/heads/main")):
                lines.append(f"{old} {new} Ann Tester <ann@example.com> {ts} +0100\t{msg}".encode())
            cur = b
            continue
        new = rng.choice(shas)
        if roll < 0.6:
            msg = f"commit: change number {i} to the scheduler and the kv cache"
        elif roll < 0.8:
            msg = f"checkout: moving from main to feature-{i % 50}"
        elif roll < 0.9:
            msg = "pull origin main: Fast-forward"
        else:
            msg = "reset: moving to HEAD~1"
        lines.append(f"{cur} {new} Ann Tester <ann@example.com> {ts} +0100\t{msg}".encode())
        cur = new
    return b"\n".join(lines[:entries]) + b"\n"


def best(fns: dict, repeats: int) -> dict[str, tuple[float, float]]:
    """Best wall-clock time and best CPU time (``process_time``: what a busy machine's other
    processes do not inflate) of each function over ``repeats`` rounds. Each round runs every
    function once, so that a change of load hits them all alike and the ratios hold."""
    results = {name: (float("inf"), float("inf")) for name in fns}
    for _ in range(repeats):
        for name, fn in fns.items():
            start, start_cpu = time.perf_counter(), time.process_time()
            fn()
            wall, cpu = time.perf_counter() - start, time.process_time() - start_cpu
            results[name] = (min(results[name][0], wall), min(results[name][1], cpu))
    return results


def main() -> None:
    entries = int(sys.argv[1]) if len(sys.argv) > 1 else 100_000
    repeats = int(sys.argv[2]) if len(sys.argv) > 2 else 5
    data = build_log(entries)
    parsed = parse_reflog(data, "logs/HEAD", 40)
    assert len(parsed.entries) == entries, (len(parsed.entries), parsed.diagnostics[:3])

    with tempfile.TemporaryDirectory(prefix="reflog-speed-") as tmp:
        repo = Path(tmp) / "repo"
        env = {k: v for k, v in os.environ.items() if not k.startswith("GIT_")}
        env.update(GIT_CONFIG_NOSYSTEM="1", GIT_CONFIG_GLOBAL="/dev/null")
        subprocess.run(["git", "init", "-q", str(repo)], check=True, env=env)
        (repo / ".git" / "logs").mkdir(exist_ok=True)
        (repo / ".git" / "logs" / "HEAD").write_bytes(data)
        loc = history_module.locate(repo)
        head = history_module.resolve_head(loc)
        real_attach = history_module._attach_commits
        history_module._attach_commits = lambda *a, **k: None      # no git object queries
        try:
            def pipeline():
                return history_module._build(loc, history_module._FilesLogs(loc), head, [])

            events = len(pipeline().events)
            results = best({
                "baseline": lambda: data.split(b"\n"),
                "parse": lambda: parse_reflog(data, "logs/HEAD", 40),
                "group": lambda: group_entries(parsed.entries),
                "events": pipeline,
            }, repeats)
        finally:
            history_module._attach_commits = real_attach

    print(f"{entries} entries, {len(data) / 1e6:.1f} MB, {events} events, best of {repeats}")
    print(f"  {'':9s} {'wall':>10s} {'cpu':>10s}   cpu vs baseline")
    base = results["baseline"][1] or results["baseline"][0]
    for name, (wall, cpu) in results.items():
        print(f"  {name:9s} {wall * 1000:7.1f} ms {cpu * 1000:7.1f} ms   {cpu / base:6.1f}x")


if __name__ == "__main__":
    main()
