"""A Container of its own with other tenant limits, wired into the API and Object Created handlers for a test."""

from collections.abc import Iterator
from contextlib import contextmanager

from shared.bootstrap import Container, adapters_for, overridden
from shared.ports import OcrProvider
from tests.integration.files_stack import Stack


@contextmanager
def limited(stack: Stack, *, ocr: OcrProvider | None = None, **limits: object) -> Iterator[Container]:
    """The API and the Object Created handler on a Container of their own, with `limits` (QUIRE_LIMIT_* names)."""
    settings = stack.container.settings.model_copy(update=limits)
    container = Container(settings, adapters_for(settings, **({"ocr": ocr} if ocr is not None else {})))
    try:
        with overridden(container):
            yield container
    finally:
        container.workflow.drain()  # type: ignore[attr-defined]
        container.database.close()
