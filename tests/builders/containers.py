"""One part of a running stack's container replaced for a test (a named fake), and put back after."""

from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

# The services built over a part: dropped with it, so they are rebuilt over the replacement (and over the original).
BUILT_OVER = {"summarizer": ("document_reader",)}


@contextmanager
def replaced(container: Any, part: str, replacement: Any) -> Iterator[Any]:
    built = container.__dict__
    for service in BUILT_OVER.get(part, ()):
        built.pop(service, None)
    built[part] = replacement
    try:
        yield replacement
    finally:
        del built[part]
        for service in BUILT_OVER.get(part, ()):
            built.pop(service, None)
