"""What the runs of one log share (their log, kind, zone, attribution, NCCL versions, the steady
value's metric...), kept once for all of them, as their server arguments are: a blob (``blobs``)
each distinct set, which ``runs.facets_id`` names. ``timeline history`` reads one value a run for
them, not ten (SQLite's fetch of 100,000 runs spent about half its time on those ten columns).
The columns stay, for users' queries. The runs stored before get theirs from those columns.

A column that may be NULL and no foreign key, as SQLite adds one to a table that has rows: a NOT
NULL column or a foreign key would make the runs table again, and dropping the old one, within
the migration's transaction, breaks the samples' foreign keys to it. Every run has one: an
ingest writes it (timeline.store.writing), this fills it.

Revision ID: 0006
Revises: 0005
"""

from __future__ import annotations

import hashlib
import json
from typing import Any

import sqlalchemy as sa
from alembic import op

revision = "0006"
down_revision = "0005"
branch_labels = None
depends_on = None

BATCH = 500
# The columns of a run its facets are made of, in their order in the blob (timeline.store.codec.FACETS
# then); the lists among them are JSON text in their column and lists in the blob.
FACETS = (
    "source",
    "kind",
    "tz",
    "tz_source",
    "attribution",
    "events_during",
    "nccl_versions",
    "steady_metric",
    "steady_unit",
    "steady_source",
)
LISTS = ("events_during", "nccl_versions")


def _dumps(value: Any) -> str:
    return json.dumps(value, separators=(",", ":"), ensure_ascii=False)


def upgrade() -> None:
    op.add_column("runs", sa.Column("facets_id", sa.Integer))
    runs = sa.table("runs", sa.column("id"), sa.column("facets_id"), *(sa.column(name) for name in FACETS))
    blobs = sa.table("blobs", sa.column("id"), sa.column("digest"), sa.column("body"))
    fill = sa.update(runs).where(runs.c.id == sa.bindparam("run_id")).values(facets_id=sa.bindparam("new_facets_id"))
    connection = op.get_bind()
    ids: dict[str, int] = {}  # blob id by body

    def blob_id(body: str) -> int:
        found = ids.get(body)
        if found is None:
            digest = hashlib.sha256(body.encode("utf-8", "surrogatepass")).hexdigest()
            found = connection.execute(sa.select(blobs.c.id).where(blobs.c.digest == digest)).scalar()
            if found is None:
                found = connection.execute(
                    sa.insert(blobs).values(digest=digest, body=body).returning(blobs.c.id)
                ).scalar_one()
            ids[body] = found
        return found

    last = 0
    while True:
        rows = connection.execute(
            sa.select(runs.c.id, *(runs.c[name] for name in FACETS))
            .where(runs.c.id > last)
            .order_by(runs.c.id)
            .limit(BATCH)
        ).all()
        if not rows:
            break
        filled = []
        for row in rows:
            values = [json.loads(row._mapping[name]) if name in LISTS else row._mapping[name] for name in FACETS]
            filled.append({"run_id": row.id, "new_facets_id": blob_id(_dumps(values))})
        connection.execute(fill, filled)
        last = rows[-1].id


def downgrade() -> None:
    op.drop_column("runs", "facets_id")
    # the facets' blobs: those no run names now
    runs = sa.table("runs", sa.column("config_id"), sa.column("messages_id"))
    blobs = sa.table("blobs", sa.column("id"))
    op.execute(
        sa.delete(blobs).where(
            blobs.c.id.not_in(sa.select(runs.c.config_id)) & blobs.c.id.not_in(sa.select(runs.c.messages_id))
        )
    )
