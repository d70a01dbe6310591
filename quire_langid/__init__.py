"""langid.py's language identification model (Marco Lui and Timothy Baldwin, as packaged by py3langid 0.4.0,
BSD-3-Clause; licence in LICENSE, provenance and layout in SOURCE.md), converted once into a file the standard
library reads: the language detector (shared/adapters/language_detection.py) needs no numpy. A package of its own
so that the wheel, an editable install and the Lambda layer all carry the file."""

from importlib.resources import files
from pathlib import Path

MODEL = "model.xz"


def model_path() -> Path:
    return Path(str(files(__name__) / MODEL))
