"""Shared fixtures: real databases (a SQLite file; PostgreSQL when TEST_DATABASE_URL is set),
an injected clock, and a small stable deck built from a real card."""

from __future__ import annotations

import os
import re
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


@pytest.fixture(params=["sqlite", "postgresql"])
def db_url(request: pytest.FixtureRequest, tmp_path: Path):
    """An empty database migrated to head: a SQLite file, and PostgreSQL when configured."""
    if request.param == "sqlite":
        url = f"sqlite:///{tmp_path / 'trapbot.db'}"
        migrate(url)
        yield url
        return
    if not PG_URL:
        pytest.skip("TEST_DATABASE_URL is not set, so the PostgreSQL variant does not run")
    url, schema = _pg_schema_url(PG_URL)
    try:
        migrate(url)
        yield url
    finally:
        _drop_pg_schema(PG_URL, schema)


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
