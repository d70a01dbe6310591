"""One part of a running stack's container replaced for a test (a named fake), and put back after: every handler
that asks `container()` for it meanwhile gets the replacement, while the rest of the stack runs as it was."""

from collections.abc import Iterator
from contextlib import contextmanager
from typing import TypeVar

from shared.bootstrap import Container

Replacement = TypeVar("Replacement")
_OWN = frozenset({"settings", "adapters", "answer_tuning"})


@contextmanager
def replaced(container: Container, part: str, replacement: Replacement) -> Iterator[Replacement]:
    """`container.<part>` is `replacement` within the block. An adapter is replaced in the container's adapter set,
    and the services built over the old one are built again over the new one (and again after)."""
    if part == "database":
        # The other adapters are built over it: give a container its own with adapters_for(settings, database=…).
        raise ValueError("the database is not replaced under a running stack: build a Container over another one")
    adapter = part in Container.adapter_parts()
    if not adapter and part not in dir(Container):
        raise AttributeError(f"the container has no part named {part!r}")
    built = container.adapters.__dict__ if adapter else container.__dict__
    had, before = part in built, built.get(part)
    if adapter:
        _forget_services(container)
    built[part] = replacement
    try:
        yield replacement
    finally:
        if had:
            built[part] = before
        else:
            del built[part]
        if adapter:
            _forget_services(container)


def _forget_services(container: Container) -> None:
    for name in [name for name in container.__dict__ if name not in _OWN]:
        del container.__dict__[name]


class WithParts:
    """A stand-in for `container` whose given parts are a test's and every other part the container's own: put in
    place with `overridden(...)`, it is what a handler sees while the rest of the stack (its workers, a sweep it
    already built) keeps the real parts."""

    def __init__(self, container: Container, **given: object) -> None:
        self._container = container
        self._given = given

    def __getattr__(self, name: str) -> object:
        if name in self._given:
            return self._given[name]
        return getattr(self._container, name)
