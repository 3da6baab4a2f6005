"""Opening a store: its URL, the engine, the schema created or migrated, writes retried.

``--store URL`` > ``TIMELINE_STORE`` > the SQLite file ``history.sqlite`` in the user's data
folder (platformdirs). A bare path is a SQLite file; ``postgresql://...`` a PostgreSQL
database through psycopg 3. SQLite runs in WAL mode with a busy timeout, so readers never wait
and writers queue; every write is one transaction, retried when the database says another one
got in the way (SQLite busy, PostgreSQL serialization failure or deadlock).
"""

from __future__ import annotations

import random
import threading
import time
from collections.abc import Callable, Mapping
from contextlib import contextmanager
from pathlib import Path
from typing import Any, TypeVar

from sqlalchemy import Column, MetaData, String, Table, create_engine, event, inspect, select
from sqlalchemy.engine import URL, Connection, Engine, make_url
from sqlalchemy.exc import ArgumentError, DBAPIError, SQLAlchemyError

from timeline.errors import UsageError
from timeline.store.errors import StoreError
from timeline.store.schema import HEAD_REVISION, REVISIONS, VERSION_TABLE

STORE_VARIABLE = "TIMELINE_STORE"
DEFAULT_FILE = "history.sqlite"
BUSY_TIMEOUT_S = 30.0  # how long a SQLite writer waits for another to finish
CONNECT_TIMEOUT_S = 10  # a PostgreSQL server that does not answer
# SQLite reads the file through a memory map of up to this many bytes, not read() calls into its
# page cache (https://www.sqlite.org/mmap.html): fetching 100,000 stored runs took 0.7x the time.
# The trade that page names: an I/O error met through the map ends the process (SIGBUS) where
# read() gives an error message; a SQLite store is a local file (a shared one is PostgreSQL).
MMAP_BYTES = 1 << 30
WRITE_ATTEMPTS = 8
T = TypeVar("T")

# Alembic keeps the migration being run in module globals (alembic.context, alembic.op): two threads
# migrating at once would run each other's, and one could wait on a lock in Python while holding the
# database's lock the other waits on. One migration a process at a time.
_MIGRATING = threading.Lock()

_version = Table(VERSION_TABLE, MetaData(), Column("version_num", String(32), primary_key=True))


def default_path() -> Path:
    from platformdirs import user_data_dir

    return Path(user_data_dir("timeline")) / DEFAULT_FILE


def store_url(url: str | None, environ: Mapping[str, str]) -> URL:
    """The SQLAlchemy URL of the store named by ``url``, else ``TIMELINE_STORE``, else the default file.
    Raises UsageError (option ``store``) for a URL that cannot name a store."""
    text = url or environ.get(STORE_VARIABLE) or ""
    if not text:
        path = default_path()
        path.parent.mkdir(parents=True, exist_ok=True)
        return URL.create("sqlite+pysqlite", database=str(path))
    if "://" not in text:
        return _sqlite_file(Path(text).expanduser(), text)
    try:
        parsed = make_url(text)
    except (ArgumentError, ValueError):
        raise UsageError(
            f"{text!r}: not a URL (a file path, sqlite:///FILE or postgresql://...)", option="store"
        ) from None
    backend, _, driver = parsed.drivername.partition("+")
    if backend == "sqlite" and driver in ("", "pysqlite"):
        return parsed if not parsed.database else _sqlite_file(Path(parsed.database), text)
    if backend in ("postgresql", "postgres") and driver in ("", "psycopg2", "psycopg"):
        try:
            import psycopg  # noqa: F401
        except ImportError:
            raise UsageError(
                f"{_shown(parsed)}: PostgreSQL needs psycopg: pip install 'timeline[postgres]'", option="store"
            ) from None
        return parsed.set(drivername="postgresql+psycopg")
    raise UsageError(
        f"{_shown(parsed)}: not a store URL (a file path, sqlite:///FILE or postgresql://...)", option="store"
    )


def _sqlite_file(path: Path, given: str) -> URL:
    if path.is_dir():
        raise UsageError(f"{given!r}: is a folder, not a store file", option="store")
    if not path.parent.is_dir():
        raise UsageError(f"{given!r}: no folder {str(path.parent)!r} to hold the store", option="store")
    return URL.create("sqlite+pysqlite", database=str(path))


def _shown(url: URL) -> str:
    """The store as the user knows it: a SQLite file's path, else the URL without its password."""
    if url.get_backend_name() == "sqlite" and url.database:
        return url.database
    return url.render_as_string(hide_password=True)


def one_line(error: BaseException) -> str:
    """A database error's own first line (SQLAlchemy's adds the statement and a link)."""
    inner = getattr(error, "orig", None) or error
    lines = [line.strip() for line in str(inner).strip().splitlines() if line.strip()]
    return lines[0] if lines else type(inner).__name__


def make_engine(url: URL) -> Engine:
    if url.get_backend_name() == "sqlite":
        engine = create_engine(url, connect_args={"timeout": BUSY_TIMEOUT_S})
        event.listen(engine, "connect", _sqlite_connected)
        event.listen(engine, "begin", _sqlite_begin)
        return engine
    return create_engine(url, connect_args={"connect_timeout": CONNECT_TIMEOUT_S})


def _sqlite_connected(dbapi_connection: Any, record: Any) -> None:
    # SQLAlchemy's recipe for real transactions on pysqlite: the driver's own BEGIN (issued late,
    # never before DDL) is turned off and ours is sent on begin (_sqlite_begin).
    dbapi_connection.isolation_level = None
    cursor = dbapi_connection.cursor()
    cursor.execute("PRAGMA journal_mode=WAL")  # readers never wait for a writer
    cursor.execute("PRAGMA foreign_keys=ON")
    cursor.execute(f"PRAGMA mmap_size={MMAP_BYTES}")
    cursor.close()


def _sqlite_begin(connection: Connection) -> None:
    # A write takes the write lock at once (waiting up to the busy timeout): a read-then-write
    # transaction could otherwise fail at its first write when another writer got in first.
    immediate = connection.get_execution_options().get("timeline_write", False)
    connection.exec_driver_sql("BEGIN IMMEDIATE" if immediate else "BEGIN")


def _transient(error: DBAPIError) -> bool:
    """Another transaction got in the way: SQLite busy or locked, PostgreSQL serialization
    failure, deadlock, unique violation of a concurrent insert, or lock not available."""
    state = getattr(error.orig, "sqlstate", None)
    if state is not None:
        return state in ("40001", "40P01", "23505", "55P03")
    text = str(error.orig).lower()
    return "locked" in text or "busy" in text


def _made_meanwhile(error: DBAPIError) -> bool:
    """Another process created the same table or type first (PostgreSQL: duplicate table or object)."""
    state = getattr(error.orig, "sqlstate", None)
    return state in ("42P07", "42710") or "already exists" in str(error.orig)


class Database:
    """An engine on one store, its schema at ``HEAD_REVISION``."""

    def __init__(self, url: URL) -> None:
        self.url = url
        self.shown = _shown(url)
        self.engine = make_engine(url)
        self.sqlite = url.get_backend_name() == "sqlite"

    def fail(self, error: BaseException, doing: str) -> StoreError:
        return StoreError(f"{self.shown}: {doing}: {one_line(error)}")

    @contextmanager
    def reading(self):
        try:
            with self.engine.connect() as connection:
                yield connection
        except StoreError:
            raise
        except SQLAlchemyError as error:
            raise self.fail(error, "cannot read the store") from None

    def write(self, work: Callable[[Connection], T]) -> T:
        """``work`` in one transaction, retried (with a random back-off) while another transaction gets in the way."""
        for attempt in range(WRITE_ATTEMPTS):
            try:
                with self.engine.connect().execution_options(timeline_write=True) as connection, connection.begin():
                    return work(connection)
            except DBAPIError as error:
                if not _transient(error) or attempt == WRITE_ATTEMPTS - 1:
                    raise self.fail(error, "cannot write the store") from None
                time.sleep(random.uniform(0.05, 0.2) * 2**attempt)
            except SQLAlchemyError as error:
                raise self.fail(error, "cannot write the store") from None
        raise AssertionError("unreachable")  # the last attempt returns or raises

    def revision(self, connection: Connection) -> str | None:
        """The schema revision the store is at; None for a store not made yet (no table of ours)."""
        if not inspect(connection).has_table(VERSION_TABLE):
            if self.sqlite and inspect(connection).get_table_names():
                raise StoreError(f"{self.shown}: not a timeline store (a SQLite file with other tables)")
            return None
        return connection.execute(select(_version.c.version_num)).scalar()

    def migrate(self) -> None:
        """Create the schema, or bring an older one up to ``HEAD_REVISION``. Several processes
        opening a new store at once: one creates it, the others wait and find it made."""
        for attempt in range(WRITE_ATTEMPTS):
            try:
                with self.engine.connect() as connection:
                    current = self.revision(connection)
                if current == HEAD_REVISION:
                    return
                if current is not None and current not in REVISIONS:
                    raise StoreError(
                        f"{self.shown}: made by a newer timeline (schema {current}; this one knows up to "
                        f"{HEAD_REVISION}): upgrade timeline"
                    )
                with (
                    _MIGRATING,
                    self.engine.connect().execution_options(timeline_write=True) as connection,
                    connection.begin(),
                ):
                    if self.revision(connection) != HEAD_REVISION:  # again, now holding SQLite's write lock
                        self._upgrade(connection)
                return
            except StoreError:
                raise
            except DBAPIError as error:
                if not (_transient(error) or _made_meanwhile(error)) or attempt == WRITE_ATTEMPTS - 1:
                    raise self.fail(error, "cannot open the store") from None
                time.sleep(random.uniform(0.05, 0.2) * 2**attempt)  # another process is making it
            except SQLAlchemyError as error:
                raise self.fail(error, "cannot open the store") from None

    def _upgrade(self, connection: Connection) -> None:
        from alembic import command
        from alembic.config import Config

        config = Config()
        config.set_main_option("script_location", "timeline.store:migrations")
        config.attributes["connection"] = connection
        command.upgrade(config, HEAD_REVISION)
