"""A named fake of Amazon Transcribe's worker, behind moto's Transcribe API.

moto keeps a transcription job's state (QUEUED, IN_PROGRESS, COMPLETED: one step a GetTranscriptionJob) and answers
StartTranscriptionJob's ConflictException and a deleted job's BadRequestException as Transcribe does, but writes no
output. This worker does what Transcribe does between those states: it reads the recording and writes the output
JSON, with the credentials of the session that started the job (Transcribe reads and writes as its caller), so the
IAM judge authorizes both against that session's policies. The transcript it writes is the scripted one it is given,
shaped as Transcribe's batch output (items with ids, an audio segment per sentence).
"""

import json
import re
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass, field
from typing import Any

import boto3
import pytest
from moto.core.responses import ActionResult
from moto.sts.models import sts_backends
from moto.transcribe.models import transcribe_backends
from moto.transcribe.responses import TranscribeResponse

from tests.builders.moto_stack import ACCOUNT, REGION

_CREDENTIAL = re.compile(r"Credential=([^/]+)/")


def transcribe_output(job_name: str, sentences: Sequence[str], *, seconds_per_word: float = 0.3) -> dict[str, Any]:
    """Transcribe's output JSON for `sentences` said one after another, a word every `seconds_per_word`."""
    items: list[dict[str, Any]] = []
    segments: list[dict[str, Any]] = []
    clock = 0.0
    for sentence in sentences:
        first, ids = clock, []
        words = sentence.rstrip(".").split()
        for word in words:
            ids.append(len(items))
            items.append(
                {
                    "id": len(items),
                    "type": "pronunciation",
                    "alternatives": [{"confidence": "0.97", "content": word}],
                    "start_time": f"{clock:.2f}",
                    "end_time": f"{clock + seconds_per_word * 0.9:.2f}",
                }
            )
            clock += seconds_per_word
        ids.append(len(items))
        items.append({"id": len(items), "type": "punctuation", "alternatives": [{"confidence": "0.0", "content": "."}]})
        segments.append(
            {
                "id": len(segments),
                "transcript": sentence,
                "start_time": f"{first:.2f}",
                "end_time": f"{clock - seconds_per_word * 0.1:.2f}",
                "items": ids,
            }
        )
    return {
        "jobName": job_name,
        "accountId": ACCOUNT,
        "status": "COMPLETED",
        "results": {"transcripts": [{"transcript": " ".join(sentences)}], "items": items, "audio_segments": segments},
    }


@dataclass
class TranscribeWorker:
    sentences: Sequence[str]
    # Job name → (the starter's access key id, the StartTranscriptionJob request)
    started: dict[str, tuple[str, dict[str, Any]]] = field(default_factory=dict)
    written: dict[str, str] = field(default_factory=dict)  # job name → output key
    read_bytes: dict[str, int] = field(default_factory=dict)  # job name → bytes of the recording read

    @contextmanager
    def working(self) -> Iterator["TranscribeWorker"]:
        start, get = TranscribeResponse.start_transcription_job, TranscribeResponse.get_transcription_job
        worker = self

        def started(response: TranscribeResponse) -> ActionResult:
            request = json.loads(response.body)
            worker.started[request["TranscriptionJobName"]] = (worker._access_key(response), request)
            return start(response)

        def polled(response: TranscribeResponse) -> ActionResult:
            name = json.loads(response.body)["TranscriptionJobName"]
            job = transcribe_backends[ACCOUNT][REGION].transcriptions.get(name)
            # The next poll completes it: the output is there before the job says so, as on Transcribe.
            if job is not None and job.status == "IN_PROGRESS" and name not in worker.written:
                worker._work(name)
            return get(response)

        with pytest.MonkeyPatch.context() as patch:
            patch.setattr(TranscribeResponse, "start_transcription_job", started)
            patch.setattr(TranscribeResponse, "get_transcription_job", polled)
            yield self

    def jobs(self) -> set[str]:
        """The jobs moto still holds (a discarded job is deleted)."""
        return set(transcribe_backends[ACCOUNT][REGION].transcriptions)

    @staticmethod
    def _access_key(response: TranscribeResponse) -> str:
        match = _CREDENTIAL.search(response.headers.get("Authorization", ""))
        assert match is not None, "a signed request names its access key"
        return match[1]

    def _work(self, name: str) -> None:
        access_key, request = self.started[name]
        caller = sts_backends[ACCOUNT]["aws"].get_assumed_role_from_access_key(access_key)
        assert caller is not None, "the job was started with an assumed role's session"
        s3 = boto3.Session(
            aws_access_key_id=caller.access_key_id,
            aws_secret_access_key=caller.secret_access_key,
            aws_session_token=caller.session_token,
            region_name=REGION,
        ).client("s3")
        bucket, _, key = request["Media"]["MediaFileUri"].removeprefix("s3://").partition("/")
        self.read_bytes[name] = len(s3.get_object(Bucket=bucket, Key=key)["Body"].read())
        output = json.dumps(transcribe_output(name, self.sentences)).encode("utf-8")
        s3.put_object(Bucket=request["OutputBucketName"], Key=request["OutputKey"], Body=output)
        self.written[name] = request["OutputKey"]
