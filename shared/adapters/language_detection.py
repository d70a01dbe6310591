"""Language identification with langid.py's model (Marco Lui and Timothy Baldwin; as packaged by py3langid 0.4.0,
BSD-3-Clause): a naive Bayes model over byte n-grams, 142 labels, run here in pure Python from the repository's
quire_langid package (4.6 MB; quire_langid/SOURCE.md), so no text leaves the process and numpy stays out of the
Lambda layer. It gives py3langid's answers (`rank` with norm_probs=True; tests/unit/test_language_model.py).

Its labels are ISO 639-1 codes where one exists and ISO 639-3 codes for varieties (yue, wuu, ary, arz). A variety
counts for its standard language, so Cantonese and Wu add to Chinese, and Moroccan and Egyptian to Arabic; labels
with no language Quire stores (zxx, "no linguistic content", and a few without an ISO 639-1 code) count for none.
"""

from __future__ import annotations

import hashlib
import io
import json
import lzma
import math
import struct
import sys
import threading
import unicodedata
from array import array
from collections import Counter
from pathlib import Path
from typing import Any

from shared.domain.languages import LANGUAGE_NAMES, LanguageGuess

# quire_langid/model.xz as converted by bench/convert_langid_model.py: another file is another model.
MODEL_SHA256 = "9302ba9e79e6e9288c78831a10bd0035627373abe7a6c6a9006453982d4aa81b"
_FORMAT = "quire-langid-1"
_TYPECODES = {"<f4": "f", "<u4": "I", "<u2": "H", "<i4": "i"}

# ISO 639-3 labels of the model → the ISO 639-1 language they are a variety of (or written like, for the
# English-, Spanish-, Italian- and French-based ones).
_VARIETIES = {
    "ary": "ar",
    "arz": "ar",
    "wuu": "zh",
    "yue": "zh",
    "fuv": "ff",
    "gug": "gn",
    "uzs": "uz",
    "sdh": "ku",
    "grc": "el",
    "hbo": "he",
    "ltg": "lv",
    "pcm": "en",
    "ext": "es",
    "vec": "it",
    "lij": "it",
    "gcf": "fr",
    "gcr": "fr",
}
# Past this many characters a text says nothing more about its language, and the model's time grows with it.
_SAMPLE_CHARACTERS = 4000


class LanguageModelInvalid(Exception):
    """The language model file is missing, altered or unreadable; the message names the file and the fix."""


class LangidModel:
    """langid.py's model: a byte DFA whose states emit feature ids, and per feature one log-probability per label.

    The weights stay float16 bytes as shipped (28 MB) and a visited feature's row is decoded when scored: as
    Python floats the table would take 400 MB."""

    def __init__(
        self,
        *,
        classes: list[str],
        nb_ptc: bytes,
        nb_pc: list[float],
        tk_nextmove: array[int],
        tk_row: array[int],
        tk_output: list[int],
    ) -> None:
        self.classes = classes
        self._weights = nb_ptc
        self._row = struct.Struct(f"<{len(classes)}e")
        self._priors = nb_pc
        self._nextmove = tk_nextmove
        self._rowbase = [row << 8 for row in tk_row]
        self._output = tk_output

    def rank(self, text: str) -> list[tuple[str, float]]:
        """Each label with its probability, best first, as py3langid's `rank` with norm_probs=True (duplicate
        labels, such as the model's two columns for sr, summed into one)."""
        merged: dict[str, float] = {}
        for label, probability in zip(self.classes, self.probabilities(text), strict=True):
            merged[label] = merged.get(label, 0.0) + probability
        return sorted(merged.items(), key=lambda item: item[1], reverse=True)

    def probabilities(self, text: str) -> list[float]:
        """One probability per column of the model: the naive Bayes scores over the text's UTF-8 bytes, tempered
        by the square root of their number (py3langid's calibration across lengths), through a softmax."""
        encoded = _encoded(text)
        scores = self._scores(encoded)
        temperature = 1.0 / math.sqrt(len(encoded) or 1)
        top = max(scores)
        exponentials = [math.exp((score - top) * temperature) for score in scores]
        total = sum(exponentials)
        return [value / total for value in exponentials]

    def _scores(self, encoded: bytes) -> list[float]:
        counts = self._feature_counts(encoded)
        if not counts:
            return [0.0] * len(self.classes)  # no evidence: every label alike
        # log1p(count) · row for every feature, summed per label: features of one count share their weight, so
        # their rows are added column by column in C (zip and sum) and weighted once.
        by_count: dict[int, list[int]] = {}
        for feature, count in counts.items():
            by_count.setdefault(count, []).append(feature)
        scores = list(self._priors)
        unpack, weights, stride = self._row.unpack_from, self._weights, self._row.size
        for count, features in by_count.items():
            rows = [unpack(weights, feature * stride) for feature in features]
            weight = math.log1p(count)
            columns = map(sum, zip(*rows, strict=True))
            scores = [score + weight * column for score, column in zip(scores, columns, strict=True)]
        return scores

    def _feature_counts(self, encoded: bytes) -> Counter[int]:
        nextmove, rowbase, output = self._nextmove, self._rowbase, self._output
        state, features = 0, []
        for byte in encoded:
            state = nextmove[rowbase[state] + byte]
            feature = output[state]
            if feature >= 0:
                features.append(feature)
        return Counter(features)


def _encoded(text: str) -> bytes:
    # As py3langid reads text: all-capitals lowered (the model saw little of it), NFC, UTF-8.
    if text.isupper():
        text = text.lower()
    return unicodedata.normalize("NFC", text).encode("utf8", errors="surrogatepass")


def load_model(path: Path, sha256: str = MODEL_SHA256) -> LangidModel:
    """The model in `path`, if it is the pinned file (its bytes are checked, then the same bytes read)."""
    try:
        content = path.read_bytes()
    except OSError as error:
        raise LanguageModelInvalid(f"the language model {path} cannot be read ({error}): reinstall quire") from error
    digest = hashlib.sha256(content).hexdigest()
    if digest != sha256:
        raise LanguageModelInvalid(
            f"{path} is not the language model this detector was built for (sha256 {digest}, expected {sha256}):"
            " reinstall quire, or convert it again with `python -m bench.convert_langid_model`"
        )
    with lzma.open(io.BytesIO(content)) as stream:
        header = json.loads(_read_exactly(stream, int.from_bytes(_read_exactly(stream, 4), "little")))
        if header.get("format") != _FORMAT:
            raise LanguageModelInvalid(f"{path} is in format {header.get('format')!r}, not {_FORMAT!r}")
        weights, arrays = b"", {}
        for item in header["arrays"]:
            if item["dtype"] == "<f2":
                # array has no float16: the weights stay bytes, decoded row by row (struct's "<e") when scored.
                weights = _read_exactly(stream, 2 * item["count"])
            else:
                arrays[item["name"]] = _read_array(stream, item["dtype"], item["count"])
    return LangidModel(
        classes=list(header["classes"]),
        nb_ptc=weights,
        nb_pc=arrays["nb_pc"].tolist(),
        tk_nextmove=arrays["tk_nextmove"],
        tk_row=arrays["tk_row"],
        tk_output=arrays["tk_output"].tolist(),
    )


def _read_exactly(stream: lzma.LZMAFile, size: int) -> bytes:
    content = stream.read(size)
    if len(content) != size:
        raise LanguageModelInvalid("the language model file ends early")
    return content


def _read_array(stream: lzma.LZMAFile, dtype: str, count: int) -> array[Any]:
    # Read into the array itself: no second copy of the 39 MB transition table while loading.
    values = array(_TYPECODES[dtype], [0]) * count
    view, filled = memoryview(values).cast("B"), 0
    while filled < len(view):
        read = stream.readinto(view[filled:])
        if not read:
            raise LanguageModelInvalid("the language model file ends early")
        filled += read
    if sys.byteorder != "little":
        values.byteswap()
    return values


class Py3LangidDetector:
    """LanguageDetector over langid.py's model (py3langid's, converted), loaded once per process on first use."""

    def __init__(self, model_path: Path | None = None) -> None:
        self._model_path = model_path
        self._model: LangidModel | None = None
        self._lock = threading.Lock()

    def detect(self, text: str) -> LanguageGuess | None:
        sample = text[:_SAMPLE_CHARACTERS]
        if not any(character.isalpha() for character in sample):
            return None
        totals: dict[str, float] = {}
        for label, probability in self._loaded().rank(sample):
            language = _VARIETIES.get(label, label)
            if language in LANGUAGE_NAMES:
                totals[language] = totals.get(language, 0.0) + probability
        if not totals:
            return None
        language, confidence = max(totals.items(), key=lambda item: item[1])
        return LanguageGuess(language=language, confidence=min(confidence, 1.0))

    def _loaded(self) -> LangidModel:
        with self._lock:
            if self._model is None:
                if self._model_path is None:
                    from quire_langid import model_path

                    self._model_path = model_path()
                self._model = load_model(self._model_path)
            return self._model
