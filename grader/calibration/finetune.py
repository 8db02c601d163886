"""Teach the embedding model this deck's claims, on the tuning split only.

all-MiniLM-L6-v2 places sentences by topic: "the KL penalty is what keeps the model there" and
"the KL penalty is just a brake" sit close, though one is the mechanism and the other the trap.
This script fine-tunes its top two transformer layers (the rest stay frozen) with a contrastive
loss on pairs drawn from the tuning cards (even-numbered ``rl-``) only:

- positives: a key point (its text and accepted phrasings) with its other phrasings, with its
  expert answer's clauses, and with the unit of each tuning answer labelled present for it
  that is most like it;
- negatives: the point with the card's misconceptions and their phrasings, and with the unit
  most like it of each tuning answer labelled absent or contradicted for it; a misconception
  with the units of answers that do not assert it.

The held-out cards' content and answers are never read. The two layers are saved as a small
float16 delta (``grader/models/minilm-delta.safetensors``) that ``grader.offline.load_model``
lays over the packaged model.

    python -m grader.calibration.finetune [--epochs 3]
"""

from __future__ import annotations

import argparse
import json
import random
import sys
import time
from pathlib import Path

import numpy as np

from cards.deck import default_deck
from grader.calibration.eval import DEFAULT_SET, is_tuning_card
from grader.offline import DELTA_PATH, clauses, sentences, word_count

TRAINED_LAYERS = ("encoder.layer.4.", "encoder.layer.5.")
#: Claims are short; longer texts are cut here for training (inference reads up to 256).
MAX_TOKENS = 64


def units_of(text: str) -> list[str]:
    found = []
    for sentence in sentences(text):
        found.append(sentence.text)
        found.extend(c.text for c in clauses(text, sentence))
    return [u for u in dict.fromkeys(found) if word_count(u) >= 2]


def build_pairs(model, seed: int = 0) -> list[tuple[str, str, float]]:
    deck = default_deck()
    rows = [json.loads(line) for line in DEFAULT_SET.read_text(encoding="utf-8").splitlines() if line.strip()]
    rows = [r for r in rows if is_tuning_card(r["card_id"])]
    pairs: list[tuple[str, str, float]] = []

    def encode(texts: list[str]) -> np.ndarray:
        return model.encode(texts, normalize_embeddings=True, convert_to_numpy=True, show_progress_bar=False)

    for card in deck:
        if not is_tuning_card(card.id):
            continue
        anchors = {p.id: [" ".join(p.text.split()), *[a for a in p.accepts if word_count(a) >= 2]] for p in card.key_points}
        wrong = [" ".join(m.text.split()) for m in card.misconceptions] + [
            a for m in card.misconceptions for a in m.phrasings
        ]
        expert = [a.text for a in card.reference_answers if a.kind == "expert"]
        expert_units = [u for text in expert for u in units_of(text)]
        unit_vectors = encode(expert_units) if expert_units else np.zeros((0, 384))
        for point in card.key_points:
            texts = anchors[point.id]
            main = texts[0]
            for other in texts[1:]:
                pairs.append((main, other, 1.0))
            for w in wrong:
                pairs.append((main, w, 0.0))
            for other in card.key_points:
                if other.id != point.id:
                    pairs.append((main, " ".join(other.text.split()), 0.0))
            if len(expert_units):
                sims = unit_vectors @ encode([main])[0]
                pairs.append((main, expert_units[int(sims.argmax())], 1.0))
        for m in card.misconceptions:
            for phrase in m.phrasings:
                pairs.append((" ".join(m.text.split()), phrase, 1.0))
        for row in (r for r in rows if r["card_id"] == card.id and not r.get("injection")):
            units = units_of(row["answer"])
            if not units:
                continue
            vectors = encode(units)
            for point in card.key_points:
                main = anchors[point.id][0]
                best = units[int((vectors @ encode([main])[0]).argmax())]
                verdict = row["points"][point.id]
                if verdict == "present":
                    pairs.append((main, best, 1.0))
                elif verdict in ("absent", "contradicted"):
                    pairs.append((main, best, 0.0))
            asserted = set(row.get("misconceptions", ()))
            for m in card.misconceptions:
                main = " ".join(m.text.split())
                best = units[int((vectors @ encode([main])[0]).argmax())]
                pairs.append((main, best, 1.0 if m.id in asserted else 0.0))
        print(f"  pairs: {card.id} ({len(pairs)} so far)", file=sys.stderr, flush=True)
    random.Random(seed).shuffle(pairs)
    return pairs


def train(epochs: int, batch: int, margin: float, lr: float, seed: int) -> Path:
    import torch

    from grader.offline import load_base_model

    torch.manual_seed(seed)
    model = load_base_model()
    model.max_seq_length = MAX_TOKENS
    pairs = build_pairs(model, seed)
    torch.set_num_threads(2)
    positives = sum(y for *_, y in pairs)
    print(f"{len(pairs)} pairs ({positives:.0f} positive) from the tuning cards", file=sys.stderr)
    transformer = model[0].auto_model
    trained = [(n, p) for n, p in transformer.named_parameters() if n.startswith(TRAINED_LAYERS)]
    for name, parameter in transformer.named_parameters():
        parameter.requires_grad = name.startswith(TRAINED_LAYERS)
    optimiser = torch.optim.AdamW([p for _, p in trained], lr=lr, weight_decay=0.01)
    model.train()

    def embed(texts: list[str]) -> torch.Tensor:
        features = model.preprocess(texts)
        return model(features)["sentence_embedding"]

    steps = (len(pairs) + batch - 1) // batch
    for epoch in range(epochs):
        started, total = time.perf_counter(), 0.0
        for step in range(steps):
            chunk = pairs[step * batch : (step + 1) * batch]
            a = embed([c[0] for c in chunk])
            b = embed([c[1] for c in chunk])
            y = torch.tensor([c[2] for c in chunk])
            cosine = (a * b).sum(dim=1)
            # Contrastive: pull paraphrases together, push claims apart below the margin.
            loss = (y * (1 - cosine) ** 2 + (1 - y) * torch.clamp(cosine - margin, min=0) ** 2).mean()
            optimiser.zero_grad()
            loss.backward()
            optimiser.step()
            total += float(loss.detach())
            if step % 20 == 0:
                print(f"  epoch {epoch + 1}/{epochs} step {step}/{steps} loss {total / (step + 1):.4f}", file=sys.stderr, flush=True)
        print(f"epoch {epoch + 1}: loss {total / steps:.4f} in {time.perf_counter() - started:.0f} s", file=sys.stderr)
    from safetensors.torch import save_file

    DELTA_PATH.parent.mkdir(parents=True, exist_ok=True)
    save_file({n: p.detach().to(torch.float16).contiguous() for n, p in trained}, str(DELTA_PATH))
    return DELTA_PATH


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--epochs", type=int, default=3)
    parser.add_argument("--batch", type=int, default=32)
    parser.add_argument("--margin", type=float, default=0.3)
    parser.add_argument("--lr", type=float, default=3e-5)
    parser.add_argument("--seed", type=int, default=0)
    args = parser.parse_args(argv)
    path = train(args.epochs, args.batch, args.margin, args.lr, args.seed)
    print(f"wrote {path} ({path.stat().st_size / 1e6:.1f} MB)")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
