"""Kill ``timeline build`` at random points while it writes its files (a real process, a real
signal, 50 seeds): each file is then the previous one, byte for byte, or the new one, complete
and valid; after SIGTERM or SIGINT no temporary file is left either (SIGKILL cannot be caught:
its temporary file may stay, the file itself is still whole)."""

from __future__ import annotations

import csv
import io
import json
import os
import random
import re
import signal
import subprocess
import sys
import time
from concurrent.futures import ThreadPoolExecutor
from datetime import datetime
from pathlib import Path

import pytest

from timeline.scenario import Launch, write_sglang_log

SEEDS = range(50)
SIGNALS = (signal.SIGTERM, signal.SIGINT, signal.SIGKILL)
OUTPUTS = {"json": "out.json", "csv": "out.csv", "html": "out.html"}
PREVIOUS = b"the previous file, kept whole\n"


def command(logs: Path, folder: Path) -> list[str]:
    files = [arg for kind, name in OUTPUTS.items() for arg in (f"--{kind}", str(folder / name))]
    return [sys.executable, "-m", "timeline", "build", str(logs), "--log-tz", "UTC", "--samples", *files]


@pytest.fixture(scope="module")
def logs(tmp_path_factory) -> Path:
    """Two launches with a few thousand stats lines: a JSON of about a megabyte, so a write
    takes long enough to be cut."""
    folder = tmp_path_factory.mktemp("logs")
    start = datetime(2026, 3, 2, 10, 0)
    write_sglang_log(folder / "a.log", [Launch(start, 25, 90.0, decode_every_s=0.5)], seed=1)
    write_sglang_log(folder / "b.log", [Launch(start.replace(hour=12), 25, 60.0, decode_every_s=0.5)], seed=2)
    return folder


@pytest.fixture(scope="module")
def environment(tmp_path_factory, logs) -> dict[str, str]:
    """The parse cache warmed once, so each killed process spends its time writing."""
    env = dict(os.environ, TIMELINE_CACHE_DIR=str(tmp_path_factory.mktemp("cache")), NO_COLOR="1")
    folder = tmp_path_factory.mktemp("warm")
    subprocess.run(command(logs, folder), env=env, check=True, capture_output=True)
    return env


@pytest.fixture(scope="module")
def expected(tmp_path_factory, logs, environment) -> dict[str, bytes]:
    """What an uninterrupted build writes (the JSON's generated_at aside)."""
    folder = tmp_path_factory.mktemp("clean")
    subprocess.run(command(logs, folder), env=environment, check=True, capture_output=True)
    return {kind: (folder / name).read_bytes() for kind, name in OUTPUTS.items()}


def complete(kind: str, data: bytes, expected: bytes) -> bool:
    """``data`` is a whole file of ``kind``, the same as an uninterrupted build's."""
    if kind == "json":
        try:
            document, reference = json.loads(data), json.loads(expected)
        except ValueError:
            return False
        for volatile in ("generated_at", "host"):
            document.pop(volatile, None), reference.pop(volatile, None)
        return document == reference
    if kind == "csv":
        return list(csv.reader(io.StringIO(data.decode()))) == list(csv.reader(io.StringIO(expected.decode())))
    return _GENERATED.sub(b"", data) == _GENERATED.sub(b"", expected)


# When the report was made: its text varies (a time within a millisecond of the second is written
# without its fraction, clock.iso), so it is left out of the comparison, as the JSON's is
_GENERATED = re.compile(rb"\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d(?:\.\d{3})?[+-]\d\d:\d\d")


def kill_while_writing(seed: int, logs: Path, folder: Path, env: dict[str, str]) -> tuple[int, int, str]:
    """Start a build, wait for its first temporary file, kill it a random while later; returns
    (the signal, the exit status, its stderr)."""
    rng = random.Random(seed)
    sent = SIGNALS[seed % len(SIGNALS)]
    for name in OUTPUTS.values():
        (folder / name).write_bytes(PREVIOUS)
    process = subprocess.Popen(command(logs, folder), env=env, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
    deadline = time.monotonic() + 60
    while process.poll() is None and time.monotonic() < deadline:
        if any(entry.name.endswith(".tmp") for entry in os.scandir(folder)):
            break
        time.sleep(0.0005)
    time.sleep(rng.uniform(0, 0.25))  # somewhere in the writing of the three files, or after
    if process.poll() is None:
        process.send_signal(sent)
    _, stderr = process.communicate(timeout=60)
    return sent, process.returncode, stderr.decode(errors="replace")


def check_seed(
    seed: int, logs: Path, folder: Path, env: dict[str, str], expected: dict[str, bytes]
) -> tuple[list[str], list[bool]]:
    """What is wrong after the kill of seed ``seed`` (nothing: an empty list), and which files
    are still the previous ones."""
    folder.mkdir()
    sent, status, stderr = kill_while_writing(seed, logs, folder, env)
    # 130: the handler ran; -signal: it came after the command had finished and put its
    # handlers back (the files are written by then), or it was SIGKILL.
    interrupted = stderr.splitlines()[-1:] == ["timeline: interrupted; no file was left half-written"]
    problems = [] if status in (0, 130, -sent) else [f"exit status {status}: {stderr[-300:]!r}"]
    if status == 130 and not interrupted:
        problems.append(f"status 130 with {stderr[-300:]!r}")
    for kind, name in OUTPUTS.items():
        data = (folder / name).read_bytes()
        if not (data == PREVIOUS or complete(kind, data, expected[kind])):
            problems.append(f"{name} is neither the old file nor the new one ({len(data)} bytes)")
    temporaries = [entry.name for entry in os.scandir(folder) if entry.name.endswith(".tmp")]
    if temporaries and sent != signal.SIGKILL:
        problems.append(f"left {temporaries}")
    old = [(folder / name).read_bytes() == PREVIOUS for name in OUTPUTS.values()]
    return [f"seed {seed} ({signal.Signals(sent).name}): {problem}" for problem in problems], old


def test_a_killed_build_leaves_each_file_whole(logs, environment, expected, tmp_path):
    """50 seeds, two processes at a time (the machine's two cores). The kills land inside the
    writes, not all before or all after them: some files are left old, some new."""
    with ThreadPoolExecutor(2) as pool:
        found = list(pool.map(lambda seed: check_seed(seed, logs, tmp_path / str(seed), environment, expected), SEEDS))
    assert [problem for problems, _ in found for problem in problems] == []
    states = [old for _, olds in found for old in olds]
    assert any(states) and not all(states)


# Where the kills of the test above have landed, rarely, and what a bare KeyboardInterrupt did
# there: inside code run by exec() of a string (dataclasses and namedtuple make their methods
# so), and inside a descriptor's __set_name__ while a dataclass is made (CPython 3.11 wraps
# whatever it raises in a RuntimeError). Both while a late import of the renderers ran.
STOPPED_AT = {
    "exec": """
def stopped(*args, **kwargs):
    exec("os.kill(os.getpid(), signal.SIGTERM)\\nfor _ in range(500):\\n    time.sleep(0.01)")
""",
    "set-name": """
class Field:
    def __set_name__(self, owner, name):
        os.kill(os.getpid(), signal.SIGTERM)
        for _ in range(500):
            time.sleep(0.01)

def stopped(*args, **kwargs):
    class Lanes:
        taken = Field()
""",
}
STOPPED_COMMAND = """
import os, signal, sys, time
from timeline import cli
from timeline.commands import build
{stopped}
build.run = stopped
sys.argv[0] = "timeline"
cli.main()
"""


@pytest.mark.parametrize("where", STOPPED_AT)
def test_sigterm_anywhere_exits_130(tmp_path, where):
    """Run as ``python -m``, as the tests above run it: the status is 130 and the one line is said,
    wherever in the Python machinery the signal lands."""
    (tmp_path / "stopped_command.py").write_text(STOPPED_COMMAND.format(stopped=STOPPED_AT[where]))
    env = dict(os.environ, PYTHONPATH=os.pathsep.join([str(tmp_path), os.environ.get("PYTHONPATH", "")]))
    done = subprocess.run(
        [sys.executable, "-m", "stopped_command", "build", str(tmp_path)],
        env=env,
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert (done.returncode, done.stderr) == (130, "timeline: interrupted; no file was left half-written\n")
