"""Stories for the shift tests: a real git checkout (GitScript) and SGLang logs around its moves.

The main story (the one ``timeline demo`` tells, docs/shifts.md section 5): runs at c2, a
``git pull`` to c5 bringing c3, c4 and c5, runs there, a ``git reset --hard HEAD~1`` back to c4,
runs there.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from datetime import datetime, timedelta, timezone
from pathlib import Path

from timeline.model import Run, SteadyValue
from timeline.scenario import GitScript, Launch, write_sglang_log

DAY = datetime(2026, 4, 7, tzinfo=timezone.utc)
PULLED = ("c3 Refactor the scheduler loop", "c4 Add a metrics endpoint", "c5 Fuse the MoE all-reduce")
RUN_OFFSETS = (0.0, -0.006, 0.005, 0.003, -0.004)  # run-to-run variation, as a fraction


@dataclass
class Story:
    root: Path
    repo: Path
    logs: Path
    shas: dict[str, str]
    upstream: Path
    git: GitScript
    notes: dict[str, object] = field(default_factory=dict)


def at(hours: int, minutes: int = 0) -> datetime:
    return DAY + timedelta(hours=hours, minutes=minutes)


def _launches(hour: int, level: float, count: int, **launch_args) -> list[Launch]:
    start = datetime(DAY.year, DAY.month, DAY.day, hour, 0)  # the logs print UTC wall-clock
    return [
        Launch(start + timedelta(minutes=20 * n), 10, level * (1 + RUN_OFFSETS[n % len(RUN_OFFSETS)]), **launch_args)
        for n in range(count)
    ]


def pull_and_reset(
    root: Path,
    levels: tuple[float, float, float] = (100.0, 90.0, 99.5),
    runs: int = 1,
    launch_args: tuple[dict, dict, dict] = ({}, {}, {}),
    reset_to: str = "HEAD~1",
) -> Story:
    """c1, c2 upstream; clone at c2; runs; pull of c3..c5; runs; reset to ``reset_to``; runs."""
    git = GitScript(root / "home")
    upstream, repo = root / "upstream", root / "checkout"
    upstream.mkdir(parents=True)
    git.git(upstream, "init", "-q", at=at(8))
    shas = {"c1": git.commit_file(upstream, "c1 Initial server", at(8, 5))}
    shas["c2"] = git.commit_file(upstream, "c2 Tune the decode kernel", at(8, 20))
    git.git(root, "clone", "-q", str(upstream), str(repo), at=at(9, 30))
    for number, subject in enumerate(PULLED, 3):
        shas[f"c{number}"] = git.commit_file(upstream, subject, at(11, 10 * number))
    git.git(repo, "pull", "-q", "origin", "main", at=at(13))
    git.git(repo, "reset", "-q", "--hard", reset_to, at=at(17))

    logs = root / "logs"
    for name, hour, level, args, seed in zip(
        ("before", "pulled", "reset"), (10, 14, 18), levels, launch_args, (1, 2, 3), strict=False
    ):
        write_sglang_log(logs / f"{name}.log", _launches(hour, level, runs, **args), seed=seed)
    return Story(root, repo, logs, shas, upstream, git)


def steady_run(number: int, commit: str, hour: int, value: float, model: str = "m", **config) -> Run:
    """An ``exact`` run of ``model`` on ``commit`` at ``hour`` (UTC), whose steady decode value is ``value``."""
    start = datetime(2026, 4, 7, hour, tzinfo=timezone.utc)
    return Run(
        f"r{number}",
        "a.log",
        "sglang-server",
        start,
        start + timedelta(minutes=10),
        None,
        "UTC",
        "flag",
        1,
        2,
        commit,
        "exact",
        config={"model_path": model, "tp_size": 8, **config},
        nccl_versions=["2.27.5"],
        steady=SteadyValue("decode_throughput", "tok/s", value, 30, 0, 0.01, "decode-lines"),
    )
