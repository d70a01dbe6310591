"""A pipeline step's Lambda handler (`workflow_step`), and what counts as the infrastructure not answering."""

import functools
from collections.abc import Callable
from typing import Any, TypeVar

from shared.adapters.transient import is_transient
from shared.domain.errors import InfrastructureUnavailable
from shared.domain.steps import StepInput, StepOutcome
from shared.tenancy import acting_for_tenant

StepRequest = TypeVar("StepRequest", bound=StepInput)
LambdaStep = Callable[[dict[str, Any], Any], dict[str, Any]]


def infrastructure_outage(error: BaseException) -> bool:
    """Whether `error` is the infrastructure not answering (the database restarting, a throttled service), which a
    later try may not meet, rather than a bug: the API answers the first 503 with Retry-After."""
    return isinstance(error, InfrastructureUnavailable) or is_transient(error)


def workflow_step(reads: type[StepRequest]) -> Callable[[Callable[[StepRequest, Any], StepOutcome]], LambdaStep]:
    """A pipeline step's Lambda handler: the event parsed as `reads` (the step's input model), the outcome
    returned as the state machine carries it (`to_state`).

    How it reports failure to the workflow: a document problem never raises (the step records it and
    returns). Of what does raise, an infrastructure error is re-raised as `InfrastructureUnavailable`, the
    error name the state machine's Retry matches (with back-off); anything else keeps its own name and goes
    straight to the Catch, which records the interruption."""

    def decorate(handler: Callable[[StepRequest, Any], StepOutcome]) -> LambdaStep:
        @functools.wraps(handler)
        def step(event: dict[str, Any], context: Any) -> dict[str, Any]:
            try:
                request = reads.of(event)
                with acting_for_tenant(request.tenant_id):
                    return handler(request, context).to_state()
            except InfrastructureUnavailable:
                raise
            except Exception as error:
                if is_transient(error):
                    raise InfrastructureUnavailable(f"{type(error).__name__}: {error}"[:1000]) from error
                raise

        step.reads = reads  # type: ignore[attr-defined]  # the model a test checks against the graph
        return step

    return decorate
