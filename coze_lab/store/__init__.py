"""Persistence: SQLAlchemy 2 models, the Database handle and Alembic migrations."""

from coze_lab.store.db import Database, sqlite_url

__all__ = ["Database", "sqlite_url"]
