"""Database engine and migrations. SQLite (WAL) by default, PostgreSQL via ``DATABASE_URL``."""

from __future__ import annotations

import re
from pathlib import Path

import sqlalchemy as sa
from sqlalchemy.engine import Engine

MIGRATIONS_DIR = Path(__file__).resolve().parent.parent / "migrations"


def normalise_url(url: str) -> str:
    """Use psycopg 3 for PostgreSQL URLs written the usual way."""
    for prefix in ("postgresql://", "postgres://"):
        if url.startswith(prefix):
            return "postgresql+psycopg://" + url[len(prefix) :]
    return url


def make_engine(url: str) -> Engine:
    """An engine for ``url``; SQLite files get WAL, foreign keys and a busy timeout."""
    url = normalise_url(url)
    if url.startswith("sqlite"):
        path = sa.engine.make_url(url).database
        if path and path != ":memory:":
            Path(path).expanduser().parent.mkdir(parents=True, exist_ok=True)
        engine = sa.create_engine(url, connect_args={"check_same_thread": False, "timeout": 30})

        @sa.event.listens_for(engine, "connect")
        def _sqlite_pragmas(dbapi_connection, _record):
            cursor = dbapi_connection.cursor()
            cursor.execute("PRAGMA journal_mode=WAL")
            cursor.execute("PRAGMA foreign_keys=ON")
            cursor.execute("PRAGMA synchronous=NORMAL")
            cursor.close()

        return engine
    return sa.create_engine(url, pool_pre_ping=True)


def alembic_config(url: str):
    from alembic.config import Config

    config = Config(str(MIGRATIONS_DIR / "alembic.ini"))
    config.set_main_option("script_location", str(MIGRATIONS_DIR))
    config.set_main_option("sqlalchemy.url", normalise_url(url).replace("%", "%%"))
    return config


def migrate(url: str) -> None:
    """Upgrade the database at ``url`` to the newest migration."""
    from alembic import command

    make_engine(url).dispose()  # creates the SQLite directory
    command.upgrade(alembic_config(url), "head")


def head_revision() -> str:
    """The newest revision id, read from the migration files without importing Alembic."""
    revisions: dict[str, str | None] = {}
    for path in (MIGRATIONS_DIR / "versions").glob("*.py"):
        text = path.read_text(encoding="utf-8")
        found = re.search(r"^revision = ['\"](\w+)['\"]", text, re.MULTILINE)
        parent = re.search(r"^down_revision = (?:['\"](\w+)['\"]|None)", text, re.MULTILINE)
        if found:
            revisions[found.group(1)] = parent.group(1) if parent else None
    parents = set(revisions.values())
    heads = [rev for rev in revisions if rev not in parents]
    if len(heads) != 1:
        raise RuntimeError(f"expected one migration head, found {heads}")
    return heads[0]


def migrate_if_needed(url: str) -> None:
    """Migrate only when the database is not at the newest revision (start-up stays fast)."""
    engine = make_engine(url)
    try:
        with engine.connect() as connection:
            current = connection.execute(sa.text("SELECT version_num FROM alembic_version")).scalar()
    except sa.exc.DBAPIError:
        current = None
    finally:
        engine.dispose()
    if current != head_revision():
        migrate(url)
