"""Opening a store: URLs, the schema made or migrated, a newer or foreign store refused in one line."""

from __future__ import annotations

import json
import sqlite3

import pytest
from alembic import command
from alembic.autogenerate import compare_metadata
from alembic.config import Config
from alembic.runtime.migration import MigrationContext
from alembic.script import ScriptDirectory
from sqlalchemy import create_engine, func, inspect, select, text

from timeline.errors import UsageError
from timeline.store import STORE_VARIABLE, machine_of, open_store
from timeline.store.codec import RUN_FIELDS
from timeline.store.database import MMAP_BYTES, make_engine, store_url
from timeline.store.errors import StoreError
from timeline.store.schema import HEAD_REVISION, HISTORY_INDEX, REVISIONS, VERSION_TABLE, metadata


def alembic_config(connection) -> Config:
    config = Config()
    config.set_main_option("script_location", "timeline.store:migrations")
    config.attributes["connection"] = connection
    return config


def test_the_revisions_are_the_migrations_shipped():
    script = ScriptDirectory.from_config(alembic_config(None))
    assert [r.revision for r in reversed(list(script.walk_revisions()))] == list(REVISIONS)
    assert script.get_current_head() == HEAD_REVISION


def test_a_new_store_has_exactly_the_schema_of_the_tables(tmp_path):
    open_store(str(tmp_path / "h.sqlite"), {}).close()
    engine = create_engine(f"sqlite:///{tmp_path / 'h.sqlite'}")
    with engine.connect() as connection:
        context = MigrationContext.configure(connection, opts={"version_table": VERSION_TABLE})
        assert compare_metadata(context, metadata) == []
        assert context.get_current_revision() == HEAD_REVISION
        assert connection.execute(text("PRAGMA journal_mode")).scalar() == "wal"


def test_a_sqlite_store_is_read_through_a_memory_map(tmp_path):
    open_store(str(tmp_path / "h.sqlite"), {}).close()
    with make_engine(store_url(str(tmp_path / "h.sqlite"), {})).connect() as connection:
        assert connection.execute(text("PRAGMA mmap_size")).scalar() == MMAP_BYTES


def test_a_store_made_by_an_older_timeline_is_migrated_keeping_its_rows(tmp_path):
    path = tmp_path / "old.sqlite"
    engine = create_engine(f"sqlite:///{path}")
    with engine.begin() as connection:
        command.upgrade(alembic_config(connection), REVISIONS[0])
        connection.execute(
            text(
                "INSERT INTO machines (name, nccl_versions, first_ingest, last_ingest)"
                " VALUES ('n1', '[]', '2026-01-01', '2026-01-01')"
            )
        )
    assert "samples" not in inspect(engine).get_table_names()
    with open_store(str(path), {}) as store:
        assert [m.name for m in store.machines()] == ["n1"]
    assert "samples" in inspect(engine).get_table_names()


def test_a_store_made_by_a_newer_timeline_is_refused_untouched(tmp_path):
    path = tmp_path / "new.sqlite"
    open_store(str(path), {}).close()
    with sqlite3.connect(path) as connection:
        connection.execute(f"UPDATE {VERSION_TABLE} SET version_num = '0099'")
    before = path.read_bytes()
    with pytest.raises(
        StoreError,
        match=rf"^.*new\.sqlite: made by a newer timeline \(schema 0099; this one knows up to {HEAD_REVISION}\):"
        " upgrade timeline$",
    ):
        open_store(str(path), {})
    assert path.read_bytes() == before


def test_a_sqlite_file_of_another_program_is_not_touched(tmp_path):
    path = tmp_path / "other.sqlite"
    with sqlite3.connect(path) as connection:
        connection.execute("CREATE TABLE notes (body TEXT)")
    with pytest.raises(StoreError, match="other.sqlite: not a timeline store"):
        open_store(str(path), {})
    with sqlite3.connect(path) as connection:
        assert [r[0] for r in connection.execute("SELECT name FROM sqlite_master")] == ["notes"]


def test_a_file_that_is_not_a_database_is_one_line(tmp_path):
    path = tmp_path / "notes.txt"
    path.write_text("hello, this is not SQLite\n" * 100)
    with pytest.raises(StoreError) as caught:
        open_store(str(path), {})
    assert "notes.txt: cannot open the store: file is not a database" in str(caught.value)
    assert "\n" not in str(caught.value)


@pytest.mark.parametrize(
    "url, said",
    [
        ("ftp://host/x", "store ftp://host/x: not a store URL"),
        ("mysql://u:secret@host/db", "store mysql://u:***@host/db: not a store URL"),
        ("sqlite:///{tmp}/no/such/folder/h.sqlite", "no folder"),
        ("{tmp}", "is a folder, not a store file"),
        ("{tmp}/missing/h.sqlite", "no folder"),
        ("postgresql://:x", "not a URL"),
    ],
)
def test_a_url_that_names_no_store_is_a_usage_error(tmp_path, url, said):
    with pytest.raises(UsageError, match="^store ") as caught:
        store_url(url.format(tmp=tmp_path), {})
    assert said in str(caught.value) and "secret" not in str(caught.value)


def test_the_url_comes_from_the_option_else_the_environment_else_the_users_data_folder(tmp_path, monkeypatch):
    assert store_url(str(tmp_path / "a.sqlite"), {STORE_VARIABLE: "ignored"}).database == str(tmp_path / "a.sqlite")
    assert store_url(None, {STORE_VARIABLE: str(tmp_path / "b.sqlite")}).database == str(tmp_path / "b.sqlite")
    monkeypatch.setenv("XDG_DATA_HOME", str(tmp_path / "data"))
    assert store_url(None, {}).database == str(tmp_path / "data" / "timeline" / "history.sqlite")
    assert (tmp_path / "data" / "timeline").is_dir()
    assert store_url("postgresql://u@db.example/timeline", {}).drivername == "postgresql+psycopg"
    assert store_url("postgresql+psycopg://u@db.example/timeline", {}).drivername == "postgresql+psycopg"


def test_a_server_that_does_not_answer_is_one_line_without_the_password(tmp_path):
    with pytest.raises(StoreError) as caught:
        open_store(f"postgresql://u:secret@/timeline?host={tmp_path}", {})
    message = str(caught.value)
    assert message.startswith("postgresql+psycopg://u:***@/timeline") and "cannot open the store" in message
    assert "\n" not in message and "secret" not in message


def _as_written_at_0004(row: dict) -> dict:
    """A run's row of a new store as 0001 to 0004 wrote it: its array without 0005's last field."""
    doc = row["doc"]
    assert doc.endswith(",[]]"), "the month's logs show no driver"
    return {**row, "doc": doc[: -len(",[]]")] + "]"}


def test_the_runs_of_a_store_made_before_their_columns_are_read_as_before(month_timeline, store_url, tmp_path):
    """0004 fills the columns history reads from each run's array, 0005 ends each array with the
    driver versions: a store written at 0003 (the rows a new store holds, less the new columns
    and field) reads back the very runs of a new store."""
    new = f"sqlite:///{tmp_path / 'new.sqlite'}"
    with open_store(new, {}) as store:
        store.ingest(month_timeline, machine_of(month_timeline, "node-1", "host-1"), keep_samples=True)
        (expected,) = store.read()
    old_engine, new_engine = create_engine(store_url), create_engine(new)
    with old_engine.begin() as old, new_engine.connect() as source:
        command.upgrade(alembic_config(old), "0003")
        for table in metadata.sorted_tables:
            kept = {column["name"] for column in inspect(old).get_columns(table.name)}
            rows = [{k: v for k, v in row._mapping.items() if k in kept} for row in source.execute(table.select())]
            if table.name == "runs":
                rows = [_as_written_at_0004(row) for row in rows]
            if rows:
                old.execute(table.insert(), rows)
        assert "start_iso" not in {column["name"] for column in inspect(old).get_columns("runs")}
    if old_engine.dialect.name == "postgresql":  # the ids were copied: the sequences go on after them
        with old_engine.begin() as old:
            for table in ("machines", "repos", "events", "blobs", "runs"):
                old.execute(text(f"SELECT setval('{table}_id_seq', (SELECT max(id) FROM {table}))"))
    old_engine.dispose()
    new_engine.dispose()

    with open_store(store_url, {}) as store:
        (history,) = store.read()
        assert history.runs == expected.runs and history.events == expected.events
        assert [r.metrics for r in history.runs] == [r.metrics for r in month_timeline.runs]
        again = store.ingest(month_timeline, machine_of(month_timeline, "node-1", "host-1"))
        assert (again.runs_added, again.runs_known) == (0, 45)
    with create_engine(store_url).connect() as migrated, create_engine(new).connect() as made:
        columns = [c for c in metadata.tables["runs"].c if c.name not in ("start", "ingested")]  # naive on SQLite
        query = select(*columns).order_by(metadata.tables["runs"].c.id)
        assert migrated.execute(query).all() == made.execute(query).all()


def test_0005_ends_each_array_with_the_drivers_and_goes_back(month_timeline, store_url):
    """Down to 0004 each run's array loses its last field, as 0004 wrote it; up again, it is back."""
    with open_store(store_url, {}) as store:
        store.ingest(month_timeline, machine_of(month_timeline, "node-1", "host-1"))
        (expected,) = store.read()
    engine = create_engine(store_url)
    docs = select(metadata.tables["runs"].c.doc).order_by(metadata.tables["runs"].c.id)
    with engine.begin() as connection:
        made = connection.execute(docs).scalars().all()
        command.downgrade(alembic_config(connection), "0004")
        old = connection.execute(docs).scalars().all()
    engine.dispose()
    assert [json.loads(doc) for doc in old] == [json.loads(doc)[:-1] for doc in made]
    assert {len(json.loads(doc)) for doc in old} == {len(RUN_FIELDS) - 1}
    with open_store(store_url, {}) as store:
        (history,) = store.read()
        assert history.runs == expected.runs
    with create_engine(store_url).connect() as connection:
        assert connection.execute(docs).scalars().all() == made


def test_0006_keeps_each_distinct_set_of_facets_once_and_goes_back(month_timeline, store_url):
    """Down to 0005 the runs lose their facets' column and the store those blobs; up again (the
    runs' samples kept), each run names the blob of its facets, made from its columns as an
    ingest makes it from the run."""
    with open_store(store_url, {}) as store:
        store.ingest(month_timeline, machine_of(month_timeline, "node-1", "host-1"), keep_samples=True)
        (expected,) = store.read()
    runs, blobs = metadata.tables["runs"], metadata.tables["blobs"]
    facets = select(runs.c.id, blobs.c.body).join(blobs, blobs.c.id == runs.c.facets_id).order_by(runs.c.id)
    count = select(func.count()).select_from(blobs)
    engine = create_engine(store_url)
    with engine.begin() as connection:
        made, stored = connection.execute(facets).all(), connection.execute(count).scalar()
        command.downgrade(alembic_config(connection), "0005")
        assert "facets_id" not in {column["name"] for column in inspect(connection).get_columns("runs")}
        assert connection.execute(count).scalar() == 2  # the server arguments and the messages
    engine.dispose()
    assert len(made) == 45 and 2 < stored < 45
    with open_store(store_url, {}) as store:
        (history,) = store.read()
        assert history.runs == expected.runs and all(run.samples is not None for run in history.runs)
    with create_engine(store_url).connect() as connection:
        assert connection.execute(facets).all() == made and connection.execute(count).scalar() == stored


def test_0007_gives_the_facets_the_drivers_of_each_runs_array_and_goes_back(month_timeline, store_url):
    """Down to 0006 the facets lose their last value, the runs their drivers' column, the store
    the blobs no run names then; up again, each run's facets end with the drivers of its array."""
    for index, run in enumerate(month_timeline.runs):
        run.cuda_driver_versions = [("12.4", "12.8")[index % 2]] if index < 10 else []
    with open_store(store_url, {}) as store:
        store.ingest(month_timeline, machine_of(month_timeline, "node-1", "host-1"))
        (expected,) = store.read()
    runs, blobs = metadata.tables["runs"], metadata.tables["blobs"]
    facets = select(runs.c.id, blobs.c.body).join(blobs, blobs.c.id == runs.c.facets_id).order_by(runs.c.id)
    drivers = select(runs.c.cuda_driver_versions).order_by(runs.c.id)
    count = select(func.count()).select_from(blobs)
    engine = create_engine(store_url)
    with engine.begin() as connection:
        made, stored = connection.execute(facets).all(), connection.execute(count).scalar()
        columns = connection.execute(drivers).scalars().all()
        command.downgrade(alembic_config(connection), "0006")
        assert "cuda_driver_versions" not in {column["name"] for column in inspect(connection).get_columns("runs")}
        old = connection.execute(facets).all()
        shrunk = connection.execute(count).scalar()
    engine.dispose()
    assert sorted(columns) == ['["12.4"]'] * 5 + ['["12.8"]'] * 5 + ["[]"] * 35
    assert [(id_, json.loads(body)) for id_, body in old] == [(id_, json.loads(body)[:-1]) for id_, body in made]
    # besides the server arguments' and the messages' blobs, one a distinct set of facets
    assert (stored, shrunk) == (len({body for _, body in made}) + 2, len({body for _, body in old}) + 2)
    assert shrunk < stored
    with open_store(store_url, {}) as store:
        (history,) = store.read()
        assert history.runs == expected.runs
        assert sorted(map(tuple, (run.cuda_driver_versions for run in history.runs))) == sorted(
            map(tuple, (run.cuda_driver_versions for run in month_timeline.runs))
        )
    with create_engine(store_url).connect() as connection:
        again = connection.execute(facets).all()
        assert [json.loads(body) for _, body in again] == [json.loads(body) for _, body in made]
        assert connection.execute(drivers).scalars().all() == columns


def test_0008_reads_the_runs_from_an_index_of_their_own_and_goes_back(month_timeline, store_url):
    """Down to 0007 the runs are indexed by machine and start alone, and read as well; up again,
    by the index that holds what history reads of them."""
    with open_store(store_url, {}) as store:
        store.ingest(month_timeline, machine_of(month_timeline, "node-1", "host-1"))
        (expected,) = store.read()
    engine = create_engine(store_url)
    with engine.begin() as connection:
        command.downgrade(alembic_config(connection), "0007")
        old = {index["name"]: index["column_names"] for index in inspect(connection).get_indexes("runs")}
    engine.dispose()
    assert old["ix_runs_machine_start"] == ["machine_id", "start"] and "ix_runs_history" not in old
    with open_store(store_url, {}) as store:
        (history,) = store.read()
        assert history.runs == expected.runs
    with create_engine(store_url).connect() as connection:
        new = {index["name"]: index["column_names"] for index in inspect(connection).get_indexes("runs")}
    assert new["ix_runs_history"] == list(HISTORY_INDEX) and "ix_runs_machine_start" not in new
