"""`quire smoke`: a deployment checked end to end through its public HTTP API, with the calls a product makes.

It uploads a small generated Markdown document through a presigned POST (as a browser does), waits until it
is indexed, searches for it and follows the citation to the cited lines, asks a grounded question it answers,
then deletes it: on success, on failure and on Ctrl-C alike. A random marker in the document, the question and
the search keeps concurrent smokes apart (each looks for its own file only). The same command checks the local
stack (`make test` runs it) and a real deployment (`--api` with a Cognito access token)."""

import argparse
import os
import random
import time
import uuid
from collections.abc import Callable
from typing import Any
from urllib.parse import quote

from shared.cli.common import CommandFailed, add_caller_options
from shared.cli.smoke_http import (
    UNANSWERED,
    StorageRefused,
    api_url_problem,
    get_public,
    post_form,
    refusal_message,
    unanswered_reason,
)
from shared.domain.auth import Role, with_role
from shared.local.paths import StackPaths

TOKEN_VARIABLE = "QUIRE_TOKEN"  # noqa: S105 - the name of the variable, not a token
MEDIA_TYPE = "text/markdown"
USAGE_ERROR = 2
DEFAULT_COLLECTION = "smoke"
DEFAULT_TIMEOUT_SECONDS = 300.0
# The health route answers 503 while an auto-paused Aurora resumes (seconds; longer after a long pause).
HEALTH_PATIENCE_SECONDS = 60.0
# Words the answer must contain: a random one of these per run, so a stale or invented answer cannot pass.
CODE_WORDS = ("heliotrope", "saltmarsh", "lodestar", "quillwort", "marigold", "tamarisk", "bramble", "larkspur")


class StepFailed(Exception):
    """A check that did not hold; the message says what was seen and where to look."""


def add_smoke_command(commands: "argparse._SubParsersAction[argparse.ArgumentParser]") -> None:
    smoke = commands.add_parser(
        "smoke",
        help="check a deployment through its API: upload, index, search, answer, delete; PASS or FAIL",
    )
    smoke.add_argument(
        "--api", help="the API's base URL (the stack's ApiUrl output); default: the local stack in this directory"
    )
    smoke.add_argument(
        "--collection",
        default=DEFAULT_COLLECTION,
        help=f"where the test document goes; the token needs the write role there (default: {DEFAULT_COLLECTION})",
    )
    smoke.add_argument(
        "--timeout",
        type=float,
        default=DEFAULT_TIMEOUT_SECONDS,
        help=f"seconds to wait for the document to be indexed (default {DEFAULT_TIMEOUT_SECONDS:g})",
    )
    smoke.add_argument(
        "--require-model",
        action="store_true",
        help="fail unless a model drafts the answer (a deployment with an answer model); else evidence only passes",
    )
    add_caller_options(smoke)
    smoke.set_defaults(run=cmd_smoke)


def cmd_smoke(args: argparse.Namespace) -> int:
    if not args.timeout > 0:
        raise CommandFailed("quire smoke: --timeout must be a positive number of seconds", USAGE_ERROR)
    api, token = _target(args)
    smoke = Smoke(api, token, args.collection, timeout=args.timeout, require_model=args.require_model)
    print(f"quire smoke: {api}, collection {args.collection!r}, marker {smoke.marker}", flush=True)
    return smoke.run()


def _target(args: argparse.Namespace) -> tuple[str, str]:
    """The API to check and the token to call it with; a usage error (exit 2) when either is missing or unsafe."""
    token = args.token or os.environ.get(TOKEN_VARIABLE)
    if args.api:
        problem = api_url_problem(args.api)
        if problem:
            raise CommandFailed(f"quire smoke: --api {args.api}: {problem}", USAGE_ERROR)
        if not token:
            raise CommandFailed(
                f"quire smoke: --api needs a token: --token, or {TOKEN_VARIABLE} to keep it out of shell history"
                " (on AWS a Cognito access token with the quire/api scope: docs/deployment.md, 'The smoke test')",
                USAGE_ERROR,
            )
        return args.api.rstrip("/"), token
    from shared.local.stack import running_state

    paths = StackPaths.in_directory()
    state = running_state(paths)
    if state is None:
        raise CommandFailed(
            "quire smoke: no --api, and no local stack runs in this directory: give the deployment's API"
            " (--api URL) or start the local stack (`quire up`)",
            USAGE_ERROR,
        )
    if not token:
        from shared.adapters.local.jwt_tokens import LocalTokenIssuer
        from shared.adapters.local.secret_files import read_or_create_secret

        principal = with_role(args.tenant, args.sub, [args.collection], Role.WRITE)
        token = LocalTokenIssuer(read_or_create_secret(paths.jwt_secret)).issue(principal)
    return str(state["api"]), token


class Smoke:
    """One run: its marker, what it created (to delete), and each step's outcome as it happens."""

    def __init__(self, api: str, token: str, collection: str, *, timeout: float, require_model: bool) -> None:
        from shared.local.api_client import ApiClient

        self.api = api
        self.client = ApiClient(api, token)
        self.collection = collection
        self.timeout = timeout
        self.require_model = require_model
        self.marker = f"quiresmoke{uuid.uuid4().hex[:16]}"
        self.code_word = random.choice(CODE_WORDS)  # noqa: S311 - a check word, not a secret
        self.filename = f"quire-smoke-{self.marker[len('quiresmoke') :]}.md"
        self.file_id: str | None = None
        self.version_id: str | None = None
        self.warnings: list[str] = []
        self.notes: list[str] = []
        self._begun = time.monotonic()

    def run(self) -> int:
        steps: list[tuple[str, Callable[[], str]]] = [
            ("health", self.health),
            ("caller", self.caller),
            ("upload", self.upload),
            ("indexed", self.indexed),
            ("search", self.search),
            ("answer", self.answer),
        ]
        failed: tuple[str, str] | None = None
        try:
            for name, check in steps:
                failure = self._step(name, check)
                if failure is not None:
                    failed = (name, failure)
                    break
        except KeyboardInterrupt:
            failed = ("interrupted", "stopped by Ctrl-C")
            print(f"  FAIL           interrupted: {failed[1]}", flush=True)
        finally:
            if self.file_id is not None:
                cleanup = self._step("delete", self.delete if failed is None else self.delete_unchecked)
                if cleanup is not None and failed is None:
                    failed = ("delete", cleanup)
        seconds = time.monotonic() - self._begun
        if failed is not None:
            print(f"FAIL at {failed[0]} after {seconds:.1f} s: {failed[1]}", flush=True)
            return 1
        warned = f" with {len(self.warnings)} warning(s): " + "; ".join(self.warnings) if self.warnings else ""
        noted = "".join(f" ({note})" for note in self.notes)
        print(f"PASS in {seconds:.1f} s{warned}{noted}", flush=True)
        return 0

    def _step(self, name: str, check: Callable[[], str]) -> str | None:
        """Run one check and print its line; the failure's message, or None when it held."""
        from shared.local.api_client import ApiError

        started = time.monotonic()
        try:
            detail, failure = check(), None
        except (StepFailed, StorageRefused) as error:
            failure = str(error)
        except ApiError as error:
            failure = refusal_message(error)
        except UNANSWERED as error:
            failure = f"the API did not answer ({unanswered_reason(error)}): is --api this deployment's ApiUrl?"
        except (ValueError, KeyError, TypeError) as error:
            failure = f"an answer the smoke test did not expect ({type(error).__name__}: {error}): is --api Quire's?"
        outcome = "ok" if failure is None else "FAIL"
        print(f"  {outcome:<4} {time.monotonic() - started:7.2f} s  {name:<8} {failure or detail}", flush=True)
        return failure

    # --- the steps, in order ------------------------------------------------------------------------------------

    def health(self) -> str:
        """The public liveness route, without the token (it takes none), retried while the database resumes."""
        from shared.local.api_client import ApiError

        deadline = time.monotonic() + HEALTH_PATIENCE_SECONDS
        while True:
            try:
                report = get_public(f"{self.api}/v1/health")
            except ApiError as error:
                # 503: the database did not answer (Aurora resuming from a pause does that for a while); 504: the
                # function waited for it past the gateway's patience.
                if error.status not in (503, 504) or time.monotonic() > deadline:
                    raise
                time.sleep(2)
                continue
            return f"the API answers; database {report['database']}"

    def caller(self) -> str:
        me = self.client.call("GET", "/v1/me")
        role = me["roles"].get(self.collection)
        who = f"tenant {me['tenantId']}, subject {me['subject']}"
        if role not in (Role.WRITE.value, Role.ADMIN.value):
            granted = f"the {role} role" if role else "no role"
            raise StepFailed(
                f"{who}: the token grants {granted} in {self.collection!r}, and the smoke test writes there: give"
                f" the user the write role in it (custom:write_collections) or choose another --collection"
            )
        return f"{who}: {role} role in {self.collection!r}"

    def upload(self) -> str:
        """Ask for a presigned POST, then send the document to it as a browser's form would."""
        content = self.document().encode()
        ticket = self.client.call(
            "POST",
            "/v1/uploads",
            {
                "collectionId": self.collection,
                "filename": self.filename,
                "mediaType": MEDIA_TYPE,
                "byteSize": len(content),
            },
        )
        # Known before the bytes are sent: a pending upload is deleted too when the POST fails.
        self.file_id, self.version_id = str(ticket["fileId"]), str(ticket["versionId"])
        post_form(ticket["upload"]["url"], ticket["upload"]["fields"], self.filename, content, MEDIA_TYPE)
        return f"{self.filename} ({len(content)} bytes) through a presigned POST: file {self.file_id}"

    def indexed(self) -> str:
        from shared.local.api_client import ApiError

        file_id = self._created()
        started = time.monotonic()
        deadline = started + self.timeout
        seen: tuple[str, str] | None = None
        delay = 0.1
        while True:
            try:
                record = self.client.call("GET", f"/v1/files/{file_id}")
            except ApiError as error:
                # 503: the database or storage did not answer this time; the wait goes on to its deadline.
                if error.status != 503 or time.monotonic() > deadline:
                    raise
                time.sleep(delay)
                continue
            current = record["current"]
            state, processing = current["state"], current["processingState"]
            if state == "rejected":
                raise StepFailed(f"the upload was refused when stored: {current['rejectionReason']}")
            if processing == "failed":
                failure = current.get("failure") or {}
                raise StepFailed(f"processing failed: {failure.get('reason')}: {failure.get('message')}")
            if processing == "indexed":
                return self._indexing_note(current)
            if (state, processing) != seen:
                # Each new state as it is seen: on AWS the wait can take minutes, and where it stops matters.
                seen = (state, processing)
                note = f" ({current['interruption']})" if current.get("interruption") else ""
                waited = time.monotonic() - started
                print(f"  {'…':<4} {waited:7.2f} s  {'indexed':<8} {state}, processing {processing}{note}", flush=True)
            if time.monotonic() > deadline:
                raise StepFailed(
                    f"not indexed after {self.timeout:g} s: stored as {state!r}, processing {processing!r}. The"
                    " pipeline is slow or stuck (docs/deployment.md, 'The smoke test', says where to look); a cold"
                    " deployment may need a longer --timeout"
                )
            time.sleep(delay)
            delay = min(delay * 1.5, 2.0)

    def _indexing_note(self, current: dict[str, Any]) -> str:
        indexing = current.get("indexing") or {}
        chunks, embedded = indexing.get("chunkCount"), indexing.get("embeddedChunkCount")
        note = f"{chunks} chunk(s), {embedded} embedded with {indexing.get('embeddingModel')}"
        if indexing.get("embeddingGap"):
            self.warnings.append(f"not embedded, found by keyword only: {indexing['embeddingGap']}")
            note += f"; WARNING: {indexing['embeddingGap']}"
        return note

    def search(self) -> str:
        hits, result = self._hits()
        mine = [index for index, hit in enumerate(hits) if hit["citation"]["fileId"] == self.file_id]
        if not mine:
            raise StepFailed(f"the search did not find the smoke document ({len(hits)} other hit(s))")
        hit = hits[mine[0]]
        where = self._resolve(hit["citation"])
        note = f"hit {mine[0] + 1} of {len(hits)}; its citation resolves: {where}"
        if not result["vectorAvailable"]:
            self.warnings.append("the semantic lane did not run: search was keyword only")
            note += "; WARNING: the semantic lane did not run"
        return note

    def _hits(self) -> tuple[list[dict[str, Any]], dict[str, Any]]:
        body = {"query": self.question(), "limit": 10, "filters": {"collections": [self.collection]}}
        result: dict[str, Any] = self.client.call("POST", "/v1/search", body)
        if result["outcome"] != "found":
            raise StepFailed(f"the search found nothing ({result['outcome']}): {result.get('message')}")
        return result["hits"], result

    def _resolve(self, citation: dict[str, Any]) -> str:
        """Follow the citation as a reader would: the version it names, its document, the lines it points to."""
        if citation["versionId"] != self.version_id:
            raise StepFailed(f"the citation names version {citation['versionId']}, not the one uploaded")
        blocks = self._document_blocks(citation["versionId"])
        first, last = citation.get("lineStart"), citation.get("lineEnd")
        if first is None or last is None:
            raise StepFailed(f"the citation of a Markdown file names no lines: {citation}")
        cited = [
            block
            for block in blocks
            if block["location"].get("lineStart", 0) <= last and block["location"].get("lineEnd", 0) >= first
        ]
        if not any(self.marker in block["text"] for block in cited):
            raise StepFailed(f"lines {first}-{last} of the document the citation names do not hold the marker")
        return f"{citation['filename']}, lines {first}-{last}"

    def _document_blocks(self, version_id: str) -> list[dict[str, Any]]:
        blocks: list[dict[str, Any]] = []
        cursor: str | None = None
        for _ in range(20):  # the document is three blocks: one window; a bound all the same
            query = f"?versionId={quote(version_id)}" + (f"&cursor={quote(cursor)}" if cursor else "")
            window = self.client.call("GET", f"/v1/files/{self.file_id}/document{query}")
            blocks.extend(window["blocks"])
            cursor = window["nextCursor"]
            if not cursor:
                break
        return blocks

    def answer(self) -> str:
        # Only this run's file (the filename filter: a substring holding the marker), so neither a concurrent
        # smoke's document nor anything else in the collection is part of the evidence.
        filters = {"collections": [self.collection], "filename": self.filename}
        body = {"question": self.question(), "filters": filters}
        answer: dict[str, Any] = self.client.call("POST", "/v1/answer", body)
        if answer["outcome"] == "refused":
            refusal = answer.get("refusal") or {}
            raise StepFailed(f"the answer was refused ({refusal.get('reason')}): {refusal.get('sentence')}")
        ours = {citation["number"] for citation in answer["citations"] if citation["fileId"] == self.file_id}
        citing = [claim for claim in answer["claims"] if ours & set(claim["citations"])]
        if not citing:
            raise StepFailed(f"no claim of the answer cites the smoke document ({len(answer['claims'])} claim(s))")
        if not any(self.code_word in claim["text"].lower() for claim in citing):
            raise StepFailed(f"the claims citing the smoke document do not say its code word ({self.code_word!r})")
        if answer["outcome"] == "answered":
            return f"answered by {answer['model']}: {len(citing)} claim(s) cite the smoke document, with the code word"
        # Evidence only: no model drafted it. Said as it is, never presented as a generated answer.
        why = answer.get("fallback") or "no model"
        if self.require_model:
            raise StepFailed(f"no model drafted the answer (--require-model): evidence only, because {why}")
        self.notes.append("the answer was evidence only: no model drafted it")
        return f"evidence only, not generated ({why}); the quoted sentence cites the smoke document"

    def delete(self) -> str:
        """Delete the file, then check a search no longer finds it."""
        self.delete_unchecked()
        hits, _ = self._hits_or_none()
        if any(hit["citation"]["fileId"] == self.file_id for hit in hits):
            raise StepFailed(f"file {self.file_id} was deleted but a search still finds it")
        return f"file {self.file_id} deleted; a search no longer finds it"

    def _hits_or_none(self) -> tuple[list[dict[str, Any]], dict[str, Any] | None]:
        try:
            return self._hits()
        except StepFailed:
            return [], None

    def delete_unchecked(self) -> str:
        from shared.local.api_client import ApiError

        try:
            self.client.call("DELETE", f"/v1/files/{self._created()}")
        except ApiError as error:
            raise StepFailed(
                f"file {self.file_id} could not be deleted ({refusal_message(error)}): delete it with"
                f" `quire rm {self.file_id}` or DELETE /v1/files/{self.file_id}"
            ) from None
        return f"file {self.file_id} deleted"

    # --- the document and the question --------------------------------------------------------------------------

    def document(self) -> str:
        return (
            f"# Quire smoke test {self.marker}\n\n"
            "This document was written by `quire smoke` to check a deployment, and is deleted when the check ends.\n\n"
            f"The code word of smoke test {self.marker} is {self.code_word}.\n"
        )

    def question(self) -> str:
        return f"What is the code word of smoke test {self.marker}?"

    def _created(self) -> str:
        if self.file_id is None:
            raise StepFailed("no file was created")
        return self.file_id
