"""Fit the offline judge's learnt reading on the tuning split, and nothing else.

For every answer of the tuning split (even-numbered ``rl-`` cards) of ``answers.jsonl``, the
offline judge's similarities and phrasing matches become a few card-agnostic features per key
point and per misconception (``grader.offline.POINT_FEATURES``); the writers' point-by-point
labels are the targets. Two logistic regressions (scikit-learn) learn P(present), P(partial)
per point and P(asserted) per misconception. The cut-points on those probabilities are chosen
by leave-one-card-out on the tuning cards, maximising the quadratic weighted kappa of the
grades plus their pass/fail agreement, so they are never fitted on the answers they are
judged on. The held-out cards are not read at all.

    python -m grader.calibration.train          # writes grader/offline_model.json

The model file holds standardisation, coefficients and cut-points as plain numbers; the
judge applies them with numpy (scikit-learn is needed only here).
"""

from __future__ import annotations

import argparse
import itertools
import json
import sys
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

from cards.deck import default_deck
from grader.calibration.eval import DEFAULT_SET, PASS_QUALITY, is_tuning_card
from grader.calibration.eval import quadratic_weighted_kappa as qwk
from grader.calibration.regrade import rule_grade, stale_labels
from grader.offline import (
    MISCONCEPTION_FEATURES,
    MODEL_PATH,
    POINT_FEATURES,
    OfflineJudge,
    PointModel,
    decide,
    features,
)
from grader.scoring import grade_from_judgement

POINT_CLASS = {"absent": 0, "contradicted": 0, "partial": 1, "present": 2}


@dataclass
class Row:
    id: str
    card_id: str
    answer: str
    label: int
    kind: str
    point_x: np.ndarray
    point_y: np.ndarray
    misc_x: np.ndarray
    misc_y: np.ndarray


def read_rows(path: Path) -> list[Row]:
    """The tuning split's answers as features and targets, with a progress line per card."""
    deck = default_deck()
    judge = OfflineJudge(model=None)
    data = [json.loads(line) for line in path.read_text(encoding="utf-8").splitlines() if line.strip()]
    data = [d for d in data if is_tuning_card(d["card_id"])]
    rows: list[Row] = []
    for card_id in sorted({d["card_id"] for d in data}):
        card = deck.get(card_id)
        index = judge.index(card)
        answers = [d for d in data if d["card_id"] == card_id and not stale_labels(card, d)]
        for d in answers:
            analysis = judge.analyse(card, d["answer"])
            rules = decide(card, index, analysis, judge.params)
            point_x, misc_x = features(card, index, analysis, judge.params, rules)
            rows.append(
                Row(
                    id=d["id"],
                    card_id=card_id,
                    answer=d["answer"],
                    label=rule_grade(card, d),
                    kind=d["kind"],
                    point_x=point_x,
                    point_y=np.asarray([POINT_CLASS[d["points"][p.id]] for p in card.key_points]),
                    misc_x=misc_x,
                    misc_y=np.asarray(
                        [int(m.id in d.get("misconceptions", ())) for m in card.misconceptions]
                    ),
                )
            )
        print(f"  features: {card_id} ({len(answers)} answers)", file=sys.stderr, flush=True)
    return rows


def fit(rows: Sequence[Row], c: float) -> dict[str, Any]:
    from sklearn.linear_model import LogisticRegression
    from sklearn.preprocessing import StandardScaler

    def one(x: np.ndarray, y: np.ndarray) -> dict[str, Any]:
        scaler = StandardScaler().fit(x)
        model = LogisticRegression(C=c, max_iter=2000, class_weight="balanced")
        model.fit(scaler.transform(x), y)
        return {
            "mean": scaler.mean_.tolist(),
            "scale": scaler.scale_.tolist(),
            "coef": model.coef_.tolist(),
            "intercept": model.intercept_.tolist(),
            "classes": model.classes_.tolist(),
        }

    return {
        "point": one(np.vstack([r.point_x for r in rows]), np.concatenate([r.point_y for r in rows])),
        "misconception": one(
            np.vstack([r.misc_x for r in rows]), np.concatenate([r.misc_y for r in rows])
        ),
    }


def grades(rows: Sequence[Row], weights: dict[str, Any], cuts: tuple[float, float, float]) -> list[int]:
    deck = default_deck()
    model = PointModel({**weights, "cuts": list(cuts)})
    found = []
    for row in rows:
        card = deck.get(row.card_id)
        judgement = model.judgement(card, row.point_x, row.misc_x)
        found.append(grade_from_judgement(card, judgement, row.answer, check_quotes=False).quality)
    return found


def objective(labels: Sequence[int], predicted: Sequence[int]) -> float:
    passes = sum((a >= PASS_QUALITY) == (b >= PASS_QUALITY) for a, b in zip(labels, predicted, strict=True))
    return qwk(labels, predicted) + passes / len(labels)


CUT_GRID = [
    (present, partial, asserted)
    for present, partial, asserted in itertools.product(
        (0.35, 0.45, 0.55, 0.65), (0.35, 0.45, 0.55, 0.65), (0.5, 0.6, 0.7, 0.8)
    )
]


def leave_one_card_out(rows: Sequence[Row], c: float) -> tuple[tuple[float, float, float], float]:
    """The cut-points that do best when every card is judged by a model fitted without it."""
    cards = sorted({r.card_id for r in rows})
    held: dict[str, dict[str, Any]] = {}
    for card_id in cards:
        held[card_id] = fit([r for r in rows if r.card_id != card_id], c)
    labels = [r.label for r in rows]
    best, best_score = CUT_GRID[0], -1.0
    for cuts in CUT_GRID:
        predicted = []
        for row in rows:
            predicted += grades([row], held[row.card_id], cuts)
        score = objective(labels, predicted)
        if score > best_score:
            best, best_score = cuts, score
    return best, best_score


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--set", type=Path, default=DEFAULT_SET)
    parser.add_argument("--out", type=Path, default=MODEL_PATH)
    args = parser.parse_args(argv)
    rows = read_rows(args.set)
    print(f"{len(rows)} tuning answers on {len({r.card_id for r in rows})} cards", file=sys.stderr)
    best: tuple[float, tuple[float, float, float], float] | None = None
    for c in (0.1, 0.3, 1.0):
        cuts, score = leave_one_card_out(rows, c)
        print(f"  C={c}: cut-points {cuts}, leave-one-card-out score {score:.3f}", file=sys.stderr)
        if best is None or score > best[2]:
            best = (c, cuts, score)
    assert best is not None
    c, cuts, score = best
    model = fit(rows, c)
    model.update(
        cuts=list(cuts),
        c=c,
        point_features=list(POINT_FEATURES),
        misconception_features=list(MISCONCEPTION_FEATURES),
        trained_on=sorted({r.card_id for r in rows}),
        answers=len(rows),
        leave_one_card_out_score=round(score, 4),
    )
    args.out.write_text(json.dumps(model, indent=1) + "\n", encoding="utf-8")
    print(f"wrote {args.out} (C={c}, cut-points {cuts})")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
