"""What the adapter tests over botocore's Stubber share: a real client that never looks for credentials or a
region, and a stand-in for the back-off's sleep."""

from typing import Any, Literal, Self

import boto3
from botocore.exceptions import ReadTimeoutError
from botocore.stub import Stubber


def offline_client(
    service: Literal["bedrock-runtime", "bedrock-agent-runtime", "s3", "textract", "transcribe"],
) -> Any:
    """A real client for a Stubber to answer: a fixed region and dummy keys, so nothing is looked up."""
    return boto3.client(service, region_name="us-east-1", aws_access_key_id="testing", aws_secret_access_key="testing")


class Delays:
    """Stands in for time.sleep: records what the back-off asked for, waits for nothing."""

    def __init__(self) -> None:
        self.asked: list[float] = []

    def __call__(self, seconds: float) -> None:
        self.asked.append(seconds)


def bedrock_client() -> Any:
    return offline_client("bedrock-runtime")


class ConverseTimesOut:
    """A bedrock-runtime client whose every Converse call times out (what botocore raises after its read timeout);
    it counts the calls."""

    def __init__(self) -> None:
        self.calls = 0
        self.meta = bedrock_client().meta

    def converse(self, **kwargs: Any) -> dict[str, Any]:
        self.calls += 1
        raise ReadTimeoutError(endpoint_url="https://bedrock-runtime.us-east-1.amazonaws.com")


class StubbedConverse:
    """A model at the Converse boundary, scripted: a real bedrock-runtime client whose answers come from `answers` and
    `fails`, in order (botocore's Stubber), and the requests the adapter built, as it passed them."""

    def __init__(self) -> None:
        self.client = bedrock_client()
        self.requests: list[dict[str, Any]] = []
        self.client.meta.events.register(
            "before-parameter-build.bedrock-runtime.Converse", lambda params, **_: self.requests.append(params)
        )
        self.stub = Stubber(self.client)
        self.stub.activate()

    def answers(self, response: dict[str, Any]) -> Self:
        self.stub.add_response("converse", response)
        return self

    def fails(self, code: str, status: int = 400, message: str = "") -> Self:
        self.stub.add_client_error(
            "converse", service_error_code=code, service_message=message, http_status_code=status
        )
        return self
