"""Deterministic zips for the OOXML writers: python-docx and openpyxl stamp every entry with the time of the
save; the same parts, in the same order, dated 1980-01-01, give the same bytes every time."""

import io
import zipfile

ZIP_EPOCH = (1980, 1, 1, 0, 0, 0)


def fixed_zip(raw: bytes) -> bytes:
    out = io.BytesIO()
    with zipfile.ZipFile(io.BytesIO(raw)) as source, zipfile.ZipFile(out, "w") as target:
        for info in source.infolist():
            entry = zipfile.ZipInfo(info.filename, date_time=ZIP_EPOCH)
            entry.compress_type = zipfile.ZIP_DEFLATED
            entry.external_attr = 0o644 << 16
            target.writestr(entry, source.read(info.filename))
    return out.getvalue()
