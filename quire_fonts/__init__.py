"""DejaVu Sans, Sans Bold and Sans Mono 2.37 (Debian's fonts-dejavu-core; licence in LICENSE, which permits
redistribution): the fonts PDF exports are written in. A package of its own so that the Lambda layer carries
it (it changes with the dependencies, not with the code)."""

from importlib.resources import files
from pathlib import Path

REGULAR = "DejaVuSans.ttf"
BOLD = "DejaVuSans-Bold.ttf"
MONO = "DejaVuSansMono.ttf"


def font_path(name: str) -> Path:
    return Path(str(files(__name__) / name))
