"""What history tests a run on, in columns of the run: read as they are, not decoded from each
run's JSON array (most of the time of ``timeline history`` on 100,000 runs). The runs stored
before are filled from their arrays.

Revision ID: 0004
Revises: 0003
"""

from __future__ import annotations

import json
from typing import Any

import sqlalchemy as sa
from alembic import op

revision = "0004"
down_revision = "0003"
branch_labels = None
depends_on = None

BATCH = 500

# The fields of a run's array (the runs table's ``doc``) as 0001 to 0003 wrote it, in order
# (timeline.store.codec.RUN_FIELDS then); a migration reads the store as it was, whatever the
# codec becomes.
DOC_FIELDS = (
    "source",
    "kind",
    "start",
    "end",
    "start_local",
    "tz",
    "tz_source",
    "first_line",
    "last_line",
    "commit",
    "attribution",
    "events_during",
    "candidate_commits",
    "ambiguous_reasons",
    "zone_readings",
    "files_may_differ",
    "nccl_versions",
    "metrics",
    "steady",
    "status",
    "error",
    "error_line",
    "date_source",
)
STEADY_FIELDS = ("metric", "unit", "value", "n", "skipped", "spread", "source", "ranks")


def _columns() -> list[sa.Column]:
    return [
        sa.Column("kind", sa.String(64)),
        sa.Column("start_iso", sa.String(64)),
        sa.Column("tz", sa.String(64)),
        sa.Column("tz_source", sa.String(32)),
        sa.Column("events_during", sa.Text),
        sa.Column("ambiguous_reasons", sa.Text),
        sa.Column("files_may_differ", sa.Boolean),
        sa.Column("nccl_versions", sa.Text),
        sa.Column("steady_metric", sa.String(64)),
        sa.Column("steady_unit", sa.String(32)),
        sa.Column("steady_n", sa.Integer),
        sa.Column("steady_skipped", sa.Integer),
        sa.Column("steady_spread", sa.Float),
        sa.Column("steady_source", sa.String(32)),
        sa.Column("steady_ranks", sa.Text),
        sa.Column("error", sa.Text),
        sa.Column("error_line", sa.Integer),
        sa.Column("date_source", sa.String(32)),
    ]


def _dumps(value: Any) -> str:
    return json.dumps(value, separators=(",", ":"), ensure_ascii=False)


def _filled(doc: str) -> dict[str, Any]:
    """The new columns of a run, from its array."""
    values = dict(zip(DOC_FIELDS, json.loads(doc), strict=True))
    steady = dict(zip(STEADY_FIELDS, values["steady"] or [None] * len(STEADY_FIELDS), strict=True))
    return {
        "kind": values["kind"],
        "start_iso": values["start"],
        "tz": values["tz"],
        "tz_source": values["tz_source"],
        "events_during": _dumps(values["events_during"]),
        "ambiguous_reasons": _dumps(values["ambiguous_reasons"]),
        "files_may_differ": values["files_may_differ"],
        "nccl_versions": _dumps(values["nccl_versions"]),
        **{f"steady_{name}": steady[name] for name in STEADY_FIELDS if name not in ("value", "ranks")},
        "steady_ranks": None if values["steady"] is None else _dumps(steady["ranks"]),
        "error": values["error"],
        "error_line": values["error_line"],
        "date_source": values["date_source"],
    }


def upgrade() -> None:
    columns = _columns()
    for column in columns:
        op.add_column("runs", column)
    runs = sa.table("runs", sa.column("id"), sa.column("doc"), *(sa.column(c.name, c.type) for c in _columns()))
    fill = (
        sa.update(runs)
        .where(runs.c.id == sa.bindparam("run_id"))
        .values({c.name: sa.bindparam(f"new_{c.name}") for c in columns})
    )
    connection = op.get_bind()
    last = 0
    while True:
        rows = connection.execute(
            sa.select(runs.c.id, runs.c.doc).where(runs.c.id > last).order_by(runs.c.id).limit(BATCH)
        ).all()
        if not rows:
            return
        connection.execute(
            fill,
            [{"run_id": row.id, **{f"new_{k}": v for k, v in _filled(row.doc).items()}} for row in rows],
        )
        last = rows[-1].id


def downgrade() -> None:
    for column in reversed(_columns()):
        op.drop_column("runs", column.name)
