"""Alembic's entry point for the store's migrations: always run by ``timeline.store.database``
on a connection it passes in (``config.attributes["connection"]``), inside its transaction;
never by a user's ``alembic`` command."""

from __future__ import annotations

from alembic import context

from timeline.store.schema import VERSION_TABLE

connection = context.config.attributes["connection"]
context.configure(connection=connection, version_table=VERSION_TABLE, transactional_ddl=True)
with context.begin_transaction():
    context.run_migrations()
