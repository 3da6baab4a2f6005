"""Damage the cache's entries as a disk, a crash or a careless hand would: cut short, one bit
flipped, replaced by another entry or spliced from two, at seeded positions in each part of the
entry (its magic, its header or key, its body, its digest). Every damaged entry is a miss: the
build's output is a clean build's, byte for byte, and the entry is written anew, the same bytes a
clean cache holds. For the parse entries (``.parsed``) and a build of the logs, and for the
import-graph entries (``.reach``, ``.parses``) and a build with the checkout.

Not covered, by design: an entry rewritten with a digest that matches what it now holds. The
cache unpickles only from a folder of the user's own that nobody else can write to
(timeline.cache, ``_open``); whoever can write there can already run code as the user."""

from __future__ import annotations

import hashlib
import io
import json
import os
import pickle
import pickletools
import random
import shutil
import time
from collections.abc import Callable
from datetime import datetime, timezone
from pathlib import Path

import pytest
from test_culprits import nine_commit_pull

from timeline import cache
from timeline.builder import build
from timeline.cache import ParseCache
from timeline.environment import Environment
from timeline.export import dumps

LONG_AGO = time.time() - 3 * 3600  # logs written well before the build: not "being written"
PARTS = ("magic", "header", "body", "digest")  # a .reach or .parses entry's "header" is its key line
SEEDS_A_PART = 2


def environment(folder: Path) -> Environment:
    return Environment(
        environ={"TIMELINE_CACHE_DIR": str(folder), "TZ": "UTC"},
        now=lambda: datetime(2026, 5, 1, tzinfo=timezone.utc),
    )


def build_json(story: Story, folder: Path, *, cache_on: bool = True, with_repo: bool) -> str:
    repo = story.repo if with_repo else None
    return dumps(build([story.logs], repo=repo, log_tz="UTC", env=environment(folder), cache=cache_on))


class Story:
    """A checkout pulled between two logs (real git), a cache a clean build filled, and what the
    builds without a cache print (with and without the checkout)."""

    def __init__(self, root: Path) -> None:
        self.repo, self.logs, _ = nine_commit_pull(root, True, False)
        for log in self.logs.iterdir():
            os.utime(log, (LONG_AGO, LONG_AGO))
        self.clean = root / "clean-cache"
        self.expected = {
            with_repo: build_json(self, root / "unused", cache_on=False, with_repo=with_repo)
            for with_repo in (False, True)
        }
        assert build_json(self, self.clean, with_repo=True) == self.expected[True]
        self.entries = {path.name: path.read_bytes() for path in self.clean.iterdir()}
        lookups = [(log, ParseCache(self.clean).look(log, str(log), False)) for log in sorted(self.logs.iterdir())]
        self.log_of = {Path(lookup.entry).name: str(log) for log, lookup in lookups if lookup}

    def names(self, suffix: str) -> list[str]:
        return sorted(name for name in self.entries if name.endswith(suffix))


@pytest.fixture(scope="module")
def story(tmp_path_factory) -> Story:
    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(cache, "MIN_LOG_BYTES", 0)  # the logs here are small: keep them all
        made = Story(tmp_path_factory.mktemp("damaged-cache"))
    assert len(made.names(".parsed")) == len(made.log_of) == 2
    assert len(made.names(".reach")) == 2 and len(made.names(".parses")) == 2
    return made


@pytest.fixture(autouse=True)
def small_logs_cached(monkeypatch) -> None:
    monkeypatch.setattr(cache, "MIN_LOG_BYTES", 0)


def parts(name: str, data: bytes) -> dict[str, tuple[int, int]]:
    """Where each part of an entry lies: ``(start, end)``."""
    magic = {".parsed": cache.MAGIC, ".reach": cache.REACH_MAGIC, ".parses": cache.PARSES_MAGIC}[Path(name).suffix]
    assert data.startswith(magic)
    if name.endswith(".parsed"):  # magic, pickled header, pickled parse, digest
        entry = io.BytesIO(data)
        entry.seek(len(magic))
        pickle.load(entry)
        header_end = entry.tell()
    else:  # magic, key line, JSON, digest
        header_end = data.index(b"\n", len(magic)) + 1
    digest = len(data) - cache.DIGEST_BYTES
    return {
        "magic": (0, len(magic)),
        "header": (len(magic), header_end),
        "body": (header_end, digest),
        "digest": (digest, len(data)),
    }


def truncated(story: Story, name: str, part: str, rng: random.Random) -> bytes:
    data = story.entries[name]
    start, end = parts(name, data)[part]
    return data[: rng.randrange(start, end)]


def bit_flipped(story: Story, name: str, part: str, rng: random.Random) -> bytes:
    data = story.entries[name]
    if part == "value":
        return value_flipped(name, data, rng)
    start, end = parts(name, data)[part]
    at = rng.randrange(start, end)
    return data[:at] + bytes([data[at] ^ (1 << rng.randrange(8))]) + data[at + 1 :]


def value_flipped(name: str, data: bytes, rng: random.Random) -> bytes:
    """One bit of one value flipped so that the body still reads as well-formed: a bit of a
    pickled float (any 8 bytes are a float) or the low bit of a letter in the JSON (still a
    letter or a backquote). Only the digest tells this entry from a whole one."""
    start, end = parts(name, data)["body"]
    body = data[start:end]
    if name.endswith(".parsed"):
        floats = [position for op, _, position in pickletools.genops(body) if op.name == "BINFLOAT"]
        at = rng.choice(floats) + 1 + rng.randrange(8)  # the opcode byte, then 8 bytes big-endian
        flipped = body[:at] + bytes([body[at] ^ (1 << rng.randrange(8))]) + body[at + 1 :]
        assert pickle.loads(flipped) is not None  # unpickles: a parse with one wrong number
    else:
        at = rng.choice([i for i, byte in enumerate(body) if 0x61 <= byte <= 0x7A])
        flipped = body[:at] + bytes([body[at] ^ 1]) + body[at + 1 :]
        assert json.loads(flipped) != json.loads(body)  # reads: one name misspelt
    return data[:start] + flipped + data[end:]


def replaced(story: Story, name: str, part: str, rng: random.Random) -> bytes:
    """Another entry of the same kind in its place: whole (its header or key is another's), or
    spliced (this entry's magic and header, the other's body, this entry's digest)."""
    other = story.entries[next(n for n in story.names(Path(name).suffix) if n != name)]
    if part == "whole":
        return other
    data = story.entries[name]
    header_end = parts(name, data)["header"][1]
    return (
        data[:header_end] + other[parts(name, other)["header"][1] : -cache.DIGEST_BYTES] + data[-cache.DIGEST_BYTES :]
    )


def foreign(story: Story, name: str, part: str, rng: random.Random) -> bytes:
    """The right header and a whole digest around something that is not a parse."""
    data = story.entries[name]
    header = data[: parts(name, data)["header"][1]]
    body = pickle.dumps({"runs": []}, protocol=5)
    return header + body + hashlib.sha256(header[len(cache.MAGIC) :] + body).digest()


def garbage(story: Story, name: str, part: str, rng: random.Random) -> bytes:
    return rng.randbytes(len(story.entries[name]))


def empty(story: Story, name: str, part: str, rng: random.Random) -> bytes:
    return b""


Damage = Callable[[Story, str, str, random.Random], bytes]
CASES: list[tuple[str, Damage, str, int]] = [
    *(
        (suffix, damage, part, seed)
        for suffix in (".parsed", ".reach", ".parses")
        for damage in (truncated, bit_flipped)
        for part in PARTS
        for seed in range(SEEDS_A_PART)
    ),
    *((suffix, bit_flipped, "value", seed) for suffix in (".parsed", ".reach", ".parses") for seed in range(4)),
    *((suffix, replaced, how, 0) for suffix in (".parsed", ".reach", ".parses") for how in ("whole", "spliced")),
    *((".parsed", damage, "whole", 0) for damage in (foreign, garbage, empty)),
]


@pytest.mark.parametrize(
    ("suffix", "damage", "part", "seed"), CASES, ids=[f"{s[1:]}-{d.__name__}-{p}-{n}" for s, d, p, n in CASES]
)
def test_a_damaged_entry_is_a_miss_and_is_written_anew(story, parses, tmp_path, suffix, damage, part, seed):
    rng = random.Random(f"{suffix} {damage.__name__} {part} {seed}")
    folder = tmp_path / "cache"
    shutil.copytree(story.clean, folder)
    name = rng.choice(story.names(suffix))
    damaged = damage(story, name, part, rng)
    assert damaged != story.entries[name]
    (folder / name).write_bytes(damaged)
    with_repo = suffix != ".parsed"
    if suffix == ".parses":  # the import graphs found, no table is read: walk the versions again
        for reach in story.names(".reach"):
            (folder / reach).unlink()

    assert build_json(story, folder, with_repo=with_repo) == story.expected[with_repo]
    if suffix == ".parsed":
        assert parses == [story.log_of[name]]  # this log parsed again, the other one from the cache
    else:
        assert parses == []
    assert {path.name: path.read_bytes() for path in folder.iterdir()} == story.entries
