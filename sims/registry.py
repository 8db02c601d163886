"""Which simulations exist: sim id -> module, discovered from the files in ``sims/``.

A module in this package is a simulation when its name does not start with "_", it is not one
of the infrastructure modules (``NOT_SIMS``), and it defines ``TITLE``, ``CAPTION``, ``Config``,
``run`` and ``plot``. Simulation modules import torch and matplotlib only inside their
functions, so discovering them costs a few milliseconds.

A module that fails to import, or lacks one of the five names, is left out of ``sim_ids()``
(with a logged warning) so one half-written file cannot take the bot down; ``problems()`` lists
why, and the test suite asserts it is empty.

The mapping sim -> cards is read from the deck (each card names its sim in front matter), never
hard-coded.
"""

from __future__ import annotations

import importlib
import logging
import pkgutil
from functools import lru_cache
from pathlib import Path
from types import ModuleType

import sims

log = logging.getLogger(__name__)

#: Modules of the package that are infrastructure, not simulations.
NOT_SIMS = frozenset({"common", "registry", "cache", "cli", "service", "__init__"})

#: What a module must define to be a simulation.
REQUIRED_NAMES = ("TITLE", "CAPTION", "Config", "run", "plot")

SIMS_DIR = Path(sims.__file__).resolve().parent


def _candidate_names() -> list[str]:
    return sorted(
        info.name
        for info in pkgutil.iter_modules([str(SIMS_DIR)])
        if not info.name.startswith("_") and info.name not in NOT_SIMS and not info.ispkg
    )


@lru_cache(maxsize=1)
def _discover() -> tuple[dict[str, ModuleType], dict[str, str]]:
    modules: dict[str, ModuleType] = {}
    problems: dict[str, str] = {}
    for name in _candidate_names():
        try:
            module = importlib.import_module(f"sims.{name}")
        except Exception as error:  # noqa: BLE001 (a broken file must not hide the other sims)
            problems[name] = f"import failed: {type(error).__name__}: {error}"
            log.warning("simulation %s skipped: %s", name, problems[name])
            continue
        missing = [attr for attr in REQUIRED_NAMES if not hasattr(module, attr)]
        if missing:
            problems[name] = f"missing {', '.join(missing)}"
            log.warning("module sims.%s is not a simulation: %s", name, problems[name])
            continue
        modules[name] = module
    return modules, problems


def refresh() -> None:
    """Forget what was discovered (tests, or after adding a file in a running process)."""
    _discover.cache_clear()
    _deck_cards.cache_clear()


def sim_ids() -> list[str]:
    """Every simulation's id, sorted."""
    return list(_discover()[0])


def problems() -> dict[str, str]:
    """Modules in ``sims/`` that look like simulations but are not usable, with the reason."""
    return dict(_discover()[1])


def get(sim_id: str) -> ModuleType:
    """The simulation module; ``KeyError`` naming the known ids when there is none."""
    modules, broken = _discover()
    try:
        return modules[sim_id]
    except KeyError:
        reason = f" ({broken[sim_id]})" if sim_id in broken else ""
        raise KeyError(
            f"no simulation {sim_id!r}{reason}; known ids: {', '.join(modules) or '(none)'}"
        ) from None


def title(sim_id: str) -> str:
    return get(sim_id).TITLE


def caption(sim_id: str, card_id: str | None = None) -> str:
    """The caption shown under the plot; a card's own when the sim serves several cards.

    A simulation shared by cards whose questions differ defines ``CAPTIONS = {card id:
    caption}`` beside ``CAPTION``; any card not in it (or no card) gets ``CAPTION``.
    """
    module = get(sim_id)
    if card_id is not None:
        per_card = getattr(module, "CAPTIONS", None) or {}
        if card_id in per_card:
            return per_card[card_id]
    return module.CAPTION


def source_path(sim_id: str) -> Path:
    """The file that defines the simulation."""
    return Path(get(sim_id).__file__).resolve()


@lru_cache(maxsize=1)
def _deck_cards() -> dict[str, tuple[str, ...]]:
    from cards.deck import DECK_DIR, CardFileError, default_deck, parse_card

    try:
        cards = list(default_deck())
    except CardFileError:
        # One broken card file must not hide the others: parse them one by one.
        cards = []
        for path in sorted(DECK_DIR.glob("*.md")):
            try:
                cards.append(parse_card(path))
            except CardFileError as error:
                log.warning("card skipped while mapping sims: %s", error)
    mapping: dict[str, list[str]] = {}
    for card in cards:
        mapping.setdefault(card.sim, []).append(card.id)
    return {sim: tuple(ids) for sim, ids in mapping.items()}


def cards_for(sim_id: str) -> list[str]:
    """Ids of the deck's cards that use this simulation, in curriculum order."""
    return list(_deck_cards().get(sim_id, ()))


def sim_cards() -> dict[str, list[str]]:
    """Every simulation id mapped to its cards (an empty list when no card uses it yet)."""
    deck = _deck_cards()
    return {sim_id: list(deck.get(sim_id, ())) for sim_id in sim_ids()}
