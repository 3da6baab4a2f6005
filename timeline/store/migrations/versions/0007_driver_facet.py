"""The GPU driver's CUDA versions each run's log showed, among what the runs of one log share (the
last of their facets, from the last field of each run's array) and in a column of their own for
users' queries, as the NCCL versions are: the shifts compare them on every run, and reading them
from 100,000 arrays took longer than all the rest of ``timeline history``.

Revision ID: 0007
Revises: 0006
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Callable
from typing import Any

import sqlalchemy as sa
from alembic import op

revision = "0007"
down_revision = "0006"
branch_labels = None
depends_on = None

BATCH = 500


def _dumps(value: Any) -> str:
    return json.dumps(value, separators=(",", ":"), ensure_ascii=False)


def _refaceted(new_facets: Callable[[list[Any], str], list[Any]], drivers: bool) -> None:
    """Each run's facets made again by ``new_facets(facets, doc)`` (and with ``drivers`` its
    drivers' column filled from them); then the blobs no run names any more deleted."""
    runs = sa.table(
        "runs",
        sa.column("id"),
        sa.column("doc"),
        sa.column("config_id"),
        sa.column("messages_id"),
        sa.column("facets_id"),
        sa.column("cuda_driver_versions"),
    )
    blobs = sa.table("blobs", sa.column("id"), sa.column("digest"), sa.column("body"))
    values: dict[str, Any] = {"facets_id": sa.bindparam("new_facets_id")}
    if drivers:
        values["cuda_driver_versions"] = sa.bindparam("new_drivers")
    refill = sa.update(runs).where(runs.c.id == sa.bindparam("run_id")).values(**values)
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
            sa.select(runs.c.id, runs.c.doc, blobs.c.body)
            .join(blobs, blobs.c.id == runs.c.facets_id)
            .where(runs.c.id > last)
            .order_by(runs.c.id)
            .limit(BATCH)
        ).all()
        if not rows:
            break
        filled = []
        for row in rows:
            facets = new_facets(json.loads(row.body), row.doc)
            filled.append({"run_id": row.id, "new_facets_id": blob_id(_dumps(facets))})
            if drivers:
                filled[-1]["new_drivers"] = _dumps(facets[-1])
        connection.execute(refill, filled)
        last = rows[-1].id
    # Each blob deleted has its foreign keys checked, a look for the runs naming it: without an
    # index on them, a scan of the runs table a blob (800 of them in 100,000 runs: 150 s, not 6 s).
    # https://www.sqlite.org/foreignkeys.html#fk_indexes
    for column in ("config_id", "messages_id"):
        op.create_index(f"ix_runs_{column}_0007", "runs", [column])
    named = sa.union(sa.select(runs.c.config_id), sa.select(runs.c.messages_id), sa.select(runs.c.facets_id))
    connection.execute(sa.delete(blobs).where(blobs.c.id.not_in(named)))
    for column in ("config_id", "messages_id"):
        op.drop_index(f"ix_runs_{column}_0007", "runs")


def upgrade() -> None:
    op.add_column("runs", sa.Column("cuda_driver_versions", sa.Text))
    # the drivers: the array's last field (migration 0005)
    _refaceted(lambda facets, doc: [*facets, json.loads(doc)[-1]], drivers=True)


def downgrade() -> None:
    _refaceted(lambda facets, doc: facets[:-1], drivers=False)
    op.drop_column("runs", "cuda_driver_versions")
