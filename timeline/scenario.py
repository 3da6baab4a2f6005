"""Real scenarios for the demo, the tests and the benchmarks.

``GitScript`` drives real git commands at fixed dates (the reflog records the committer date,
which ``GIT_COMMITTER_DATE`` sets: https://git-scm.com/docs/git-commit#_date_formats), isolated
from the user's git configuration. ``write_sglang_log`` writes server logs in SGLang 0.5.9+'s
format (the logger header of ``configure_logger``,
https://github.com/sgl-project/sglang/blob/main/python/sglang/srt/utils/common.py; the
``Decode batch`` line the scheduler logs, now from
https://github.com/sgl-project/sglang/blob/main/python/sglang/srt/managers/scheduler_components/metrics_reporter.py;
the ``server_args=`` print and the run-phase messages), deterministically from a seed. Only
repositories we create here are touched.
"""

from __future__ import annotations

import os
import random
import subprocess
import tempfile
from collections.abc import Iterator
from dataclasses import dataclass, field
from datetime import datetime, timedelta, timezone
from pathlib import Path

IDENTITY = ("Ann Tester", "ann@example.com")


class GitScript:
    """Run git in repositories we create, with every date fixed by the caller."""

    def __init__(self, home: Path):
        home.mkdir(parents=True, exist_ok=True)
        self.env = {k: v for k, v in os.environ.items() if not k.startswith("GIT_")}
        self.env.update(
            HOME=str(home),
            GIT_CONFIG_NOSYSTEM="1",
            GIT_CONFIG_GLOBAL=os.devnull,
            GIT_AUTHOR_NAME=IDENTITY[0],
            GIT_AUTHOR_EMAIL=IDENTITY[1],
            GIT_COMMITTER_NAME=IDENTITY[0],
            GIT_COMMITTER_EMAIL=IDENTITY[1],
            LC_ALL="C",
        )

    def git(self, cwd: Path, *args: str, at: datetime, extra_env: dict[str, str] | None = None) -> str:
        stamp = f"@{int(at.timestamp())} {_git_offset(at)}"
        env = dict(self.env, GIT_COMMITTER_DATE=stamp, GIT_AUTHOR_DATE=stamp, **(extra_env or {}))
        done = subprocess.run(
            ["git", "-c", "init.defaultBranch=main", "-c", "advice.detachedHead=false", *args],
            cwd=cwd,
            env=env,
            capture_output=True,
            text=True,
        )
        if done.returncode != 0:
            raise RuntimeError(f"git {' '.join(args)} failed in {cwd}: {done.stderr.strip()}")
        return done.stdout.strip()

    def commit_file(self, repo: Path, subject: str, at: datetime, folder: str = "changes") -> str:
        """Change a file of ``folder`` and commit it; returns the new sha."""
        slug = "".join(c if c.isalnum() else "_" for c in subject.lower())[:40]
        (repo / folder).mkdir(parents=True, exist_ok=True)
        (repo / folder / f"{slug}.txt").write_text(subject + "\n", encoding="utf-8")
        self.git(repo, "add", "-A", at=at)
        self.git(repo, "commit", "-q", "-m", subject, at=at)
        return self.git(repo, "rev-parse", "HEAD", at=at)


@dataclass(frozen=True)
class FastCommit:
    """One commit for ``fast_import``: its mark, parents' marks (first parent first), branch,
    committer (and author) time as a Unix timestamp, and the one file it writes."""

    mark: int
    parents: tuple[int, ...]
    when: int
    path: str
    ref: str = "refs/heads/main"
    message: str = ""
    offset: str = "+0000"


def fast_import(repo: Path, commits: list[FastCommit], env: dict[str, str] | None = None) -> dict[int, str]:
    """Write ``commits`` into the repository ``repo`` with one ``git fast-import`` (thousands of
    commits in a second, dated as given); returns ``{mark: sha}``."""
    stream = []
    for c in commits:
        msg = (c.message or f"change {c.mark} to {c.path}").encode()
        ident = f"Ann Tester <ann@example.com> {c.when} {c.offset}"
        stream.append(f"commit {c.ref}\nmark :{c.mark}\nauthor {ident}\ncommitter {ident}\n".encode())
        stream.append(b"data %d\n%s\n" % (len(msg), msg))
        if c.parents:
            stream.append(f"from :{c.parents[0]}\n".encode())
        for p in c.parents[1:]:
            stream.append(f"merge :{p}\n".encode())
        stream.append(f"M 644 inline {c.path}\ndata {len(msg) + 1}\n".encode() + msg + b"\n\n")
    return {int(mark[1:]): sha for mark, sha in run_fast_import(repo, stream, env).items()}


def run_fast_import(
    repo: Path, stream: list[bytes], env: dict[str, str] | None = None, force: bool = False
) -> dict[str, str]:
    """Feed ``stream`` (https://git-scm.com/docs/git-fast-import) to one ``git fast-import`` in
    ``repo``; returns ``{":mark": sha}``. ``force``: let a branch move to a commit that is not a
    descendant of where it was."""
    with tempfile.TemporaryDirectory() as tmp:
        marks = Path(tmp) / "marks"
        subprocess.run(
            ["git", "fast-import", "--quiet", *(["--force"] if force else []), f"--export-marks={marks}"],
            input=b"".join(stream),
            cwd=repo,
            env=env,
            check=True,
            stdout=subprocess.DEVNULL,
        )
        return dict(line.split() for line in marks.read_text().splitlines())


def _git_offset(moment: datetime) -> str:
    offset = moment.utcoffset() or timedelta(0)
    minutes = int(offset.total_seconds()) // 60
    sign = "-" if minutes < 0 else "+"
    return f"{sign}{abs(minutes) // 60:02d}{abs(minutes) % 60:02d}"


@dataclass
class Launch:
    """One SGLang server launch to write: its wall-clock start and what it measures."""

    start: datetime  # naive wall-clock time, as the server prints it
    minutes: float
    throughput: float  # tok/s around which decode lines vary
    accept_len: float | None = 3.1
    noise: float = 0.02  # relative spread of decode lines
    model_path: str = "Qwen/Qwen3-235B-A22B-FP8"
    tp_size: int = 8
    speculative: tuple[str, int, int, int] | None = ("EAGLE3", 2, 1, 3)
    nccl: str = "2.27.5"
    driver: str | None = None  # the GPU driver's CUDA version ("12.8"), logged by NCCL_DEBUG=INFO; None: not logged
    decode_every_s: float = 20.0
    extra_args: dict[str, object] = field(default_factory=dict)
    startup: tuple[str, ...] = ()  # more startup messages, printed once distributed init ends


def server_args_repr(launch: Launch) -> str:
    """A ``ServerArgs(...)`` repr in SGLang's dataclass field order (model_path first)."""
    algorithm, steps, topk, draft = launch.speculative or (None, None, None, None)
    fields: dict[str, object] = {
        "model_path": launch.model_path,
        "tokenizer_path": launch.model_path,
        "tokenizer_mode": "auto",
        "load_format": "auto",
        "trust_remote_code": True,
        "dtype": "auto",
        "kv_cache_dtype": "auto",
        "quantization": None,
        "served_model_name": launch.model_path,
        "mem_fraction_static": 0.88,
        "max_running_requests": None,
        "chunked_prefill_size": 8192,
        "tp_size": launch.tp_size,
        "pp_size": 1,
        "dp_size": 1,
        "ep_size": 1,
        "random_seed": 42,
        "attention_backend": "flashinfer",
        "speculative_algorithm": algorithm,
        "speculative_draft_model_path": "lmsys/Qwen3-235B-EAGLE3" if algorithm else None,
        "speculative_num_steps": steps,
        "speculative_eagle_topk": topk,
        "speculative_num_draft_tokens": draft,
        "disable_cuda_graph": False,
        "cuda_graph_max_bs": 160,
        "disable_custom_all_reduce": False,
        "enable_torch_compile": False,
        "decode_log_interval": 40,
    }
    fields.update(launch.extra_args)
    return "ServerArgs(" + ", ".join(f"{k}={v!r}" for k, v in fields.items()) + ")"


def sglang_launch_lines(launch: Launch, rng: random.Random) -> list[str]:
    """The lines one launch prints: startup, warmup, then decode lines until ``minutes`` pass."""
    t = launch.start
    rank = " TP0" if launch.tp_size > 1 else ""

    def stamp(moment: datetime) -> str:
        return moment.strftime("%Y-%m-%d %H:%M:%S")

    lines = [
        f"[{stamp(t)}] server_args={server_args_repr(launch)}",
        f"[{stamp(t + timedelta(seconds=4))}{rank}] Init torch distributed begin.",
    ]
    if launch.tp_size > 1:
        lines.append(f"[{stamp(t + timedelta(seconds=5))}{rank}] sglang is using nccl=={launch.nccl}")
        if launch.driver is not None:  # NCCL's own line, no header (NVIDIA/nccl src/misc/cudawrap.cc)
            major, minor = map(int, launch.driver.split("."))
            lines.append(f"gpu-node:4242:4242 [0] NCCL INFO cudaDriverVersion {major * 1000 + minor * 10}")
    lines += [
        f"[{stamp(t + timedelta(seconds=6))}{rank}] Init torch distributed ends. elapsed=1.52 s, mem usage=0.61 GB",
        *(f"[{stamp(t + timedelta(seconds=6))}{rank}] {message}" for message in launch.startup),
        f"[{stamp(t + timedelta(seconds=7))}{rank}] Load weight begin. avail mem=93.61 GB",
        "Loading safetensors checkpoint shards: 100% Completed | 48/48 [00:41<00:00,  1.16it/s]",
        f"[{stamp(t + timedelta(seconds=50))}{rank}] Load weight end. elapsed=43.10 s, type=Qwen3MoeForCausalLM, "
        "dtype=torch.bfloat16, avail mem=62.20 GB, mem usage=31.41 GB.",
        f"[{stamp(t + timedelta(seconds=52))}{rank}] KV Cache is allocated. #tokens: 452000, K size: 20.70 GB, V size: 20.70 GB",  # noqa: E501 - a log line
        f"[{stamp(t + timedelta(seconds=70))}] INFO:     Uvicorn running on http://127.0.0.1:30000 (Press CTRL+C to quit)",  # noqa: E501 - a log line
        f"[{stamp(t + timedelta(seconds=71))}{rank}] Prefill batch, #new-seq: 1, #new-token: 6, #cached-token: 0, "
        "token usage: 0.00, #running-req: 0, #queue-req: 0, input throughput (token/s): 0.00, cuda graph: False",
        f"[{stamp(t + timedelta(seconds=72))}] The server is fired up and ready to roll!",
    ]
    moment = t + timedelta(seconds=90)
    end = t + timedelta(minutes=launch.minutes)
    tokens = 120
    while moment <= end:
        value = launch.throughput * (1 + rng.uniform(-launch.noise, launch.noise))
        tokens += 40
        spec = ""
        if launch.speculative and launch.accept_len is not None:
            accept = launch.accept_len * (1 + rng.uniform(-0.03, 0.03))
            spec = f"accept len: {accept:.2f}, accept rate: {(accept - 1) / launch.speculative[3]:.2f}, "
        lines.append(
            f"[{stamp(moment)}{rank}] Decode batch, #running-req: 1, #token: {tokens}, token usage: 0.00, "
            f"{spec}cuda graph: True, gen throughput (token/s): {value:.2f}, #queue-req: 0"
        )
        moment += timedelta(seconds=launch.decode_every_s)
    return lines


def write_sglang_log(path: Path, launches: list[Launch], seed: int = 0) -> Path:
    """Write one log file holding ``launches`` in order (as ``>>`` appends would)."""
    rng = random.Random(seed)
    path.parent.mkdir(parents=True, exist_ok=True)
    with open(path, "w", encoding="utf-8") as handle:
        for launch in launches:
            for line in sglang_launch_lines(launch, rng):
                handle.write(line + "\n")
    return path


@dataclass
class DemoScenario:
    root: Path
    repo: Path
    logs: Path
    shas: dict[str, str]


# The story from the seeds: a good EAGLE-3 run, an unnoticed `git pull` that brought in a
# "Fix PCG MoE Error" commit, slow runs, then a reset that takes that commit away again.
DEMO_DAY = datetime(2026, 3, 2, tzinfo=timezone.utc)
PULLED_SUBJECTS = ("RadixTree refactor", "Feat/add fi selective state update kernel call", "Fix PCG MoE Error")


def build_demo(root: Path) -> DemoScenario:
    """Create the demo's upstream, checkout and logs under ``root`` (times in UTC)."""
    day = DEMO_DAY
    at = lambda hh, mm: day + timedelta(hours=hh, minutes=mm)  # noqa: E731
    git = GitScript(root / "home")
    upstream, checkout = root / "upstream", root / "sglang"
    upstream.mkdir(parents=True)
    git.git(upstream, "init", "-q", at=at(8, 0))
    shas = {"base1": git.commit_file(upstream, "Add EAGLE-3 verify path", at(8, 5))}
    shas["base2"] = git.commit_file(upstream, "Tune NCCL allreduce for PCIe", at(8, 20))
    git.git(root, "clone", "-q", str(upstream), str(checkout), at=at(9, 30))
    for number, subject in enumerate(PULLED_SUBJECTS):
        shas[f"pulled{number + 1}"] = git.commit_file(upstream, subject, at(12 + number, 0))
    git.git(checkout, "pull", "-q", "origin", "main", at=at(18, 10))
    git.git(checkout, "reset", "-q", "--hard", "HEAD~1", at=at(20, 30))

    logs = root / "logs"
    naive = lambda hh, mm: datetime(2026, 3, 2, hh, mm)  # noqa: E731 - logs print UTC wall-clock here
    write_sglang_log(logs / "sglang_eagle3_nccl_2step.log", [Launch(naive(16, 42), 20, 94.0)], seed=1)
    write_sglang_log(logs / "sglang_eagle3_during_pull.log", [Launch(naive(18, 0), 20, 93.0)], seed=2)
    write_sglang_log(
        logs / "sglang_eagle3_evening.log",
        [Launch(naive(19, 40), 12, 60.0), Launch(naive(21, 0), 12, 93.5)],
        seed=3,
    )
    return DemoScenario(root, checkout, logs, shas)


@dataclass
class MonthScenario:
    root: Path
    repo: Path
    logs: Path
    pulls: list[datetime]  # when each `git pull` ran (UTC)
    runs: int


# A month of benchmarking a checkout that is pulled most mornings: what a chart must hold. Each
# pull brings these upstream commits (subjects in SGLang's style); the level of decode
# throughput (tok/s) and accept length after a pull is the second and third item, None: as before.
MONTH_START = datetime(2026, 4, 1, tzinfo=timezone.utc)
MONTH_PULLS: tuple[tuple[tuple[str, ...], float | None, float | None], ...] = (
    (("Scheduler: overlap tokenizer with scheduling", "Docs: server arguments"), None, None),
    (("Bump flashinfer to 0.4.1",), None, None),
    (("RadixTree refactor", "CI: split the nightly suite", "Feat: selective state update kernel"), None, None),
    (("Fix PCG MoE Error", "MoE: fused top-k for FP8"), 81.5, None),
    (("Router: sticky sessions",), None, None),
    (("EAGLE-3: draft tree with topk 1 fast path", "Tests: speculative decoding"), 85.5, 3.32),
    (("Revert fused top-k for FP8",), 94.2, None),
    (("Diffusion: LoRA loading", "Diffusion: faster VAE"), None, None),
    (("Metrics: per-request TTFT histogram",), None, None),
    (("NCCL: one-shot allreduce up to 256 KB", "Docs: NCCL tuning"), 97.8, None),
    (("Scheduler: fewer host syncs",), None, None),
    (("Quantization: FP8 KV cache scales per head", "Bump torch to 2.9.1"), 94.0, None),
    (("Tokenizer: batch detokenize",), None, None),
    (("Attention: flashinfer decode plan cache", "Fix a typo in the README"), None, None),
    (("Release 0.5.10",), None, None),
)


def build_month(root: Path) -> MonthScenario:
    """A month of benchmarking (times in UTC): a clone, 15 pulls of 1 to 3 upstream commits
    each, two 20-minute EAGLE-3 runs on each weekday (one on a Saturday, one racing a pull), a
    drop at the 4th pull that the 7th reverts, and two more level changes; one log file a day."""
    git = GitScript(root / "home")
    upstream, checkout = root / "upstream", root / "sglang"
    upstream.mkdir(parents=True)
    start = MONTH_START
    git.git(upstream, "init", "-q", at=start - timedelta(days=3))
    for number, subject in enumerate(("Add EAGLE-3 verify path", "Tune NCCL allreduce for PCIe")):
        git.commit_file(upstream, subject, start - timedelta(days=2, hours=-number))
    git.git(root, "clone", "-q", str(upstream), str(checkout), at=start + timedelta(hours=8, minutes=30))

    weekdays = [start + timedelta(days=d) for d in range(30) if (start + timedelta(days=d)).weekday() < 5]
    last = len(MONTH_PULLS) - 1
    pull_days = [weekdays[1 + round(i * (len(weekdays) - 2) / last)] for i in range(len(MONTH_PULLS))]
    level, accept = 94.0, 3.1
    levels: list[tuple[datetime, float, float]] = [(start, level, accept)]
    pulls = []
    for index, ((subjects, new_level, new_accept), day) in enumerate(zip(MONTH_PULLS, pull_days, strict=True)):
        for number, subject in enumerate(subjects):
            git.commit_file(upstream, subject, day - timedelta(hours=10 - number))
        # The 9th pull lands while the morning run is still going: that run is "mixed".
        when = day + (timedelta(hours=10, minutes=8) if index == 8 else timedelta(hours=8, minutes=40 + index))
        git.git(checkout, "pull", "-q", "origin", "main", at=when)
        pulls.append(when)
        level, accept = new_level or level, new_accept or accept
        levels.append((when, level, accept))

    def level_at(moment: datetime) -> tuple[float, float]:
        return next((lv, acc) for when, lv, acc in reversed(levels) if when <= moment)

    logs, runs = root / "logs", 0
    saturday = next(start + timedelta(days=d) for d in range(30) if (start + timedelta(days=d)).weekday() == 5)
    for day in sorted([*weekdays, saturday]):
        hours = [(11, 15)] if day == saturday else [(10, 0), (15, 30 + day.day % 4 * 10)]
        launches = []
        for hh, mm in hours:
            at = day + timedelta(hours=hh, minutes=mm)
            throughput, accept_len = level_at(at)
            launches.append(Launch(at.replace(tzinfo=None), 20, throughput, accept_len=accept_len))
        write_sglang_log(logs / f"sglang_{day:%Y-%m-%d}.log", launches, seed=day.day)
        runs += len(launches)
    return MonthScenario(root, checkout, logs, pulls, runs)


@dataclass(frozen=True)
class NightlyMachine:
    """A benchmark machine of ``NightlyScenario``: its name, NCCL version and throughput level."""

    name: str
    nccl: str
    level: float  # tok/s before any regression
    gpu_count: int = 8


@dataclass(frozen=True)
class Night:
    """One night's benchmark on one machine, written: the logs to ingest and the checkout."""

    number: int  # 1-based
    machine: NightlyMachine
    logs: Path  # this night's log folder (nothing else in it)
    repo: Path  # the machine's checkout, as it is after this night's pull


# Nightly CI on two machines that pull the same upstream every night a commit landed, then run
# the benchmark twice. gpu-b runs an older NCCL. On night NIGHTLY_REGRESSION_NIGHT upstream
# brings three commits; one of them slows the one-shot allreduce that only NCCL 2.27 takes, so
# only gpu-a drops (-14%). Upstream commits (subject, folder) land on the nights listed.
NIGHTLY_START = datetime(2026, 5, 1, tzinfo=timezone.utc)
NIGHTLY_MACHINES = (NightlyMachine("gpu-a", "2.27.5", 94.0), NightlyMachine("gpu-b", "2.26.2", 90.0))
NIGHTLY_REGRESSION_NIGHT = 18
NIGHTLY_CULPRIT = "NCCL: one-shot allreduce for small messages"
NIGHTLY_COMMITS: dict[int, tuple[tuple[str, str], ...]] = {
    3: (("Scheduler: overlap tokenizer with scheduling", "python/sglang/srt/managers"),),
    6: (("Router: sticky sessions", "python/sglang/srt/router"), ("Docs: router", "docs")),
    9: (("Bump flashinfer to 0.4.1", "python"),),
    12: (("RadixTree refactor", "python/sglang/srt/mem_cache"),),
    15: (("Tests: speculative decoding", "test/srt"),),
    NIGHTLY_REGRESSION_NIGHT: (
        ("MoE: fused top-k for FP8", "python/sglang/srt/layers/moe"),
        (NIGHTLY_CULPRIT, "python/sglang/srt/distributed"),
        ("Docs: NCCL tuning", "docs"),
    ),
    22: (("Metrics: per-request TTFT histogram", "python/sglang/srt/metrics"),),
    25: (("Tokenizer: batch detokenize", "python/sglang/srt/managers"),),
    28: (("Release 0.5.10", "python"),),
}
NIGHTLY_DROP = 0.86  # gpu-a's level after the culprit, as a fraction of before


class NightlyScenario:
    """30 nights of benchmarking on two machines (``NIGHTLY_MACHINES``), written night by night:
    iterate ``nights()`` and ingest each ``Night`` before the next is written, as a nightly job
    would. Times in UTC. ``shas``: subject -> sha of every upstream commit."""

    def __init__(self, root: Path, nights: int = 30, machines: tuple[NightlyMachine, ...] = NIGHTLY_MACHINES):
        self.root = root
        self.count = nights
        self.machines = machines
        self.git = GitScript(root / "home")
        self.upstream = root / "upstream"
        self.checkouts = {m.name: root / m.name / "sglang" for m in machines}
        self.shas: dict[str, str] = {}

    def level(self, machine: NightlyMachine, night: int) -> float:
        """The machine's throughput level on that night (the regression hits NCCL 2.27 only)."""
        hit = night >= NIGHTLY_REGRESSION_NIGHT and machine.nccl.startswith("2.27")
        return machine.level * (NIGHTLY_DROP if hit else 1.0)

    def nights(self) -> Iterator[Night]:
        git, start = self.git, NIGHTLY_START
        self.upstream.mkdir(parents=True)
        git.git(self.upstream, "init", "-q", at=start - timedelta(days=2))
        for number, subject in enumerate(("Add EAGLE-3 verify path", "Tune NCCL allreduce for PCIe")):
            self.shas[subject] = git.commit_file(self.upstream, subject, start - timedelta(days=1, hours=-number))
        for index, machine in enumerate(self.machines):
            clone = start + timedelta(minutes=30 + 5 * index)
            self.checkouts[machine.name].parent.mkdir(parents=True)
            git.git(self.root, "clone", "-q", str(self.upstream), str(self.checkouts[machine.name]), at=clone)
        rng = random.Random(19)
        for night in range(1, self.count + 1):
            day = start + timedelta(days=night - 1)
            for number, (subject, folder) in enumerate(NIGHTLY_COMMITS.get(night, ())):
                when = day - timedelta(hours=6 - number)  # landed upstream the evening before
                self.shas[subject] = git.commit_file(self.upstream, subject, when, folder)
            for index, machine in enumerate(self.machines):
                checkout = self.checkouts[machine.name]
                if night in NIGHTLY_COMMITS:
                    git.git(checkout, "pull", "-q", "origin", "main", at=day + timedelta(hours=1, minutes=5 * index))
                launches = [
                    Launch(
                        (day + timedelta(hours=2, minutes=30 * run)).replace(tzinfo=None),
                        12,
                        self.level(machine, night) * (1 + rng.uniform(-0.006, 0.006)),
                        nccl=machine.nccl,
                    )
                    for run in range(2)
                ]
                logs = self.root / machine.name / "logs" / f"{day:%Y-%m-%d}"
                write_sglang_log(logs / "sglang.log", launches, seed=night * 10 + index)
                yield Night(night, machine, logs, checkout)
