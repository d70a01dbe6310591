"""Converts py3langid 0.4.0's model (numpy's npz inside LZMA) once into quire_langid/model.xz, which the language
detector reads with the standard library alone (shared/adapters/language_detection.py). Run with the `dev` extra
installed (it brings py3langid and numpy): `.venv/bin/python -m bench.convert_langid_model`. The same py3langid
gives the same bytes; quire_langid/SOURCE.md describes the layout and the adapter pins the file's sha256.
"""

import json
import lzma
import sys
from pathlib import Path
from typing import Any

OUT = Path(__file__).resolve().parent.parent / "quire_langid" / "model.xz"
FORMAT = "quire-langid-1"
PY3LANGID_VERSION = "0.4.0"


def converted() -> bytes:
    from importlib.metadata import version

    import numpy as np
    from py3langid.langid import MODEL_DIR, MODEL_FILE
    from py3langid.modelio import load_model

    if version("py3langid") != PY3LANGID_VERSION:
        raise SystemExit(f"py3langid {PY3LANGID_VERSION} is the model converted; {version('py3langid')} is installed")
    ptc, pc, classes, nextmove, row, output = load_model(MODEL_DIR / MODEL_FILE)
    # Little-endian, each in the type py3langid keeps it in (the weights are float16 there too): nothing rounded.
    arrays: list[tuple[str, str, Any]] = [
        ("nb_ptc", "<f2", np.asarray(ptc)),
        ("nb_pc", "<f4", np.asarray(pc)),
        ("tk_nextmove", "<u4", np.asarray(nextmove)),
        ("tk_row", "<u2", np.asarray(row)),
        ("tk_output", "<i4", np.asarray(output)),
    ]
    for name, dtype, values in arrays:
        if not np.array_equal(values.astype(dtype).astype(values.dtype), values):
            raise SystemExit(f"{name} does not fit {dtype} exactly")
    header = {
        "format": FORMAT,
        "source": f"py3langid {PY3LANGID_VERSION} py3langid/data/model.npz.xz",
        "classes": list(classes),
        "features": int(np.asarray(ptc).shape[0]),
        "arrays": [{"name": name, "dtype": dtype, "count": int(values.size)} for name, dtype, values in arrays],
    }
    encoded = json.dumps(header, separators=(",", ":")).encode()
    payload = b"".join(
        [len(encoded).to_bytes(4, "little"), encoded]
        + [np.ascontiguousarray(values.astype(dtype)).reshape(-1).tobytes() for _, dtype, values in arrays]
    )
    return lzma.compress(payload, format=lzma.FORMAT_XZ, check=lzma.CHECK_CRC64, preset=6)


if __name__ == "__main__":
    out = Path(sys.argv[1]) if len(sys.argv) > 1 else OUT
    out.write_bytes(converted())
    print(out, out.stat().st_size)
