"""Fit the offline judge's follow-up reading (``grader.offline.followup``) on ``followups.jsonl``.

``followups-heldout.jsonl`` (written later, by other writers under the same blindness) is not
read here: ``trapbot grader eval --followups --file grader/calibration/followups-heldout.jsonl``
measures the result. The target is the writer's label: credited (present or partial) or not.
The regularisation and the credit cut are chosen by leave-one-card-out, maximising agreement
with the labels, less a penalty for each card whose right one-sentence core answer would not
be credited (the issue's goal). Eight answers that say nothing (``NON_ANSWERS``) are added to
every probed point as not reaching it. Each answer's exemplar margin leaves out every answer by its
own writer, as a new learner's answer has no exemplar by that learner.

    python -m grader.calibration.train_followups   # writes grader/followup_model.json, models/followup_exemplars.npz
"""

from __future__ import annotations

import argparse
import json
import pickle
import sys
from pathlib import Path

import numpy as np

from cards.deck import default_deck
from grader.base import PointVerdict
from grader.calibration.followups import FOLLOWUP_SET, FollowUpAnswer, load_followups
from grader.offline import OfflineJudge
from grader.offline.exemplars import NON_ANSWERS as EXEMPLAR_NON_ANSWERS
from grader.offline.followup import (
    FOLLOWUP_MODEL_PATH,
    FOLLOWUP_VECTORS_PATH,
    FollowUpModel,
    feature_names,
    followup_features,
    store_vectors,
)

C_GRID = (0.03, 0.1, 0.3, 1.0)
#: Answers that say nothing, added to every probed point as not reaching it: the written sets
#: hold only on-topic answers, and a reading fitted on them alone credited "I don't know".
NON_ANSWERS = EXEMPLAR_NON_ANSWERS[:8]  # the eight this reading was fitted with
CUT_GRID = tuple(round(x, 2) for x in np.arange(0.05, 0.81, 0.025))


def read(path: Path) -> tuple[np.ndarray, np.ndarray, list]:
    deck = default_deck()
    judge = OfflineJudge(model=None)
    answers = load_followups(path)
    answers += [
        FollowUpAnswer(f"non-answer/{card.id}/{point.id}/{i}", card.id, point.id, "non-answer", text,
                       PointVerdict.ABSENT, "non-answer")
        for card in deck
        for point in card.key_points
        if point.probe
        for i, text in enumerate(NON_ANSWERS)
    ]
    rows = []
    cards = sorted({a.card_id for a in answers})
    for number, card_id in enumerate(cards, 1):
        card = deck.get(card_id)
        for a in (a for a in answers if a.card_id == card_id):
            probed = card.model_copy(update={"question": card.key_point(a.point_id).probe})
            rows.append(followup_features(judge, probed, a.point_id, a.answer, leave_out=a.author)[0])
        print(f"  [{number}/{len(cards)}] features of {card_id}", file=sys.stderr, flush=True)
    ordered = [a for card_id in cards for a in answers if a.card_id == card_id]
    return np.vstack(rows), np.asarray([a.should_credit for a in ordered], dtype=int), ordered


def fit(x: np.ndarray, y: np.ndarray, c: float) -> dict:
    from sklearn.linear_model import LogisticRegression
    from sklearn.preprocessing import StandardScaler

    scaler = StandardScaler().fit(x)
    scale = np.where(scaler.scale_ > 0, scaler.scale_, 1.0)
    model = LogisticRegression(C=c, max_iter=4000, class_weight="balanced").fit((x - scaler.mean_) / scale, y)
    return {
        "mean": scaler.mean_.tolist(),
        "scale": scale.tolist(),
        "coef": model.coef_[0].tolist(),
        "intercept": float(model.intercept_[0]),
    }


def probabilities(weights: dict, x: np.ndarray) -> np.ndarray:
    """P(reached) of each row under ``weights``, as the judge computes it."""
    return FollowUpModel({**weights, "features": feature_names(), "cut": 0.5}).probability(x)


def score(p: np.ndarray, y: np.ndarray, answers: list, cut: float, deck) -> tuple[float, dict]:
    credited = p >= cut
    agreement = float((credited == y.astype(bool)).mean())
    plain = [i for i, a in enumerate(answers) if a.kind == "right-plain" and a.should_credit
             and deck.get(a.card_id).key_point(a.point_id).core]
    cards = {answers[i].card_id for i in plain}
    missed_cards = {answers[i].card_id for i in plain if not credited[i]}
    traps = [i for i, a in enumerate(answers) if a.kind == "wrong-trap"]
    trap_credit = float(credited[traps].mean()) if traps else 0.0
    figures = {
        "agreement": round(agreement, 3),
        "plain_core_cards": f"{len(cards) - len(missed_cards)}/{len(cards)}",
        "wrong_trap_credited": round(trap_credit, 3),
    }
    return agreement - 0.02 * len(missed_cards), figures


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--set", type=Path, default=FOLLOWUP_SET)
    parser.add_argument("--out", type=Path, default=FOLLOWUP_MODEL_PATH)
    parser.add_argument("--rows-cache", type=Path, help="keep the features here between runs")
    args = parser.parse_args(argv)
    deck = default_deck()
    if args.rows_cache and args.rows_cache.exists():
        x, y, answers = pickle.loads(args.rows_cache.read_bytes())
    else:
        x, y, answers = read(args.set)
        if args.rows_cache:
            args.rows_cache.write_bytes(pickle.dumps((x, y, answers)))
    cards = np.asarray([a.card_id for a in answers])
    best = None
    for c in C_GRID:
        p = np.zeros(len(y))
        for card_id in sorted(set(cards)):
            held = cards == card_id
            p[held] = probabilities(fit(x[~held], y[~held], c), x[held])
        for cut in CUT_GRID:
            value, figures = score(p, y, answers, cut, deck)
            if best is None or value > best[0]:
                best = (value, c, cut, figures)
    value, c, cut, figures = best
    print(f"leave-one-card-out: C={c}, cut={cut}: {figures}", file=sys.stderr)
    model = {"features": feature_names(), **fit(x, y, c), "cut": cut, "c": c, "cross_fitted": figures}
    args.out.write_text(json.dumps(model, indent=1) + "\n", encoding="utf-8")
    print(f"wrote {args.out}", file=sys.stderr)
    store_vectors(sorted(set(cards)))
    print(f"wrote {FOLLOWUP_VECTORS_PATH}", file=sys.stderr)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
