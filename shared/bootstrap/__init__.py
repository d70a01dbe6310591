"""Composition root: the one place that turns settings into adapters and services.

Handlers call `container()`, the process's Container (built from the environment's settings on first use); tests
put their own in its place with `overridden(...)`. Local and AWS differ only in `adapters.py`. The parts:
`adapters.py` (what is built per runtime), `container.py` (the services over them), `clients.py` (the AWS SDK
clients), `steps.py` (a pipeline step's handler), `registries.py` (parsers and renderers).
"""

import threading
from collections.abc import Iterator
from contextlib import contextmanager
from typing import TypeVar

from shared.bootstrap.adapters import Adapters, AwsAdapters, ConfigurationError, LocalAdapters, adapters_for
from shared.bootstrap.container import Container
from shared.bootstrap.registries import cognito_signing_keys, document_parsers, export_renderers
from shared.bootstrap.steps import LambdaStep, infrastructure_outage, workflow_step
from shared.config import load_settings
from shared.tenancy import acting_for_owner_of, acting_for_tenant, acting_tenant

__all__ = [
    "Adapters",
    "AwsAdapters",
    "ConfigurationError",
    "Container",
    "LambdaStep",
    "LocalAdapters",
    "acting_for_owner_of",
    "acting_for_tenant",
    "acting_tenant",
    "adapters_for",
    "cognito_signing_keys",
    "container",
    "document_parsers",
    "export_renderers",
    "infrastructure_outage",
    "overridden",
    "workflow_step",
]

_built: list[Container] = []
_in_place: list[Container] = []
_lock = threading.Lock()
Replacement = TypeVar("Replacement")


def container() -> Container:
    """The process's container: the innermost `overridden` one, else built once from the environment's settings."""
    if _in_place:
        return _in_place[-1]
    if not _built:
        with _lock:
            if not _built:
                _built.append(Container(load_settings()))
    return _built[0]


@contextmanager
def overridden(replacement: Replacement) -> Iterator[Replacement]:
    """Within this block, `container()` is `replacement` (a Container, or a stand-in with the parts a test's
    handler reads): the one way a test puts its own in place, in every handler at once."""
    _in_place.append(replacement)  # type: ignore[arg-type]  # a stand-in answers what its handler asks for
    try:
        yield replacement
    finally:
        _in_place.remove(replacement)  # type: ignore[arg-type]
