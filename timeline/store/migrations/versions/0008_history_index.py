"""What ``timeline history`` reads of each run, in an index of its own: the reading walks the
index, a tenth of the runs table's pages, not the table with each run's array (100,000 runs: a
160 MB walk, more than half of the fetch). It starts with the machine and the start, as the
index it replaces did, so it serves that index's queries too.

Revision ID: 0008
Revises: 0007
"""

from __future__ import annotations

from alembic import op

revision = "0008"
down_revision = "0007"
branch_labels = None
depends_on = None

# schema.HISTORY_INDEX as this revision made it (a migration keeps the store as it was, whatever
# the schema becomes)
COLUMNS = [
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
]


def upgrade() -> None:
    op.create_index("ix_runs_history", "runs", COLUMNS)
    op.drop_index("ix_runs_machine_start", "runs")


def downgrade() -> None:
    op.create_index("ix_runs_machine_start", "runs", ["machine_id", "start"])
    op.drop_index("ix_runs_history", "runs")
