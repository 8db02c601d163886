"""Keep ``answers.jsonl`` graded by the current deck's rule.

Each answer carries point-by-point labels (``points``, ``misconceptions``, ``injection``) by
a labeller who saw only the card's final key and the answer (not its style, not the judge);
the writer's own labels, against the key as it stood when they wrote, are kept as
``writer_*``. Its ``grade`` is the grade rule applied to the labeller's labels (an injection
attempt caps it at ``INJECTION_CAP``). When a card's key changes
(a point made core, a point renamed), run ``python -m grader.calibration.regrade`` to recompute
every grade; answers whose labels name a point the card no longer has are listed, to be
labelled again against the new key. ``--import DIR`` first adds the writers' per-card files
(``DIR/<card>.jsonl``).
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path
from typing import Any

from cards.deck import default_deck
from grader.calibration.eval import DEFAULT_SET
from grader.scoring import INJECTION_CAP, grade_from_labels

FIELDS = ("id", "card_id", "kind", "grade", "answer", "points", "misconceptions", "injection",
          "twin_of", "holistic", "author", "note", "writer_points", "writer_misconceptions",
          "writer_injection")  # fmt: skip


def rule_grade(card: Any, row: dict[str, Any]) -> int:
    points = row.get("points") or {}
    grade = grade_from_labels(
        card,
        credits=[p for p, v in points.items() if v == "present"],
        partial=[p for p, v in points.items() if v == "partial"],
        asserts=row.get("misconceptions", ()),
        contradicted=[p for p, v in points.items() if v == "contradicted"],
    )
    return min(grade, INJECTION_CAP) if row.get("injection") else grade


def stale_labels(card: Any, row: dict[str, Any]) -> list[str]:
    """Labels that do not fit the card's key any more (unknown or missing ids)."""
    point_ids = {p.id for p in card.key_points}
    labelled = set(row.get("points") or {})
    unknown = sorted(labelled - point_ids) + sorted(
        set(row.get("misconceptions", ())) - {m.id for m in card.misconceptions}
    )
    return unknown + [f"unlabelled:{p}" for p in sorted(point_ids - labelled)]


def import_rows(directory: Path, author_of: dict[str, str]) -> list[dict[str, Any]]:
    rows = []
    for path in sorted(directory.glob("*.jsonl")):
        for line in path.read_text(encoding="utf-8").splitlines():
            if line.strip():
                data = json.loads(line)
                data["kind"] = data.pop("style", data.get("kind"))
                data.setdefault("author", author_of.get(data["card_id"], "writer"))
                rows.append(data)
    return rows


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--set", type=Path, default=DEFAULT_SET)
    parser.add_argument("--import", dest="import_dir", type=Path)
    parser.add_argument("--authors", help="card=author,... for imported rows")
    args = parser.parse_args(argv)
    deck = default_deck()
    rows: list[dict[str, Any]] = []
    if args.set.exists():
        rows = [json.loads(line) for line in args.set.read_text(encoding="utf-8").splitlines() if line.strip()]
    if args.import_dir:
        author_of = dict(pair.split("=") for pair in (args.authors or "").split(",") if pair)
        fresh = import_rows(args.import_dir, author_of)
        replaced = {row["id"] for row in fresh}
        rows = [row for row in rows if row["id"] not in replaced] + fresh
    stale = changed = 0
    for row in rows:
        card = deck.get(row["card_id"])
        problems = stale_labels(card, row)
        if problems:
            stale += 1
            print(f"{row['id']}: labels do not fit the key: {', '.join(problems)}", file=sys.stderr)
            continue
        grade = rule_grade(card, row)
        changed += grade != row.get("grade")
        row["grade"] = grade
    rows.sort(key=lambda row: (row["card_id"], row["id"]))
    with args.set.open("w", encoding="utf-8") as out:
        for row in rows:
            ordered = {key: row[key] for key in FIELDS if key in row}
            out.write(json.dumps(ordered, ensure_ascii=False) + "\n")
    print(f"{len(rows)} answers, {changed} grades changed, {stale} with labels to redo")
    return 1 if stale else 0


if __name__ == "__main__":
    raise SystemExit(main())
