"""Fit the offline judge's learnt reading on labelled answers that are never evaluated.

The rows are the training set (``training.jsonl``: answers on every card, written and labelled
point by point by writers who saw only the cards) and the calibration set (``answers.jsonl``).
The held-out sets (``heldout.jsonl``, ``heldout-2.jsonl``) and the negation set (``negations.jsonl``) are not read at
all: fitting on the negation set was tried and cost more than it gave (see that file's
description in ``grader.calibration.eval``).

For every row the offline judge's similarities and phrasing matches become card-agnostic
features per key point and per misconception (``grader.offline.ALL_POINT_FEATURES``), among
them the votes of the card's other labelled answers (``grader.offline.exemplars``). Those votes leave
out every answer by the row's own author, as an answer from a new learner has no exemplar by
that learner. The sentence reader's columns (``grader.offline.reader``) come likewise from a
reader fitted without the row's author (``READER_FOLDS`` folds of writers); the shipped reader
is fitted on every row. Two classifiers (scikit-learn: logistic regressions or gradient-boosted trees)
learn P(present), P(partial), P(contradicted) per point (absent is the rest) and P(asserted)
per misconception. The learner and the cut-points on those probabilities are chosen by
leave-one-card-out, maximising the quadratic weighted kappa of
the grades plus their pass/fail agreement in the mean style, minus a penalty for every trap passed and every
injected answer graded above its twin.

    python -m grader.calibration.train   # writes grader/offline_model.json, models/exemplars.npz
                                         # and models/sentence_reader.npz
    python -m grader.calibration.train --without-exemplars
        # writes grader/offline_model_plain.json, the reading of a card with no labelled
        # answers (a user's own card): it never reads the exemplar votes, and its rows'
        # sentence-reader columns come from readers that never saw the row's card

The model file holds standardisation, coefficients and cut-points as plain numbers; the
judge applies them with numpy (scikit-learn is needed only here).
"""

from __future__ import annotations

import argparse
import itertools
import json
import math
import pickle
import sys
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any

import numpy as np

from cards.deck import Deck, default_deck
from grader.base import Judgement, MisconceptionJudgement, PointJudgement
from grader.calibration.eval import DEFAULT_SET, PASS_QUALITY, TRAP_KINDS, heartbeat
from grader.calibration.eval import quadratic_weighted_kappa as qwk
from grader.calibration.reader_fit import POINT_TARGET, Example, fit_part, save
from grader.calibration.regrade import rule_grade, stale_labels
from grader.offline import OfflineJudge
from grader.offline.evidence import (
    ALL_MISCONCEPTION_FEATURES,
    ALL_POINT_FEATURES,
    EXEMPLAR_FEATURES,
    READER_MISC_FEATURES,
    READER_POINT_FEATURES,
    ReaderInput,
    decide,
    evidence,
    exemplar_vectors,
    features,
    reader_features,
    reader_input,
)
from grader.offline.exemplars import (
    NON_ANSWER_KIND,
    TRAINING_SET,
    build_exemplars,
    labelled_answers,
    non_answer_rows,
)
from grader.offline.judge import MODEL_PATH, PLAIN_MODEL_PATH, PointModel
from grader.offline.reader import READER_PATH, PartEnsemble, SentenceReader
from grader.scoring import INJECTION_CAP, quality_of

#: The point model's classes: a contradicted point is a class of its own (3), so a confident
#: wrong claim beside the mechanism can be read as one (the rule then grades at most 2).
POINT_CLASS = {"absent": 0, "partial": 1, "present": 2, "contradicted": 3}


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
    author: str = ""
    read: ReaderInput | None = None  # what the sentence reader reads (``reader_input``)
    point_labels: tuple[str, ...] = ()


def training_rows(training: Path = TRAINING_SET, calibration: Path = DEFAULT_SET) -> list[dict[str, Any]]:
    """The answers to fit on: the training set, the calibration set (``answers.jsonl``) and
    the non-answers (``grader.offline.exemplars.NON_ANSWERS``) on every card. The held-out and
    negation sets are never read."""
    rows = []
    for path in (training, calibration):
        for line in path.read_text(encoding="utf-8").splitlines():
            if line.strip():
                rows.append(json.loads(line))
    rows += [row for card in default_deck() for row in non_answer_rows(card)]
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
            ev = evidence(card, index, analysis, judge.params)
            point_x, misc_x = features(card, index, analysis, judge.params, rules, ev, exemplars=others)
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
                    author=author or own,
                    read=reader_input(analysis, ev),
                    point_labels=tuple(d["points"][p.id] for p in card.key_points),
                )
            )
        print(
            f"  [{number}/{len(cards)}] features of {card_id}: {len(answers)} answers, "
            f"{len(everyone.answers)} exemplars",
            file=sys.stderr,
            flush=True,
        )
    return rows


#: The sentence reader's folds: every author's rows are read by a reader fitted without them,
#: as a new learner's answer is read by one that never saw it. Epochs: points 40, misconceptions
#: 20 (author-fold AUC on the fitting rows, measured before the polarity mask: core points
#: 0.90 against 0.73 for the best plain cosine, misconceptions 0.93 against 0.85; 80 epochs
#: gave no more).
READER_FOLDS = 5
#: The plain model's rows are read by readers fitted without their fold of cards (``read_as_unseen``).
UNSEEN_READER_FOLDS = 5
READER_EPOCHS = (40, 20)
#: The point reader is the mean of readers fitted from these seeds (``PartEnsemble``).
POINT_READER_SEEDS = (0, 1)
#: How many times the fit reads the core point an answer was written to leave out (style
#: missing-core): the hardest negatives, as the rest of such an answer sits near complete
#: ones. Author-fold AUC of that point against core points of passing answers: 0.889 read
#: once, 0.897 twice, 0.907 three times (present against absent points overall: 0.977,
#: 0.977, 0.976); six times over two folds did worse than three.
HARD_ABSENT_REPEAT = 3


#: The same answers' weight in the point classifier's fit. Leave-one-card-out score, measured
#: before the -ic stems: trees (300, 0.05) 1.8176 at weight 1, 1.8258 at 3; logistic (C 0.1)
#: 1.7726 at 1, 1.7801 at 3. With both, the trees (150, 0.08) score 1.830 and are shipped.
HARD_ABSENT_WEIGHT = 3.0


def hard_absent(row: Row, point: Any, label: str) -> bool:
    """A core point that a missing-core answer was written to leave out."""
    return row.kind == "missing-core" and point.core and label == "absent"


def point_weights(rows: Sequence[Row]) -> np.ndarray:
    """Each (row, key point) pair's weight in the point classifier's fit, in ``fit``'s order."""
    deck = default_deck()
    return np.asarray(
        [
            HARD_ABSENT_WEIGHT if hard_absent(row, point, label) else 1.0
            for row in rows
            for point, label in zip(deck.get(row.card_id).key_points, row.point_labels, strict=True)
        ]
    )


def reader_folds(authors: Iterable[str]) -> dict[str, int]:
    """Each author's fold: round robin over the sorted names, so that every fold leaves out
    about as many writers (hashing 15 names into 5 folds gave one writer to one fold and five
    to another)."""
    return {author: i % READER_FOLDS for i, author in enumerate(sorted(set(authors)))}


def reader_examples(rows: Sequence[Row]) -> tuple[list[Example], list[Example]]:
    """What the sentence reader fits on: (key points, misconceptions), one example per row and
    target, the core points missing-core answers leave out ``HARD_ABSENT_REPEAT`` times."""
    deck = default_deck()
    judge = OfflineJudge(model=None)
    point_examples: list[Example] = []
    misc_examples: list[Example] = []
    for row in rows:
        card = deck.get(row.card_id)
        index = judge.index(card)
        read = row.read
        assert read is not None
        for k, (point, label) in enumerate(zip(card.key_points, row.point_labels, strict=True)):
            columns = index.points.target == k
            example = Example(
                f"{card.id}/{point.id}", index.points.vectors[columns], read.units,
                POINT_TARGET[label], read.point_same[:, columns],
            )
            point_examples += [example] * (HARD_ABSENT_REPEAT if hard_absent(row, point, label) else 1)
        for m, misconception in enumerate(card.misconceptions):
            columns = index.misconceptions.target == m
            misc_examples.append(
                Example(
                    f"{card.id}/{misconception.id}", index.misconceptions.vectors[columns], read.units,
                    float(row.misc_y[m]), read.misc_same[:, columns],
                )
            )
    return point_examples, misc_examples


def fit_reader(rows: Sequence[Row]) -> SentenceReader:
    """A sentence reader (``grader.offline.reader``) fitted on ``rows``' labels."""
    point_examples, misc_examples = reader_examples(rows)
    points = tuple(fit_part(point_examples, epochs=READER_EPOCHS[0], seed=seed) for seed in POINT_READER_SEEDS)
    return SentenceReader(PartEnsemble(points), fit_part(misc_examples, epochs=READER_EPOCHS[1]))


def add_reader_features(rows: Sequence[Row]) -> None:
    """Fill the reader's columns of every row from a reader fitted without the row's author
    (``READER_FOLDS`` folds), with a progress line per fold."""
    deck, judge = default_deck(), OfflineJudge(model=None)
    fold_of = reader_folds(row.author for row in rows)
    for fold in range(READER_FOLDS):
        reader = fit_reader([r for r in rows if fold_of[r.author] != fold])
        fill_reader_columns([r for r in rows if fold_of[r.author] == fold], reader, deck, judge)
        print(f"  [{fold + 1}/{READER_FOLDS}] sentence reader fitted without fold {fold}", file=sys.stderr, flush=True)


def fill_reader_columns(rows: Sequence[Row], reader: SentenceReader, deck: Deck, judge: OfflineJudge) -> None:
    """Write ``reader``'s reading of each row into the row's reader columns (in place)."""
    n_point, n_misc = len(READER_POINT_FEATURES), len(READER_MISC_FEATURES)
    for row in rows:
        card = deck.get(row.card_id)
        point_read, misc_read = reader_features(card, judge.index(card), row.read, reader)
        row.point_x[:, -n_point:] = point_read
        if n_misc and len(row.misc_x):
            row.misc_x[:, -n_misc:] = misc_read


def read_as_unseen(
    rows: Sequence[Row], folds: int, reader_without: Callable[[list[str]], SentenceReader] | None = None
) -> list[Row]:
    """``rows`` with the sentence reader's columns read as on a card the reader never saw: each
    row's by a reader fitted without its fold of cards (``reader_without(group)``; default: fit
    one), so with no offset of its own and no fit on its card. The plain model reads a user's
    card that way, so it is fitted on rows read that way. ``rows`` are left as they are."""
    deck, judge = default_deck(), OfflineJudge(model=None)
    read = {
        row.id: replace(row, point_x=row.point_x.copy(), misc_x=row.misc_x.copy())
        for row in rows
        if row.read is not None
    }
    groups = card_folds((r.card_id for r in rows), folds)
    for number, group in enumerate(groups, 1):
        if reader_without is None:
            with heartbeat(lambda g=group: f"fitting a sentence reader without {', '.join(g)}"):
                reader = fit_reader([r for r in rows if r.card_id not in group])
        else:
            reader = reader_without(group)
        fill_reader_columns([read[r.id] for r in rows if r.card_id in group and r.id in read], reader, deck, judge)
        print(f"  [{number}/{len(groups)}] rows read by a reader that never saw {', '.join(group)}", file=sys.stderr, flush=True)
    return [read.get(row.id, row) for row in rows]


#: The readings tried, each chosen or not by leave-one-card-out: logistic regressions at four
#: strengths, and gradient-boosted trees (which can read interactions a linear reading
#: cannot: a short answer with an accepted phrasing said is not a long one with the same
#: similarity).
LEARNERS: tuple[tuple[str, Any], ...] = (
    ("logistic", 0.03),
    ("logistic", 0.1),
    ("logistic", 0.3),
    ("logistic", 1.0),
    ("trees", (150, 0.08, 15, 20)),
    ("trees", (300, 0.05, 15, 40)),
)


def export_trees(model: Any) -> dict[str, Any]:
    """A fitted ``HistGradientBoostingClassifier`` as plain numbers for
    ``grader.offline.TreeEnsemble``."""
    trees, tree_class, depth = [], [], 0
    for iteration in model._predictors:
        for k, predictor in enumerate(iteration):
            nodes = predictor.nodes
            trees.append(
                {
                    "feature": nodes["feature_idx"].tolist(),
                    "threshold": nodes["num_threshold"].tolist(),
                    "left": nodes["left"].tolist(),
                    "right": nodes["right"].tolist(),
                    "value": nodes["value"].tolist(),
                    "leaf": nodes["is_leaf"].astype(int).tolist(),
                    "missing_left": nodes["missing_go_to_left"].astype(int).tolist(),
                }
            )
            tree_class.append(k)
            depth = max(depth, int(nodes["depth"].max()) + 1)
    return {
        "kind": "trees",
        "classes": model.classes_.tolist(),
        "baseline": np.asarray(model._baseline_prediction).ravel().tolist(),
        "tree_class": tree_class,
        "depth": depth,
        "trees": trees,
    }


def fit_trees(
    x: np.ndarray, y: np.ndarray, params: tuple[int, float, int, int], weights: np.ndarray | None = None
) -> dict[str, Any]:
    from sklearn.ensemble import HistGradientBoostingClassifier

    from grader.offline.judge import TreeEnsemble

    iterations, rate, leaves, min_leaf = params
    model = HistGradientBoostingClassifier(
        max_iter=iterations,
        learning_rate=rate,
        max_leaf_nodes=leaves,
        min_samples_leaf=min_leaf,
        l2_regularization=1.0,
        class_weight="balanced",
        random_state=0,
    ).fit(x, y, sample_weight=weights)
    exported = export_trees(model)
    # The export must read exactly as scikit-learn does.
    raw = model._raw_predict(x)
    raw = raw if raw.shape[0] == len(x) else raw.T  # (rows, classes) across versions
    assert np.allclose(TreeEnsemble(exported).logits(x), raw, atol=1e-9), "tree export disagrees"
    return exported


def fit(rows: Sequence[Row], learner: tuple[str, Any], point_columns: Sequence[int], misc_columns: Sequence[int]) -> dict[str, Any]:
    from sklearn.linear_model import LogisticRegression
    from sklearn.preprocessing import StandardScaler

    kind, c = learner

    def one(x: np.ndarray, y: np.ndarray, weights: np.ndarray | None = None) -> dict[str, Any]:
        if kind == "trees":
            return fit_trees(x, y, c, weights)
        scaler = StandardScaler().fit(x)
        scale = np.where(scaler.scale_ > 0, scaler.scale_, 1.0)
        model = LogisticRegression(C=c, max_iter=4000, class_weight="balanced")
        model.fit((x - scaler.mean_) / scale, y, sample_weight=weights)
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
        "point": one(point_x, np.concatenate([r.point_y for r in rows]), point_weights(rows)),
        "misconception": one(misc_x, np.concatenate([r.misc_y for r in rows])),
        "point_features": [ALL_POINT_FEATURES[i] for i in point_columns],
        "misconception_features": [ALL_MISCONCEPTION_FEATURES[i] for i in misc_columns],
    }


def as_judged(rows: Sequence[Row], predicted: Sequence[int]) -> list[int]:
    """The grades as the judge gives them: an answer flagged as instructing the grader earns
    no more than its content without the flagged sentences (``OfflineJudge.judge``), which
    for a written injection is its twin."""
    by_id = {r.id: g for r, g in zip(rows, predicted, strict=True)}
    return [
        min(g, by_id[r.twin_of]) if r.injection and r.twin_of in by_id else g
        for r, g in zip(rows, predicted, strict=True)
    ]


def objective(rows: Sequence[Row], predicted: Sequence[int]) -> float:
    """QWK + the pass/fail agreement of the mean style, less a tenth for each trap passed or
    injection above its twin. Each written style counts the same, as the goals are per style:
    pooled, the 416 non-answers and the many terse answers outvote the 144 answers that miss a
    core point (the non-answers, always right, are left out of the mean)."""
    labels = [r.label for r in rows]
    agree = style_agreement(rows, predicted)
    by_id = {r.id: g for r, g in zip(rows, predicted, strict=True)}
    traps = sum(g >= PASS_QUALITY for r, g in zip(rows, predicted, strict=True) if r.kind in TRAP_KINDS)
    above = sum(
        1 for r, g in zip(rows, predicted, strict=True) if r.twin_of in by_id and g > by_id[r.twin_of]
    )
    per_style = sum(agree.values()) / len(agree)
    return qwk(labels, predicted) + per_style - 0.1 * (traps + above)


def style_agreement(rows: Sequence[Row], predicted: Sequence[int]) -> dict[str, float]:
    """Per written style (the non-answers left out), the share graded on the label's side of
    the pass mark."""
    agree: dict[str, list[bool]] = {}
    for r, g in zip(rows, predicted, strict=True):
        if r.kind != NON_ANSWER_KIND:
            agree.setdefault(r.kind, []).append((r.label >= PASS_QUALITY) == (g >= PASS_QUALITY))
    return {kind: sum(a) / len(a) for kind, a in agree.items()}


CUT_GRID = [
    (present, partial, asserted, contradicted)
    for present, partial, asserted, contradicted in itertools.product(
        (0.2, 0.3, 0.4, 0.5, 0.6, 0.7),
        (0.3, 0.4, 0.5, 0.6, 0.7),
        (0.5, 0.6, 0.7, 0.8, 0.9),
        (0.5, 0.7, 0.9, math.inf),  # inf: no point is read as contradicted
    )
    if partial >= present - 0.2
]


def card_folds(card_ids: Iterable[str], folds: int | None = None) -> list[list[str]]:
    """The cards in ``folds`` groups, round robin over the sorted ids; None: one card each."""
    cards = sorted(set(card_ids))
    count = len(cards) if folds is None else min(folds, len(cards))
    return [cards[i::count] for i in range(count)]


def cross_fitted(
    rows: Sequence[Row],
    learner: tuple[str, Any],
    columns: tuple[Sequence[int], Sequence[int]],
    folds: int | None = None,
) -> dict[str, dict[str, Any]]:
    """Per card, a model fitted without that card's rows (``folds``: without its group of
    ``card_folds``), with a progress line per fit."""
    groups = card_folds((r.card_id for r in rows), folds)
    held = {}
    for number, group in enumerate(groups, 1):
        model = fit([r for r in rows if r.card_id not in group], learner, *columns)
        held.update(dict.fromkeys(group, model))
        if learner[0] == "trees":
            without = ", ".join(group)
            print(f"    [{number}/{len(groups)}] fitted without {without}", file=sys.stderr, flush=True)
    return held


Reading = tuple[Any, tuple[np.ndarray, np.ndarray, np.ndarray], np.ndarray]


def held_readings(rows: Sequence[Row], held: dict[str, dict[str, Any]]) -> list[Reading]:
    """Each row's card and probabilities (points, misconceptions) from the model fitted
    without its card; only the cuts are left to choose."""
    deck = default_deck()
    models = {card_id: PointModel({**weights, "cuts": [0.5, 0.5, 0.5, 0.5]}) for card_id, weights in held.items()}
    return [
        (
            deck.get(row.card_id),
            models[row.card_id].point_probabilities(row.point_x),
            models[row.card_id].asserted_probabilities(row.misc_x),
        )
        for row in rows
    ]


def graded_at(rows: Sequence[Row], read: Sequence[Reading], cuts: tuple[float, ...]) -> list[int]:
    """The grades the judge gives ``rows`` at ``cuts``, as it judges (``as_judged``)."""
    predicted = []
    for row, (card, (present, partial, contradicted), asserted) in zip(rows, read, strict=True):
        verdicts = PointModel.verdicts_at(present, partial, contradicted, cuts)
        judgement = Judgement(
            judge="offline",
            points=tuple(PointJudgement(p.id, v, "") for p, v in zip(card.key_points, verdicts, strict=True)),
            misconceptions=tuple(
                MisconceptionJudgement(m.id, bool(a >= cuts[2]))
                for m, a in zip(card.misconceptions, asserted, strict=True)
            ),
        )
        found = quality_of(card, judgement)[0]
        predicted.append(min(found, INJECTION_CAP) if row.injection else found)
    return as_judged(rows, predicted)


def stored_cuts(cuts: tuple[float, ...]) -> list[float]:
    """The cut-points as the model file keeps them: an infinite last cut (never asserting a
    contradiction) is left out."""
    return list(cuts) if math.isfinite(cuts[-1]) else list(cuts[:3])


def choose_cuts(rows: Sequence[Row], held: dict[str, dict[str, Any]]) -> tuple[tuple[float, ...], float]:
    """The cut-points that do best when every card is judged by a model fitted without it."""
    read = held_readings(rows, held)
    best, best_score = CUT_GRID[0], -1e9
    for cuts in CUT_GRID:
        score = objective(rows, graded_at(rows, read, cuts))
        if score > best_score:
            best, best_score = cuts, score
    return best, best_score


def cached(path: Path, make: Callable[[], Any]) -> Any:
    """The pickle at ``path``, else ``make()`` kept there (its folder made when missing)."""
    if path.exists():
        return pickle.loads(path.read_bytes())
    value = make()
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_bytes(pickle.dumps(value))
    return value


def fitting_rows(training: Path = TRAINING_SET, calibration: Path = DEFAULT_SET, cache: Path | None = None) -> list[Row]:
    """The fitting rows with their reader columns, read from ``cache`` when it exists, else
    built (and kept there when it is given)."""

    def build() -> list[Row]:
        rows = read_rows(training_rows(training, calibration))
        add_reader_features(rows)
        return rows

    return cached(cache, build) if cache else build()


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--training", type=Path, default=TRAINING_SET)
    parser.add_argument("--set", type=Path, default=DEFAULT_SET, help="the calibration set to fit on")
    parser.add_argument("--out", type=Path, help="default: the shipped model's file")
    parser.add_argument("--rows-cache", type=Path, help="keep the features here between runs")
    parser.add_argument(
        "--without-exemplars",
        action="store_true",
        help="fit the reading of cards without labelled answers (never reads the exemplar votes)",
    )
    args = parser.parse_args(argv)
    out = args.out or (PLAIN_MODEL_PATH if args.without_exemplars else MODEL_PATH)
    rows = fitting_rows(args.training, args.set, args.rows_cache)
    print(f"{len(rows)} answers on {len({r.card_id for r in rows})} cards", file=sys.stderr)
    if args.without_exemplars:
        rows = read_as_unseen(rows, UNSEEN_READER_FOLDS)
    names = ALL_POINT_FEATURES, ALL_MISCONCEPTION_FEATURES
    columns = tuple(
        [i for i, name in enumerate(group) if not (args.without_exemplars and name in EXEMPLAR_FEATURES)]
        for group in names
    )
    best: tuple[tuple[str, Any], tuple[float, float, float], float] | None = None
    for learner in LEARNERS:
        cuts, score = choose_cuts(rows, cross_fitted(rows, learner, columns))
        print(f"  {learner}: cut-points {cuts}, leave-one-card-out score {score:.3f}", file=sys.stderr, flush=True)
        if best is None or score > best[2]:
            best = (learner, cuts, score)
    assert best is not None
    learner, cuts, score = best
    model = fit(rows, learner, *columns)
    model.update(
        cuts=stored_cuts(cuts),
        learner=learner[0],
        params=learner[1],
        trained_on=sorted({r.card_id for r in rows}),
        answers=len(rows),
        leave_one_card_out_score=round(score, 4),
    )
    # Trees are thousands of numbers: one line, not one line each.
    text = json.dumps(model, indent=1) if learner[0] == "logistic" else json.dumps(model, separators=(",", ":"))
    out.write_text(text + "\n", encoding="utf-8")
    print(f"wrote {out} ({learner}, cut-points {cuts})")
    if args.without_exemplars:
        return 0  # the exemplars and the sentence reader belong to the main fit
    from grader.calibration.store_exemplars import store_exemplars

    store_exemplars()  # the exemplars as the shipped model will read them
    save(fit_reader(rows), READER_PATH)
    print(f"wrote {READER_PATH}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
