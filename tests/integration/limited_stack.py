"""A Container of its own, with other tenant limits or other adapters, wired into the handlers for a test."""

from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import replace
from typing import Any

from shared.bootstrap import Container, adapters_for, overridden
from shared.ports import OcrProvider
from tests.integration.conftest import stop_webhook_deliveries
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


def stack_with(stack: Stack, **adapters: Any) -> Iterator[Stack]:
    """The stack on a Container of its own whose `adapters` (adapters_for's names) replace the stack's, wired into the
    handlers while the generator is suspended; drained and closed after it."""
    settings = stack.container.settings
    container = Container(settings, adapters_for(settings, webhook_sender=stack.container.webhook_sender, **adapters))
    with overridden(container):
        try:
            yield replace(stack, container=container)
        finally:
            container.workflow.drain()  # type: ignore[attr-defined]
            stop_webhook_deliveries(container)
            container.database.close()
