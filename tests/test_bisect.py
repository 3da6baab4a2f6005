"""timeline bisect: the search and the statistics on seeded synthetic numbers (timeline.bisection),
then whole bisections of a real repository whose benchmark script prints SGLang decode lines at a
speed set by the checked-out code, with seeded noise."""

from __future__ import annotations

import hashlib
import json
import math
import os
import random
import signal
import stat
import subprocess
import sys
import time
from pathlib import Path
from typing import get_args

import pytest
from typer.testing import CliRunner

from timeline.bisection import (
    Failure,
    FailureCode,
    LevelsVerdict,
    LineSearch,
    Noise,
    Sample,
    bisect,
    classify,
    judge_levels,
    noise_of,
)
from timeline.cli import app
from timeline.commands.bisect import bisect_repository, ends_from_build
from timeline.errors import UsageError
from timeline.exitcodes import ExitCode
from timeline.render.bisect_wording import bisection_text, failure_text, judgement_text, levels_text, step_text

ROOT = Path(__file__).resolve().parents[1]

# --------------------------------------------------------------------------- the search alone


@pytest.mark.parametrize("count", range(1, 41))
def test_line_search_finds_every_first_changed_commit_in_log2_steps(count):
    for first in range(count):
        search = LineSearch(count)
        steps = 0
        while (index := search.next()) is not None:
            steps += 1
            search.mark(index, "new" if index >= first else "old")
        assert search.suspects() == [first]
        assert steps <= math.ceil(math.log2(count))  # the last candidate is known: count - 1 untested


def test_skipped_commits_are_stepped_around_then_left_as_a_range():
    search = LineSearch(31)
    tested = []
    while (index := search.next()) is not None:
        tested.append(index)
        search.mark(index, "skip" if index in (18, 19, 20) else ("new" if index >= 20 else "old"))
    assert search.suspects() == [18, 19, 20, 21]  # git bisect: "only 'skip'ped commits left to test"
    assert tested[0] == 14 and 17 in tested and 21 in tested

    search = LineSearch(31)
    while (index := search.next()) is not None:
        search.mark(index, "skip" if index == 15 else ("new" if index >= 9 else "old"))
    assert search.suspects() == [9]  # a skip away from the answer costs a step, not the answer


# --------------------------------------------------------------------------- the statistics


def synthetic(
    seed: int,
    *,
    noise: float,
    change: float,
    culprit: int = 20,
    count: int = 31,
    runs: int = 2,
    line_spread: float = 0.01,
    levels: dict[int, float] | None = None,
):
    """A bisection of commits c1..c{count} after c0, c{culprit} on slower by ``change``: each run
    is the level times log-normal noise ``noise``; each run's line spread is ``line_spread``."""
    rng = random.Random(seed)

    def level(commit: str) -> float:
        index = int(commit[1:])
        if levels and index in levels:
            return levels[index]
        return 100.0 * (1 - change if index >= culprit else 1.0)

    def measure(commit: str, n: int) -> Sample:
        values = tuple(level(commit) * math.exp(rng.gauss(0, noise)) for _ in range(n))
        return Sample(values, (line_spread,) * n)

    return bisect("c0", f"c{count}", [f"c{i}" for i in range(1, count + 1)], measure, runs=runs)


def test_a_20_percent_drop_at_1_percent_noise_is_named_in_5_steps():
    outcomes = [synthetic(seed, noise=0.01, change=0.2) for seed in range(500)]
    named = [r for r in outcomes if r.outcome == "found"]
    assert all(r.found == "c20" and len(r.steps) <= 5 for r in named)  # never a wrong commit
    # Two runs a side give the t-test 2 degrees of freedom: p < 0.01 needs t > 9.9, and the
    # pooled noise is over 2.2 times the true one 0.7% of the time (measured: 99.2% named).
    assert len(named) >= 0.97 * len(outcomes)


@pytest.mark.parametrize("noise", [0.05, 0.1, 0.2])
def test_noise_as_large_as_the_change_names_nothing(noise):
    outcomes = [synthetic(seed, noise=noise, change=noise) for seed in range(500)]
    named = sum(r.outcome == "found" for r in outcomes)
    assert named <= 5  # measured: 1 to 3 in 2000 (the first runs made the noise look small)
    assert all(bisection_text(r).startswith("cannot decide") for r in outcomes if r.outcome == "undecided")


def test_more_runs_decide_more():
    """At 2% noise and a 15% drop, 3 runs a commit decide far more often than 2."""
    two = sum(synthetic(s, noise=0.02, change=0.15).outcome == "found" for s in range(300))
    three = sum(synthetic(s, noise=0.02, change=0.15, runs=3).outcome == "found" for s in range(300))
    assert three > two + 60 and three >= 0.95 * 300


def test_a_commit_between_the_levels_is_measured_again_then_skipped():
    result = synthetic(1, noise=0.005, change=0.2, levels={20: 90.0})  # c20 sits half way
    middle = [s for s in result.steps if s.commit == "c20"]
    assert middle and middle[0].decision == "skip" and middle[0].reran and len(middle[0].values) == 4
    assert "between the levels" in step_text(middle[0])
    assert result.outcome == "range" and result.commits == ["c20", "c21"]


def test_one_run_a_commit_uses_the_line_spread_and_needs_it():
    result = synthetic(3, noise=0.005, change=0.2, runs=1)
    assert result.found == "c20" and result.levels.noise.method == "line-spread"
    unknown = bisect("c0", "c2", ["c1", "c2"], lambda c, n: Sample((100.0 if c == "c0" else 80.0,) * n), runs=1)
    assert unknown.outcome == "undecided" and "noise is unknown" in bisection_text(unknown)


def test_a_bad_end_that_is_not_slower_decides_nothing():
    result = bisect("c0", "c1", ["c1"], lambda c, n: Sample(tuple(100.0 + i for i in range(n))), runs=2)
    assert result.outcome == "undecided" and "not slower" in bisection_text(result)


def test_an_improvement_hunt_finds_the_first_fast_commit():
    rng = random.Random(5)

    def measure(commit: str, n: int) -> Sample:
        level = 120.0 if int(commit[1:]) >= 7 else 100.0  # c7 made it faster
        return Sample(tuple(level * math.exp(rng.gauss(0, 0.005)) for _ in range(n)))

    # the bad (slow) end is the older one: search the line from it to the good end
    result = bisect("c12", "c0", [f"c{i}" for i in range(1, 13)], measure, newer="good")
    assert result.found == "c7" and result.newer == "good"


def test_a_failing_end_or_step():
    exit_1 = Failure("command-failed", exit_status=1)
    failing = bisect("c0", "c3", ["c1", "c2", "c3"], lambda c, n: exit_1 if c == "c0" else Sample((1.0,) * n))
    assert failing.outcome == "undecided"
    assert (failing.why, failing.failed_end, failing.failure) == ("end-failed", "good", exit_1)
    assert bisection_text(failing) == "the good commit gave no number: the command exited with status 1"

    def measure(commit: str, n: int):
        if commit == "c2":
            return exit_1
        return Sample(tuple((100.0 if int(commit[1:]) < 2 else 80.0) * (1 + 0.001 * i) for i in range(n)))

    result = bisect("c0", "c3", ["c1", "c2", "c3"], measure)
    skipped = [s for s in result.steps if s.decision == "skip"]
    assert skipped[0].commit == "c2" and step_text(skipped[0]) == "the command exited with status 1"
    assert result.outcome == "range" and result.commits == ["c2", "c3"]


def test_classify_is_a_likelihood_ratio_between_the_levels():
    good, bad = Sample((100.0, 101.0)), Sample((80.0, 80.5))
    noise = noise_of([good, bad])
    assert classify(Sample((99.0, 100.5)), good, bad, noise).decision == "good"
    assert classify(Sample((80.2, 79.9)), good, bad, noise).decision == "bad"
    between = classify(Sample((89.5, 90.0)), good, bad, noise)
    assert between.decision == "unclear" and abs(between.log_ratio) < math.log(100)
    # a third level, significantly off both and a quarter of the way or more: between
    assert classify(Sample((93.0, 93.2)), good, bad, noise).decision == "unclear"
    # near a level, off it by the error of that level's own mean: at that level
    assert classify(Sample((98.4, 98.6)), good, bad, noise).decision == "good"
    # beyond a level: at it
    faster = classify(Sample((130.0, 131.0)), good, bad, noise)
    assert faster.decision == "good" and "(faster than the good level)" in judgement_text(faster)
    levels = judge_levels(good, bad, noise)
    assert levels.apart and levels.p_value < 0.01 and levels.separation > 5


# --------------------------------------------------------------------------- the codes returned


LEVELS_CASES = [  # good, bad, the noise if not theirs, the verdict
    (Sample((100.0, 101.0)), Sample((80.0, 80.5)), None, "apart"),
    (Sample((100.0,)), Sample((80.0,)), None, "noise-unknown"),  # one run, no line spread
    (Sample((100.0, 101.0)), Sample((110.0, 110.5)), None, "not-slower"),
    (Sample((100.0, 100.1)), Sample((98.5, 98.6)), None, "under-min-effect"),
    (Sample((100.0, 120.0)), Sample((80.0, 90.0)), None, "not-significant"),
    # ten runs a side: t 5.9 (p < 0.01) but only 2.6 noise widths apart
    (Sample((100.0,) * 10), Sample((90.0,) * 10), Noise(0.04, 18, "pooled"), "too-close"),
]


@pytest.mark.parametrize("good, bad, noise, verdict", LEVELS_CASES)
def test_judge_levels_returns_each_verdict(good, bad, noise, verdict):
    levels = judge_levels(good, bad, noise or noise_of([good, bad]))
    assert levels.verdict == verdict and levels.apart == (verdict == "apart")
    assert levels_text(levels)


def test_every_levels_verdict_has_a_case():
    assert {case[-1] for case in LEVELS_CASES} == set(get_args(LevelsVerdict))


def test_the_minimum_effect_is_doubled_on_the_line_spread_floor():
    one_run = noise_of([Sample((100.0,), (0.001,)), Sample((96.0,), (0.001,))])
    levels = judge_levels(Sample((100.0,), (0.001,)), Sample((96.0,), (0.001,)), one_run)
    assert one_run.method == "line-spread" and levels.min_effect == 0.06 and levels.verdict == "under-min-effect"


@pytest.mark.parametrize(
    "values, decision, side_note",
    [
        ((99.0, 100.5), "good", None),
        ((130.0, 131.0), "good", "beyond-good"),
        ((80.2, 79.9), "bad", None),
        ((60.0, 60.5), "bad", "beyond-bad"),
        ((89.5, 90.0), "unclear", None),
    ],
)
def test_classify_returns_the_decision_and_the_side_note(values, decision, side_note):
    good, bad = Sample((100.0, 101.0)), Sample((80.0, 80.5))
    judgement = classify(Sample(values), good, bad, noise_of([good, bad]))
    assert (judgement.decision, judgement.side_note) == (decision, side_note)


def levelled(levels: dict[str, Sample | Failure]):
    """A ``measure`` giving each commit's sample (or failure), 100 otherwise."""
    return lambda commit, n: levels.get(commit, Sample((100.0, 100.2)[:n]))


def test_bisect_returns_each_step_and_result_code():
    slow = Sample((80.0, 80.2))
    found = bisect("c0", "c4", ["c1", "c2", "c3", "c4"], levelled({"c3": slow, "c4": slow}))
    assert (found.outcome, found.why, found.commits) == ("found", "found", ["c3"])
    assert {s.why for s in found.steps} == {"at-level"} and all(s.failure is None for s in found.steps)

    broken = Failure("command-failed", exit_status=1)
    skipped = bisect("c0", "c4", ["c1", "c2", "c3", "c4"], levelled({"c2": broken, "c3": slow, "c4": slow}))
    assert (skipped.outcome, skipped.why, skipped.commits) == ("range", "only-skips-left", ["c2", "c3"])
    assert [(s.commit, s.why, s.failure) for s in skipped.steps if s.decision == "skip"] == [("c2", "failed", broken)]

    half_way = Sample((90.0, 90.1))
    middle = bisect("c0", "c4", ["c1", "c2", "c3", "c4"], levelled({"c2": half_way, "c3": slow, "c4": slow}))
    between = [s for s in middle.steps if s.commit == "c2"]
    assert between and (between[0].decision, between[0].why, between[0].reran) == ("skip", "between-levels", True)

    bad_end = bisect("c0", "c4", ["c1", "c2", "c3", "c4"], levelled({"c4": broken}))
    assert (bad_end.outcome, bad_end.why, bad_end.failed_end) == ("undecided", "end-failed", "bad")
    assert bad_end.failure == broken

    flat = bisect("c0", "c4", ["c1", "c2", "c3", "c4"], levelled({}))
    assert (flat.outcome, flat.why, flat.levels.verdict) == ("undecided", "not-apart", "not-slower")

    # the ends barely vary, the steps vary wildly: apart at first, not once every run is pooled
    wild = Sample((50.0, 190.0))
    pooled = bisect("c0", "c4", ["c1", "c2", "c3", "c4"], levelled({"c1": wild, "c2": wild, "c3": wild, "c4": slow}))
    assert (pooled.outcome, pooled.why, pooled.levels.verdict) == ("undecided", "not-apart-pooled", "not-significant")
    assert pooled.commits == []
    assert bisection_text(pooled).startswith("cannot decide: with every run of the bisection pooled, ")


FAILURE_WORDS = [
    (Failure("checkout-failed", error="fatal: bad object"), "could not check it out: fatal: bad object"),
    (
        Failure("log-outside-before-run", log="logs/b.log"),
        "logs/b.log leads outside the checkout of this commit (a symlink); not used",
    ),
    (
        Failure("log-outside-after-run", log="logs/b.log"),
        "logs/b.log leads outside the checkout of this commit (a symlink); not read",
    ),
    (Failure("command-failed", exit_status=3, last_line="oops"), "the command exited with status 3: oops"),
    (Failure("command-failed", signal=9), "the command killed by signal 9"),
    (Failure("no-log", log="out/server.log"), "the command wrote no log out/server.log"),
    (
        Failure("no-steady-value", last_line=""),
        "no steady throughput in the log (no Decode batch lines with a throughput): ",
    ),
]


@pytest.mark.parametrize("failure, text", FAILURE_WORDS)
def test_each_failure_code_is_worded(failure, text):
    assert failure_text(failure) == text


def test_every_failure_code_has_a_case():
    assert {failure.code for failure, _ in FAILURE_WORDS} == set(get_args(FailureCode))


# --------------------------------------------------------------------------- real repositories

BENCH = '''\
"""A fake SGLang server: Decode batch lines at the speed engine.py gives, with seeded noise."""
import math
import os
import random
import subprocess

import engine

run = os.environ["TIMELINE_BISECT_RUN"]
if os.environ.get("FAKE_BENCH_FAIL_AT") == os.environ["TIMELINE_BISECT_COMMIT"]:
    raise SystemExit("fake bench: broken build")
if os.environ.get("FAKE_BENCH_HANG_AT_RUN") == run:
    child = subprocess.Popen(["sleep", "300"])
    started = os.environ["FAKE_BENCH_STARTED"]
    with open(started + ".tmp", "w") as handle:
        handle.write(f"{os.getpid()} {child.pid} {os.getcwd()}\\n")
    os.replace(started + ".tmp", started)
    child.wait()
rng = random.Random(f"{os.environ.get('FAKE_BENCH_SEED', '0')}/{run}")
level = engine.tokens_per_second() * math.exp(rng.gauss(0, float(os.environ.get("FAKE_BENCH_RUN_NOISE", "0.005"))))
print("[2025-06-01 10:00:00] server_args=ServerArgs(model_path='fake/model', tp_size=1)")
for i in range(20):
    value = level * math.exp(rng.gauss(0, 0.01))
    print(f"[2025-06-01 10:00:{5 + i:02d} TP0] Decode batch. #running-req: 1, #token: {1234 + 40 * i}, "
          f"token usage: 0.01, cuda graph: True, gen throughput (token/s): {value:.2f}, #queue-req: 0, ")
'''
ENGINE = "OVERHEAD = {overhead}\n\n\ndef tokens_per_second():\n    return 100.0 / (1.0 + OVERHEAD)\n"
CULPRIT = 21  # of commits 0..31: "engine: check every token twice" slows decoding by 20%
T0 = 1_750_000_000


class Repository:
    """A real repository made with git commands, isolated from the machine's configuration, each
    commit dated ``T0 + 100 s * n``."""

    def __init__(self, path: Path, home: Path) -> None:
        self.path = path
        home.mkdir(parents=True, exist_ok=True)
        self.env = {k: v for k, v in os.environ.items() if not k.startswith("GIT_")}
        self.env.update(
            HOME=str(home),
            XDG_CONFIG_HOME=str(home / ".config"),
            GIT_CONFIG_NOSYSTEM="1",
            LC_ALL="C",
            TZ="UTC",
            GIT_AUTHOR_NAME="Ann Tester",
            GIT_AUTHOR_EMAIL="ann@example.com",
            GIT_COMMITTER_NAME="Ann Tester",
            GIT_COMMITTER_EMAIL="ann@example.com",
        )
        self.commits: list[str] = []
        self.git("init", "-q", "-b", "main", str(path), cwd=path.parent)

    def git(self, *args: str, cwd: Path | None = None) -> str:
        when = f"@{T0 + 100 * len(self.commits)} +0000"
        env = dict(self.env, GIT_COMMITTER_DATE=when, GIT_AUTHOR_DATE=when)
        done = subprocess.run(["git", *args], cwd=cwd or self.path, env=env, capture_output=True, text=True)
        assert done.returncode == 0, done.stderr
        return done.stdout.strip()

    def commit(self, subject: str, files: dict[str, str]) -> str:
        for name, text in files.items():
            (self.path / name).write_text(text, encoding="utf-8")
        self.git("add", "--", *files)
        self.git("commit", "-q", "-m", subject)
        self.commits.append(self.git("rev-parse", "HEAD"))
        return self.commits[-1]


def make_repository(root: Path, culprit: int = CULPRIT, count: int = 32) -> Repository:
    repo = Repository(root / "checkout", root / "home")
    repo.commit("fake server and its benchmark", {"bench.py": BENCH, "engine.py": ENGINE.format(overhead=0.0)})
    for n in range(1, count):
        if n == culprit:
            repo.commit("engine: check every token twice", {"engine.py": ENGINE.format(overhead=0.25)})
        else:
            repo.commit(f"notes: entry {n}", {"NOTES.md": "".join(f"- entry {i}\n" for i in range(1, n + 1))})
    # what a user's checkout holds besides commits: uncommitted edits, an untracked file, a stash-free reflog
    (repo.path / "NOTES.md").write_text("work in progress\n", encoding="utf-8")
    (repo.path / "scratch.txt").write_text("untracked\n", encoding="utf-8")
    return repo


def tree_digest(root: Path) -> dict[str, tuple]:
    """Every folder, file and symlink under ``root`` (``.git`` included): type, mode, bytes."""
    found: dict[str, tuple] = {}
    for folder, dirs, files in os.walk(root):
        for name in dirs + files:
            path = Path(folder, name)
            info = path.lstat()
            if stat.S_ISLNK(info.st_mode):
                found[str(path.relative_to(root))] = ("link", os.readlink(path))
            elif stat.S_ISDIR(info.st_mode):
                found[str(path.relative_to(root))] = ("dir", info.st_mode)
            else:
                found[str(path.relative_to(root))] = (
                    "file",
                    info.st_mode,
                    hashlib.sha256(path.read_bytes()).hexdigest(),
                )
    return found


@pytest.fixture(scope="module")
def repository(tmp_path_factory) -> Repository:
    return make_repository(tmp_path_factory.mktemp("bisect"))


BENCH_COMMAND = [sys.executable, "bench.py"]


def test_twenty_seeds_name_the_slow_commit_in_at_most_6_steps(repository, monkeypatch):
    before = tree_digest(repository.path)
    culprit = repository.commits[CULPRIT]
    steps = []
    for seed in range(20):
        monkeypatch.setenv("FAKE_BENCH_SEED", str(seed))
        result, subjects = bisect_repository(
            repository.path, BENCH_COMMAND, good=repository.commits[0][:7], bad=repository.commits[-1]
        )
        assert result.outcome == "found" and result.found == culprit, (seed, bisection_text(result))
        assert subjects[culprit] == "engine: check every token twice"
        assert len(result.steps) <= 6 and all(len(s.values) == 2 and not s.reran for s in result.steps)
        steps.append(len(result.steps))
    assert tree_digest(repository.path) == before
    assert max(steps) <= 6 and len(set(steps)) == 1  # 31 candidates: 5 steps whatever the noise


def test_noise_as_large_as_the_change_says_it_cannot_decide(repository, monkeypatch):
    monkeypatch.setenv("FAKE_BENCH_RUN_NOISE", "0.2")  # a 20% slowdown, 20% run-to-run noise
    for seed in range(20):
        monkeypatch.setenv("FAKE_BENCH_SEED", str(seed))
        result, _ = bisect_repository(
            repository.path, BENCH_COMMAND, good=repository.commits[0], bad=repository.commits[-1]
        )
        assert result.outcome == "undecided" and not result.commits, seed
        assert bisection_text(result).startswith("cannot decide")


def test_a_commit_whose_benchmark_fails_is_skipped(repository, monkeypatch):
    monkeypatch.setenv("FAKE_BENCH_FAIL_AT", repository.commits[CULPRIT])
    result, _ = bisect_repository(
        repository.path, BENCH_COMMAND, good=repository.commits[0], bad=repository.commits[-1]
    )
    skipped = [s for s in result.steps if s.decision == "skip"]
    assert [s.commit for s in skipped] == [repository.commits[CULPRIT]]
    assert step_text(skipped[0]) == "the command exited with status 1: fake bench: broken build"
    assert result.outcome == "range" and result.commits == repository.commits[CULPRIT : CULPRIT + 2]


def test_the_cli_prints_progress_and_the_first_bad_commit(repository, tmp_path, monkeypatch):
    monkeypatch.setenv("FAKE_BENCH_SEED", "7")
    before = tree_digest(repository.path)
    out = tmp_path / "bisect.json"
    result = CliRunner().invoke(
        app,
        [
            "bisect",
            "--repo",
            str(repository.path),
            "--good",
            repository.commits[0],
            "--bad",
            repository.commits[-1],
            "--json",
            str(out),
            "--",
            *BENCH_COMMAND,
        ],
    )
    assert result.exit_code == 0, result.output
    culprit = repository.commits[CULPRIT]
    assert result.stdout == f"first bad commit: {culprit} engine: check every token twice\n5 steps, 2 runs a commit\n"
    assert (
        "levels: good 99.85, bad 80.62: apart" in result.stderr
        and "step 5:" in result.stderr
        and "-> bad:" in result.stderr
    )
    document = json.loads(out.read_text())
    assert document["result"] == {
        "outcome": "found",
        "commits": [culprit],
        "reason": "the first bad commit",
        "subjects": ["engine: check every token twice"],
    }
    assert len(document["steps"]) == 5 and document["levels"]["apart"] is True
    assert tree_digest(repository.path) == before


@pytest.mark.parametrize(
    "command, log, failure",
    [
        (["sh", "-c", "echo starting; exit 3"], None, Failure("command-failed", exit_status=3, last_line="starting")),
        (["sh", "-c", "kill -9 $$"], None, Failure("command-failed", signal=9)),
        (["true"], None, Failure("no-steady-value")),
        (["sh", "-c", "echo  no decode lines  "], None, Failure("no-steady-value", last_line="no decode lines")),
        (["true"], "out/server.log", Failure("no-log", log="out/server.log")),
    ],
)
def test_a_run_without_a_number_gives_its_code_and_facts(repository, command, log, failure):
    result, _ = bisect_repository(
        repository.path, command, good=repository.commits[0], bad=repository.commits[-1], log_path=log
    )
    assert (result.why, result.failed_end, result.failure) == ("end-failed", "good", failure)


def test_the_bisect_log_can_be_a_file_the_command_writes(repository, monkeypatch):
    monkeypatch.setenv("FAKE_BENCH_SEED", "3")
    command = ["sh", "-c", f"mkdir -p out && {sys.executable} bench.py > out/server.log"]
    result, _ = bisect_repository(
        repository.path, command, good=repository.commits[0], bad=repository.commits[-1], log_path="out/server.log"
    )
    assert result.found == repository.commits[CULPRIT]


def test_good_brought_in_by_a_merge_is_refused_with_the_commit_to_start_from(tmp_path):
    """good = a feature branch's tip merged into main: main's own commits before the merge would
    never be measured, and a slowdown made there would be pinned on the merge."""
    repo = Repository(tmp_path / "checkout", tmp_path / "home")
    base = repo.commit("base", {"a.txt": "a\n"})
    repo.git("checkout", "-q", "-b", "feature")
    feature = repo.commit("feature work", {"f.txt": "f\n"})
    repo.git("checkout", "-q", "main")
    main1 = repo.commit("main work", {"m.txt": "m\n"})
    repo.git("merge", "-q", "--no-ff", "-m", "merge feature", "feature")
    merge = repo.git("rev-parse", "HEAD")
    assert base and merge
    with pytest.raises(UsageError, match=f"first-parent line.*bisect from the merge's first parent, {main1[:12]}"):
        bisect_repository(repo.path, ["true"], good=feature, bad=merge)


@pytest.mark.skipif(os.geteuid() == 0, reason="needs a non-root POSIX user: root ignores folder permissions")
def test_a_read_only_folder_a_build_left_is_removed_before_the_next_commit(tmp_path):
    from timeline.git.checkout import ScratchCheckout
    from timeline.git.locate import locate

    repo = Repository(tmp_path / "checkout", tmp_path / "home")
    first = repo.commit("one", {"a.txt": "a\n"})
    second = repo.commit("two", {"a.txt": "b\n"})
    with ScratchCheckout(locate(repo.path)) as scratch:
        built = scratch.check_out(first) / "build"
        built.mkdir()
        (built / "out.o").write_text("x", encoding="utf-8")
        built.chmod(0o500)
        assert (scratch.check_out(second) / "a.txt").read_text(encoding="utf-8") == "b\n"
        assert not (scratch.worktree / "build").exists()


def test_a_log_path_through_a_symlink_of_the_tree_is_never_deleted_or_read(tmp_path):
    """A commit holding ``logs -> /elsewhere``: ``--log logs/bench.log`` must not touch /elsewhere."""
    victim = tmp_path / "victim"
    victim.mkdir()
    (victim / "bench.log").write_text("precious\n", encoding="utf-8")
    repo = Repository(tmp_path / "checkout", tmp_path / "home")
    (repo.path / "logs").symlink_to(victim)
    repo.git("add", "logs")
    repo.git("commit", "-q", "-m", "logs are elsewhere")
    repo.commits.append(repo.git("rev-parse", "HEAD"))
    repo.commit("second", {"a.txt": "a\n"})
    result, _ = bisect_repository(
        repo.path, ["sh", "-c", "exit 0"], good=repo.commits[0], bad=repo.commits[1], log_path="logs/bench.log"
    )
    assert result.found is None
    assert (victim / "bench.log").read_text(encoding="utf-8") == "precious\n"


@pytest.mark.parametrize(
    "args, message",
    [
        ([], "give --good and --bad, or --from"),
        (["--good", "nothex!"], "is not a commit id"),
        (["--good", "abcdef0123"], "unknown commit abcdef0123"),
        (["--good", "HEAD~3"], "is not a commit id"),
        (["--good", "{first}", "--bad", "{first}"], "the same commit"),
        (["--good", "{first}", "--log", "../x.log"], "--log ../x.log: give a path inside the checkout"),
        (["--from", "{missing}"], "--from"),
    ],
)
def test_bad_input_is_one_line_and_exit_2(repository, tmp_path, args, message):
    args = [a.format(first=repository.commits[0], missing=tmp_path / "none.json") for a in args]
    result = CliRunner().invoke(app, ["bisect", "--repo", str(repository.path), *args, "--", *BENCH_COMMAND])
    assert result.exit_code == ExitCode.USAGE
    assert result.stderr.startswith("timeline: error: ") and message in result.stderr
    assert result.stderr.count("\n") == 1


def test_good_must_be_on_one_line_with_bad(tmp_path):
    repo = make_repository(tmp_path, count=3)
    main = repo.commits[-1]
    repo.git("checkout", "-q", "--force", "-b", "side", repo.commits[0])
    side = repo.commit("side work", {"other.txt": "x\n"})
    result = CliRunner().invoke(
        app, ["bisect", "--repo", str(repo.path), "--good", side, "--bad", main, "--", *BENCH_COMMAND]
    )
    assert result.exit_code == ExitCode.USAGE and "is not an ancestor of bad" in result.stderr


def test_ends_from_a_build_document(tmp_path):
    def shift(verdict, before, after, values):
        return {
            "id": "s",
            "verdict": verdict,
            "change_pct": 0.0,
            "from": {"commit": before, "value": values[0]},
            "to": {"commit": after, "value": values[1]},
        }

    path = tmp_path / "build.json"
    path.write_text(
        json.dumps(
            {
                "shifts": [
                    shift(None, "a", "b", (1, 2)),
                    shift("improvement", "c", "d", (80, 100)),
                    shift("regression", "e", "f", (100, 80)),
                ]
            }
        )
    )
    assert ends_from_build(path) == ("e", "f")
    path.write_text(json.dumps({"shifts": [shift("improvement", "c", "d", (80, 100))]}))
    assert ends_from_build(path) == ("d", "c")  # good is the faster side
    path.write_text(json.dumps({"shifts": [shift("inconclusive", "c", "d", (80, 100))]}))
    with pytest.raises(UsageError, match="no shift with the verdict"):
        ends_from_build(path)


def test_from_a_build_document_bisects_its_regression(repository, tmp_path, monkeypatch):
    monkeypatch.setenv("FAKE_BENCH_SEED", "11")
    path = tmp_path / "build.json"
    path.write_text(
        json.dumps(
            {
                "shifts": [
                    {
                        "id": "s1",
                        "verdict": "regression",
                        "change_pct": -20.0,
                        "from": {"commit": repository.commits[16], "value": 100.0},
                        "to": {"commit": repository.commits[24], "value": 80.0},
                    }
                ]
            }
        )
    )
    result, _ = bisect_repository(repository.path, BENCH_COMMAND, from_path=path)
    assert result.found == repository.commits[CULPRIT] and len(result.candidates) == 8


@pytest.mark.parametrize("signum", [signal.SIGINT, signal.SIGTERM])
def test_an_interrupt_mid_step_leaves_nothing_behind(repository, tmp_path, signum):
    before = tree_digest(repository.path)
    temporary = tmp_path / "tmp"
    temporary.mkdir()
    started = tmp_path / "started"
    env = dict(
        os.environ,
        TMPDIR=str(temporary),
        FAKE_BENCH_HANG_AT_RUN="5",
        FAKE_BENCH_STARTED=str(started),
        PYTHONPATH=str(ROOT),
    )
    # A shell runs a background job with SIGINT ignored, and a child inherits an ignored signal
    # (POSIX exec): pytest started so would make a bisect that rightly ignores Ctrl-C. A handled
    # signal is reset to its default by exec, so the child can be interrupted whoever started us.
    previous = signal.signal(signal.SIGINT, signal.default_int_handler)
    try:
        proc = subprocess.Popen(
            [
                sys.executable,
                "-m",
                "timeline",
                "bisect",
                "--repo",
                str(repository.path),
                "--good",
                repository.commits[0],
                "--bad",
                repository.commits[-1],
                "--",
                *BENCH_COMMAND,
            ],
            env=env,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
        )
    finally:
        signal.signal(signal.SIGINT, previous)
    deadline = time.monotonic() + 60
    while not started.exists():  # run 5: the first run of the first step
        assert proc.poll() is None and time.monotonic() < deadline, proc.communicate()
        time.sleep(0.02)
    bench_pid, sleep_pid, worktree = started.read_text().split()
    assert Path(worktree).is_relative_to(temporary)
    proc.send_signal(signum)
    _, stderr = proc.communicate(timeout=120)  # a loaded 2-core machine: generous, only a hang waits it out
    assert proc.returncode == ExitCode.INTERRUPTED, stderr
    assert "interrupted" in stderr and "Traceback" not in stderr
    assert list(temporary.iterdir()) == []
    for pid in (int(bench_pid), int(sleep_pid)):  # the benchmark and what it started: the whole group
        deadline = time.monotonic() + 10
        while alive(pid):
            assert time.monotonic() < deadline, f"process {pid} survived"
            time.sleep(0.05)
    assert tree_digest(repository.path) == before


def alive(pid: int) -> bool:
    """Running (a zombie waiting for a parent to reap it has stopped running)."""
    try:
        state = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0]
    except (FileNotFoundError, ProcessLookupError):
        return False
    return state not in ("Z", "X")


def test_bad_defaults_to_head_and_json_can_go_to_stdout(repository, monkeypatch):
    monkeypatch.setenv("FAKE_BENCH_SEED", "5")
    result = CliRunner().invoke(
        app,
        [
            "bisect",
            "--repo",
            str(repository.path),
            "--good",
            repository.commits[0],
            "--json",
            "-",
            "--",
            *BENCH_COMMAND,
        ],
    )
    assert result.exit_code == 0, result.output
    document = json.loads(result.stdout)  # the JSON alone
    assert document["bad"]["commit"] == repository.commits[-1] and document["candidates"] == 31
    assert document["result"]["commits"] == [repository.commits[CULPRIT]]


def test_a_command_that_cannot_start_is_one_line_and_exit_2(repository):
    result = CliRunner().invoke(
        app, ["bisect", "--repo", str(repository.path), "--good", repository.commits[0], "--", "./no-such-benchmark"]
    )
    assert result.exit_code == ExitCode.USAGE
    assert (
        result.stderr.splitlines()[-1] == "timeline: error: cannot run ./no-such-benchmark: No such file or directory"
    )
    assert "Traceback" not in result.stderr
