"""The GPU driver's CUDA version each run's log showed (``NCCL INFO cudaDriverVersion``), the last
field of a run's array: the arrays stored before, by a timeline that did not read that line, get
an empty list, as a run whose log shows none.

Revision ID: 0005
Revises: 0004
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

revision = "0005"
down_revision = "0004"
branch_labels = None
depends_on = None

BATCH = 500


def _rewritten(suffix: str, cut: int) -> None:
    """Each run's array, with ``suffix`` in place of its last ``cut`` characters."""
    runs = sa.table("runs", sa.column("id"), sa.column("doc"))
    rewrite = sa.update(runs).where(runs.c.id == sa.bindparam("run_id")).values(doc=sa.bindparam("new_doc"))
    connection = op.get_bind()
    last = 0
    while True:
        rows = connection.execute(
            sa.select(runs.c.id, runs.c.doc).where(runs.c.id > last).order_by(runs.c.id).limit(BATCH)
        ).all()
        if not rows:
            return
        connection.execute(rewrite, [{"run_id": row.id, "new_doc": row.doc[:-cut] + suffix} for row in rows])
        last = rows[-1].id


def upgrade() -> None:
    _rewritten(",[]]", 1)  # [..., "stamp"] -> [..., "stamp", []]


def downgrade() -> None:
    _rewritten("]", len(",[]]"))
