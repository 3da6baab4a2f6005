"""How fast a 100,000-entry reflog is read, against plain ``bytes.split`` of the same file; and
how fast 2,000 distinct moves are described, against one git process per move.

Run (from the repository root, in the project's virtualenv)::

    python benchmarks/reflog_speed.py            # 100,000 entries, best of 5; 2,000 moves
    python benchmarks/reflog_speed.py 250000 3   # other entry count / repeats
    python benchmarks/reflog_speed.py --moves 500 --history 5000   # other move/commit counts
    python benchmarks/reflog_speed.py --moves 0  # the reflog reading only
    python benchmarks/reflog_speed.py --checkout 100000 --history 30000   # a whole build, 5 rounds

Reading. It builds a realistic ``logs/HEAD`` in memory (commits, checkouts, pulls, a rebase
burst every so often; 40-hex ids; ~160 bytes a line), then times, in this same process:

- ``baseline``: ``data.split(b"\\n")`` -- the floor any line-based reader pays;
- ``parse``: ``timeline.git.reflog.parse_reflog`` (tolerant parser, entries in file order);
- ``group``: what the pipeline does of the entries before making events: each message read
  (``classify.heads_of``) and the bursts collapsed (``classify.special_groups``);
- ``events``: the whole reading pipeline of ``read_history`` minus git object queries
  (``_build`` on a real checkout whose HEAD log is this file, commit listing disabled).

Times are the best of N rounds (each round runs every step once, so a change of load hits
them all alike), wall-clock and CPU (``process_time``, which other processes on a busy machine
do not inflate); the CPU ratio to the baseline is what to compare across machines.

Moves. It builds a repository with ``git fast-import`` (a main line of ``--history`` commits,
a side branch merged back every 50) and a path of HEAD through it like a long-lived checkout's
(pulls and commits forward, resets back, checkouts of a side branch or of an old commit and
back): ``--moves`` distinct (old, new) pairs. Then it describes them all (the commits each
brought in and took away, with subjects, authors, dates, paths) both ways, checks that both
give the same lists, and prints wall time, CPU of this process and of the git processes, and
how many git processes ran:

- ``per-move``: the former way, ``ObjectStore.between`` per move (one ``git log
  --left-right old...new`` each), four at a time;
- ``one-walk``: ``ObjectStore.between_many``: one walk for all the moves (a ``git log
  --stdin`` from all their ends, describing each commit it reads, stopped once every move's
  commits are known).

A whole build (``--checkout ENTRIES``). It builds a checkout with ``git fast-import`` (as above,
``--history`` main-line commits) whose HEAD log has ENTRIES entries over those real commits, the
way a benchmarking checkout lives for a year: commits and pulls forward, resets back, checkouts
of a side branch or of an older commit and back (``checkout_reflog``: the lines in git's own
format, written here rather than by 100,000 git processes). Then, interleaved, the best and
the slowest of the rounds: ``git log -g`` of that checkout (git listing its own reflog: the
floor), ``timeline build EMPTY --allow-empty --repo CHECKOUT --json FILE`` (an empty folder of
logs: the reflog alone) and the same without ``--json`` (the table): wall and CPU time, peak
RSS, the JSON's size, and the load average (a busy machine's slowest round is what a user may
wait). Targets (README, Speed): under 10 s and 1 GiB, the JSON
under 100 MB.

This is a benchmark, not a test: nothing here fails (but a difference between the two ways
of describing the moves stops it); the targets (README, Speed) are "well under 1 s" for
``events`` and one git call for all the moves.
"""

from __future__ import annotations

import argparse
import json
import os
import random
import resource
import subprocess
import sys
import tempfile
import time
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
sys.path.insert(0, str(Path(__file__).resolve().parent))

from run import interleaved  # noqa: E402

from timeline.git import history as history_module  # noqa: E402
from timeline.git import objects as objects_module  # noqa: E402
from timeline.git.classify import heads_of, special_groups  # noqa: E402
from timeline.git.objects import ObjectStore, ObjectStoreError  # noqa: E402
from timeline.git.reflog import parse_reflog  # noqa: E402
from timeline.scenario import FastCommit, fast_import  # noqa: E402


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
        if roll < 0.02 and len(lines) + 4 <= entries:  # a pull --rebase burst
            a, b = rng.choice(shas), rng.choice(shas)
            for old, new, msg in (
                (cur, a, f"pull --rebase origin main (start): checkout {a}"),
                (a, b, "pull --rebase origin main (pick): local change"),
                (b, b, "pull --rebase origin main (finish): returning to refs/heads/main"),
            ):
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
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("entries", nargs="?", type=int, default=100_000)
    ap.add_argument("repeats", nargs="?", type=int, default=5)
    ap.add_argument("--moves", type=int, default=2000, help="distinct moves to describe (0: none)")
    ap.add_argument("--history", type=int, default=20_000, help="main-line commits of that repository")
    ap.add_argument(
        "--checkout",
        type=int,
        default=0,
        metavar="ENTRIES",
        help="only the whole build on a checkout whose reflog has ENTRIES entries over real commits "
        "(timeline build --json against git log -g)",
    )
    args = ap.parse_args()
    if args.checkout:
        checkout(args.checkout, args.history, args.repeats)
        return
    reading(args.entries, args.repeats)
    if args.moves:
        moves(args.moves, args.history)


def reading(entries: int, repeats: int) -> None:
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
        real_attach = history_module.attach_commits
        history_module.attach_commits = lambda *a, **k: None  # no git object queries
        try:

            def pipeline():
                return history_module._build(loc, history_module._FilesLogs(loc), head, [])

            events = len(pipeline().events)
            results = best(
                {
                    "baseline": lambda: data.split(b"\n"),
                    "parse": lambda: parse_reflog(data, "logs/HEAD", 40),
                    "group": lambda: special_groups(parsed.entries, heads_of(parsed.entries)),
                    "events": pipeline,
                },
                repeats,
            )
        finally:
            history_module.attach_commits = real_attach

    print(f"{entries} entries, {len(data) / 1e6:.1f} MB, {events} events, best of {repeats}")
    print(f"  {'':9s} {'wall':>10s} {'cpu':>10s}   cpu vs baseline")
    base = results["baseline"][1] or results["baseline"][0]
    for name, (wall, cpu) in results.items():
        print(f"  {name:9s} {wall * 1000:7.1f} ms {cpu * 1000:7.1f} ms   {cpu / base:6.1f}x")


# --------------------------------------------------------------------------- moves


def build_history(repo: Path, env: dict[str, str], commits: int, seed: int = 4) -> tuple[list[str], list[str]]:
    """A main line of ``commits`` commits, a two-commit side branch merged back every 50 (the
    side branches share the main line's clock, so dates interleave); returns (main line ids,
    side-branch tip ids), oldest first."""
    rng = random.Random(seed)
    stream: list[FastCommit] = []
    when = 1_600_000_000
    main_marks: list[int] = []
    side_marks: list[int] = []

    def commit(ref: str, parents: list[int], path: str) -> int:
        nonlocal when
        when += rng.randint(30, 600)
        stream.append(FastCommit(len(stream) + 1, tuple(parents), when, path, ref=ref, offset="+0100"))
        return len(stream)

    while len(main_marks) < commits:
        parent = main_marks[-1:]
        if len(main_marks) % 50 == 49:
            a = commit("refs/heads/side", parent, f"side/{rng.randrange(30)}.py")
            b = commit("refs/heads/side", [a], f"side/{rng.randrange(30)}.py")
            side_marks.append(b)
            main_marks.append(commit("refs/heads/main", [*parent, b], "merges.txt"))
        else:
            main_marks.append(commit("refs/heads/main", parent, f"src/{rng.randrange(200)}.py"))
    shas = fast_import(repo, stream, env)
    return [shas[m] for m in main_marks], [shas[m] for m in side_marks]


def head_path(main: list[str], sides: list[str], moves: int, seed: int = 4) -> list[tuple[str, str]]:
    """``moves`` distinct (old, new) pairs along a path of HEAD that moves up the main line."""
    rng = random.Random(seed)
    step = max(1, len(main) // (moves // 2 + 1))
    pos = 0
    at = main[0]
    pairs: dict[tuple[str, str], None] = {}
    while len(pairs) < moves:
        roll = rng.random()
        if roll < 0.70:  # commit / pull: forward
            pos = min(len(main) - 1, pos + rng.randint(1, 2 * step))
            to = main[pos]
        elif roll < 0.85:  # reset back a little
            pos = max(0, pos - rng.randint(1, 5))
            to = main[pos]
        elif roll < 0.95:  # checkout of a side branch, and back
            to = sides[min(len(sides) - 1, pos // 50)] if sides else main[pos]
        else:  # checkout of an old commit, and back
            to = main[max(0, pos - rng.randint(30, 500))]
        if to != at:
            pairs[(at, to)] = None
            at = to
        if roll >= 0.85 and at != main[pos] and len(pairs) < moves:
            pairs[(at, main[pos])] = None
            at = main[pos]
    return list(pairs)[:moves]


def per_move(store: ObjectStore, pairs: list[tuple[str, str]]) -> dict:
    """The former ``between_many``: one ``git log --left-right old...new`` per move, four at
    a time."""

    def one(pair):
        try:
            return pair, store.between(*pair)
        except ObjectStoreError as exc:
            return pair, exc

    with ThreadPoolExecutor(max_workers=4) as pool:
        return dict(pool.map(one, pairs))


def moves(count: int, history: int) -> None:
    with tempfile.TemporaryDirectory(prefix="reflog-speed-moves-") as tmp:
        repo = Path(tmp) / "repo"
        env = {k: v for k, v in os.environ.items() if not k.startswith("GIT_")}
        env.update(GIT_CONFIG_NOSYSTEM="1", GIT_CONFIG_GLOBAL="/dev/null")
        subprocess.run(["git", "init", "-q", "--bare", str(repo)], check=True, env=env)
        main_line, sides = build_history(repo, env, history)
        pairs = head_path(main_line, sides, count)
        spawned: list[int] = []
        real_popen = objects_module.subprocess.Popen

        def counting_popen(*a, **k):
            spawned.append(1)
            return real_popen(*a, **k)

        objects_module.subprocess.Popen = counting_popen
        rows = []
        try:
            with ObjectStore(repo) as store:
                results = {}
                for name, fn in (("per-move", per_move), ("one-walk", ObjectStore.between_many)):
                    spawned.clear()
                    children = resource.getrusage(resource.RUSAGE_CHILDREN)
                    start, start_cpu = time.perf_counter(), time.process_time()
                    results[name] = fn(store, pairs)
                    wall, cpu = time.perf_counter() - start, time.process_time() - start_cpu
                    after = resource.getrusage(resource.RUSAGE_CHILDREN)
                    git_cpu = (after.ru_utime + after.ru_stime) - (children.ru_utime + children.ru_stime)
                    rows.append((name, wall, cpu, git_cpu, len(spawned)))
                walked = store.walked
        finally:
            objects_module.subprocess.Popen = real_popen
        old, new = results["per-move"], results["one-walk"]
        assert old.keys() == new.keys() and all(old[p] == new[p] for p in old), "the two ways differ"
        listed = sum(len(r[0]) + len(r[1]) for r in new.values() if not isinstance(r, ObjectStoreError))

    print(
        f"\n{len(pairs)} distinct moves over {history} main-line commits ({len(sides)} side branches), "
        f"{listed} commits listed in all; the walk read {walked} commits"
    )
    print(f"  {'':9s} {'wall':>10s} {'cpu':>10s} {'git cpu':>10s} {'git processes':>14s}")
    for name, wall, cpu, git_cpu, n in rows:
        print(f"  {name:9s} {wall:8.2f} s {cpu:8.2f} s {git_cpu:8.2f} s {n:14d}")


# --------------------------------------------------------------------------- a whole build

_MESSAGES = {
    "commit": "commit: change the scheduler and the kv cache",
    "pull": "pull origin main: Fast-forward",
    "reset": "reset: moving to HEAD~{n}",
    "checkout": "checkout: moving from main to {sha}",
    "back": "checkout: moving from {sha} to main",
}


def checkout_reflog(main: list[str], sides: list[str], dates: dict[str, int], entries: int, seed: int = 4) -> bytes:
    """A HEAD log of ``entries`` lines in git's format (``old new ident time zone<TAB>message``,
    https://git-scm.com/docs/git-update-ref#_logging_updates) for a checkout that lives along
    ``main`` the way a benchmarking checkout does: commits and pulls forward, resets back,
    checkouts of a side branch or an old commit and back (a real clone's reflog, sped up: the
    commits are real objects; the lines are written here, as git writes them, rather than by
    100,000 git processes)."""
    rng = random.Random(seed)
    zero = "0" * 40
    lines = [f"{zero} {main[0]} Ann Tester <ann@example.com> {dates[main[0]] + 60} +0100\tclone: from upstream"]
    pos, at = 0, main[0]
    when = dates[main[0]] + 60
    while len(lines) < entries:
        roll = rng.random()
        if roll < 0.42:
            kind, pos = "commit", min(len(main) - 1, pos + 1)
        elif roll < 0.52:
            kind, pos = "pull", min(len(main) - 1, pos + rng.randint(2, 8))
        elif roll < 0.74:
            kind, pos = "reset", max(0, pos - rng.randint(1, 5))
        elif roll < 0.94:
            kind = "checkout"
        else:
            kind = "old"
        if kind in ("checkout", "old"):
            to = (
                sides[min(len(sides) - 1, pos // 50)]
                if kind == "checkout"
                else main[max(0, pos - rng.randint(30, 500))]
            )
            steps = [("checkout", to), ("back", main[pos])]
        else:
            steps = [(kind, main[pos])]
        for step, to in steps:
            if to == at or len(lines) >= entries:
                continue
            when = max(when + rng.randint(5, 600), dates[to])
            message = _MESSAGES[step].format(n=rng.randint(1, 5), sha=to[:12])
            lines.append(f"{at} {to} Ann Tester <ann@example.com> {when} +0100\t{message}")
            at = to
    return "\n".join(lines).encode() + b"\n"


def checkout(entries: int, history: int, repeats: int) -> None:
    """``timeline build EMPTY --repo CHECKOUT --json FILE`` on a checkout whose HEAD log has
    ``entries`` entries, against ``git log -g`` of the same checkout (the reflog listed by git
    itself: the floor), interleaved, ``repeats`` rounds: wall time, peak RSS, JSON size."""
    with tempfile.TemporaryDirectory(prefix="reflog-speed-checkout-") as tmp:
        repo = Path(tmp) / "repo"
        env = {k: v for k, v in os.environ.items() if not k.startswith("GIT_")}
        env.update(GIT_CONFIG_NOSYSTEM="1", GIT_CONFIG_GLOBAL="/dev/null")
        subprocess.run(["git", "init", "-q", "-b", "main", str(repo)], check=True, env=env)
        main_line, sides = build_history(repo, env, history)
        dates = dict(
            line.split()[::-1]
            for line in subprocess.run(
                ["git", "log", "--all", "--format=%ct %H"],
                cwd=repo,
                env=env,
                check=True,
                capture_output=True,
                text=True,
            ).stdout.splitlines()
        )
        log = checkout_reflog(main_line, sides, {k: int(v) for k, v in dates.items()}, entries)
        final = log.rstrip(b"\n").rsplit(b"\n", 1)[-1].split()[1].decode()
        (repo / ".git" / "refs" / "heads" / "main").write_text(final + "\n")
        (repo / ".git" / "logs" / "HEAD").write_bytes(log)
        logs = Path(tmp) / "logs"
        logs.mkdir()
        out = Path(tmp) / "timeline.json"
        timeline = [
            *[sys.executable, "-m", "timeline", "build", str(logs), "--allow-empty"],
            *["--repo", str(repo), "--no-cache"],
        ]
        commands = {
            "git log -g": ["git", "-C", str(repo), "log", "-g", "--format=%H %gs"],
            "build --json": [*timeline, "--json", str(out)],
            "build (table)": timeline,
        }
        rounds = interleaved(commands, repeats)
        size = out.stat().st_size
        document = json.loads(out.read_bytes())
        listed = sum(len(e["commits"]) + len(e["commits_removed"]) for e in document["events"])
        moves = len({(e["old"], e["new"]) for e in document["events"]})
    print(
        f"a checkout with {entries:,} reflog entries ({len(log) / 1e6:.1f} MB) over {history:,} main-line "
        f"commits: {len(document['events']):,} events, {moves:,} distinct moves, listing {listed:,} commits "
        f"({len(document['commits']):,} distinct); best of {repeats}, interleaved"
    )
    base_cpu = min(rounds["git log -g"][1])
    print(f"  {'':14s} {'wall':>8s} {'cpu':>8s} {'cpu / git log -g':>17s} {'peak RSS':>12s}   slowest round")
    for name, (walls, cpus, rss) in rounds.items():
        print(
            f"  {name:14s} {min(walls):6.2f} s {min(cpus):6.2f} s {min(cpus) / base_cpu:16.1f}x "
            f"{rss / 2**20:8.0f} MiB   {max(walls):6.2f} s wall, {max(cpus):6.2f} s cpu"
        )
    print(f"  load average {' '.join(f'{load:.2f}' for load in os.getloadavg())}")
    print(f"  JSON: {size / 1e6:.1f} MB")


if __name__ == "__main__":
    main()
