"""The answer evaluation's run: every labelled question asked through the product's `AnswerService` by its own
tenant's caller and by a decoy tenant's, the demo corpus uploaded, SciFact indexed, and the sentence floor swept."""

import time
import uuid
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass
from datetime import timedelta
from pathlib import Path
from typing import Any

from shared.bootstrap import Container
from shared.domain.answers import AnswerOutcome, AnswerRequest
from shared.domain.auth import Role, with_role
from shared.domain.citations import excerpt_is_at_location
from shared.domain.document import ExtractedDocument
from shared.domain.grounding import SENTENCE_MARGIN, cosine
from shared.domain.search import Citation
from shared.domain.similarity import MINILM_SCALE, SimilarityScale
from shared.local.answer_evaluation.labels import (
    DEMO_COLLECTION,
    RESTRICTED,
    Expectation,
    LabelledQuestion,
    decoy_dataset,
    demo_questions,
    encyclopedia_dataset,
    encyclopedia_questions,
    load_labels,
    scifact_questions,
)
from shared.local.answer_evaluation.metrics import (
    CitedChunk,
    Observation,
    metrics,
    sweep_row,
)
from shared.local.answer_evaluation.report import observations_json
from shared.local.evaluation import COLLECTION as BEIR_COLLECTION
from shared.local.evaluation import Dataset, Evaluation, as_document
from shared.services.answers import AnswerTuning, StageTimes

# The sentence floors the calibration sweeps: steps around the embedding model's own floor (its similarity scale),
# since each model spreads its cosines differently (MiniLM: 0.2-0.45; multilingual-e5-small: 0.7-0.95).
CALIBRATION_STEPS = (-0.1, -0.05, 0.0, 0.05, 0.1, 0.15)


def calibration_floors(scale: SimilarityScale) -> tuple[float, ...]:
    """The floors swept for a model of `scale`: its sentence floor and CALIBRATION_STEPS around it, within a cosine."""
    return tuple(round(min(1.0, max(-1.0, scale.sentence + step)), 2) for step in CALIBRATION_STEPS)


CALIBRATION_FLOORS = calibration_floors(MINILM_SCALE)
# The sentence margins swept (cosine): 0 quotes the answering sentence alone, 1 every one the floor lets through
# (up to three, as before the margin).
CALIBRATION_MARGINS = (0.0, 0.01, 0.02, 0.05, 0.1, 1.0)


def _flat(text: str) -> str:
    return " ".join(text.split())


@dataclass
class Tenant:
    """A tenant questions are asked in: its files, how to read a cited version's document, what it may read."""

    tenant_id: str
    readable: frozenset[str]
    files: dict[str, str]  # file id → document name (filename, or SciFact corpus id)
    document_of: Callable[[Citation], ExtractedDocument | None]


class AnswerEvaluation:
    def __init__(
        self,
        container: Container,
        *,
        progress: Callable[[str], None] = lambda _: None,
        sentence_floor: float | None = None,
        sentence_margin: float = SENTENCE_MARGIN,
    ) -> None:
        self._container = container
        self._progress = progress
        self._sentence_floor = sentence_floor
        # The product's service with its cache off: every question answered afresh (a calibration run or a
        # second run of the same index would otherwise be served its first answers, and their latency).
        tuning = AnswerTuning(
            cache_lifetime=timedelta(0), sentence_floor=sentence_floor, sentence_margin=sentence_margin
        )
        self._answers = Container(container.settings, container.adapters, answer_tuning=tuning).answers

    def at_sentence_floor(self, value: float) -> "AnswerEvaluation":
        """The same evaluation with the service's sentence floor at `value` (the calibration's sweep)."""
        return AnswerEvaluation(self._container, progress=self._progress, sentence_floor=value)

    def at_sentence_margin(self, value: float) -> "AnswerEvaluation":
        """The same evaluation with the service's sentence margin at `value` (the calibration's margin sweep)."""
        return AnswerEvaluation(self._container, progress=self._progress, sentence_margin=value)

    # --- tenants

    def files_of(self, tenant_id: str) -> dict[str, tuple[str, str]]:
        """file id → (filename, collection) of the tenant's files."""
        with self._container.database.tenant_transaction(tenant_id) as conn:
            rows = conn.execute(
                "SELECT file_id::text, filename, collection_id FROM files WHERE tenant_id = %s", (tenant_id,)
            ).fetchall()
        return {file_id: (filename, collection) for file_id, filename, collection in rows}

    def stored_tenant(self, tenant_id: str, readable: frozenset[str]) -> Tenant:
        """A tenant whose documents were uploaded and extracted: cited versions are read from the store."""
        read: dict[str, ExtractedDocument | None] = {}

        def document_of(citation: Citation) -> ExtractedDocument | None:
            if citation.version_id not in read:
                found = self._container.file_metadata.find_version(tenant_id, uuid.UUID(citation.version_id))
                read[citation.version_id] = self._container.documents.read(found[1]) if found else None
            return read[citation.version_id]

        names = {file_id: filename for file_id, (filename, _) in self.files_of(tenant_id).items()}
        return Tenant(tenant_id, readable, names, document_of)

    def indexed_tenant(self, tenant_id: str, readable: frozenset[str], dataset: Dataset) -> Tenant:
        """A tenant `Evaluation.ingest` wrote ("<corpus id>.txt" files): documents rebuilt from the dataset."""
        names = {file_id: filename.removesuffix(".txt") for file_id, (filename, _) in self.files_of(tenant_id).items()}
        with self._container.database.tenant_transaction(tenant_id) as conn:
            rows = conn.execute(
                "SELECT version_id::text, file_id::text FROM file_versions WHERE tenant_id = %s", (tenant_id,)
            ).fetchall()
        version_file = dict(rows)

        def document_of(citation: Citation) -> ExtractedDocument | None:
            name = names.get(version_file.get(citation.version_id, ""))
            if name is None or name not in dataset.corpus:
                return None
            return as_document(*dataset.corpus[name])

        return Tenant(tenant_id, readable, names, document_of)

    def gold_labels_found(self, tenant: Tenant, questions: Sequence[LabelledQuestion]) -> list[str]:
        """Labels whose gold snippet is in no chunk of its gold file: a mislabelled question (or an extraction
        that changed), reported rather than scored as a miss."""
        chunks = self._chunks_by_name(tenant)
        return [
            f"{question.id}: {gold.document!r} has no chunk holding {gold.snippet!r}"
            for question in questions
            for gold in question.gold
            if gold.snippet and not any(_flat(gold.snippet) in body for body in chunks.get(gold.document, []))
        ]

    def _chunks_by_name(self, tenant: Tenant) -> dict[str, list[str]]:
        with self._container.database.tenant_transaction(tenant.tenant_id) as conn:
            rows = conn.execute(
                "SELECT file_id::text, substr(content, body_offset + 1) FROM knowledge_chunks WHERE tenant_id = %s",
                (tenant.tenant_id,),
            ).fetchall()
        found: dict[str, list[str]] = {}
        for file_id, body in rows:
            found.setdefault(tenant.files.get(file_id, "?"), []).append(_flat(body))
        return found

    # --- one question

    def ask(self, tenant: Tenant, question: LabelledQuestion, *, own: bool, readable: frozenset[str]) -> Observation:
        principal = with_role(tenant.tenant_id, "quire-eval", readable, Role.READ)
        times = StageTimes()
        begun = time.perf_counter()
        answer = self._answers.answer(principal, AnswerRequest(question=question.question), times)
        milliseconds = (time.perf_counter() - begun) * 1000
        bodies = {
            snapshot.chunk_id: snapshot.body
            for snapshot in self._container.knowledge.snapshots(
                tenant.tenant_id, readable, [citation.chunk_id for citation in answer.citations]
            )
        }
        gold_names = {gold.document for gold in question.gold}
        snippets = [_flat(gold.snippet) for gold in question.gold if gold.snippet]
        cited: list[CitedChunk] = []
        for citation in answer.citations:
            source = citation.citation
            document = tenant.document_of(source) if source.file_id in tenant.files else None
            name = tenant.files.get(source.file_id, "?")
            body = _flat(bodies.get(citation.chunk_id, ""))
            cited.append(
                CitedChunk(
                    number=citation.number,
                    document=name,
                    collection_id=source.collection_id,
                    gold=own and name in gold_names,
                    gold_passage=own and name in gold_names and any(snippet in body for snippet in snippets),
                    resolvable=document is not None and excerpt_is_at_location(document, source),
                    foreign=source.file_id not in tenant.files,
                )
            )
        numbered = {citation.number: citation.chunk_id for citation in answer.citations}
        extractive = answer.outcome is AnswerOutcome.EVIDENCE_ONLY
        verbatim = sum(
            any(claim.text in bodies.get(numbered.get(number, ""), "") for number in claim.citations)
            for claim in answer.claims
        )
        scores: list[float] = []
        if extractive and answer.claims:
            embedder = self._container.embedder
            vectors = embedder.embed_queries([question.question]) + embedder.embed(
                [claim.text for claim in answer.claims]
            )
            scores = [round(cosine(vectors[0], vector), 4) for vector in vectors[1:]]
        return Observation(
            question=question,
            own=own,
            outcome=answer.outcome,
            refusal=answer.refusal.reason.value if answer.refusal else None,
            citations=tuple(cited),
            claims=len(answer.claims) if extractive else 0,
            verbatim_claims=verbatim if extractive else 0,
            milliseconds=round(milliseconds, 1),
            stages={name: round(spent, 2) for name, spent in times.stages.items()},
            claim_scores=tuple(scores),
            claim_citations=tuple(claim.citations for claim in answer.claims) if extractive else (),
        )

    def run(self, tenant: Tenant, questions: Sequence[LabelledQuestion], *, other: Tenant | None) -> list[Observation]:
        """Every question by its own tenant's caller (an unauthorised one without the restricted collection), and
        by the other tenant's caller (reading every collection name the asker could) when there is one."""
        observations = []
        for number, question in enumerate(questions, start=1):
            readable = (
                tenant.readable - {RESTRICTED} if question.expect is Expectation.UNAUTHORISED else tenant.readable
            )
            observations.append(self.ask(tenant, question, own=True, readable=readable))
            if other is not None:
                observations.append(self.ask(other, question, own=False, readable=other.readable | tenant.readable))
            if number % 20 == 0:
                self._progress(f"asked {number}/{len(questions)} questions")
        return observations

    # --- SciFact: the unauthorised questions' gold made unreadable while they are asked

    @contextmanager
    def restricted(self, tenant_id: str, documents: set[str]) -> Iterator[None]:
        """The files of `documents` (corpus ids) moved into the collection `restricted`, and back afterwards, so a
        kept tenant is left as `quire eval` expects it."""
        wanted = {f"{document}.txt" for document in documents}
        files = [
            (uuid.UUID(file_id), collection)
            for file_id, (filename, collection) in self.files_of(tenant_id).items()
            if filename in wanted
        ]
        metadata = self._container.file_metadata
        for file_id, collection in files:
            if collection != RESTRICTED:
                metadata.move_file(tenant_id, file_id, from_collection=collection, to_collection=RESTRICTED)
        try:
            yield
        finally:
            for file_id, _ in files:
                metadata.move_file(tenant_id, file_id, from_collection=RESTRICTED, to_collection=BEIR_COLLECTION)

    # --- the decoy tenant

    def decoy(self, labels: dict[str, Any]) -> tuple[Evaluation, Tenant]:
        dataset = decoy_dataset(labels)
        evaluation = Evaluation(self._container)
        evaluation.ingest(dataset)
        return evaluation, self.indexed_tenant(evaluation.tenant, frozenset({BEIR_COLLECTION}), dataset)


# --- the demo corpus, uploaded ---------------------------------------------------------------------------------

# Uploads (path, collection) pairs into one tenant and returns once every one is processed.
Uploader = Callable[[Sequence[tuple[Path, str]]], None]


def demo_uploads(directory: Path, labels: dict[str, Any]) -> list[tuple[Path, str]]:
    """The demo corpus written into `directory`, each file with its collection."""
    from shared.local.demo_corpus import write_demo_corpus

    restricted = set(labels["demo"]["restricted"])
    return [(path, RESTRICTED if path.name in restricted else DEMO_COLLECTION) for path in write_demo_corpus(directory)]


def evaluate_demo(
    evaluation: AnswerEvaluation,
    tenant_id: str,
    upload: Uploader,
    directory: Path,
    *,
    other: Tenant | None,
    labels: dict[str, Any] | None = None,
) -> tuple[Tenant, list[LabelledQuestion]]:
    """The demo corpus uploaded into `tenant_id`; its tenant and its questions (gold snippets checked)."""
    labels = labels or load_labels()
    upload(demo_uploads(directory, labels))
    tenant = evaluation.stored_tenant(tenant_id, frozenset({DEMO_COLLECTION, RESTRICTED}))
    questions = demo_questions(labels)
    problems = evaluation.gold_labels_found(tenant, questions)
    if problems:
        raise ValueError("gold snippets not found in the ingested demo corpus: " + "; ".join(problems))
    return tenant, questions


def evaluate_encyclopedia(
    evaluation: AnswerEvaluation, scratch: Evaluation, labels: dict[str, Any]
) -> tuple[Tenant, list[LabelledQuestion]]:
    """The encyclopedia set's articles indexed into `scratch`'s tenant; its tenant and questions (gold snippets
    checked)."""
    articles = encyclopedia_dataset(labels)
    scratch.ingest(articles)
    tenant = evaluation.indexed_tenant(scratch.tenant, frozenset({BEIR_COLLECTION}), articles)
    questions = encyclopedia_questions(labels)
    problems = evaluation.gold_labels_found(tenant, questions)
    if problems:
        raise ValueError("gold snippets not found in the encyclopedia set: " + "; ".join(problems))
    return tenant, questions


# --- calibration ----------------------------------------------------------------------------------------------


def floor_sweep(
    evaluation: AnswerEvaluation,
    sets: Sequence[tuple[str, Tenant, Sequence[LabelledQuestion]]],
    floors: Sequence[float] = CALIBRATION_FLOORS,
) -> list[dict[str, Any]]:
    """Refusal correctness (all and per class), recall@1/3 and citation precision per sentence floor, per set: every
    question asked by its own tenant's caller at each floor (a higher floor is not derivable from a lower one's
    answer since issue 37: the answering sentence is chosen among those the floor lets through). Train splits only."""
    return [
        sweep_row(name, "floor", floor, evaluation.at_sentence_floor(floor).run(tenant, questions, other=None))
        for name, tenant, questions in sets
        for floor in floors
    ]


def margin_sweep(
    evaluation: AnswerEvaluation,
    sets: Sequence[tuple[str, Tenant, Sequence[LabelledQuestion]]],
    margins: Sequence[float] = CALIBRATION_MARGINS,
) -> list[dict[str, Any]]:
    """The same figures per sentence margin, per set, every question asked at each margin. Train splits only."""
    return [
        sweep_row(name, "margin", margin, evaluation.at_sentence_margin(margin).run(tenant, questions, other=None))
        for name, tenant, questions in sets
        for margin in margins
    ]


# --- the whole run ----------------------------------------------------------------------------------------------


@dataclass
class ScifactRun:
    dataset: Dataset
    split: str
    reuse: str | None = None  # a kept scratch tenant of `quire eval` (or of this command)
    keep: bool = False
    answerable: int | None = None  # the sample size (default: the labels file's)


def evaluate(
    container: Container,
    *,
    demo_tenant: str,
    upload: Uploader,
    directory: Path,
    scifact: ScifactRun | None = None,
    calibrate: bool = False,
    progress: Callable[[str], None] = lambda _: None,
) -> dict[str, Any]:
    """The demo set, the encyclopedia set (and SciFact's, when given), each question asked by its own and by the
    decoy tenant's caller;
    with `calibrate`, the sentence floor swept too. Scratch tenants are removed afterwards (SciFact's is kept
    with `keep` or when reused)."""
    if calibrate and scifact is not None and scifact.split != "train":
        raise ValueError("the sentence floor is calibrated on the train split only")
    labels = load_labels()
    evaluation = AnswerEvaluation(container, progress=progress)
    decoy_evaluation, decoy = evaluation.decoy(labels)
    sets: list[tuple[str, Tenant, Sequence[LabelledQuestion]]] = []
    observed: dict[str, list[Observation]] = {}
    beir: Evaluation | None = None
    encyclopedia: Evaluation | None = None
    try:
        progress("ingesting the demo corpus")
        tenant, questions = evaluate_demo(evaluation, demo_tenant, upload, directory, other=decoy, labels=labels)
        sets.append(("demo", tenant, questions))
        observed["demo"] = evaluation.run(tenant, questions, other=decoy)
        progress("indexing the encyclopedia set")
        encyclopedia = Evaluation(container)
        written, written_questions = evaluate_encyclopedia(evaluation, encyclopedia, labels)
        sets.append(("encyclopedia", written, written_questions))
        observed["encyclopedia"] = evaluation.run(written, written_questions, other=decoy)
        if scifact is not None:
            beir = Evaluation(container, tenant=scifact.reuse, progress=progress)
            if scifact.reuse is None:
                progress(f"indexing {len(scifact.dataset.corpus)} documents into {beir.tenant}")
                beir.ingest(scifact.dataset)
            beir_tenant = evaluation.indexed_tenant(
                beir.tenant, frozenset({BEIR_COLLECTION, RESTRICTED}), scifact.dataset
            )
            claims = scifact_questions(scifact.dataset, labels, answerable=scifact.answerable)
            open_questions = [q for q in claims if q.expect is not Expectation.UNAUTHORISED]
            closed = [q for q in claims if q.expect is Expectation.UNAUTHORISED]
            name = f"scifact {scifact.split}"
            observed[name] = evaluation.run(beir_tenant, open_questions, other=decoy)
            with evaluation.restricted(beir.tenant, {gold.document for q in closed for gold in q.gold}):
                observed[name] += evaluation.run(beir_tenant, closed, other=decoy)
            sets.append((name, beir_tenant, open_questions))
        floors = calibration_floors(container.embedder.similarity_scale)
        sweep = floor_sweep(evaluation, sets, floors) if calibrate else None
        margins = margin_sweep(evaluation, sets) if calibrate else None
    finally:
        decoy_evaluation.remove()
        if encyclopedia is not None:
            encyclopedia.remove()
        for collection in (DEMO_COLLECTION, RESTRICTED):
            container.file_metadata.begin_delete_collection(demo_tenant, collection)
        if beir is not None and scifact is not None:
            if scifact.keep or scifact.reuse:
                progress(f"the SciFact tenant is kept: quire eval --answers ... --reuse {beir.tenant}")
            else:
                beir.remove()
    return {
        "report": {name: metrics(items) for name, items in observed.items()},
        "sweep": sweep,
        "margin_sweep": margins,
        "observations": {name: observations_json(items) for name, items in observed.items()},
    }
