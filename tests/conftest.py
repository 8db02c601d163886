"""Shared fixtures: real databases (a SQLite file; PostgreSQL when TEST_DATABASE_URL is set),
an injected clock, a small stable deck built from a real card, and the ``slow`` marker.

Tests marked ``slow`` are the slow proofs (all seeds of a claim, whole labelled sets, the
PostgreSQL soak): skipped unless RUN_SLOW=1. ``make test`` leaves them out and ``make test-slow``
runs only them, so the two together run every test once.

Each database test gets an empty database migrated to head, without running the migrations per
test: they run once per session (per xdist worker) into a template. SQLite: each test gets a copy
of the template file. PostgreSQL: each worker copies the template once (``CREATE DATABASE ...
TEMPLATE``) and each test gets it emptied (its leftover connections closed, every table truncated:
about 0.04 s against 0.5 s for a new database per test); ``fresh_db_url`` gives a database of the
test's own, for tests that change the schema. When the role may not create databases, each test
migrates a schema of its own.
"""

from __future__ import annotations

import os
import re
import shutil
import uuid
from datetime import UTC, datetime
from pathlib import Path

import pytest
import sqlalchemy as sa

from bot.clock import FixedClock
from bot.db import make_engine, migrate, normalise_url
from cards.deck import DECK_DIR, Deck, load_deck

ROOT = Path(__file__).resolve().parent.parent
SHARED = ROOT.parent / "shared"
PG_URL = os.environ.get("TEST_DATABASE_URL")


@pytest.hookimpl(trylast=True)  # after the sub-directories' conftests have marked theirs
def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    """Tests marked ``slow`` run only with RUN_SLOW=1 (``make test-slow``)."""
    if os.environ.get("RUN_SLOW") == "1":
        return
    skip = pytest.mark.skip(reason="slow proof: runs with RUN_SLOW=1 (make test-slow)")
    for item in items:
        if "slow" in item.keywords:
            item.add_marker(skip)


def _admin_engine(base: str) -> sa.Engine:
    return sa.create_engine(normalise_url(base), isolation_level="AUTOCOMMIT")


def _pg_schema_url(base: str) -> tuple[str, str]:
    """A URL whose connections use a fresh schema of their own, so runs never collide."""
    schema = f"t_{uuid.uuid4().hex[:12]}"
    engine = sa.create_engine(normalise_url(base))
    with engine.begin() as connection:
        connection.execute(sa.text(f'CREATE SCHEMA "{schema}"'))
    engine.dispose()
    separator = "&" if "?" in base else "?"
    return f"{normalise_url(base)}{separator}options=-csearch_path%3D{schema}", schema


def _drop_pg_schema(base: str, schema: str) -> None:
    engine = sa.create_engine(normalise_url(base))
    with engine.begin() as connection:
        connection.execute(sa.text(f'DROP SCHEMA IF EXISTS "{schema}" CASCADE'))
    engine.dispose()


def _database_url(base: str, name: str) -> str:
    return (
        sa.engine.make_url(normalise_url(base))
        .set(database=name)
        .render_as_string(hide_password=False)
    )


def _create_database(base: str, name: str, template: str | None = None) -> None:
    clause = f' TEMPLATE "{template}"' if template else ""
    engine = _admin_engine(base)
    try:
        with engine.connect() as connection:
            connection.execute(sa.text(f'CREATE DATABASE "{name}"{clause}'))
    finally:
        engine.dispose()


def _drop_database(base: str, name: str) -> None:
    engine = _admin_engine(base)
    try:
        with engine.connect() as connection:
            # FORCE: a connection a test left open (a killed subprocess's) must not keep it alive.
            connection.execute(sa.text(f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)'))
    finally:
        engine.dispose()


@pytest.fixture(scope="session")
def _sqlite_template(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A SQLite file migrated to head once per session; tests get copies of it."""
    path = tmp_path_factory.mktemp("db-template") / "trapbot.db"
    migrate(f"sqlite:///{path}")
    wal = path.with_name(path.name + "-wal")
    assert not wal.exists() or wal.stat().st_size == 0, (
        "a copy of the file alone would lose the WAL"
    )
    return path


@pytest.fixture(scope="session")
def _pg_template() -> object:
    """A PostgreSQL database migrated to head once per session, or None when the role may not
    create databases (each test then migrates a schema of its own)."""
    if not PG_URL:
        yield None
        return
    name = f"trapbot_template_{uuid.uuid4().hex[:12]}"
    try:
        _create_database(PG_URL, name)
    except sa.exc.DBAPIError:
        yield None
        return
    try:
        migrate(_database_url(PG_URL, name))
        make_engine(_database_url(PG_URL, name)).dispose()
        yield name
    finally:
        _drop_database(PG_URL, name)


@pytest.fixture(scope="session")
def _pg_worker_db(_pg_template: str | None) -> object:
    """This worker's PostgreSQL database, copied from the template once; tests empty it."""
    if _pg_template is None:
        yield None
        return
    name = f"trapbot_worker_{uuid.uuid4().hex[:12]}"
    _create_database(PG_URL, name, template=_pg_template)
    url = _database_url(PG_URL, name)
    engine = sa.create_engine(normalise_url(url), isolation_level="AUTOCOMMIT")
    tables = [t for t in sa.inspect(engine).get_table_names() if t != "alembic_version"]
    emptying = sa.text(
        "SELECT pg_terminate_backend(pid) FROM pg_stat_activity"
        " WHERE datname = current_database() AND pid <> pg_backend_pid();"
        f" TRUNCATE {', '.join(f'{chr(34)}{t}{chr(34)}' for t in tables)} RESTART IDENTITY CASCADE"
    )

    def emptied() -> str:
        # A connection a test left open (a killed subprocess's) must not hold a lock on a table.
        with engine.connect() as connection:
            connection.execute(emptying)
        return url

    try:
        yield emptied
    finally:
        engine.dispose()
        _drop_database(PG_URL, name)


def _sqlite_copy(request: pytest.FixtureRequest, tmp_path: Path) -> str:
    template = request.getfixturevalue("_sqlite_template")
    path = tmp_path / "trapbot.db"
    shutil.copyfile(template, path)  # no connection is open on it: the file is consistent
    return f"sqlite:///{path}"


def _pg_schema_of_its_own():
    url, schema = _pg_schema_url(PG_URL)
    try:
        migrate(url)
        yield url
    finally:
        _drop_pg_schema(PG_URL, schema)


def _database(request: pytest.FixtureRequest, tmp_path: Path, *, own: bool):
    """The SQLite copy, or the PostgreSQL database: the worker's emptied one, or (``own``) a
    copy of the template for this test alone."""
    if request.param == "sqlite":
        yield _sqlite_copy(request, tmp_path)
        return
    if not PG_URL:
        pytest.skip("TEST_DATABASE_URL is not set, so the PostgreSQL variant does not run")
    template = request.getfixturevalue("_pg_template")
    if template is None:
        yield from _pg_schema_of_its_own()
    elif not own:
        yield request.getfixturevalue("_pg_worker_db")()
    else:
        name = f"t_{uuid.uuid4().hex[:12]}"
        _create_database(PG_URL, name, template=template)
        try:
            yield _database_url(PG_URL, name)
        finally:
            _drop_database(PG_URL, name)


@pytest.fixture(params=["sqlite", "postgresql"])
def db_url(request: pytest.FixtureRequest, tmp_path: Path):
    """An empty database migrated to head: a SQLite file, and PostgreSQL when configured."""
    yield from _database(request, tmp_path, own=False)


@pytest.fixture(params=["sqlite", "postgresql"])
def fresh_db_url(request: pytest.FixtureRequest, tmp_path: Path):
    """Like ``db_url``, but a database of this test's own: for tests that change the schema."""
    yield from _database(request, tmp_path, own=True)


@pytest.fixture
def db(db_url: str):
    engine = make_engine(db_url)
    yield engine
    engine.dispose()


@pytest.fixture
def clock() -> FixedClock:
    return FixedClock(datetime(2026, 3, 2, 8, 0, tzinfo=UTC))


def copies_of_model_card(directory: Path, ids: list[str]) -> Deck:
    """A deck of copies of cards/deck/rl-08.md under other ids: stable content for engine tests."""
    source = (DECK_DIR / "rl-08.md").read_text(encoding="utf-8")
    directory.mkdir(parents=True, exist_ok=True)
    for card_id in ids:
        text = re.sub(r"^id: rl-08$", f"id: {card_id}", source, count=1, flags=re.MULTILINE)
        (directory / f"{card_id}.md").write_text(text, encoding="utf-8")
    return load_deck(directory)


@pytest.fixture
def small_deck(tmp_path: Path) -> Deck:
    return copies_of_model_card(tmp_path / "deck", ["rl-91", "rl-92", "rl-93"])
