"""Grounded answers: ask, read back, and say whether an answer helped (docs/answers.md)."""

from aws_lambda_powertools.event_handler import Response
from aws_lambda_powertools.event_handler.router import APIGatewayHttpRouter

from functions.api.routes.context import current_principal, json_response
from functions.views.answers import AnswerRequestBody, AnswerView, FeedbackRequest, FeedbackView
from shared.bootstrap import container

router = APIGatewayHttpRouter()  # type: ignore[no-untyped-call]


@router.post("/v1/answer")
def answer(request: AnswerRequestBody) -> AnswerView:
    """An answer from the caller's collections, every claim cited and validated against the stored evidence:
    `answered` (a model's validated claims), `evidence_only` (sentences of the evidence, verbatim) or `refused`
    (no answer text; `refusal` says why). Confidence is computed from retrieval and validation, with its factors."""
    return AnswerView.of(container().answers.answer(current_principal(router), request.to_request()))


@router.get("/v1/answers/<answer_id>")
def stored_answer(answer_id: str) -> AnswerView:
    """An answer the caller asked earlier, its citations re-checked against what the caller may read now."""
    return AnswerView.of(container().answers.stored(current_principal(router), answer_id))


@router.post("/v1/answers/<answer_id>/feedback")
def feedback(answer_id: str, request: FeedbackRequest) -> Response[FeedbackView]:
    """helpful, wrong_citation (optionally which one) or wrong_answer, with a note: on the caller's own answers."""
    recorded = container().answers.feedback(current_principal(router), answer_id, request.to_feedback())
    return json_response(201, FeedbackView(feedback_id=recorded, answer_id=answer_id))
