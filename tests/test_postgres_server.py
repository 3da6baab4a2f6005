"""The test server and the store fixtures (tests/postgres_server.py, conftest.py's `store_url`)."""

from __future__ import annotations

import os
import stat
from pathlib import Path

import pytest
import sqlalchemy as sa
from postgres_server import PostgresServer, Unavailable, server_programs, unavailable


def test_store_url_is_a_fresh_empty_database_that_round_trips_a_row(store_url):
    engine = sa.create_engine(store_url)
    try:
        assert sa.inspect(engine).get_table_names() == []
        metadata = sa.MetaData()
        runs = sa.Table(
            "runs",
            metadata,
            sa.Column("id", sa.Integer, primary_key=True),
            sa.Column("commit", sa.String(40), nullable=False, unique=True),
            sa.Column("throughput", sa.Float, nullable=False),
        )
        metadata.create_all(engine)
        with engine.begin() as connection:
            connection.execute(sa.insert(runs), [{"commit": "a" * 40, "throughput": 1234.5}])
        with engine.connect() as connection:
            assert connection.execute(sa.select(runs.c.commit, runs.c.throughput)).all() == [("a" * 40, 1234.5)]
            with pytest.raises(sa.exc.IntegrityError):
                connection.execute(sa.insert(runs), [{"commit": "a" * 40, "throughput": 1.0}])
    finally:
        engine.dispose()


def test_store_url_names_the_backend_it_was_asked_for(store_url, request):
    backend = request.node.callspec.params["store_url"]
    assert sa.make_url(store_url).get_backend_name() == backend


def test_the_server_listens_only_on_its_socket_as_an_unprivileged_user(postgres_server: PostgresServer, postgres_url):
    engine = sa.create_engine(postgres_url)
    try:
        with engine.connect() as connection:
            assert connection.execute(sa.text("SHOW listen_addresses")).scalar_one() == ""
            # NULL: this connection came over a Unix socket, not TCP.
            assert connection.execute(sa.text("SELECT inet_server_addr()")).scalar_one() is None
            folder = connection.execute(sa.text("SHOW unix_socket_directories")).scalar_one()
            assert Path(folder) == postgres_server.socket_folder
    finally:
        engine.dispose()
    postmaster = int((postgres_server.data / "postmaster.pid").read_text().split("\n", 1)[0])
    server_uid = Path(f"/proc/{postmaster}").stat().st_uid
    assert server_uid != 0
    assert server_uid == postgres_server.data.stat().st_uid == postgres_server.socket_folder.stat().st_uid
    assert stat.S_IMODE(postgres_server.data.stat().st_mode) == 0o700


def test_without_server_programs_a_test_skips_or_under_the_ci_variable_fails(tmp_path):
    with pytest.raises(Unavailable, match="apt-get install postgresql"):
        server_programs(path=str(tmp_path), debian_folders=tmp_path)
    with pytest.raises(pytest.skip.Exception, match="no PostgreSQL server: initdb missing"):
        unavailable("initdb missing", environ={})
    with pytest.raises(pytest.fail.Exception, match="TIMELINE_REQUIRE_POSTGRES=1 but"):
        unavailable("initdb missing", environ={"TIMELINE_REQUIRE_POSTGRES": "1"})


def test_the_newest_debian_server_is_found_off_path(tmp_path):
    for version in ("9.6", "13", "16", "15"):
        folder = tmp_path / version / "bin"
        folder.mkdir(parents=True)
        for program in ("initdb", "pg_ctl", "postgres"):
            (folder / program).write_text("#!/bin/sh\n")
            (folder / program).chmod(0o755)
    os.remove(tmp_path / "16" / "bin" / "postgres")  # a client-only install does not count
    assert server_programs(path="", debian_folders=tmp_path) == tmp_path / "15" / "bin"
