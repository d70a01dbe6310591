"""Files: upload tickets, listings, reads, page images, the extracted document, rescans, moves and deletion."""

import re
from typing import Annotated, Any

from aws_lambda_powertools.event_handler import Response
from aws_lambda_powertools.event_handler.openapi.params import Body, Query
from aws_lambda_powertools.event_handler.router import APIGatewayHttpRouter

from functions.api.routes.context import binary_response, current_principal, json_response, parse_id
from functions.views.facets import facets_view
from functions.views.files import (
    BulkMetadataRequest,
    BulkMetadataView,
    CollectionDeletionView,
    DeletionView,
    DocumentWindowView,
    FileListView,
    FileSummary,
    FileView,
    MetadataPatchRequest,
    MetadataRevisionView,
    MetadataSchemaView,
    MoveRequest,
    NewVersionRequest,
    PageImageView,
    ScanView,
    SignedReadView,
    UploadRequest,
    UploadResponse,
)
from functions.views.search import (
    FILTER_QUERY_DESCRIPTION,
    MAX_FILTER_QUERY_CHARACTERS,
    filter_json,
    metadata_filter,
)
from shared.bootstrap import container
from shared.domain.errors import InvalidRequest
from shared.domain.metadata import MetadataChange
from shared.domain.page_images import PAGE_IMAGE_TYPE
from shared.domain.uploads import SAFE_DOWNLOAD_TYPE, attachment_disposition
from shared.ports import MAX_SIGNED_READ_LIFETIME
from shared.services.files import MAX_PAGE_SIZE, ProxiedContent

router = APIGatewayHttpRouter()  # type: ignore[no-untyped-call]
_PAGE_NUMBER = re.compile(r"[0-9]{1,9}")


@router.post("/v1/uploads")
def create_upload(request: UploadRequest) -> Response[UploadResponse]:
    ticket = container().files.start_upload(
        current_principal(router),
        collection_id=request.collection_id,
        filename=request.filename,
        media_type=request.media_type,
        byte_size=request.byte_size,
        metadata=request.metadata,
        language=request.language,
        sha256=request.sha256,
        by_parts=request.parts_request(),
    )
    return json_response(201, UploadResponse.of(ticket))


@router.post("/v1/files/<file_id>/versions")
def create_version(file_id: str, request: NewVersionRequest) -> Response[UploadResponse]:
    ticket = container().files.start_new_version(
        current_principal(router),
        parse_id(file_id),
        filename=request.filename,
        media_type=request.media_type,
        byte_size=request.byte_size,
        metadata=request.metadata,
        language=request.language,
        sha256=request.sha256,
        by_parts=request.parts_request(),
    )
    return json_response(201, UploadResponse.of(ticket))


@router.get("/v1/files")
def list_files(
    collection_id: Annotated[str | None, Query(alias="collectionId", max_length=64)] = None,
    limit: Annotated[int, Query(ge=1, le=MAX_PAGE_SIZE)] = 50,
    cursor: Annotated[str | None, Query(max_length=512)] = None,
    filter_: Annotated[
        str | None, Query(alias="filter", max_length=MAX_FILTER_QUERY_CHARACTERS, description=FILTER_QUERY_DESCRIPTION)
    ] = None,
    facets: Annotated[
        str | None,
        Query(
            max_length=1_000,
            description="Comma-separated metadata keys (or quire.collection, quire.mediaType), at most 10: each key's"
            " most frequent values (at most 50) over every file the filter keeps, with their counts.",
        ),
    ] = None,
) -> FileListView:
    principal, files = current_principal(router), container().files
    where = metadata_filter(filter_json(filter_)) if filter_ is not None else None
    page = files.list_files(principal, collection_id=collection_id, limit=limit, cursor=cursor, where=where)
    counted = None
    if facets is not None:
        keys = [key.strip() for key in facets.split(",") if key.strip()]
        collections = frozenset({collection_id}) if collection_id is not None else None
        counted = facets_view(files.facets(principal, keys, collections=collections, where=where))
    return FileListView(
        files=[FileSummary.of(record) for record in page.files], next_cursor=page.next_cursor, facets=counted
    )


@router.patch("/v1/files/<file_id>/metadata")
def change_metadata(file_id: str, request: MetadataPatchRequest) -> FileView:
    """Set and remove keys of the file's metadata (write role); `expectedRevision` as last read, or a 409 with
    the current `metadataRevision`. Search sees the change as soon as this returns."""
    record = container().file_metadata_changes.change(
        current_principal(router),
        parse_id(file_id),
        set_values=request.set,
        remove=request.remove,
        expected_revision=request.expected_revision,
    )
    return FileView.of(record)


@router.post("/v1/files/metadata")
def change_many_metadata(request: BulkMetadataRequest) -> BulkMetadataView:
    """Up to 1,000 files' metadata changes, all applied or none (the first refusal names `files[i]`)."""
    revisions = container().file_metadata_changes.change_many(
        current_principal(router),
        [
            MetadataChange(item.file_id, item.set, tuple(item.remove), item.expected_revision, path=f"files[{i}]")
            for i, item in enumerate(request.files)
        ],
    )
    return BulkMetadataView(
        files=[MetadataRevisionView(file_id=file_id, metadata_revision=revisions[file_id]) for file_id in revisions]
    )


@router.get("/v1/collections/<collection_id>/metadata-schema")
def get_metadata_schema(collection_id: str) -> MetadataSchemaView:
    schema = container().file_metadata_changes.schema(current_principal(router), collection_id)
    return MetadataSchemaView.of(collection_id, schema)


@router.put("/v1/collections/<collection_id>/metadata-schema")
def put_metadata_schema(collection_id: str, body: Annotated[dict[str, Any], Body()]) -> MetadataSchemaView:
    """The collection's metadata schema (admin role): declared keys with their type, `required` and `allowed`
    values, and whether other keys are allowed. A 409 when a file already breaks it (nothing is stored)."""
    schema = container().file_metadata_changes.put_schema(current_principal(router), collection_id, body)
    return MetadataSchemaView.of(collection_id, schema)


@router.get("/v1/files/<file_id>")
def get_file(file_id: str) -> FileView:
    return FileView.of(container().files.get_file(current_principal(router), parse_id(file_id)))


@router.get("/v1/files/<file_id>/content")
def read_content(
    file_id: str,
    version_id: Annotated[str | None, Query(alias="versionId", max_length=64)] = None,
) -> Response[Any]:
    result = container().files.read(
        current_principal(router),
        parse_id(file_id),
        version_id=parse_id(version_id) if version_id else None,
        lifetime=MAX_SIGNED_READ_LIFETIME,
    )
    if isinstance(result, ProxiedContent):
        # A store that cannot sign: the bytes come through the API, still as an opaque attachment.
        return binary_response(
            result.content,
            content_type=SAFE_DOWNLOAD_TYPE,
            headers={"Content-Disposition": attachment_disposition(result.filename)},
        )
    return json_response(200, SignedReadView(url=result.url, expires_at=result.expires_at))


@router.post("/v1/files/<file_id>/scan")
def scan_file(file_id: str) -> Response[ScanView]:
    """OCR every page of the current version again, as a new processing attempt (202: it runs in the
    background; GET /v1/files/{id} shows its progress and, once done, the pages OCR read)."""
    started = container().document_reader.scan(current_principal(router), parse_id(file_id))
    return json_response(202, ScanView.model_validate(started.model_dump()))


@router.get(
    "/v1/files/<file_id>/pages/<page>",
    responses={
        200: {
            "description": "a signed GET of the page drawn as a PNG; the PNG itself where the store cannot sign",
            "content": {
                "application/json": {"model": PageImageView},
                PAGE_IMAGE_TYPE: {"schema": {"type": "string", "format": "binary"}},
            },
        }
    },
)
def read_page_image(
    file_id: str,
    page: str,
    version_id: Annotated[str | None, Query(alias="versionId", max_length=64)] = None,
) -> Response[Any]:
    """Page `page` (from 1) of a PDF, or of an image (a TIFF's frames are its pages), drawn as a PNG at most
    1,600 pixels on its longest side: for a viewer that highlights a citation's box on the page it cites."""
    if not _PAGE_NUMBER.fullmatch(page):
        raise InvalidRequest(f"page must be a whole number from 1, not {page[:20]!r}")
    image = container().page_images.page(
        current_principal(router),
        parse_id(file_id),
        int(page),
        version_id=parse_id(version_id) if version_id else None,
    )
    if image.content is not None:
        # A store that cannot sign: the drawing comes through the API, as the signed URL would serve it.
        return binary_response(
            image.content,
            content_type=PAGE_IMAGE_TYPE,
            headers={"Content-Disposition": attachment_disposition(image.filename)},
        )
    return json_response(200, PageImageView.of(image))


@router.get("/v1/files/<file_id>/document")
def read_document(
    file_id: str,
    cursor: Annotated[str | None, Query(max_length=16)] = None,
    version_id: Annotated[str | None, Query(alias="versionId", max_length=64)] = None,
) -> Response[DocumentWindowView]:
    """The extracted document of the newest stored version, or of `versionId` (an older version a citation
    names, while it lives), in windows; 409 with why when there is none to read."""
    reader = container().document_reader
    version = parse_id(version_id) if version_id else None
    entitled = reader.entitled(current_principal(router), parse_id(file_id), version)
    try:
        start = int(cursor) if cursor else 0
    except ValueError:
        start = -1  # refused as a cursor this API never returned, once the document is known to be readable
    document, shown = reader.window(entitled, start)
    return json_response(200, DocumentWindowView.of(entitled.record.file_id, entitled.version, document, shown))


@router.post("/v1/files/<file_id>/move")
def move_file(file_id: str, request: MoveRequest) -> FileView:
    """Into another collection (admin of both): readers of the old one lose it, readers of the new one gain it,
    in search too, the moment this returns."""
    return FileView.of(container().files.move_file(current_principal(router), parse_id(file_id), request.collection_id))


@router.delete("/v1/files/<file_id>")
def delete_file(file_id: str) -> Response[DeletionView]:
    parsed = parse_id(file_id)
    deletion = container().files.delete_file(current_principal(router), parsed)
    return json_response(202, DeletionView(file_id=parsed, bytes_left_to_sweep=deletion.bytes_left_to_sweep))


@router.delete("/v1/collections/<collection_id>/files")
def delete_collection_files(collection_id: str) -> Response[CollectionDeletionView]:
    deletion = container().files.delete_collection_files(current_principal(router), collection_id)
    return json_response(
        202,
        CollectionDeletionView(
            collection_id=collection_id,
            versions_deleting=deletion.versions_deleting,
            bytes_left_to_sweep=deletion.bytes_left_to_sweep,
        ),
    )
