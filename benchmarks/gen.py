"""Deterministic SGLang logs shaped like real ones, for the benchmarks (``benchmarks/run.py``).

The launches are those of ``timeline.scenario`` (SGLang 0.5.9+ format: startup lines, then
``Decode batch`` lines with ``accept len``), one after the other in a file as appended launches
are. About 90% of the lines are ``Decode batch`` lines; after every 18 of them come a ``Prefill
batch`` stats line and a uvicorn access line, so about 5% of the lines are access lines, as a
served benchmark prints them (one request a batch of lines). The batch varies as a busy
server's does (``#running-req`` 1-64, ``#token``, ``#queue-req``, and the batch's ``gen
throughput`` with it), so the lines come in many shapes (digit counts), as in real logs.

Two launches in three are dated (``[2026-01-01 08:00:00 TP0]``, SGLang 0.4+) and their access
lines carry the same ``[date time]`` header (SGLang sets uvicorn's access format to
``[%(asctime)s] %(levelprefix)s ...`` from 0.3.4: ``set_uvicorn_logging_configs``,
https://github.com/sgl-project/sglang/blob/main/python/sglang/srt/utils/common.py); every
third launch is stamped with the time only (``[08:00:00 TP0]``, SGLang 0.2-0.3.2, whose uvicorn
kept its default access format, without a time).
"""

from __future__ import annotations

import random
import re
from datetime import datetime, timedelta
from pathlib import Path

from timeline.scenario import Launch, sglang_launch_lines

GENERATOR_VERSION = 3  # bump when the generated text changes (cached files are named by it)

_DECODE_BATCH = re.compile(
    r"#running-req: 1, #token: \d+, token usage: 0\.00, (.*)gen throughput \(token/s\): ([\d.]+), #queue-req: 0$"
)
_ACCESS = 'INFO:     127.0.0.1:{port} - "POST /generate HTTP/1.1" 200 OK'
_DATE = re.compile(r"^\[\d{4}-\d{2}-\d{2} ", re.MULTILINE)
TIME_ONLY_EVERY = 3  # every third launch is stamped with the time only (by default)


def _prefill(stamp: str, rng: random.Random) -> str:
    new = rng.randint(200, 4000)
    return (
        f"[{stamp} TP0] Prefill batch, #new-seq: 1, #new-token: {new}, #cached-token: {rng.randint(0, 4096)}, "
        f"token usage: 0.{rng.randint(0, 99):02d}, #running-req: {rng.randint(0, 64)}, #queue-req: 0, "
        f"input throughput (token/s): {rng.uniform(1000, 30000):.2f}, cuda graph: False"
    )


def _busy(line: str, rng: random.Random) -> str:
    """A decode line of a busy server: a batch of 1-64 requests, each as fast as the launch's one."""
    m = _DECODE_BATCH.search(line)
    if m is None:
        return line
    running = rng.choice((1, 1, 2, 4, 8, 12, 16, 24, 32, 48, 64))
    tokens = running * rng.randint(150, 2500)
    queued = 0 if rng.random() < 0.8 else rng.randint(1, 120)
    batch = float(m.group(2)) * running / (1 + running / 32)
    return (
        f"{line[: m.start()]}#running-req: {running}, #token: {tokens}, token usage: {min(tokens / 452000, 0.99):.2f}, "
        f"{m.group(1)}gen throughput (token/s): {batch:.2f}, #queue-req: {queued}"
    )


def launch_lines(
    number: int, rng: random.Random, minutes: float = 240, time_only_every: int = TIME_ONLY_EVERY
) -> list[str]:
    """The lines of the ``number``-th launch: ``minutes`` long, one decode line a second, ~90%
    decode, ~5% access lines (with a ``[date time]`` header, or none in a time-only launch)."""
    start = datetime(2026, 1, 1, 8, 0) + timedelta(hours=5 * number)
    launch = Launch(start, minutes=minutes, throughput=90.0 + (number % 7), decode_every_s=1.0)
    lines = sglang_launch_lines(launch, rng)
    time_only = time_only_every > 0 and number % time_only_every == time_only_every - 1
    out: list[str] = []
    decodes = 0
    for line in lines:
        if "] Decode batch" in line:
            line = _busy(line, rng)
        out.append(line)
        if "] Decode batch" in line:
            decodes += 1
            if decodes % 18 == 0:
                out.append(_prefill(line[1:20], rng))
                access = _ACCESS.format(port=30000 + rng.randint(0, 30000))
                out.append(access if time_only else f"[{line[1:20]}] {access}")
    if time_only:
        return _DATE.sub("[", "\n".join(out)).split("\n")
    return out


def write_decode_log(
    path: Path, size: int, seed: int = 0, one_run: bool = False, time_only_every: int = TIME_ONLY_EVERY
) -> Path:
    """Write whole launches until the file holds at least ``size`` bytes (ASCII, ``\\n`` endings);
    ``one_run``: one launch, long enough to fill them (a server up for days); every
    ``time_only_every``-th launch stamped with the time only (0: none)."""
    rng = random.Random(seed)
    path.parent.mkdir(parents=True, exist_ok=True)
    written = 0
    number = 0
    with open(path, "w", encoding="ascii", newline="\n") as out:
        while written < size:
            minutes = size / 12_000 if one_run else 240  # (about 14 kB of lines a minute)
            text = "\n".join(launch_lines(number, rng, minutes, time_only_every)) + "\n"
            if written + len(text) > size and written:
                # The last launch is cut short (at a line end) to land close to the size asked for.
                text = text[: text.rfind("\n", 0, size - written) + 1]
                if not text:
                    break
            out.write(text)
            written += len(text)
            number += 1
    return path


def write_small_logs(folder: Path, count: int, size: int, seed: int = 0) -> Path:
    """``count`` logs of about ``size`` bytes each (one short launch each) in ``folder``."""
    folder.mkdir(parents=True, exist_ok=True)
    for i in range(count):
        rng = random.Random(seed * 100_003 + i)
        text = "\n".join(launch_lines(i, rng, minutes=size / 10_000)) + "\n"
        text = text[: text.rfind("\n", 0, size) + 1]
        (folder / f"server-{i:04d}.log").write_text(text, encoding="ascii")
    return folder
