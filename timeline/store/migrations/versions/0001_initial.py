"""The first store: machines, their checkouts, code events and commits, runs and their blobs.

Revision ID: 0001
Revises:
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

revision = "0001"
down_revision = None
branch_labels = None
depends_on = None


def upgrade() -> None:
    op.create_table(
        "machines",
        sa.Column("id", sa.Integer, primary_key=True),
        sa.Column("name", sa.String(255), nullable=False, unique=True),
        sa.Column("host", sa.String(255)),
        sa.Column("gpu_count", sa.Integer),
        sa.Column("nccl_versions", sa.Text, nullable=False),
        sa.Column("driver", sa.String(64)),
        sa.Column("first_ingest", sa.DateTime(timezone=True), nullable=False),
        sa.Column("last_ingest", sa.DateTime(timezone=True), nullable=False),
    )
    op.create_table(
        "repos",
        sa.Column("id", sa.Integer, primary_key=True),
        sa.Column("machine_id", sa.Integer, sa.ForeignKey("machines.id"), nullable=False),
        sa.Column("path", sa.Text, nullable=False),
        sa.Column("head", sa.String(64)),
        sa.Column("doc", sa.Text, nullable=False),
        sa.Column("last_ingest", sa.DateTime(timezone=True), nullable=False),
        sa.UniqueConstraint("machine_id", "path", name="uq_repos_machine_path"),
    )
    op.create_table(
        "commits",
        sa.Column("sha", sa.String(64), primary_key=True),
        sa.Column("subject", sa.Text, nullable=False),
        sa.Column("doc", sa.Text, nullable=False),
    )
    op.create_table(
        "events",
        sa.Column("id", sa.Integer, primary_key=True),
        sa.Column("machine_id", sa.Integer, sa.ForeignKey("machines.id"), nullable=False),
        sa.Column("repo_id", sa.Integer, sa.ForeignKey("repos.id"), nullable=False),
        sa.Column("entry", sa.String(64), nullable=False),
        sa.Column("time", sa.DateTime(timezone=True), nullable=False),
        sa.Column("ts", sa.Integer, nullable=False),
        sa.Column("kind", sa.String(64), nullable=False),
        sa.Column("old", sa.String(64), nullable=False),
        sa.Column("new", sa.String(64), nullable=False),
        sa.Column("doc", sa.Text, nullable=False),
        sa.UniqueConstraint("machine_id", "repo_id", "entry", name="uq_events_entry"),
    )
    op.create_index("ix_events_machine_ts", "events", ["machine_id", "ts"])
    op.create_table(
        "event_commits",
        sa.Column("event_id", sa.Integer, sa.ForeignKey("events.id"), primary_key=True),
        sa.Column("removed", sa.Boolean, primary_key=True),
        sa.Column("position", sa.Integer, primary_key=True),
        sa.Column("sha", sa.String(64), sa.ForeignKey("commits.sha"), nullable=False),
    )
    op.create_index("ix_event_commits_sha", "event_commits", ["sha"])
    op.create_table(
        "blobs",
        sa.Column("id", sa.Integer, primary_key=True),
        sa.Column("digest", sa.String(64), nullable=False, unique=True),
        sa.Column("body", sa.Text, nullable=False),
    )
    op.create_table(
        "runs",
        sa.Column("id", sa.Integer, primary_key=True),
        sa.Column("run_key", sa.String(64), nullable=False, unique=True),
        sa.Column("content", sa.String(64), nullable=False),
        sa.Column("first_line", sa.Integer),
        sa.Column("last_line", sa.Integer),
        sa.Column("machine_id", sa.Integer, sa.ForeignKey("machines.id"), nullable=False),
        sa.Column("repo_id", sa.Integer, sa.ForeignKey("repos.id")),
        sa.Column("source", sa.Text, nullable=False),
        sa.Column("start", sa.DateTime(timezone=True)),
        sa.Column("commit", sa.String(64)),
        sa.Column("workload", sa.Text),
        sa.Column("status", sa.String(32), nullable=False),
        sa.Column("attribution", sa.String(32), nullable=False),
        sa.Column("steady_value", sa.Float),
        sa.Column("config_id", sa.Integer, sa.ForeignKey("blobs.id"), nullable=False),
        sa.Column("messages_id", sa.Integer, sa.ForeignKey("blobs.id"), nullable=False),
        sa.Column("doc", sa.Text, nullable=False),
        sa.Column("ingested", sa.DateTime(timezone=True), nullable=False),
    )
    op.create_index("ix_runs_machine_start", "runs", ["machine_id", "start"])
    op.create_index("ix_runs_commit", "runs", ["commit"])
    op.create_index("ix_runs_workload", "runs", ["workload"])


def downgrade() -> None:
    for table in ("runs", "blobs", "event_commits", "events", "commits", "repos", "machines"):
        op.drop_table(table)
