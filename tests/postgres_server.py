"""A throwaway PostgreSQL server for the tests (the `postgres_url` and `store_url` fixtures).

Its own cluster in a temporary folder, reachable only on a Unix socket in that folder (no TCP port),
run as an unprivileged user: the server refuses to run as root, and CI runs as root. Durability is
switched off (fsync, full-page writes): the data dies with the session, and the suite stays fast.
"""

from __future__ import annotations

import os
import pwd
import re
import shutil
import signal
import subprocess
import tempfile
from collections.abc import Iterator, Mapping
from contextlib import contextmanager, suppress
from dataclasses import dataclass
from pathlib import Path
from typing import NoReturn
from urllib.parse import quote

import pytest

SERVER_PROGRAMS = ("initdb", "pg_ctl", "postgres")
# Debian's postgresql-NN packages put the server programs here, off PATH (only psql & co. are linked).
DEBIAN_SERVER_FOLDERS = Path("/usr/lib/postgresql")
# Root hands the server to this user; any other user runs it as itself.
UNPRIVILEGED_USER = "nobody"
SUPERUSER = "timeline"
MAINTENANCE_DATABASE = "postgres"
REQUIRE_VARIABLE = "TIMELINE_REQUIRE_POSTGRES"
# A server that does not start or stop within this is broken: fail rather than hang the suite.
PG_CTL_SECONDS = 60


class Unavailable(Exception):
    """No server can be started on this machine; the message says why and what to install."""


def unavailable(reason: str, environ: Mapping[str, str]) -> NoReturn:
    """Skip the test, or fail it where a server is required (CI sets TIMELINE_REQUIRE_POSTGRES=1)."""
    if environ.get(REQUIRE_VARIABLE) == "1":
        pytest.fail(f"{REQUIRE_VARIABLE}=1 but no PostgreSQL server can run here: {reason}", pytrace=False)
    pytest.skip(f"no PostgreSQL server: {reason}")


def _major_version(folder: Path) -> int:
    # /usr/lib/postgresql/15/bin -> 15
    name = folder.parent.name
    return int(name) if name.isdigit() else -1


def server_programs(path: str | None, debian_folders: Path = DEBIAN_SERVER_FOLDERS) -> Path:
    """The folder holding initdb, pg_ctl and postgres: initdb's on PATH first, then Debian's newest."""
    candidates = []
    on_path = shutil.which("initdb", path=path)
    if on_path:
        candidates.append(Path(on_path).resolve().parent)
    candidates += sorted(debian_folders.glob("*/bin"), key=_major_version, reverse=True)
    for folder in candidates:
        if all(os.access(folder / name, os.X_OK) for name in SERVER_PROGRAMS):
            return folder
    raise Unavailable(
        f"the server programs ({', '.join(SERVER_PROGRAMS)}) are neither on PATH nor under "
        f"{DEBIAN_SERVER_FOLDERS}/*/bin; install them (Debian: apt-get install postgresql)"
    )


def server_user() -> pwd.struct_passwd | None:
    """The user to run the server as, or None to run it as ourselves (we are not root)."""
    if os.geteuid() != 0:
        return None
    try:
        return pwd.getpwnam(UNPRIVILEGED_USER)
    except KeyError:
        raise Unavailable(f"running as root, and there is no user {UNPRIVILEGED_USER!r} to run the server as") from None


@dataclass(frozen=True)
class PostgresServer:
    programs: Path
    root: Path  # owned by the server's user: the cluster, its socket, its log
    user: pwd.struct_passwd | None

    @property
    def data(self) -> Path:
        return self.root / "data"

    @property
    def socket_folder(self) -> Path:
        return self.root

    @property
    def log(self) -> Path:
        return self.root / "server.log"

    def url(self, database: str = MAINTENANCE_DATABASE) -> str:
        """SQLAlchemy's URL for psycopg 3 over the Unix socket: no host part, the socket folder in ?host=."""
        return f"postgresql+psycopg://{SUPERUSER}@/{database}?host={quote(str(self.socket_folder), safe='/')}"

    def run(self, program: str, *arguments: str) -> subprocess.CompletedProcess[str]:
        switch: dict = {}
        if self.user is not None:
            switch = {"user": self.user.pw_uid, "group": self.user.pw_gid, "extra_groups": []}
        return subprocess.run(
            [str(self.programs / program), *arguments],
            cwd=self.root,
            stdin=subprocess.DEVNULL,
            capture_output=True,
            text=True,
            timeout=PG_CTL_SECONDS + 30,
            check=False,
            **switch,
        )

    def checked(self, program: str, *arguments: str) -> None:
        result = self.run(program, *arguments)
        if result.returncode != 0:
            log = self.log.read_text(errors="replace")[-2000:] if self.log.exists() else ""
            raise RuntimeError(
                f"{program} {' '.join(arguments)} exited {result.returncode}:\n{result.stdout}{result.stderr}{log}"
            )

    def initialise(self) -> None:
        self.checked(
            "initdb",
            f"--pgdata={self.data}",
            f"--username={SUPERUSER}",
            # Only this machine's users can reach the socket, in a folder only the server's user can list.
            "--auth=trust",
            "--encoding=UTF8",
            "--locale=C",
            "--no-sync",
        )
        folder = str(self.socket_folder).replace("'", "''")
        settings = [
            "listen_addresses = ''",  # no TCP at all: the Unix socket only
            f"unix_socket_directories = '{folder}'",
            "fsync = off",
            "synchronous_commit = off",
            "full_page_writes = off",
            "shared_buffers = 32MB",
        ]
        with (self.data / "postgresql.conf").open("a", encoding="utf-8") as conf:
            conf.write("\n# timeline's test server\n" + "\n".join(settings) + "\n")

    def start(self) -> None:
        self.checked("pg_ctl", "start", "--wait", f"--timeout={PG_CTL_SECONDS}", "--silent",
                     f"--pgdata={self.data}", f"--log={self.log}")  # fmt: skip

    def stop(self) -> None:
        """Stop the server, whatever state it is in; the data is thrown away, so no checkpoint."""
        if not (self.data / "postmaster.pid").exists():
            return
        stopped = self.run("pg_ctl", "stop", "--wait", f"--timeout={PG_CTL_SECONDS}", "--silent",
                           "--mode=immediate", f"--pgdata={self.data}")  # fmt: skip
        pid_file = self.data / "postmaster.pid"
        if stopped.returncode != 0 and pid_file.exists():
            # pg_ctl could not stop it: end the postmaster we started, by the id it wrote.
            first_line = pid_file.read_text().split("\n", 1)[0]
            if first_line.isdigit():
                with suppress(ProcessLookupError):
                    os.kill(int(first_line), signal.SIGKILL)

    def create_database(self, name: str) -> str:
        import psycopg
        from psycopg import sql

        with psycopg.connect(**self._maintenance(), autocommit=True) as connection:
            connection.execute(sql.SQL("CREATE DATABASE {}").format(sql.Identifier(name)))
        return self.url(name)

    def drop_database(self, name: str) -> None:
        import psycopg
        from psycopg import sql

        # FORCE (PostgreSQL 13+): a test that leaked a connection must not keep its database alive.
        with psycopg.connect(**self._maintenance(), autocommit=True) as connection:
            connection.execute(sql.SQL("DROP DATABASE IF EXISTS {} WITH (FORCE)").format(sql.Identifier(name)))

    def _maintenance(self) -> dict[str, str]:
        return {"host": str(self.socket_folder), "user": SUPERUSER, "dbname": MAINTENANCE_DATABASE}


@contextmanager
def running_server(programs: Path, user: pwd.struct_passwd | None) -> Iterator[PostgresServer]:
    """A fresh cluster, started; stopped and deleted on the way out, whatever happened inside."""
    root = Path(tempfile.mkdtemp(prefix="timeline-pg-"))
    try:
        if user is not None:
            os.chown(root, user.pw_uid, user.pw_gid)
        server = PostgresServer(programs, root, user)
        try:
            server.initialise()
        except PermissionError as error:  # the kernel refused the switch to the server's user
            raise Unavailable(f"cannot run the server as user {UNPRIVILEGED_USER!r}: {error}") from None
        try:
            server.start()
            yield server
        finally:
            server.stop()
    finally:
        shutil.rmtree(root, ignore_errors=True)


def database_name(test_name: str, number: int) -> str:
    """A database name per test: readable in the server's log, unique, within the 63-byte limit."""
    return f"t{number}_{re.sub(r'[^a-z0-9]+', '_', test_name.lower())}"[:63]
