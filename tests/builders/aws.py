"""What the adapter tests over botocore's Stubber share: a real client that never looks for credentials or a
region, and a stand-in for the back-off's sleep."""

from typing import Any, Literal

import boto3


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
