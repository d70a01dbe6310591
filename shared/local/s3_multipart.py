"""S3's multipart upload on the local S3, answered here rather than by moto: moto builds a completed object in one
bytearray in memory and keeps parts in memory until then, which a 1 GB upload cannot afford, and forgets every
open upload when the server stops.

`MultipartRequests` is WSGI middleware between `DurableRequests` and moto (path-style requests, as every local
client sends them): CreateMultipartUpload, UploadPart (by boto3 or through a presigned URL, `s3_presigned.py`
checking what S3 checks of it), ListParts, CompleteMultipartUpload, AbortMultipartUpload and ListMultipartUploads,
the uploads and their parts kept on disk by `s3_uploads.py`. A completed upload becomes a new version of its key in
moto's memory, its bytes the file the parts were streamed into, and is then committed by the durable store like any
put (the file moved into place, its record written, Object Created announced with the reason
CompleteMultipartUpload); its parts are removed only once that commit is on disk.
"""

import logging
import uuid
from collections.abc import Callable, Iterable
from datetime import datetime
from typing import Any
from urllib.parse import parse_qs, parse_qsl, quote
from xml.sax.saxutils import escape

from defusedxml import ElementTree
from moto.s3.models import FakeKey
from moto.s3.utils import cors_matches_origin

from shared.local.durable_s3 import StagedBytes
from shared.local.s3_changes import current_changes, key_lock
from shared.local.s3_errors import S3Error, invalid_argument
from shared.local.s3_presigned import check_presigned
from shared.local.s3_uploads import (
    MAX_PART_NUMBER,
    MAX_PART_SIZE,
    Assembled,
    Listed,
    Upload,
    UploadStore,
    checksums_claimed,
    limited,
)

_log = logging.getLogger(__name__)

_NAMESPACE = "http://s3.amazonaws.com/doc/2006-03-01/"
_MAX_LISTED = 1000  # S3's page size for parts and uploads, and the most a request may ask for
_MAX_COMPLETION_BYTES = 4 * 1024 * 1024  # 10,000 parts with their checksums need under 2 MiB
_MAX_KEY_BYTES = 1024
_CHECKSUM_ALGORITHMS = ("CRC32", "CRC32C", "CRC64NVME", "SHA1", "SHA256")
_OWNER = "<ID>75aa57f09aa0c8caeab4f8c24e99d10f8e7faeebf76c078efc7c6caea54ba06a</ID><DisplayName>webfile</DisplayName>"
_STORED_HEADERS = {
    "content-type": "Content-Type",
    "content-language": "Content-Language",
    "content-encoding": "Content-Encoding",
    "content-disposition": "Content-Disposition",
    "cache-control": "Cache-Control",
    "expires": "Expires",
}

Response = tuple[int, list[tuple[str, str]], bytes]


def _iso(moment: datetime) -> str:
    return moment.strftime("%Y-%m-%dT%H:%M:%S.") + f"{moment.microsecond // 1000:03d}Z"


def _xml(root: str, inner: str) -> bytes:
    return f'<?xml version="1.0" encoding="UTF-8"?>\n<{root} xmlns="{_NAMESPACE}">{inner}</{root}>'.encode()


def _element(name: str, value: object) -> str:
    return f"<{name}>{escape(str(value))}</{name}>"


def _headers_of(environ: dict[str, Any]) -> dict[str, str]:
    """The request's headers by lower-case name."""
    headers = {name[5:].replace("_", "-").lower(): str(value) for name, value in environ.items() if name[:5] == "HTTP_"}
    for name in ("CONTENT_TYPE", "CONTENT_LENGTH"):
        if environ.get(name):
            headers[name.replace("_", "-").lower()] = str(environ[name])
    return headers


def _integer(query: dict[str, str], name: str, default: int, *, low: int, high: int) -> int:
    raw = query.get(name)
    if raw is None or raw == "":
        return default
    try:
        value = int(raw)
    except ValueError:
        raise invalid_argument(f"Provided {name} not an integer or within integer range", name, raw) from None
    if not low <= value <= high:
        raise invalid_argument(f"Argument {name} must be an integer between {low} and {high}", name, raw)
    return value


class MultipartRequests:
    def __init__(self, app: Any, backend: Any, uploads: UploadStore) -> None:
        self._app = app
        self._backend = backend
        self._uploads = uploads

    def __call__(self, environ: dict[str, Any], start_response: Any) -> Iterable[bytes]:
        handler = self._handler_of(environ)
        if handler is None:
            return self._app(environ, start_response)  # type: ignore[no-any-return]
        headers = _headers_of(environ)
        try:
            status, response_headers, body = handler(environ, headers)
        except S3Error as refusal:
            status, response_headers, body = refusal.status, [("Content-Type", "application/xml")], refusal.body()
        response_headers += self._cors_headers(environ, headers)
        response_headers += [("x-amz-request-id", uuid.uuid4().hex[:16].upper()), ("Content-Length", str(len(body)))]
        start_response(f"{status} {_REASONS.get(status, 'Error')}", response_headers)
        return [body]

    def _handler_of(self, environ: dict[str, Any]) -> Callable[[dict[str, Any], dict[str, str]], Response] | None:
        method = environ.get("REQUEST_METHOD", "")
        query = parse_qs(environ.get("QUERY_STRING", ""), keep_blank_values=True)
        bucket, _, key = environ.get("PATH_INFO", "").lstrip("/").partition("/")
        if not bucket:
            return None
        routes: dict[tuple[str, bool, str], Callable[[dict[str, Any], dict[str, str]], Response]] = {
            ("POST", True, "uploads"): self._begin,
            ("PUT", True, "uploadId"): self._put_part,
            ("GET", True, "uploadId"): self._list_parts,
            ("POST", True, "uploadId"): self._complete,
            ("DELETE", True, "uploadId"): self._abort,
            ("GET", False, "uploads"): self._list_uploads,
        }
        for (route_method, has_key, parameter), handler in routes.items():
            if method == route_method and bool(key) == has_key and parameter in query:
                return handler
        return None

    # -- the request's parts -----------------------------------------------------------------------------------

    @staticmethod
    def _query(environ: dict[str, Any]) -> dict[str, str]:
        return {name: values[0] for name, values in parse_qs(environ.get("QUERY_STRING", ""), True).items()}

    @staticmethod
    def _bucket_and_key(environ: dict[str, Any]) -> tuple[str, str]:
        path = environ.get("PATH_INFO", "")
        try:
            path = path.encode("latin-1").decode("utf-8")  # WSGI hands the path over as latin-1 of its bytes
        except UnicodeError:
            raise S3Error(400, "InvalidURI", "Couldn't parse the specified URI.") from None
        bucket, _, key = path.lstrip("/").partition("/")
        return bucket, key

    def _bucket(self, name: str) -> Any:
        bucket = self._backend.buckets.get(name)
        if bucket is None:
            raise S3Error(404, "NoSuchBucket", "The specified bucket does not exist", BucketName=name)
        return bucket

    def _upload(self, environ: dict[str, Any]) -> Upload:
        bucket, key = self._bucket_and_key(environ)
        return self._uploads.get(self._query(environ)["uploadId"], bucket, key)

    def _cors_headers(self, environ: dict[str, Any], headers: dict[str, str]) -> list[tuple[str, str]]:
        """As moto answers any request from a browser's origin the bucket's CORS rules admit (a browser reads
        the part's ETag only when the rule exposes it)."""
        origin = headers.get("origin")
        if not origin:
            return []
        try:
            bucket = self._backend.buckets.get(self._bucket_and_key(environ)[0])
        except S3Error:
            return []
        for rule in getattr(bucket, "cors", None) or []:
            if rule.allowed_origins is not None and cors_matches_origin(origin, rule.allowed_origins):
                admitted = [("Access-Control-Allow-Origin", origin)]
                if rule.allowed_methods:
                    admitted.append(("Access-Control-Allow-Methods", ", ".join(rule.allowed_methods)))
                if rule.exposed_headers:
                    admitted.append(("Access-Control-Expose-Headers", ", ".join(rule.exposed_headers)))
                return admitted
        return []

    # -- the operations ----------------------------------------------------------------------------------------

    def _begin(self, environ: dict[str, Any], headers: dict[str, str]) -> Response:
        bucket_name, key = self._bucket_and_key(environ)
        self._bucket(bucket_name)
        if len(key.encode("utf-8", "surrogatepass")) > _MAX_KEY_BYTES:
            raise S3Error(400, "KeyTooLongError", "Your key is too long", MaxSizeAllowed=str(_MAX_KEY_BYTES))
        algorithm = headers.get("x-amz-checksum-algorithm", "").upper() or None
        if algorithm not in (None, *_CHECKSUM_ALGORITHMS):
            raise S3Error(400, "InvalidRequest", "Value for x-amz-checksum-algorithm header is invalid.")
        if algorithm not in (None, "SHA256"):
            raise S3Error(
                501, "NotImplemented", f"the local S3 keeps SHA256 checksums of multipart uploads, not {algorithm}"
            )
        if headers.get("x-amz-checksum-type", "COMPOSITE").upper() != "COMPOSITE":
            raise S3Error(400, "InvalidRequest", "The SHA256 checksum of a multipart upload is COMPOSITE only.")
        metadata = {
            stored: headers[name] for name, stored in _STORED_HEADERS.items() if headers.get(name) is not None
        } | {name: value for name, value in headers.items() if name.startswith("x-amz-meta-")}
        tags = dict(parse_qsl(headers.get("x-amz-tagging", ""), keep_blank_values=True))
        upload = self._uploads.begin(bucket_name, key, metadata=metadata, tags=tags, checksum_algorithm=algorithm)
        inner = _element("Bucket", bucket_name) + _element("Key", key) + _element("UploadId", upload.upload_id)
        response_headers = [("Content-Type", "application/xml")]
        if algorithm:
            response_headers += [("x-amz-checksum-algorithm", algorithm), ("x-amz-checksum-type", "COMPOSITE")]
        return 200, response_headers, _xml("InitiateMultipartUploadResult", inner)

    def _put_part(self, environ: dict[str, Any], headers: dict[str, str]) -> Response:
        query = self._query(environ)
        check_presigned(environ, query)
        if "x-amz-copy-source" in headers:
            raise S3Error(501, "NotImplemented", "the local S3 does not copy parts (UploadPartCopy)")
        if headers.get("x-amz-content-sha256", "").startswith("STREAMING-") or "aws-chunked" in headers.get(
            "content-encoding", ""
        ):
            raise S3Error(501, "NotImplemented", "the local S3 takes a part's bytes as they are, not aws-chunked")
        number = _integer(query, "partNumber", -1, low=1, high=MAX_PART_NUMBER)
        if number < 0:
            raise invalid_argument("A part's PUT names its partNumber", "partNumber", "")
        upload = self._upload(environ)
        stream = environ["wsgi.input"]
        if environ.get("wsgi.input_terminated"):  # chunked transfer encoding, already decoded by the server
            body: Iterable[bytes] = _bounded(iter(lambda: stream.read(1 << 20), b""), MAX_PART_SIZE)
        elif headers.get("content-length", "").isdigit():
            length = int(headers["content-length"])
            if length > MAX_PART_SIZE:
                raise S3Error(
                    400,
                    "EntityTooLarge",
                    "Your proposed upload exceeds the maximum allowed size",
                    ProposedSize=str(length),
                    MaxSizeAllowed=str(MAX_PART_SIZE),
                )
            body = limited(stream, length)
        else:
            raise S3Error(411, "MissingContentLength", "You must provide the Content-Length HTTP header.")
        part = self._uploads.put_part(upload, number, body, checksums_claimed(headers))
        response_headers = [("ETag", f'"{part.etag}"')]
        if upload.checksum_algorithm == "SHA256" or "x-amz-checksum-sha256" in headers:
            response_headers.append(("x-amz-checksum-sha256", part.sha256))
        return 200, response_headers, b""

    def _list_parts(self, environ: dict[str, Any], _headers: dict[str, str]) -> Response:
        query = self._query(environ)
        limit = _integer(query, "max-parts", _MAX_LISTED, low=0, high=2**31 - 1)
        marker = _integer(query, "part-number-marker", 0, low=0, high=2**31 - 1)
        upload = self._upload(environ)
        following = [part for part in self._uploads.parts(upload) if part.number > marker]
        page = following[: min(limit, _MAX_LISTED)]
        truncated = len(following) > len(page)
        inner = [
            _element("Bucket", upload.bucket),
            _element("Key", upload.key),
            _element("UploadId", upload.upload_id),
            _element("PartNumberMarker", marker),
            _element("NextPartNumberMarker", page[-1].number if page else marker),
            _element("MaxParts", limit),
            _element("IsTruncated", str(truncated).lower()),
            f"<Initiator>{_OWNER}</Initiator><Owner>{_OWNER}</Owner><StorageClass>STANDARD</StorageClass>",
        ]
        if upload.checksum_algorithm:
            inner.append(
                _element("ChecksumAlgorithm", upload.checksum_algorithm) + "<ChecksumType>COMPOSITE</ChecksumType>"
            )
        for part in page:
            checksum = _element("ChecksumSHA256", part.sha256) if upload.checksum_algorithm == "SHA256" else ""
            etag = f'"{part.etag}"'
            inner.append(
                f"<Part>{_element('PartNumber', part.number)}{_element('LastModified', _iso(part.last_modified))}"
                f"{_element('ETag', etag)}{_element('Size', part.size)}{checksum}</Part>"
            )
        return 200, [("Content-Type", "application/xml")], _xml("ListPartsResult", "".join(inner))

    def _complete(self, environ: dict[str, Any], headers: dict[str, str]) -> Response:
        upload = self._upload(environ)
        listed = _listed_parts(environ, headers)
        changes = current_changes()
        if changes is None:
            raise RuntimeError("a completion is committed by DurableRequests, which must come before this layer")
        upload.lock.acquire()  # released once the completed object is committed or undone
        try:
            assembled = self._uploads.assemble(upload, listed)
            version = self._install(upload, assembled)
        except BaseException:
            upload.lock.release()
            raise

        def settled(committed: bool) -> None:
            try:
                if committed:
                    self._uploads.finish(upload)
            finally:
                upload.lock.release()

        changes.settled.append(settled)
        inner = (
            _element("Location", f"http://{headers.get('host', '127.0.0.1')}/{upload.bucket}/{quote(upload.key)}")
            + _element("Bucket", upload.bucket)
            + _element("Key", upload.key)
            + _element("ETag", f'"{assembled.etag}"')
        )
        if assembled.sha256:
            inner += _element("ChecksumSHA256", f"{assembled.sha256}-{assembled.parts}")
            inner += "<ChecksumType>COMPOSITE</ChecksumType>"
        response_headers = [("Content-Type", "application/xml")]
        if version.version_id != "null":
            response_headers.append(("x-amz-version-id", version.version_id))
        return 200, response_headers, _xml("CompleteMultipartUploadResult", inner)

    def _install(self, upload: Upload, assembled: Assembled) -> FakeKey:
        """The completed object as a new version of its key, whole before any request can see it; its bytes the
        assembled file, moved into the store by the commit."""
        bucket = self._bucket(upload.bucket)
        version = FakeKey(
            name=upload.key,
            value=b"",
            account_id=self._backend.account_id,
            region_name=bucket.region_name,
            etag=assembled.etag,
            is_versioned=bucket.is_versioned,
            version_id=str(uuid.uuid4()) if bucket.is_versioned else "null",
            bucket_name=bucket.name,
        )
        version._value_buffer.close()
        version._value_buffer = StagedBytes(assembled.path)  # type: ignore[assignment]
        version.contentsize = assembled.size
        version.set_metadata(dict(upload.metadata))
        if assembled.sha256:
            version.checksum_algorithm = "SHA256"
            version.checksum_value = assembled.sha256
            version.checksum_type = "COMPOSITE"
            version.checksum_parts = assembled.parts
        with key_lock(bucket.name, upload.key):  # as moto's put_object does, under the same lock
            existing = bucket.keys.getlist(upload.key, []) if bucket.is_versioned else []
            bucket.keys.setlist(upload.key, [*existing, version])
        if upload.tags:
            tags = [{"Key": name, "Value": value} for name, value in upload.tags.items()]
            self._backend.tagger.tag_resource(version.arn, tags)
        return version

    def _abort(self, environ: dict[str, Any], _headers: dict[str, str]) -> Response:
        self._uploads.abort(self._upload(environ))
        return 204, [], b""

    def _list_uploads(self, environ: dict[str, Any], _headers: dict[str, str]) -> Response:
        query = self._query(environ)
        bucket_name, _ = self._bucket_and_key(environ)
        self._bucket(bucket_name)
        if query.get("delimiter"):
            raise S3Error(501, "NotImplemented", "the local S3 does not list multipart uploads by delimiter")
        limit = _integer(query, "max-uploads", _MAX_LISTED, low=0, high=2**31 - 1)
        prefix, key_marker, id_marker = (query.get(name, "") for name in ("prefix", "key-marker", "upload-id-marker"))
        uploads = self._uploads.open_uploads(bucket_name, prefix)
        after = next(
            (
                index + 1
                for index, u in enumerate(uploads)
                if id_marker and (u.key, u.upload_id) == (key_marker, id_marker)
            ),
            None,
        )
        following = uploads[after:] if after is not None else [u for u in uploads if u.key > key_marker]
        page = following[: min(limit, _MAX_LISTED)]
        encode = query.get("encoding-type") == "url"

        def name(text: str) -> str:
            return quote(text, safe="/") if encode else text

        inner = [
            _element("Bucket", bucket_name),
            _element("KeyMarker", name(key_marker)),
            _element("UploadIdMarker", id_marker),
            _element("NextKeyMarker", name(page[-1].key) if page else ""),
            _element("NextUploadIdMarker", page[-1].upload_id if page else ""),
            _element("Prefix", name(prefix)),
            _element("MaxUploads", limit),
            _element("IsTruncated", str(len(following) > len(page)).lower()),
            _element("EncodingType", "url") if encode else "",
        ]
        for upload in page:
            checksum = _element("ChecksumAlgorithm", upload.checksum_algorithm) if upload.checksum_algorithm else ""
            inner.append(
                f"<Upload>{_element('Key', name(upload.key))}{_element('UploadId', upload.upload_id)}"
                f"<Initiator>{_OWNER}</Initiator><Owner>{_OWNER}</Owner><StorageClass>STANDARD</StorageClass>"
                f"{_element('Initiated', _iso(upload.initiated))}{checksum}</Upload>"
            )
        return 200, [("Content-Type", "application/xml")], _xml("ListMultipartUploadsResult", "".join(inner))


def _bounded(chunks: Iterable[bytes], most: int) -> Iterable[bytes]:
    total = 0
    for chunk in chunks:
        total += len(chunk)
        if total > most:
            raise S3Error(400, "EntityTooLarge", "Your proposed upload exceeds the maximum allowed size")
        yield chunk


def _listed_parts(environ: dict[str, Any], headers: dict[str, str]) -> list[Listed]:
    """The parts a CompleteMultipartUpload names, read within S3's bounds."""
    length = headers.get("content-length", "")
    if not length.isdigit():
        raise S3Error(411, "MissingContentLength", "You must provide the Content-Length HTTP header.")
    if int(length) > _MAX_COMPLETION_BYTES:
        raise S3Error(400, "MaxMessageLengthExceeded", "Your request was too big.")
    body = b"".join(limited(environ["wsgi.input"], int(length)))
    malformed = S3Error(400, "MalformedXML", "The XML you provided was not well-formed or did not validate.")
    try:
        root = ElementTree.fromstring(body)
    except Exception:  # defusedxml's refusals and expat's errors alike
        raise malformed from None

    def local(element: Any) -> str:
        return str(element.tag).rpartition("}")[2]

    listed: list[Listed] = []
    for part in (child for child in root if local(child) == "Part"):
        fields = {local(child): (child.text or "").strip() for child in part}
        if not fields.get("PartNumber", "").isdigit() or "ETag" not in fields or len(listed) >= MAX_PART_NUMBER:
            raise malformed
        listed.append(Listed(int(fields["PartNumber"]), fields["ETag"], fields.get("ChecksumSHA256") or None))
    if local(root) != "CompleteMultipartUpload":
        raise malformed
    return listed


_REASONS = {
    200: "OK",
    204: "No Content",
    400: "Bad Request",
    403: "Forbidden",
    404: "Not Found",
    411: "Length Required",
    500: "Internal Server Error",
    501: "Not Implemented",
}
