"""Event times as 64-bit seconds: a reflog entry stamped past 2038-01-19 (a clock set wrong, or
an untrusted checkout's 9999-12-31) overflowed PostgreSQL's 32-bit INTEGER and stopped the ingest.

Revision ID: 0003
Revises: 0002
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

revision = "0003"
down_revision = "0002"
branch_labels = None
depends_on = None


def upgrade() -> None:
    # batch mode: an ALTER on PostgreSQL, a copy of the table on SQLite (which cannot alter a
    # column; its INTEGER was 64-bit already)
    with op.batch_alter_table("events") as batch:
        batch.alter_column("ts", existing_type=sa.Integer, type_=sa.BigInteger, existing_nullable=False)


def downgrade() -> None:
    with op.batch_alter_table("events") as batch:
        batch.alter_column("ts", existing_type=sa.BigInteger, type_=sa.Integer, existing_nullable=False)
