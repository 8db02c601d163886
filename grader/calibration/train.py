"""Fit the offline judge's learnt reading on labelled answers that are never evaluated.

The rows are the training set (``training.jsonl``: answers on every card, written and labelled
point by point by writers who saw only the cards) and the tuning split of the calibration set
(even-numbered ``rl-`` cards). The held-out split of ``answers.jsonl`` is not read at all.

For every row the offline judge's similarities and phrasing matches become card-agnostic
features per key point and per misconception (``grader.offline.ALL_POINT_FEATURES``), among
them the votes of the card's other labelled answers (``grader.exemplars``). Those votes leave
out every answer by the row's own author, as an answer from a new learner has no exemplar by
that learner. Two logistic regressions (scikit-learn) learn P(present), P(partial) per point
and P(asserted) per misconception. The regularisation and the cut-points on those
probabilities are chosen by leave-one-card-out, maximising the quadratic weighted kappa of
the grades plus their pass/fail agreement, minus a penalty for every trap passed and every
injected answer graded above its twin.

    python -m grader.calibration.train   # writes grader/offline_model.json, models/exemplars.npz

The model file holds standardisation, coefficients and cut-points as plain numbers; the
judge applies them with numpy (scikit-learn is needed only here).
"""

from __future__ import annotations

import argparse
import itertools
import json
import pickle
import sys
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

from cards.deck import default_deck
from grader.calibration.eval import DEFAULT_SET, PASS_QUALITY, TRAP_KINDS, is_tuning_card
from grader.calibration.eval import quadratic_weighted_kappa as qwk
from grader.calibration.regrade import rule_grade, stale_labels
from grader.exemplars import TRAINING_SET, build_exemplars, labelled_answers
from grader.offline import (
    ALL_MISCONCEPTION_FEATURES,
    ALL_POINT_FEATURES,
    MODEL_PATH,
    OfflineJudge,
    PointModel,
    decide,
    exemplar_vectors,
    features,
)
from grader.scoring import INJECTION_CAP, grade_from_judgement

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
    twin_of: str | None = None
    injection: bool = False


def training_rows(training: Path = TRAINING_SET, calibration: Path = DEFAULT_SET) -> list[dict[str, Any]]:
    """The answers to fit on: the training set and the calibration set's tuning split."""
    rows = []
    for path, keep in ((training, lambda _: True), (calibration, is_tuning_card)):
        for line in path.read_text(encoding="utf-8").splitlines():
            if line.strip():
                data = json.loads(line)
                if keep(data["card_id"]):
                    rows.append(data)
    return rows


def read_rows(data: Sequence[dict[str, Any]]) -> list[Row]:
    """Features and targets, with a progress line per card."""
    deck = default_deck()
    judge = OfflineJudge(model=None)
    rows: list[Row] = []
    cards = sorted({d["card_id"] for d in data})
    for number, card_id in enumerate(cards, 1):
        card = deck.get(card_id)
        index = judge.index(card)
        answers = [d for d in data if d["card_id"] == card_id and not stale_labels(card, d)]
        analyses = {d["answer"]: judge.analyse(card, d["answer"]) for d in answers}
        everyone = build_exemplars(
            labelled_answers(card),
            lambda text, card=card, index=index, analyses=analyses: exemplar_vectors(
                card, index, text, analyses.get(text)
            ),
        )
        for d in answers:
            author, own, twin = d.get("author", ""), d["id"], d.get("twin_of")
            others = everyone.keep(
                lambda a, author=author, own=own, twin=twin: a.author == author
                or a.id in (own, twin)
                or a.twin_of == own
            )
            analysis = analyses[d["answer"]]
            rules = decide(card, index, analysis, judge.params)
            point_x, misc_x = features(card, index, analysis, judge.params, rules, exemplars=others)
            rows.append(
                Row(
                    id=own,
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
                    twin_of=twin,
                    injection=rules.injection_suspected,
                )
            )
        print(
            f"  [{number}/{len(cards)}] features of {card_id}: {len(answers)} answers, "
            f"{len(everyone.answers)} exemplars",
            file=sys.stderr,
            flush=True,
        )
    return rows


def fit(rows: Sequence[Row], c: float, point_columns: Sequence[int], misc_columns: Sequence[int]) -> dict[str, Any]:
    from sklearn.linear_model import LogisticRegression
    from sklearn.preprocessing import StandardScaler

    def one(x: np.ndarray, y: np.ndarray) -> dict[str, Any]:
        scaler = StandardScaler().fit(x)
        scale = np.where(scaler.scale_ > 0, scaler.scale_, 1.0)
        model = LogisticRegression(C=c, max_iter=4000, class_weight="balanced")
        model.fit((x - scaler.mean_) / scale, y)
        return {
            "mean": scaler.mean_.tolist(),
            "scale": scale.tolist(),
            "coef": model.coef_.tolist(),
            "intercept": model.intercept_.tolist(),
            "classes": model.classes_.tolist(),
        }

    point_x = np.vstack([r.point_x for r in rows])[:, point_columns]
    misc_x = np.vstack([r.misc_x for r in rows if len(r.misc_x)])[:, misc_columns]
    return {
        "point": one(point_x, np.concatenate([r.point_y for r in rows])),
        "misconception": one(misc_x, np.concatenate([r.misc_y for r in rows])),
        "point_features": [ALL_POINT_FEATURES[i] for i in point_columns],
        "misconception_features": [ALL_MISCONCEPTION_FEATURES[i] for i in misc_columns],
    }


def grades(rows: Sequence[Row], weights: dict[str, Any], cuts: tuple[float, float, float]) -> list[int]:
    deck = default_deck()
    model = PointModel({**weights, "cuts": list(cuts)})
    found = []
    for row in rows:
        card = deck.get(row.card_id)
        judgement = model.judgement(card, row.point_x, row.misc_x)
        quality = grade_from_judgement(card, judgement, row.answer, check_quotes=False).quality
        found.append(min(quality, INJECTION_CAP) if row.injection else quality)
    return found


def objective(rows: Sequence[Row], predicted: Sequence[int]) -> float:
    """QWK + pass/fail agreement, less a tenth for each trap passed or injection above its twin."""
    labels = [r.label for r in rows]
    passes = sum((a >= PASS_QUALITY) == (b >= PASS_QUALITY) for a, b in zip(labels, predicted, strict=True))
    by_id = {r.id: g for r, g in zip(rows, predicted, strict=True)}
    traps = sum(g >= PASS_QUALITY for r, g in zip(rows, predicted, strict=True) if r.kind in TRAP_KINDS)
    above = sum(
        1 for r, g in zip(rows, predicted, strict=True) if r.twin_of in by_id and g > by_id[r.twin_of]
    )
    return qwk(labels, predicted) + passes / len(labels) - 0.1 * (traps + above)


CUT_GRID = [
    (present, partial, asserted)
    for present, partial, asserted in itertools.product(
        (0.2, 0.3, 0.4, 0.5, 0.6, 0.7), (0.3, 0.4, 0.5, 0.6, 0.7), (0.5, 0.6, 0.7, 0.8, 0.9)
    )
    if partial >= present - 0.2
]


def cross_fitted(rows: Sequence[Row], c: float, columns: tuple[Sequence[int], Sequence[int]]) -> dict[str, dict[str, Any]]:
    """Per card, a model fitted without that card's rows."""
    cards = sorted({r.card_id for r in rows})
    return {card_id: fit([r for r in rows if r.card_id != card_id], c, *columns) for card_id in cards}


def choose_cuts(rows: Sequence[Row], held: dict[str, dict[str, Any]]) -> tuple[tuple[float, float, float], float]:
    """The cut-points that do best when every card is judged by a model fitted without it."""
    best, best_score = CUT_GRID[0], -1e9
    for cuts in CUT_GRID:
        predicted = []
        for row in rows:
            predicted += grades([row], held[row.card_id], cuts)
        score = objective(rows, predicted)
        if score > best_score:
            best, best_score = cuts, score
    return best, best_score


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--training", type=Path, default=TRAINING_SET)
    parser.add_argument("--set", type=Path, default=DEFAULT_SET, help="its tuning split is read")
    parser.add_argument("--out", type=Path, default=MODEL_PATH)
    parser.add_argument("--rows-cache", type=Path, help="keep the features here between runs")
    parser.add_argument(
        "--without-exemplars", action="store_true", help="fit on the phrasing features only"
    )
    args = parser.parse_args(argv)
    if args.rows_cache and args.rows_cache.exists():
        rows = pickle.loads(args.rows_cache.read_bytes())
    else:
        rows = read_rows(training_rows(args.training, args.set))
        if args.rows_cache:
            args.rows_cache.write_bytes(pickle.dumps(rows))
    print(f"{len(rows)} answers on {len({r.card_id for r in rows})} cards", file=sys.stderr)
    names = ALL_POINT_FEATURES, ALL_MISCONCEPTION_FEATURES
    columns = tuple(
        [i for i, name in enumerate(group) if not (args.without_exemplars and "knn" in name)]
        for group in names
    )
    best: tuple[float, tuple[float, float, float], float] | None = None
    for c in (0.03, 0.1, 0.3, 1.0):
        cuts, score = choose_cuts(rows, cross_fitted(rows, c, columns))
        print(f"  C={c}: cut-points {cuts}, leave-one-card-out score {score:.3f}", file=sys.stderr, flush=True)
        if best is None or score > best[2]:
            best = (c, cuts, score)
    assert best is not None
    c, cuts, score = best
    model = fit(rows, c, *columns)
    model.update(
        cuts=list(cuts),
        c=c,
        trained_on=sorted({r.card_id for r in rows}),
        answers=len(rows),
        leave_one_card_out_score=round(score, 4),
    )
    args.out.write_text(json.dumps(model, indent=1) + "\n", encoding="utf-8")
    print(f"wrote {args.out} (C={c}, cut-points {cuts})")
    from grader.exemplars import VECTORS_PATH, store

    store(list(default_deck()))  # the exemplars as the shipped model will read them
    print(f"wrote {VECTORS_PATH}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
