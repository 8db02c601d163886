"""How well the pair reader (``grader.pair_reader``) tells a contradicted key point from a
present one, cross-fitted on the fitting answers (the held-out sets are not read).

Every fitting answer (``grader.calibration.train.training_rows``) is read as the judge reads
it; each key point gets the sentences the pair reader would read. A reader fitted without
one fold of writers (the sentence reader's folds) reads that fold's answers, and the probe
prints, per fold and pooled, the AUC of P(contradicts) for contradicted against present
points and of P(entails) for present against absent points; then, per answer, how often
some point reads P(contradicts) >= t in the partly wrong answers and in the passing ones.

    python -m grader.calibration.pair_probe            # about 45 minutes on two cores
    python -m grader.calibration.pair_probe --cards rl-01,rl-08 --folds 2   # a quick look
    python -m grader.calibration.pair_probe --frozen-layers 5   # one trainable layer on top
"""

from __future__ import annotations

import argparse
import sys
from collections import defaultdict

import numpy as np

from cards.deck import default_deck
from grader import pair_reader
from grader.calibration.regrade import rule_grade, stale_labels
from grader.calibration.train import reader_folds, training_rows
from grader.offline import OfflineJudge, load_base_model
from grader.scoring import PASS_QUALITY


def examples(cards: set[str] | None) -> list[dict]:
    """Per (answer, key point): the pair example, the writer, the answer's kind and grade."""
    deck = default_deck()
    judge = OfflineJudge(model=None)
    data = [d for d in training_rows() if cards is None or d["card_id"] in cards]
    out = []
    for n, d in enumerate(data, 1):
        card = deck.get(d["card_id"])
        if stale_labels(card, d):
            continue
        analysis = judge.analyse(card, d["answer"])
        chosen = pair_reader.chosen_sentences(analysis, judge.index(card), len(card.key_points))
        grade = rule_grade(card, d)
        for point, sentences in zip(card.key_points, chosen, strict=True):
            out.append(
                {
                    "answer": d["id"],
                    "author": d.get("author") or d["id"],
                    "kind": d["kind"],
                    "grade": grade,
                    "example": pair_reader.PairExample(
                        point.label or point.text, tuple(sentences), d["points"][point.id]
                    ),
                }
            )
        if n % 100 == 0 or n == len(data):
            print(f"  [{n}/{len(data)}] answers read", file=sys.stderr, flush=True)
    return out


def auc(read: np.ndarray, verdicts: np.ndarray, positive: list[str], negative: list[str]) -> float:
    from sklearn.metrics import roc_auc_score

    kept = np.isin(verdicts, positive + negative)
    labels = np.isin(verdicts[kept], positive)
    return (
        float(roc_auc_score(labels, read[kept])) if 0 < labels.sum() < len(labels) else float("nan")
    )


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--cards", help="comma-separated card ids (default: every card)")
    parser.add_argument("--folds", type=int, default=5, help="how many of the five folds to read")
    parser.add_argument(
        "--frozen-layers",
        type=int,
        default=pair_reader.FROZEN_LAYERS,
        help="the layers each text goes through alone (of six)",
    )
    args = parser.parse_args(argv)
    import torch

    pair_reader.FROZEN_LAYERS = args.frozen_layers

    rows = examples(set(args.cards.split(",")) if args.cards else None)
    model = load_base_model()
    torch.set_num_threads(2)
    fold_of = reader_folds(r["author"] for r in rows)
    verdicts = np.asarray([r["example"].verdict for r in rows])
    read = np.full((len(rows), 2), np.nan)
    for fold in range(min(args.folds, 5)):
        held = [i for i, r in enumerate(rows) if fold_of[r["author"]] == fold]
        if not held:
            continue
        reader = pair_reader.fit(
            model,
            [r["example"] for r in rows if fold_of[r["author"]] != fold],
            progress=lambda m, fold=fold: print(
                f"  fold {fold + 1}: {m}", file=sys.stderr, flush=True
            ),
        )
        read[held] = reader.read(
            [rows[i]["example"].label for i in held], [rows[i]["example"].sentences for i in held]
        )
        print(
            f"fold {fold + 1}: contradicted vs present {auc(read[held, 1], verdicts[held], ['contradicted'], ['present']):.3f}, "
            f"present vs absent {auc(read[held, 0], verdicts[held], ['present'], ['absent']):.3f}",
            flush=True,
        )
    done = ~np.isnan(read[:, 0])
    print(
        f"pooled ({int(done.sum())} points): contradicted vs present "
        f"{auc(read[done, 1], verdicts[done], ['contradicted'], ['present']):.3f}, "
        f"present vs absent {auc(read[done, 0], verdicts[done], ['present'], ['absent']):.3f}"
    )
    worst: dict[str, float] = defaultdict(float)
    group: dict[str, str] = {}
    for r, (_, contradicts), ok in zip(rows, read, done, strict=True):
        if ok:
            worst[r["answer"]] = max(worst[r["answer"]], float(contradicts))
            group[r["answer"]] = (
                "partly-wrong"
                if r["kind"] == "partly-wrong"
                else "pass"
                if r["grade"] >= PASS_QUALITY
                else "fail"
            )
    for cut in (0.5, 0.7, 0.9):
        shares = {
            name: np.mean([worst[a] >= cut for a in group if group[a] == name])
            for name in sorted(set(group.values()))
        }
        print(
            f"some point P(contradicts) >= {cut}: "
            + ", ".join(f"{k} {100 * v:.0f}%" for k, v in shares.items())
        )
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
