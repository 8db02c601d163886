"""The simulation registry: discovery, lookup, and the sim -> cards mapping from the deck."""

import ast
import dataclasses
import json
import shutil
import subprocess
import sys

import pytest

from sims import registry

#: A caption sits under the photo with the title in bold; Telegram allows 1,024 characters for
#: both. 500 keeps a caption to a few lines on a phone and leaves room for the title.
MAX_CAPTION_CHARS = 500

MY_SIMS = (
    "reward_overoptimization",
    "ppo_rlhf_bugs",
    "gumbel_bias",
    "pg_baseline",
    "rft_false_positives",
    "compute_allocation",
)


@pytest.fixture
def fresh_registry():
    registry.refresh()
    yield registry
    registry.refresh()


def test_discovers_simulations_and_skips_infrastructure():
    ids = registry.sim_ids()
    assert ids == sorted(ids)
    assert set(MY_SIMS) <= set(ids)
    assert not set(ids) & registry.NOT_SIMS


def test_every_sim_module_is_usable():
    assert registry.problems() == {}


@pytest.mark.parametrize("sim_id", registry.sim_ids())
def test_sim_follows_the_interface(sim_id):
    module = registry.get(sim_id)
    assert registry.title(sim_id) == module.TITLE and module.TITLE.strip()
    assert 0 < len(registry.caption(sim_id)) <= MAX_CAPTION_CHARS
    assert dataclasses.is_dataclass(module.Config)
    config = module.Config()  # every field has a default
    assert "seed" in {field.name for field in dataclasses.fields(config)}
    json.dumps(dataclasses.asdict(config))  # the cache key needs it as JSON
    assert registry.source_path(sim_id).name == f"{sim_id}.py"


@pytest.mark.parametrize("sim_id", registry.sim_ids())
def test_module_and_config_fields_are_documented(sim_id):
    tree = ast.parse(registry.source_path(sim_id).read_text(encoding="utf-8"))
    assert ast.get_docstring(tree), "the module docstring explains the mechanism and the paper"
    config = next(
        node for node in tree.body if isinstance(node, ast.ClassDef) and node.name == "Config"
    )
    undocumented = [
        node.target.id
        for node, following in zip(config.body, [*config.body[1:], None])
        if isinstance(node, ast.AnnAssign)
        and not (
            isinstance(following, ast.Expr)
            and isinstance(following.value, ast.Constant)
            and isinstance(following.value.value, str)
        )
    ]
    assert undocumented == [], "every Config field needs an attribute docstring"


def test_unknown_id_names_the_known_ones():
    with pytest.raises(KeyError) as error:
        registry.get("no_such_sim")
    message = error.value.args[0]
    assert "no_such_sim" in message and "pg_baseline" in message


def test_broken_or_incomplete_modules_are_reported_not_served(fresh_registry, monkeypatch):
    monkeypatch.setattr(
        registry, "_candidate_names", lambda: ["pg_baseline", "registry", "does_not_exist"]
    )
    assert registry.sim_ids() == ["pg_baseline"]
    problems = registry.problems()
    assert "missing TITLE" in problems["registry"]
    assert problems["does_not_exist"].startswith("import failed")
    with pytest.raises(KeyError, match="import failed"):
        registry.get("does_not_exist")


def test_listing_does_not_import_torch_or_matplotlib():
    code = (
        "import sys; from sims import registry; registry.sim_ids(); "
        "print(sorted(m for m in ('torch', 'matplotlib') if m in sys.modules))"
    )
    output = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, check=True, timeout=120
    ).stdout
    assert output.strip() == "[]"


def test_cards_come_from_the_deck(fresh_registry):
    from cards.deck import default_deck

    deck = default_deck()
    for card in deck:
        assert card.id in registry.cards_for(card.sim)
    mapping = registry.sim_cards()
    assert set(mapping) == set(registry.sim_ids())
    assert sum(len(ids) for ids in mapping.values()) == sum(
        1 for card in deck if card.sim in mapping
    )


def test_a_broken_card_does_not_hide_the_others(fresh_registry, monkeypatch, tmp_path):
    import cards.deck as deck_module
    from cards.deck import CardFileError

    good = next(iter(sorted(deck_module.DECK_DIR.glob("*.md"))))
    shutil.copy(good, tmp_path / good.name)
    (tmp_path / "rl-99.md").write_text("no front matter here\n", encoding="utf-8")

    def broken_deck():
        raise CardFileError(tmp_path / "rl-99.md", [("front matter", "broken")])

    monkeypatch.setattr(deck_module, "DECK_DIR", tmp_path)
    monkeypatch.setattr(deck_module, "default_deck", broken_deck)
    card = deck_module.parse_card(tmp_path / good.name)
    assert registry.cards_for(card.sim) == [card.id]


def test_caption_per_card_falls_back_to_the_sim_caption():
    module = registry.get("offline_q_overestimation")
    assert registry.caption("offline_q_overestimation") == module.CAPTION
    assert registry.caption("offline_q_overestimation", "rl-10") == module.CAPTIONS["rl-10"]
    assert registry.caption("offline_q_overestimation", "no-such-card") == module.CAPTION
    assert registry.caption("pg_baseline", "rl-19") == registry.get("pg_baseline").CAPTION


@pytest.mark.parametrize("sim_id", registry.sim_ids())
def test_shared_sims_give_each_card_its_own_caption(fresh_registry, sim_id):
    cards = registry.cards_for(sim_id)
    per_card = getattr(registry.get(sim_id), "CAPTIONS", {})
    assert set(per_card) <= set(cards), "CAPTIONS names a card that does not use this sim"
    if len(cards) > 1:
        assert set(per_card) == set(cards), "a shared sim needs a caption per card"
        captions = [registry.caption(sim_id, card) for card in cards]
        assert len(set(captions)) == len(captions), "the cards' captions must differ"
    for text in per_card.values():
        assert 0 < len(text) <= MAX_CAPTION_CHARS
