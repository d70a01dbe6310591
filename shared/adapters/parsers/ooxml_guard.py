"""Before python-docx, openpyxl or python-pptx see an Office file: bound its zip and refuse its DTDs.

A zip's headers are claims. Every member is inflated here, streamed and capped, so the ceiling is on
bytes actually decompressed; the entry count is bounded; and no XML part may carry a DOCTYPE or an
ENTITY declaration (billion laughs, external entities), whatever the XML library would do with it.
"""

import io
import logging
import traceback
import zipfile
import zlib
from collections.abc import Callable
from pathlib import Path

from shared.domain.document import ExtractionFailure, ExtractionLimits, ExtractionOutcome
from shared.domain.files import FailureReason
from shared.domain.sniffing import OLE_MAGIC, is_encrypted_office_package

_log = logging.getLogger(__name__)
_OUR_CODE = str(Path(__file__).resolve().parents[2])  # shared/
MAX_ENTRIES = 10_000
_CHUNK = 1024 * 1024
# In every encoding an XML parser accepts without a declaration to say so (a UTF-16 part hides its ASCII).
_FORBIDDEN = tuple(
    marker.encode(encoding)
    for marker in ("<!DOCTYPE", "<!ENTITY")
    for encoding in ("ascii", "utf-16-le", "utf-16-be", "utf-32-le", "utf-32-be")
)
_OVERLAP = max(len(marker) for marker in _FORBIDDEN) - 1


class RefusedPart(Exception):
    """A part the library opened as plain bytes (its name or content type says it is not XML) that the
    parser reads as XML after all, and that declares a DTD: refused as the guard refuses XML parts."""


def declares_dtd(data: bytes) -> bool:
    return any(marker in data for marker in _FORBIDDEN)


def check_office_zip(content: bytes, limits: ExtractionLimits) -> ExtractionFailure | None:
    """None when the archive is within bounds; otherwise the failure that names the bound."""
    if content.startswith(OLE_MAGIC):
        return _ole_failure(content)
    try:
        with zipfile.ZipFile(io.BytesIO(content)) as archive:
            members = archive.infolist()
            if len(members) > MAX_ENTRIES:
                return ExtractionFailure(
                    reason=FailureReason.TOO_LARGE,
                    detail=f"the archive has {len(members)} parts; the limit is {MAX_ENTRIES}",
                )
            inflated = 0
            for member in members:
                is_xml = member.filename.lower().endswith((".xml", ".rels", ".vml"))
                with archive.open(member) as stream:
                    tail = b""
                    while chunk := stream.read(_CHUNK):
                        inflated += len(chunk)
                        if inflated > limits.max_inflated_bytes:
                            return ExtractionFailure(
                                reason=FailureReason.TOO_LARGE,
                                detail=f"its parts inflate past {limits.max_inflated_bytes} bytes",
                            )
                        if is_xml:
                            window = tail + chunk
                            if any(marker in window for marker in _FORBIDDEN):
                                return ExtractionFailure(
                                    reason=FailureReason.MALFORMED,
                                    detail=f"{member.filename} declares a DTD or entities, which are refused",
                                )
                            tail = window[-_OVERLAP:]
    except (
        zipfile.BadZipFile,
        zipfile.LargeZipFile,
        zlib.error,
        OSError,
        EOFError,
        NotImplementedError,
        ValueError,
        RuntimeError,  # zipfile's "is encrypted, password required" for a flagged member
    ) as error:
        # The library's words (member names, offsets) are the operator's, in the log; the owner gets the fix.
        _log.warning("an Office archive is damaged: %s: %s", type(error).__name__, error)
        return ExtractionFailure(
            reason=FailureReason.MALFORMED, detail="the archive is damaged: save the file again and upload it again"
        )
    return None


def _raised_by_our_code(error: BaseException) -> bool:
    frames = traceback.extract_tb(error.__traceback__)
    return bool(frames) and str(Path(frames[-1].filename).resolve()).startswith(_OUR_CODE)


def _ole_failure(content: bytes) -> ExtractionFailure:
    # A password-protected OOXML file is an OLE container holding an encrypted package: decided from the
    # container's directory, not from the name appearing somewhere in a legacy file's text.
    if is_encrypted_office_package(io.BytesIO(content), len(content)):
        return ExtractionFailure(reason=FailureReason.ENCRYPTED, detail="the file is password-protected")
    return ExtractionFailure(
        reason=FailureReason.MALFORMED, detail="this is a legacy Office file (.doc, .xls, .ppt), not OOXML"
    )


def unreadable_office_detail(label: str) -> str:
    """What the file's owner is told of an Office file its library could not read: never the library's words."""
    return f"not a readable {label}: open it in the program that made it, save it again and upload it again"


def read_office(
    content: bytes, limits: ExtractionLimits, label: str, read: Callable[[], ExtractionOutcome]
) -> ExtractionOutcome:
    """The guard, then `read` (the library's pass over the parts): whatever the library trips on in
    attacker-controlled XML is the document's fault, and comes back as `malformed`."""
    refused = check_office_zip(content, limits)
    if refused is not None:
        return refused
    try:
        return read()
    except RefusedPart as refusal:
        return ExtractionFailure(reason=FailureReason.MALFORMED, detail=str(refusal))
    except Exception as error:
        if _raised_by_our_code(error):
            # Still the user's answer (the document cannot be read), but a bug of ours to fix: say so.
            _log.warning("the %s parser's own code raised on a document", label, exc_info=error)
        else:
            _log.warning("a %s could not be read: %s: %s", label, type(error).__name__, str(error)[:500])
        return ExtractionFailure(reason=FailureReason.MALFORMED, detail=unreadable_office_detail(label))
