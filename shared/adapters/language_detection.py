"""Language identification with py3langid (BSD-3-Clause): langid.py's naive Bayes model over byte n-grams, 142
labels, shipped inside the wheel (4.6 MB) and run here; no text leaves the process.

Its labels are ISO 639-1 codes where one exists and ISO 639-3 codes for varieties (yue, wuu, ary, arz). A variety
counts for its standard language, so Cantonese and Wu add to Chinese, and Moroccan and Egyptian to Arabic; labels
with no language Quire stores (zxx, "no linguistic content", and a few without an ISO 639-1 code) count for none.
"""

import threading
from typing import TYPE_CHECKING

from shared.domain.languages import LANGUAGE_NAMES, LanguageGuess

if TYPE_CHECKING:
    from py3langid.langid import LanguageIdentifier

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


class Py3LangidDetector:
    """LanguageDetector over py3langid's model, loaded once per process on first use (half a second)."""

    def __init__(self) -> None:
        self._identifier: LanguageIdentifier | None = None
        self._lock = threading.Lock()

    def detect(self, text: str) -> LanguageGuess | None:
        sample = text[:_SAMPLE_CHARACTERS]
        if not any(character.isalpha() for character in sample):
            return None
        totals: dict[str, float] = {}
        for label, probability in self._model().rank(sample):
            language = _VARIETIES.get(label, label)
            if language in LANGUAGE_NAMES:
                totals[language] = totals.get(language, 0.0) + probability
        if not totals:
            return None
        language, confidence = max(totals.items(), key=lambda item: item[1])
        return LanguageGuess(language=language, confidence=min(confidence, 1.0))

    def _model(self) -> "LanguageIdentifier":
        with self._lock:
            if self._identifier is None:
                from py3langid.langid import MODEL_FILE, LanguageIdentifier

                self._identifier = LanguageIdentifier.from_model_file(MODEL_FILE, norm_probs=True)
            return self._identifier
