"""`quire demo`: the product on one machine. Documents of every format go in through the browser path
(presigned POST), are extracted, chunked, embedded and indexed, and come back as cited search results."""

import re
import sys
import time
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from shared.local.api_client import ApiClient, ApiError
from shared.local.demo_report import run_report
from shared.local.search_output import print_answer, print_search_result

DEMO_TENANT = "demo"
DEMO_COLLECTION = "demo"
# For the generated corpus: an exact identifier, a paraphrase that shares few words with its answer,
# a lookup in a table, a slide, and a question nothing answers.
DEMO_QUERIES = (
    "ERR-4021",
    "why could customers not pay for their orders in March?",
    "how many days of annual leave do employees in Germany get",
    "when does the new warehouse robot launch and how long does its battery last",
    "who certified the pressure vessel and until when",
    "Kamchatka returns margin",
    "recipe for sourdough bread with rye flour",
    # Said in the stand-up recording, when the demo could make one: cited to its second.
    "who builds the charging docks for the R2 robot",
)
# Grounded answers over the generated corpus: one the documents answer, one they cannot.
DEMO_QUESTIONS = (
    "Why could customers not pay for their orders in March?",
    "What is the recipe for sourdough bread with rye flour?",
)


def describe(record: dict[str, Any]) -> str:
    current = record["current"]
    if current["state"] == "rejected":
        outcome = f"rejected: {current['rejectionReason']}"
    elif current["processingState"] == "failed":
        outcome = f"failed: {current['failure']['message']}"
    elif current["processingState"] == "interrupted":
        outcome = f"interrupted, retried automatically: {current.get('interruption')}"
    elif current.get("indexing"):
        indexing = current["indexing"]
        outcome = f"indexed: {indexing['chunkCount']} chunks, {indexing['embeddedChunkCount']} embedded"
        if indexing.get("embeddingGap"):
            outcome += f" (keyword only: {indexing['embeddingGap']})"
    else:
        outcome = current["processingState"]
    return f"  {record['filename']:<36} {current['mediaType']:<28} {outcome}{_recognition(current)}"


def _recognition(current: dict[str, Any]) -> str:
    """What OCR, vision and the speech engine did, when anything needed them."""
    notes = []
    ocr = current.get("ocr")
    if ocr and ocr["state"] == "recognized":
        flag = " LOW CONFIDENCE: words may be misread" if ocr["lowConfidence"] else ""
        notes.append(f"OCR pages {','.join(map(str, ocr['pages']))} at {ocr['confidence']:.2f}{flag}")
    elif ocr:
        notes.append(f"OCR {ocr['state']}: {ocr['detail']}")
    transcription = current.get("transcription")
    if transcription and transcription["state"] == "recognized":
        flag = " LOW CONFIDENCE: words may be misheard" if transcription["lowConfidence"] else ""
        notes.append(
            f"transcribed {transcription['durationSeconds']:.0f} s ({transcription['language']}) by"
            f" {transcription['engine']} at {transcription['confidence']:.2f}{flag}"
        )
    vision = current.get("vision")
    if vision and vision["state"] == "described":
        notes.append(f"described by {vision['model']}")
    elif vision:
        notes.append(f"no description ({vision['state']})")
    return "; " + "; ".join(notes) if notes else ""


def queries_for(client: ApiClient, file_ids: list[str]) -> list[str]:
    """For a corpus the demo did not write: an identifier-shaped word and a heading or opening phrase
    taken from the documents themselves, so the searches have something to find."""
    found: list[str] = []
    for file_id in file_ids[:3]:
        try:
            window = client.call("GET", f"/v1/files/{file_id}/document")
        except ApiError:
            continue
        text = window["markdown"]
        identifier = re.search(r"\b[A-Za-z]+-\d+[A-Za-z0-9-]*\b|\b[A-Z]{2,}\d+\b", text)
        if identifier and identifier.group(0) not in found:
            found.append(identifier.group(0))
        words = re.findall(r"[A-Za-z][A-Za-z'-]+", text)
        if len(words) > 8:
            found.append(" ".join(words[2:9]))
    return found[:4] or ["introduction"]


def run_demo(client: ApiClient, documents: list[Path], queries: list[str] | None, questions: Sequence[str] = ()) -> int:
    print(f"\nIngesting {len(documents)} documents (upload, extract, chunk, embed, index):")
    begun = time.monotonic()
    file_ids: list[str] = []
    failures = 0
    for path in documents:
        try:
            ticket = client.upload(path, DEMO_COLLECTION)
        except (ApiError, OSError, ValueError) as error:
            print(f"  {path.name:<36} refused: {error}")
            failures += 1
            continue
        file_ids.append(ticket["fileId"])
    for file_id in file_ids:
        record = client.wait_until_processed(file_id)
        print(describe(record))
        failures += record["current"]["processingState"] != "indexed"
    print(f"  ({time.monotonic() - begun:.1f} s)")
    results: list[tuple[str, dict[str, Any]]] = []
    for query in queries if queries is not None else queries_for(client, file_ids):
        print()
        try:
            result = client.call("POST", "/v1/search", {"query": query, "limit": 3})
        except ApiError as error:
            print(f"search failed: {error}", file=sys.stderr)
            return 1
        print_search_result(query, result)
        results.append((query, result))
    if failures == len(documents):
        return 1
    for question in questions:
        print()
        try:
            answer = client.call("POST", "/v1/answer", {"question": question})
        except ApiError as error:
            print(f"answer failed: {error}", file=sys.stderr)
            return 1
        print_answer(answer)
    return run_report(client, DEMO_COLLECTION, results)
