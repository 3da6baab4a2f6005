from __future__ import annotations

import itertools
import json
import os
from collections.abc import Iterator
from contextlib import ExitStack, suppress
from datetime import datetime, timezone
from pathlib import Path

import pytest
from postgres_server import PostgresServer, Unavailable, database_name, running_server, server_programs, server_user
from postgres_server import unavailable as postgres_unavailable

from timeline import builder
from timeline.scenario import DemoScenario, GitScript, build_demo


def pytest_configure(config: pytest.Config) -> None:
    # captured_log, reflog_repo and timeline_build come from timeline's own pytest plugin, which
    # `pip install -e .` registers (entry point pytest11); register it when running without it.
    manager = config.pluginmanager
    if not (
        manager.has_plugin("timeline") or manager.has_plugin("timeline.pytest_plugin") or manager.is_blocked("timeline")
    ):
        manager.import_plugin("timeline.pytest_plugin")
    config.stash[_SOURCES_AT_START] = _source_files()


def pytest_terminal_summary(terminalreporter, exitstatus: int, config: pytest.Config) -> None:
    """Say so when the code under test changed on disk while the suite ran (a checkout that a merge
    or a rebase updated under it): subprocesses then run other code than the suite imported, and
    the parse cache's code version differs between them, so failures need not be the code's."""
    before, after = config.stash[_SOURCES_AT_START], _source_files()
    changed = sorted(path for path in before.keys() | after.keys() if before.get(path) != after.get(path))
    if changed:
        shown = ", ".join(changed[:5]) + (f" and {len(changed) - 5} more" if len(changed) > 5 else "")
        terminalreporter.write_line(
            f"warning: {len(changed)} source file(s) changed while the tests ran ({shown}): "
            "a failure may come from that; run the tests in a checkout nothing updates meanwhile",
            yellow=True,
            bold=True,
        )


_SOURCES_AT_START = pytest.StashKey[dict[str, tuple[int, int]]]()
_ROOT = Path(__file__).resolve().parents[1]


def _source_files() -> dict[str, tuple[int, int]]:
    """The size and mtime of every source file of the package and the tests, by path."""
    found = {}
    for folder in ("timeline", "parsers", "tests"):
        for path in (_ROOT / folder).rglob("*"):
            if path.suffix in (".py", ".c"):
                with suppress(OSError):
                    st = path.stat()
                    found[os.fspath(path.relative_to(_ROOT))] = (st.st_size, st.st_mtime_ns)
    return found


@pytest.fixture(scope="session", autouse=True)
def session_parse_cache_folder(tmp_path_factory: pytest.TempPathFactory):
    """The parse cache folder of module and session fixtures that build (never the user's ~/.cache)."""
    with pytest.MonkeyPatch.context() as patch:
        patch.setenv("TIMELINE_CACHE_DIR", str(tmp_path_factory.mktemp("parse-cache-session") / "timeline"))
        yield


@pytest.fixture(autouse=True)
def parse_cache_folder(tmp_path_factory: pytest.TempPathFactory, monkeypatch: pytest.MonkeyPatch) -> Path:
    """Every test gets its own, empty parse cache folder (timeline.cache), never the user's ~/.cache;
    set in os.environ, so that subprocesses (the CLI, pytester) inherit it."""
    folder = tmp_path_factory.mktemp("parse-cache") / "timeline"
    monkeypatch.setenv("TIMELINE_CACHE_DIR", str(folder))
    return folder


@pytest.fixture(autouse=True)
def exported_documents(monkeypatch: pytest.MonkeyPatch):
    """Every JSON document a test exports (CLI --json, Timeline.to_dict...) is checked, when the
    test ends, against the shipped JSON Schema, strictly: no field the schema does not describe."""
    from timeline import export
    from timeline.schema import validate

    produced: list[dict] = []
    to_dict, pieces = export.timeline_to_dict, export.json_pieces

    def recording(timeline):
        document = to_dict(timeline)
        produced.append(document)
        return document

    def recording_pieces(timeline):
        text = "".join(pieces(timeline))
        produced.append(json.loads(text))
        yield text

    monkeypatch.setattr(export, "timeline_to_dict", recording)
    monkeypatch.setattr(export, "json_pieces", recording_pieces)
    yield produced
    for document in produced:
        validate(json.loads(json.dumps(document)), strict=True)


@pytest.fixture
def git_script(tmp_path: Path) -> GitScript:
    """Real git, isolated from the machine's configuration; every command takes its date."""
    return GitScript(tmp_path / "home")


@pytest.fixture(scope="session")
def demo(tmp_path_factory: pytest.TempPathFactory) -> DemoScenario:
    """The demo story, built once: clone, pull of 3 commits at 18:10 UTC, reset at 20:30 UTC."""
    return build_demo(tmp_path_factory.mktemp("demo"))


@pytest.fixture
def parses(monkeypatch) -> list[str]:
    """The sources that the parsers read (a build that takes a log from the cache reads none)."""
    seen: list[str] = []
    real = builder.parse_file

    def counting(path, **options):
        seen.append(options.get("source") or str(path))
        return real(path, **options)

    monkeypatch.setattr(builder, "parse_file", counting)
    return seen


@pytest.fixture(scope="session")
def postgres_server() -> Iterator[PostgresServer]:
    """A real PostgreSQL server for the session (tests/postgres_server.py), started on first use:
    skipped where none can run, failed instead under TIMELINE_REQUIRE_POSTGRES=1 (CI)."""
    with ExitStack() as stack:
        try:
            import psycopg  # noqa: F401  (the test extra's client; store_url connects with it)

            server = stack.enter_context(running_server(server_programs(os.environ.get("PATH")), server_user()))
        except (Unavailable, ImportError) as why:
            postgres_unavailable(str(why), os.environ)
        yield server


@pytest.fixture(scope="session")
def postgres_url(postgres_server: PostgresServer) -> str:
    """SQLAlchemy URL of the session server's maintenance database (Unix socket, psycopg 3); a test
    that writes wants its own database: `store_url`."""
    return postgres_server.url()


_database_numbers = itertools.count()


@pytest.fixture(params=["sqlite", "postgresql"])
def store_url(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[str]:
    """A fresh, empty store for one test: a SQLite file in tmp_path, or a new database on the
    session's PostgreSQL server (dropped after the test)."""
    if request.param == "sqlite":
        yield f"sqlite:///{tmp_path / 'store.sqlite'}"
        return
    server: PostgresServer = request.getfixturevalue("postgres_server")
    name = database_name(request.node.name, next(_database_numbers))
    yield server.create_database(name)
    server.drop_database(name)


def utc(*parts: int) -> datetime:
    return datetime(*parts, tzinfo=timezone.utc)
