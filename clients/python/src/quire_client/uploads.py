"""What an upload needs besides the API: the media type a file's name implies, and the browser-style multipart
body of a presigned POST (the ticket's fields first, the file last, as S3's POST policy requires), sent in chunks
so that a caller can show progress."""

import secrets
from collections.abc import Callable, Iterator, Mapping
from pathlib import PurePath

# The types the API accepts, by extension (GET /v1/meta lists them; tests/unit/test_quire_client.py checks this
# table against the server's). The server sniffs the bytes whatever is declared.
MEDIA_TYPES: dict[str, str] = {
    ".pdf": "application/pdf",
    ".docx": "application/vnd.openxmlformats-officedocument.wordprocessingml.document",
    ".xlsx": "application/vnd.openxmlformats-officedocument.spreadsheetml.sheet",
    ".pptx": "application/vnd.openxmlformats-officedocument.presentationml.presentation",
    ".txt": "text/plain",
    ".text": "text/plain",
    ".log": "text/plain",
    ".md": "text/markdown",
    ".markdown": "text/markdown",
    ".csv": "text/csv",
    ".html": "text/html",
    ".htm": "text/html",
    ".png": "image/png",
    ".jpg": "image/jpeg",
    ".jpeg": "image/jpeg",
    ".tif": "image/tiff",
    ".tiff": "image/tiff",
    ".wav": "audio/wav",
    ".mp3": "audio/mpeg",
    ".m4a": "audio/mp4",
    ".flac": "audio/flac",
    ".ogg": "audio/ogg",
    ".oga": "audio/ogg",
    ".opus": "audio/ogg",
    ".weba": "audio/webm",
    ".mp4": "video/mp4",
    ".m4v": "video/mp4",
    ".mov": "video/quicktime",
    ".webm": "video/webm",
    ".mkv": "video/x-matroska",
}
CHUNK_BYTES = 64 * 1024
# Called with (bytes sent, bytes in all) after each chunk of the presigned POST.
Progress = Callable[[int, int], None]


def media_type_for(filename: str) -> str:
    """The accepted media type a file name's extension implies; ValueError naming the accepted ones otherwise."""
    suffix = PurePath(filename).suffix.lower()
    if suffix in MEDIA_TYPES:
        return MEDIA_TYPES[suffix]
    known = ", ".join(sorted(MEDIA_TYPES))
    raise ValueError(f"{filename}: {suffix or 'no extension'} is not accepted (accepted: {known})")


def _quoted(value: str) -> str:
    return value.replace("\\", "\\\\").replace('"', "%22").replace("\r", "%0D").replace("\n", "%0A")


class MultipartForm:
    """A form of text fields and one file, as a browser posts it: `content_type`, `length`, and `chunks()`."""

    def __init__(self, fields: Mapping[str, str], filename: str, content: bytes, media_type: str) -> None:
        boundary = secrets.token_hex(16)
        head = b"".join(
            f'--{boundary}\r\nContent-Disposition: form-data; name="{_quoted(name)}"\r\n\r\n{value}\r\n'.encode()
            for name, value in fields.items()
        )
        head += (
            f'--{boundary}\r\nContent-Disposition: form-data; name="file"; filename="{_quoted(filename)}"\r\n'
            f"Content-Type: {media_type}\r\n\r\n"
        ).encode()
        self._body = head + content + f"\r\n--{boundary}--\r\n".encode()
        self.content_type = f"multipart/form-data; boundary={boundary}"
        self.length = len(self._body)

    def chunks(self, progress: Progress | None = None) -> Iterator[bytes]:
        for offset in range(0, self.length, CHUNK_BYTES):
            yield self._body[offset : offset + CHUNK_BYTES]
            if progress:
                progress(min(offset + CHUNK_BYTES, self.length), self.length)
