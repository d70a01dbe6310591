"""A Container of its own with other tenant limits, wired into the API and Object Created handlers for a test."""

from collections.abc import Iterator
from contextlib import contextmanager

from shared.bootstrap import Container
from shared.ports import OcrProvider
from tests.integration.files_stack import Stack


@contextmanager
def limited(stack: Stack, *, ocr: OcrProvider | None = None, **limits: object) -> Iterator[Container]:
    """The API and the Object Created handler on a Container of their own, with `limits` (QUIRE_LIMIT_* names)."""
    from functions.api import handler as api_handler
    from functions.on_object_created import handler as created_handler

    container = Container(stack.container.settings.model_copy(update=limits))
    if ocr is not None:
        container.ocr = ocr
    original_api, original_created = api_handler.container, created_handler.container
    api_handler.container = created_handler.container = container
    try:
        yield container
    finally:
        api_handler.container, created_handler.container = original_api, original_created
        container.workflow.drain()  # type: ignore[attr-defined]
        container.database.close()
