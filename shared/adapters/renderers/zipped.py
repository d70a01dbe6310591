"""Deterministic zips for the OOXML writers: python-docx and openpyxl stamp every entry with the time of the
save; the same parts, in the same order, dated 1980-01-01, give the same bytes every time."""

import io
import re
import zipfile
from datetime import datetime

ZIP_EPOCH = (1980, 1, 1, 0, 0, 0)
_CORE = "docProps/core.xml"
_DATES = re.compile(rb"(<dcterms:(created|modified)[^>]*>)[^<]*(</dcterms:\2>)")


def fixed_zip(raw: bytes, *, dated: datetime | None = None) -> bytes:
    """`raw` re-zipped with fixed entry times; with `dated`, the core properties' created and modified dates
    set to it too (openpyxl writes the time of the save into them whatever the workbook says)."""
    stamp = dated.strftime("%Y-%m-%dT%H:%M:%SZ").encode() if dated is not None else b""
    out = io.BytesIO()
    with zipfile.ZipFile(io.BytesIO(raw)) as source, zipfile.ZipFile(out, "w") as target:
        for info in source.infolist():
            entry = zipfile.ZipInfo(info.filename, date_time=ZIP_EPOCH)
            entry.compress_type = zipfile.ZIP_DEFLATED
            entry.external_attr = 0o644 << 16
            data = source.read(info.filename)
            if dated is not None and info.filename == _CORE:
                data = _DATES.sub(rb"\g<1>" + stamp + rb"\g<3>", data)
            target.writestr(entry, data)
    return out.getvalue()
