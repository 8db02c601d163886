"""``trapbot export anki``: the package read back as Anki reads it (a zip holding a SQLite
collection and numbered media files): one note per card, one Anki deck per trapbot deck, the
plot as media, and note ids that stay the same across exports."""

from __future__ import annotations

import argparse
import html
import json
import sqlite3
import zipfile
from pathlib import Path

import pytest

from bot.anki import markdown_html, register
from cards.deck import load_decks

ROOT = Path(__file__).resolve().parent.parent
EXAMPLE = ROOT / "examples" / "decks" / "team-traps"
PICTURE = EXAMPLE / "grpo-01-mixed-groups.png"


def export(argv: list[str], tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys, decks: Path = EXAMPLE) -> tuple[int, str, str]:
    from bot.config import get_settings

    monkeypatch.setenv("TRAPBOT_DECKS", str(decks))
    monkeypatch.setenv("TRAPBOT_SIM_CACHE_DIR", str(tmp_path / "no-plots-cached"))
    get_settings.cache_clear()
    try:
        parser = argparse.ArgumentParser(prog="trapbot")
        register(parser.add_subparsers(dest="command", required=True))
        args = parser.parse_args(["export", "anki", *argv])
        code = args.func(args)
    finally:
        get_settings.cache_clear()
    out, err = capsys.readouterr()
    return code, out, err


def read_package(path: Path, tmp_path: Path) -> dict:
    """Notes, decks, cards and media of an .apkg, from its own files."""
    with zipfile.ZipFile(path) as package:
        names = set(package.namelist())
        media = json.loads(package.read("media"))
        files = {name: package.read(number) for number, name in media.items()}
        collection = tmp_path / f"{path.stem}.anki2"
        collection.write_bytes(package.read("collection.anki2"))
    with sqlite3.connect(collection) as db:
        notes = {row[2].split("\x1f")[0]: (row[0], row[1], row[2].split("\x1f")) for row in db.execute("select id, guid, flds from notes")}
        decks = json.loads(db.execute("select decks from col").fetchone()[0])
        card_decks = dict(db.execute("select n.flds, c.did from cards c join notes n on n.id = c.nid").fetchall())
    deck_names = {int(deck_id): deck["name"] for deck_id, deck in decks.items()}
    by_card = {flds.split("\x1f")[0]: deck_names[did] for flds, did in card_decks.items()}
    return {"names": names, "media": files, "notes": notes, "decks": deck_names, "deck_of": by_card}


def test_the_package_holds_one_note_per_card_with_the_plot_as_media(tmp_path, monkeypatch, capsys) -> None:
    out = tmp_path / "traps.apkg"
    code, stdout, err = export(["--out", str(out), "--plots", "cached"], tmp_path, monkeypatch, capsys)
    assert code == 0, err
    assert "27 notes in 2 Anki decks" in stdout and "[team-traps 1/1] grpo-01" in err  # progress, per card
    package = read_package(out, tmp_path)
    deck = load_decks([EXAMPLE])
    assert set(package["notes"]) == set(deck.ids) and len(package["notes"]) == 27
    assert {"trapbot::RL and RLHF traps", "trapbot::Team traps (example)"} <= set(package["decks"].values())
    assert package["deck_of"]["grpo-01"] == "trapbot::Team traps (example)"
    assert package["deck_of"]["rl-01"] == "trapbot::RL and RLHF traps"
    # The example card: question on the front, trap, key points, explanation and its picture on the back.
    _, _, fields = package["notes"]["grpo-01"]
    card = deck.get("grpo-01")
    assert "8 completions per prompt" in fields[1]
    assert "It learns what not to do" in fields[2]
    assert fields[3].count("<li") == len(card.key_points) and 'class="core"' in fields[3]
    assert "\\(A_i = (r_i - \\bar r) / (\\sigma_r + \\epsilon)\\)" in fields[4] and "<p>" in fields[4]
    assert fields[5] == '<img src="trapbot-grpo-01.png">'
    assert "two prompts in three teach nothing" in fields[6]
    assert package["media"] == {"trapbot-grpo-01.png": PICTURE.read_bytes()}


def test_a_re_export_keeps_note_and_deck_ids_so_anki_updates(tmp_path, monkeypatch, capsys) -> None:
    first, second = tmp_path / "a.apkg", tmp_path / "b.apkg"
    assert export(["--out", str(first), "--plots", "none"], tmp_path, monkeypatch, capsys)[0] == 0
    assert export(["--out", str(second), "--plots", "none", "--deck", "team-traps"], tmp_path, monkeypatch, capsys)[0] == 0
    one, two = read_package(first, tmp_path), read_package(second, tmp_path)
    assert list(two["notes"]) == ["grpo-01"] and two["media"] == {}
    assert one["notes"]["grpo-01"][1] == two["notes"]["grpo-01"][1]  # the guid Anki matches on import
    assert {k: v for k, v in one["decks"].items() if v.startswith("trapbot::Team")} == {
        k: v for k, v in two["decks"].items() if v.startswith("trapbot::Team")
    }


def test_an_unknown_deck_is_refused_with_the_known_names(tmp_path, monkeypatch, capsys) -> None:
    code, _, err = export(["--out", str(tmp_path / "x.apkg"), "--deck", "nope"], tmp_path, monkeypatch, capsys)
    assert code == 2 and "builtin, team-traps" in err and not (tmp_path / "x.apkg").exists()


def test_markdown_and_math_render_for_anki() -> None:
    assert markdown_html("**Bold** and $a < b$.") == "<p><strong>Bold</strong> and \\(a &lt; b\\).</p>\n"


def test_a_card_naming_a_simulation_gets_its_plot_computed_and_captioned(tmp_path, monkeypatch, capsys) -> None:
    registry = pytest.importorskip("sims.registry", reason="the simulations are not installed")
    sim = "trajectory_stitching"  # computes in about a second
    if sim not in registry.sim_ids():
        pytest.skip(f"no simulation {sim}")
    from cards.template import card_template

    folder = tmp_path / "simdeck"
    folder.mkdir()
    (folder / "sim-01.md").write_text(card_template("sim-01").replace("sim: reward_overoptimization", f"sim: {sim}"), encoding="utf-8")
    out = tmp_path / "sim.apkg"
    code, _, err = export(["--out", str(out), "--deck", "simdeck"], tmp_path, monkeypatch, capsys, decks=folder)
    assert code == 0, err
    package = read_package(out, tmp_path)
    [png] = package["media"].values()
    assert png.startswith(b"\x89PNG") and list(package["media"]) == ["trapbot-sim-01.png"]
    _, _, fields = package["notes"]["sim-01"]
    assert fields[5] == '<img src="trapbot-sim-01.png">'
    assert fields[6] == html.escape(registry.caption(sim, "sim-01"))
