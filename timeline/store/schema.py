"""The store's tables, in SQLAlchemy Core: one schema for SQLite and PostgreSQL.

What users query sits in indexed columns (a run's machine, start, commit, workload group); a
run, an event or a commit is kept whole in ``doc``, the store's compact JSON form of the typed
model (``timeline.store.codec``), so reading back gives the very ``Run`` build made. What
``timeline history`` tests a run on (its start, steady value, status, NCCL versions...) is in
typed columns of the run too, read without decoding the run's ``doc`` (timeline.store.reading:
decoding 100,000 of them was most of the time of ``timeline history``), from an index that holds
them (``ix_runs_history``), not from the table that holds the ``doc`` too.
A run's server arguments and printed messages repeat from night to night, and the runs of one
log share their path, zone, NCCL versions...: each distinct one is kept once, in ``blobs``. The
migrations (``timeline/store/migrations/versions``) create exactly these tables; a test holds
them to it.
"""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from typing import Any

from sqlalchemy import (
    BigInteger,
    Boolean,
    Column,
    DateTime,
    Float,
    ForeignKey,
    Index,
    Integer,
    MetaData,
    String,
    Table,
    Text,
    UniqueConstraint,
)

# The newest migration (timeline/store/migrations/versions): a store at another revision this
# timeline knows is upgraded on open, one at a revision it does not know was made by a newer one.
REVISIONS = ("0001", "0002", "0003", "0004", "0005", "0006", "0007", "0008")  # oldest first
HEAD_REVISION = REVISIONS[-1]
# Alembic's bookkeeping table, named for us: a team's database may hold another tool's alembic_version.
VERSION_TABLE = "timeline_version"

BATCH = 500  # values a query names at once (far under SQLite's 32,766 and PostgreSQL's 65,535)
SHA = 64  # a SHA-256 object name; SHA-1's 40 fit too
DIGEST = 64  # hex SHA-256


def batches(items: Sequence[Any]) -> Iterator[Sequence[Any]]:
    """``items`` in slices of ``BATCH``: the reading and the writing side name rows this many at once."""
    for start in range(0, len(items), BATCH):
        yield items[start : start + BATCH]


# The columns of ``ix_runs_history``: the machine and start it is searched by, then every column
# history reads of a run but its array (reading.py, ``codec.RUN_COLUMNS``). ``id`` last: SQLite
# has the row id in every index, PostgreSQL only in one that names it.
HISTORY_INDEX = (
    "machine_id",
    "start",
    "config_id",
    "messages_id",
    "facets_id",
    "start_iso",
    "first_line",
    "commit",
    "ambiguous_reasons",
    "steady_value",
    "steady_n",
    "steady_skipped",
    "steady_spread",
    "steady_ranks",
    "id",
)

metadata = MetaData()

machines = Table(
    "machines",
    metadata,
    Column("id", Integer, primary_key=True),
    Column("name", String(255), nullable=False, unique=True),
    Column("host", String(255)),
    Column("gpu_count", Integer),
    Column("nccl_versions", Text, nullable=False),  # JSON list, every version its logs showed
    Column("driver", String(64)),
    Column("first_ingest", DateTime(timezone=True), nullable=False),
    Column("last_ingest", DateTime(timezone=True), nullable=False),
)

repos = Table(
    "repos",
    metadata,
    Column("id", Integer, primary_key=True),
    Column("machine_id", Integer, ForeignKey("machines.id"), nullable=False),
    Column("path", Text, nullable=False),
    Column("head", String(SHA)),
    Column("doc", Text, nullable=False),  # the RepoInfo (coverage) of the last ingest
    Column("last_ingest", DateTime(timezone=True), nullable=False),
    UniqueConstraint("machine_id", "path", name="uq_repos_machine_path"),
)

commits = Table(
    "commits",
    metadata,
    Column("sha", String(SHA), primary_key=True),
    Column("subject", Text, nullable=False),
    Column("doc", Text, nullable=False),
)

events = Table(
    "events",
    metadata,
    Column("id", Integer, primary_key=True),
    Column("machine_id", Integer, ForeignKey("machines.id"), nullable=False),
    Column("repo_id", Integer, ForeignKey("repos.id"), nullable=False),
    # sha256 of the reflog entry (old, new, time, message): the event's identity on its machine
    Column("entry", String(DIGEST), nullable=False),
    Column("time", DateTime(timezone=True), nullable=False),  # UTC
    Column("ts", BigInteger, nullable=False),
    Column("kind", String(64), nullable=False),
    Column("old", String(SHA), nullable=False),
    Column("new", String(SHA), nullable=False),
    Column("doc", Text, nullable=False),
    UniqueConstraint("machine_id", "repo_id", "entry", name="uq_events_entry"),
    Index("ix_events_machine_ts", "machine_id", "ts"),
)

event_commits = Table(
    "event_commits",
    metadata,
    Column("event_id", Integer, ForeignKey("events.id"), primary_key=True),
    Column("removed", Boolean, primary_key=True),  # taken away by the move, not brought in
    Column("position", Integer, primary_key=True),
    Column("sha", String(SHA), ForeignKey("commits.sha"), nullable=False),
    Index("ix_event_commits_sha", "sha"),
)

blobs = Table(
    "blobs",
    metadata,
    Column("id", Integer, primary_key=True),
    Column("digest", String(DIGEST), nullable=False, unique=True),
    Column("body", Text, nullable=False),  # JSON
)

runs = Table(
    "runs",
    metadata,
    Column("id", Integer, primary_key=True),
    # sha256 of (the run's lines in its log, first line, last line): the same run ingested again is known
    Column("run_key", String(DIGEST), nullable=False, unique=True),
    Column("content", String(DIGEST), nullable=False),  # sha256 of the run's lines
    Column("first_line", Integer),
    Column("last_line", Integer),
    Column("machine_id", Integer, ForeignKey("machines.id"), nullable=False),
    Column("repo_id", Integer, ForeignKey("repos.id")),
    Column("source", Text, nullable=False),
    Column("start", DateTime(timezone=True)),  # UTC
    Column("commit", String(SHA)),
    Column("workload", Text),  # timeline.workload.workload_label of its config
    Column("status", String(32), nullable=False),
    Column("attribution", String(32), nullable=False),
    Column("steady_value", Float),
    Column("config_id", Integer, ForeignKey("blobs.id"), nullable=False),
    Column("messages_id", Integer, ForeignKey("blobs.id"), nullable=False),
    Column("doc", Text, nullable=False),
    Column("ingested", DateTime(timezone=True), nullable=False),
    # What history tests a run on, besides the columns above (filled by migration 0004 for the
    # runs stored before it): read without decoding ``doc``. Lists as JSON text.
    Column("kind", String(64)),
    Column("start_iso", String(64)),  # the start in its own offset (ISO 8601), as build made it
    Column("tz", String(64)),
    Column("tz_source", String(32)),
    Column("events_during", Text),  # the events' entries (events.entry)
    Column("ambiguous_reasons", Text),
    Column("files_may_differ", Boolean),
    Column("nccl_versions", Text),
    Column("steady_metric", String(64)),
    Column("steady_unit", String(32)),
    Column("steady_n", Integer),
    Column("steady_skipped", Integer),
    Column("steady_spread", Float),
    Column("steady_source", String(32)),
    Column("steady_ranks", Text),  # JSON object
    Column("error", Text),
    Column("error_line", Integer),
    Column("date_source", String(32)),
    # What the runs of one log share (codec.FACETS: its path, kind, zone, NCCL versions...), one
    # blob each distinct set: history reads one value a run for them, not ten. Every run has it;
    # neither NOT NULL nor a foreign key, as SQLite adds a column to a table of rows (migration 0006).
    Column("facets_id", Integer),
    Column("cuda_driver_versions", Text),  # JSON list: the GPU driver's CUDA versions its log showed
    # What history reads of a run (timeline.store.reading), so that it walks this index, not the
    # table with every run's array; by machine and start, for ``--machine`` and ``--since`` too.
    Index("ix_runs_history", *HISTORY_INDEX),
    Index("ix_runs_commit", "commit"),
    Index("ix_runs_workload", "workload"),
)

# The stats lines of a run ingested with --samples: large, read only when asked for.
samples = Table(
    "samples",
    metadata,
    Column("run_id", Integer, ForeignKey("runs.id"), primary_key=True),
    Column("body", Text, nullable=False),  # JSON: kind -> rows, as the JSON export writes them
)
