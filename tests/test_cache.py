"""The parse cache (timeline.cache; README, "The parse cache"): a second build over unchanged logs parses nothing and
gives the same timeline; any change to a log, to the options or to the parsers is a miss; a cache
folder that cannot be used is only a slower build. Damaged entries: tests/faults/test_damaged_cache.py."""

from __future__ import annotations

import json
import os
import shutil
import time
from datetime import datetime, timezone
from pathlib import Path

import pytest
from typer.testing import CliRunner

from timeline import builder, cache
from timeline.builder import build
from timeline.cache import ParseCache, cache_folder
from timeline.cli import app
from timeline.environment import Environment
from timeline.export import dumps
from timeline.pytest_plugin import fixtures_root
from timeline.records import Diagnostic, ParsedFile
from timeline.scenario import Launch, write_sglang_log

LONG_AGO = time.time() - 3 * 3600  # logs written well before the build: not "being written"


def _age(*paths: Path, when: float = LONG_AGO) -> None:
    for path in paths:
        for file in [path] if path.is_file() else [p for p in path.rglob("*") if p.is_file()]:
            os.utime(file, (when, when))


def _logs(folder: Path, count: int = 3) -> Path:
    for i in range(count):
        write_sglang_log(
            folder / f"server-{i}.log", [Launch(datetime(2026, 1, 1 + i, 8), minutes=3, throughput=90.0 + i)], seed=i
        )
    _age(folder)
    return folder


def _env(cache_dir: Path, **extra: str) -> Environment:
    return Environment(
        environ={"TIMELINE_CACHE_DIR": str(cache_dir), "TZ": "UTC", **extra},
        now=lambda: datetime(2026, 3, 1, tzinfo=timezone.utc),
    )


@pytest.fixture(autouse=True)
def small_logs_cached(monkeypatch) -> None:
    """The logs here are small: cache them all (test_small_logs_are_not_cached tests the limit)."""
    monkeypatch.setattr(cache, "MIN_LOG_BYTES", 0)


def _entries(folder: Path) -> list[Path]:
    return sorted(folder.glob("*.parsed")) if folder.is_dir() else []


def test_second_build_takes_every_log_from_the_cache(tmp_path, parses):
    logs, where = _logs(tmp_path / "logs"), tmp_path / "cache"
    first = dumps(build([logs], log_tz="UTC", env=_env(where)))
    assert len(parses) == 3 and len(_entries(where)) == 3
    parses.clear()
    second = dumps(build([logs], log_tz="UTC", env=_env(where)))
    assert parses == []
    uncached = dumps(build([logs], log_tz="UTC", env=_env(where), cache=False))
    assert first == second == uncached
    assert len(parses) == 3  # cache=False: parsed, not looked up


def test_cached_parse_is_the_same_document_warnings_included(tmp_path, parses):
    """Every captured log (SGLang, vLLM, benchmarks, binary, bad UTF-8, a cut .gz; warnings whose text
    depends on the file's mtime), with and without samples: from the cache, the same JSON."""
    logs, where = tmp_path / "logs", tmp_path / "cache"
    shutil.copytree(fixtures_root(), logs, ignore=shutil.ignore_patterns("*.json", "*.md"))
    _age(logs)
    cut = logs / "bad" / "truncated-archive.gz"  # not a log name: given by name
    for samples in (False, True):
        fresh = dumps(build([logs, cut], log_tz="UTC", keep_samples=samples, env=_env(where), cache=False))
        stored = build([logs, cut], log_tz="UTC", keep_samples=samples, env=_env(where))
        parses.clear()
        again = build([logs, cut], log_tz="UTC", keep_samples=samples, env=_env(where))
        assert dumps(stored) == dumps(again) == fresh
        assert again.warnings == stored.warnings and any(w.line is None for w in again.warnings)
        # The cut archive gave a read error: a problem that may pass, so it is parsed every time.
        assert parses == [str(cut)]


def test_appended_or_touched_log_is_parsed_again(tmp_path, parses):
    logs, where = _logs(tmp_path / "logs"), tmp_path / "cache"
    build([logs], log_tz="UTC", env=_env(where))
    first = build([logs], log_tz="UTC", env=_env(where))
    grown, touched = logs / "server-0.log", logs / "server-1.log"
    with open(grown, "a", encoding="utf-8") as f:
        f.write("[2026-01-01 08:10:00] one more line\n")
    _age(grown)  # same mtime as before: only the size tells
    _age(touched, when=LONG_AGO + 60)  # same size: only the mtime tells
    parses.clear()
    second = build([logs], log_tz="UTC", env=_env(where))
    assert sorted(parses) == sorted([str(grown), str(touched)])
    assert dumps(second) == dumps(build([logs], log_tz="UTC", env=_env(where), cache=False))
    assert len(_entries(where)) == 3  # one entry a log: the new parse replaced the old one
    assert first.runs[0].last_line != second.runs[0].last_line


def test_samples_and_the_source_label_have_their_own_entries(tmp_path, parses, monkeypatch):
    logs, where = _logs(tmp_path / "logs", count=1), tmp_path / "cache"
    build([logs], log_tz="UTC", env=_env(where))
    parses.clear()
    with_samples = build([logs], log_tz="UTC", keep_samples=True, env=_env(where))
    assert len(parses) == 1 and with_samples.runs[0].samples
    monkeypatch.chdir(tmp_path)
    parses.clear()
    relative = build(["logs"], log_tz="UTC", env=_env(where))  # the same file, named otherwise
    assert parses == [os.path.join("logs", "server-0.log")] and relative.runs[0].source == parses[0]
    parses.clear()
    for samples in (False, True):
        build([logs], log_tz="UTC", keep_samples=samples, env=_env(where))
    build(["logs"], log_tz="UTC", env=_env(where))
    assert parses == [] and len(_entries(where)) == 3


def test_a_parser_change_is_a_miss(tmp_path, parses, monkeypatch):
    logs, where = _logs(tmp_path / "logs", count=1), tmp_path / "cache"
    build([logs], log_tz="UTC", env=_env(where))
    monkeypatch.setattr(cache, "_CODE_VERSION", "0.1.0/another-parser/cpython")
    parses.clear()
    build([logs], log_tz="UTC", env=_env(where))
    assert len(parses) == 1


def test_code_version_follows_the_parsers_sources():
    version = cache.code_version()
    assert version.startswith(__import__("timeline").__version__ + "/") and version == cache.code_version()


def test_a_new_parsed_run_field_makes_every_entry_a_miss(tmp_path, monkeypatch):
    """Entries are pickled ParsedRuns: one written before a field was added (``messages``) would
    load without it. The code version digests the sources of a parse, the records among them."""
    sources = cache.parse_sources()
    records = tmp_path / "records.py"
    shutil.copyfile(next(s for s in sources if s.name == "records.py"), records)
    monkeypatch.setattr(cache, "parse_sources", lambda: [records if s.name == "records.py" else s for s in sources])
    monkeypatch.setattr(cache, "_CODE_VERSION", None)
    now = cache.code_version()
    field = "    messages: list[str] = field(default_factory=list)\n"
    assert field in records.read_text()
    records.write_text(records.read_text().replace(field, ""))
    monkeypatch.setattr(cache, "_CODE_VERSION", None)
    assert cache.code_version() != now


def test_unusable_cache_folder_only_turns_the_cache_off(tmp_path, parses):
    logs = _logs(tmp_path / "logs", count=2)
    blocker = tmp_path / "a-file"
    blocker.write_text("not a folder\n")
    expected = dumps(build([logs], log_tz="UTC", env=_env(tmp_path / "cache"), cache=False))
    parse_cache = ParseCache(blocker / "cache")
    assert dumps(build([logs], log_tz="UTC", env=_env(tmp_path / "cache"), cache=parse_cache)) == expected
    assert parse_cache.problem and str(blocker) in parse_cache.problem and len(parses) == 4

    result = CliRunner().invoke(
        app, ["build", str(logs), "--log-tz", "UTC", "--json", "-"], env={"TIMELINE_CACHE_DIR": str(blocker / "cache")}
    )
    assert result.exit_code == 0 and json.loads(result.stdout)["runs"]
    notes = [line for line in result.stderr.splitlines() if "parse cache off" in line]
    assert len(notes) == 1 and "Traceback" not in result.output


def test_folder_others_can_write_to_is_not_used(tmp_path, parses):
    logs, where = _logs(tmp_path / "logs", count=1), tmp_path / "shared"
    where.mkdir()
    where.chmod(0o777)
    parse_cache = ParseCache(where)
    build([logs], log_tz="UTC", env=_env(where), cache=parse_cache)
    assert "other users" in (parse_cache.problem or "") and _entries(where) == []


def test_cache_folder_is_made_private(tmp_path):
    logs, where = _logs(tmp_path / "logs", count=1), tmp_path / "deep" / "cache"
    build([logs], log_tz="UTC", env=_env(where))
    assert where.stat().st_mode & 0o777 == 0o700
    assert all(entry.stat().st_mode & 0o077 == 0 for entry in _entries(where))


def test_no_cache_writes_nothing(tmp_path, parse_cache_folder):
    logs = _logs(tmp_path / "logs", count=2)
    result = CliRunner().invoke(app, ["build", str(logs), "--log-tz", "UTC", "--json", "-", "--no-cache"])
    assert result.exit_code == 0 and len(json.loads(result.stdout)["runs"]) == 2
    assert not parse_cache_folder.exists()
    result = CliRunner().invoke(app, ["build", str(logs), "--log-tz", "UTC", "--json", "-"])
    assert result.exit_code == 0 and len(_entries(parse_cache_folder)) == 2


def test_cache_never_writes_next_to_the_logs(tmp_path, parse_cache_folder, demo):
    logs = _logs(tmp_path / "logs", count=2)
    before = sorted(p.relative_to(tmp_path) for p in tmp_path.rglob("*"))
    repo_before = sorted(p.relative_to(demo.repo) for p in demo.repo.rglob("*"))
    for _ in range(2):
        result = CliRunner().invoke(
            app, ["build", str(logs), "--repo", str(demo.repo), "--log-tz", "UTC", "--json", "-"]
        )
        assert result.exit_code == 0
    assert sorted(p.relative_to(tmp_path) for p in tmp_path.rglob("*")) == before
    assert sorted(p.relative_to(demo.repo) for p in demo.repo.rglob("*")) == repo_before
    assert len(_entries(parse_cache_folder)) == 2


def test_log_that_changes_while_parsed_is_not_stored(tmp_path, monkeypatch):
    logs, where = _logs(tmp_path / "logs", count=1), tmp_path / "cache"
    real = builder.parse_file

    def parse_then_append(path, **options):
        parsed = real(path, **options)
        with open(path, "a", encoding="utf-8") as f:
            f.write("[2026-01-01 08:10:00] written meanwhile\n")
        _age(Path(path))
        return parsed

    monkeypatch.setattr(builder, "parse_file", parse_then_append)
    build([logs], log_tz="UTC", env=_env(where))
    assert _entries(where) == []


def test_log_being_written_is_not_stored(tmp_path, parses):
    logs, where = _logs(tmp_path / "logs", count=1), tmp_path / "cache"
    _age(logs, when=time.time())  # modified just now: the server may still be writing it
    build([logs], log_tz="UTC", env=_env(where))
    build([logs], log_tz="UTC", env=_env(where))
    assert len(parses) == 2 and _entries(where) == []


@pytest.mark.parametrize(
    ("code", "stored"),
    [
        ("unreadable", False),
        ("read-error", False),
        ("internal-error", False),
        ("zstd-missing", False),
        ("other", True),
    ],
)
def test_parse_with_a_passing_problem_is_not_stored(tmp_path, monkeypatch, code, stored):
    # the code decides, not the wording: the same message under "other" is a lasting one
    logs, where = _logs(tmp_path / "logs", count=1), tmp_path / "cache"

    def failing(path, *, source=None, **options):
        return ParsedFile(
            source, diagnostics=[Diagnostic(source, 12, "internal parser error near line 12: KeyError: 'x'", code)]
        )

    monkeypatch.setattr(builder, "parse_file", failing)
    build([logs], log_tz="UTC", env=_env(where))
    assert len(_entries(where)) == (1 if stored else 0)


@pytest.mark.skipif(not hasattr(os, "fork"), reason="needs os.fork")
def test_worker_processes_store_their_parses(tmp_path, monkeypatch):
    logs, where = _logs(tmp_path / "logs", count=20), tmp_path / "cache"
    env = _env(where, TIMELINE_JOBS="2")
    first = dumps(build([logs], log_tz="UTC", env=env))
    assert len(_entries(where)) == 20

    def no_parsing(*args, **kwargs):
        raise AssertionError("parsed although cached")

    monkeypatch.setattr(builder, "parse_file", no_parsing)
    assert dumps(build([logs], log_tz="UTC", env=env)) == first


def test_cache_is_kept_under_its_limits(tmp_path):
    logs, where = _logs(tmp_path / "logs", count=6), tmp_path / "cache"
    build([logs], log_tz="UTC", env=_env(where), cache=ParseCache(where, max_entries=4))
    assert len(_entries(where)) <= 4
    size = max(entry.stat().st_size for entry in _entries(where))
    build([logs], log_tz="UTC", env=_env(where), cache=ParseCache(where, max_bytes=int(size * 4.5)))
    assert sum(entry.stat().st_size for entry in _entries(where)) <= size * 4.5
    stale = where / f".tmp-k1lled_b{cache.SUFFIX}"  # a temp file a killed build left, half written
    stale.write_bytes(cache.MAGIC + b"half")
    _age(stale)
    (logs / "server-0.log").touch()
    _age(logs / "server-0.log", when=LONG_AGO + 1)
    build([logs], log_tz="UTC", env=_env(where))  # a miss: prunes
    assert not stale.exists()


def test_prune_removes_nothing_but_its_own_entries(tmp_path):
    """TIMELINE_CACHE_DIR may name a folder that holds other files too: over its limits, the
    cache removes only what it wrote (its names, its MAGIC)."""
    logs, where = _logs(tmp_path / "logs", count=3), tmp_path / "cache"
    build([logs], log_tz="UTC", env=_env(where))
    theirs = [where / f"results{cache.SUFFIX}", where / ("0" * 40 + cache.SUFFIX), where / f".tmp-theirs{cache.SUFFIX}"]
    for path in theirs:
        path.write_bytes(b"the user's own data\n" * 100)
    _age(*theirs)
    ours = [p for p in _entries(where) if p not in theirs]
    assert len(ours) == 3
    small = ParseCache(where, max_bytes=1, max_entries=1)
    assert small.ready()
    small.prune()
    assert not any(path.exists() for path in ours)
    assert all(path.exists() for path in theirs)


def test_cache_folder_from_the_environment(tmp_path):
    assert cache_folder({"TIMELINE_CACHE_DIR": "/x/t", "XDG_CACHE_HOME": "/x/c", "HOME": "/h"}) == Path("/x/t")
    assert cache_folder({"XDG_CACHE_HOME": "/x/c", "HOME": "/h"}) == Path("/x/c/timeline")
    assert cache_folder({"XDG_CACHE_HOME": "relative", "HOME": "/h"}) == Path("/h/.cache/timeline")
    assert cache_folder({"HOME": "/h"}) == Path("/h/.cache/timeline")
    assert cache_folder({}) is None
    # No folder named: no cache, and no complaint.
    logs = _logs(tmp_path / "logs", count=1)
    parse_cache = ParseCache.from_environ({})
    assert build([logs], log_tz="UTC", env=Environment(environ={}), cache=parse_cache).runs
    assert parse_cache.problem is None


def test_test_suite_never_uses_the_users_cache(parse_cache_folder):
    assert os.environ["TIMELINE_CACHE_DIR"] == str(parse_cache_folder)
    assert cache_folder(Environment().environ) == parse_cache_folder


def test_small_logs_are_not_cached(tmp_path, parses, monkeypatch):
    logs = _logs(tmp_path / "logs", 2)
    limit = max(p.stat().st_size for p in logs.iterdir()) + 1
    monkeypatch.setattr(cache, "MIN_LOG_BYTES", limit)
    (logs / "big.log").write_bytes((logs / "server-0.log").read_bytes() * 2)
    _age(logs)
    for _ in range(2):
        build([str(logs)], env=_env(tmp_path / "cache"))
    assert sorted(Path(source).name for source in parses) == [
        "big.log",
        "server-0.log",
        "server-0.log",
        "server-1.log",
        "server-1.log",
    ]
    assert len(_entries(tmp_path / "cache")) == 1


def test_import_graph_entries_are_checked_by_key_and_pruned_with_the_rest(tmp_path):
    """``store_reach``/``load_reach`` (timeline.git.code's entries): a value comes back only under
    its own key; over the limits they go as the parse entries do, and a file of the user's that
    merely ends in ``.reach`` stays."""
    where = tmp_path / "cache"
    store = ParseCache(where)
    assert store.store_reach('["reach", "a"]', {"root": "python/"})
    assert store.load_reach('["reach", "a"]') == {"root": "python/"}
    assert store.load_reach('["reach", "b"]') is None
    assert not store.store_reach("two\nlines", 1) and ParseCache(None).load_reach('["reach", "a"]') is None
    (ours,) = where.glob("*.reach")
    assert ours.read_bytes().startswith(cache.REACH_MAGIC)
    theirs = where / ("0" * 40 + ".reach")
    theirs.write_bytes(b"the user's own data\n")
    _age(ours, theirs)
    small = ParseCache(where, max_bytes=1, max_entries=1)
    assert small.ready()
    small.prune()
    assert not ours.exists() and theirs.exists()
