"""`quire eval --answers`: grounded answers measured against labelled questions (docs/answers.md, "Evaluation").

Two sets of labelled questions (shared/local/answer_questions.json): one over the generated demo corpus, uploaded
through the API into a scratch tenant (its finance and procurement files into a collection `restricted`), and
one over the SciFact train claims, indexed into a scratch tenant by `Evaluation.ingest` (kept and reused with
`--keep` / `--reuse`). Every question is asked through the product's `AnswerService` (its cache off, so each is
answered afresh), by a caller of its own tenant and again by a caller of a decoy tenant that holds a small,
tempting corpus of its own; every citation is checked against the stored text.

The labels: `answerable` (must not be refused; gold documents named), `unanswerable` (must be refused),
`unauthorised` (asked by a caller who cannot read the collection that holds the answer: must be refused, or cite
nothing from that collection). SciFact's answerable and unauthorised questions are a seeded sample of the train
claims, their gold the qrels; nothing here reads a held-out split, and the calibration (`floor_sweep`) refuses to.

The metrics (pure functions below, over `Observation`s):

- recall@k: answerable questions asked by their own tenant's caller whose first k citations (by number) include
  a gold document (a refusal counts as a miss);
- citation precision: over those answers with citations, cited chunks of gold documents / all cited chunks
  (pooled over questions);
- gold passage recall (demo only): answerable questions one of whose citations is a chunk holding a gold snippet;
- citation resolvability: citations whose excerpt is found in the stored document at the cited version and
  location (`excerpt_is_at_location`) / all citations (every ask, refusals' conflict sources too): must be 1.0;
- verbatim share: claims of evidence-only answers that are an exact substring of the stored text of a chunk they
  cite / all such claims: must be 1.0;
- refusal correctness: own-tenant questions whose refused / not refused matches the label / all, and per class
  (an unauthorised question is correct when refused or when none of its citations is of the restricted
  collection);
- cross-tenant citations: citations, over every ask (own and decoy callers), whose file is not the asking
  tenant's: must be 0;
- latency: p50 / p95 of the whole answer (ms, own-tenant asks), and the p50 of each stage (`StageTimes`).
"""

import functools
import json
import random
import time
import uuid
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager
from dataclasses import asdict, dataclass, field, replace
from datetime import timedelta
from enum import StrEnum
from pathlib import Path
from typing import Any

from shared.bootstrap import Container
from shared.domain.answers import AnswerOutcome, AnswerRequest
from shared.domain.auth import Role, with_role
from shared.domain.citations import excerpt_is_at_location
from shared.domain.document import ExtractedDocument
from shared.domain.grounding import cosine
from shared.domain.search import Citation
from shared.local.evaluation import COLLECTION as BEIR_COLLECTION
from shared.local.evaluation import Dataset, Evaluation, as_document
from shared.services.answers import SENTENCE_FLOOR, AnswerTuning, StageTimes

QUESTIONS_FILE = Path(__file__).with_name("answer_questions.json")
DEMO_COLLECTION = "demo"
RESTRICTED = "restricted"
# Seed 003's own figures (seeds/003_grounded_answers_pipeline.txt), printed beside ours.
SEED_003 = {
    "recall@1": 0.917,
    "recall@3": 1.0,
    "recall@5": 1.0,
    "citation_precision": 1.0,
    "refusal_correctness": 0.917,
}
CALIBRATION_FLOORS = (0.2, 0.25, 0.3, 0.35, 0.4, 0.45)


class Expectation(StrEnum):
    ANSWERABLE = "answerable"
    UNANSWERABLE = "unanswerable"
    UNAUTHORISED = "unauthorised"


@dataclass(frozen=True)
class Gold:
    """A gold document (demo: its filename; SciFact: its corpus id) and, for the demo, a snippet its gold chunk
    holds (white space aside)."""

    document: str
    snippet: str | None = None


@dataclass(frozen=True)
class LabelledQuestion:
    id: str
    question: str
    expect: Expectation
    gold: tuple[Gold, ...] = ()


@dataclass(frozen=True)
class CitedChunk:
    """One citation of an answer as the evaluation judged it."""

    number: int
    document: str  # filename (demo) or corpus id (SciFact); "?" when the file is not the asking tenant's
    collection_id: str
    gold: bool  # of a gold document
    gold_passage: bool  # a chunk holding a gold snippet (demo)
    resolvable: bool
    foreign: bool  # the file is not the asking tenant's


@dataclass(frozen=True)
class Observation:
    """One question asked once: by its own tenant's caller (`own`) or by the decoy tenant's."""

    question: LabelledQuestion
    own: bool
    outcome: AnswerOutcome
    refusal: str | None
    citations: tuple[CitedChunk, ...]
    claims: int  # claims of an evidence-only answer
    verbatim_claims: int
    milliseconds: float
    stages: dict[str, float] = field(default_factory=dict)
    # Per claim of an evidence-only answer, best first: its cosine with the question and the citations naming it
    # (the calibration derives every higher floor's answer from these).
    claim_scores: tuple[float, ...] = ()
    claim_citations: tuple[tuple[int, ...], ...] = ()

    @property
    def refused(self) -> bool:
        return self.outcome is AnswerOutcome.REFUSED


# --- the metrics (pure) ---------------------------------------------------------------------------------------


def _answerable(observations: Sequence[Observation]) -> list[Observation]:
    return [item for item in observations if item.own and item.question.expect is Expectation.ANSWERABLE]


def _share(hits: int, total: int) -> float | None:
    return round(hits / total, 4) if total else None


def recall_at(observations: Sequence[Observation], k: int) -> float | None:
    """Answerable own-tenant questions with a gold document among their first k citations (refused: a miss)."""
    answerable = _answerable(observations)
    found = sum(
        any(citation.gold for citation in sorted(item.citations, key=lambda c: c.number)[:k]) for item in answerable
    )
    return _share(found, len(answerable))


def gold_passage_recall(observations: Sequence[Observation]) -> float | None:
    """Answerable own-tenant questions with labelled snippets, one of whose citations holds a gold snippet."""
    labelled = [item for item in _answerable(observations) if any(gold.snippet for gold in item.question.gold)]
    return _share(sum(any(c.gold_passage for c in item.citations) for item in labelled), len(labelled))


def citation_precision(observations: Sequence[Observation]) -> float | None:
    """Cited chunks of gold documents / all cited chunks, pooled over answerable own-tenant answers that cite."""
    cited = [citation for item in _answerable(observations) if not item.refused for citation in item.citations]
    return _share(sum(citation.gold for citation in cited), len(cited))


def resolvability(observations: Sequence[Observation]) -> float | None:
    """Citations whose excerpt is at the cited version and location / all citations (every ask)."""
    cited = [citation for item in observations for citation in item.citations]
    return _share(sum(citation.resolvable for citation in cited), len(cited))


def verbatim_share(observations: Sequence[Observation]) -> float | None:
    """Claims of evidence-only answers verbatim in a chunk they cite / all such claims (every ask)."""
    return _share(sum(item.verbatim_claims for item in observations), sum(item.claims for item in observations))


def correctly_refused(item: Observation) -> bool:
    """Refused or not as the label says; an unauthorised question may also be answered from what the caller may
    read, so long as nothing of the restricted collection is cited."""
    if item.question.expect is Expectation.ANSWERABLE:
        return not item.refused
    if item.question.expect is Expectation.UNANSWERABLE:
        return item.refused
    return item.refused or not any(citation.collection_id == RESTRICTED for citation in item.citations)


def refusal_correctness(observations: Sequence[Observation], expect: Expectation | None = None) -> float | None:
    """Own-tenant questions (of the class `expect`, or all) whose refusal matches the label / all of them."""
    asked = [item for item in observations if item.own and (expect is None or item.question.expect is expect)]
    return _share(sum(correctly_refused(item) for item in asked), len(asked))


def cross_tenant_citations(observations: Sequence[Observation]) -> int:
    """Citations, over every ask, whose file is not the asking tenant's."""
    return sum(citation.foreign for item in observations for citation in item.citations)


def percentile(values: Sequence[float], share: float) -> float | None:
    """The nearest-rank percentile (share in (0, 1])."""
    if not values:
        return None
    ordered = sorted(values)
    rank = max(1, -(-len(ordered) * share // 1))
    return round(ordered[int(rank) - 1], 1)


def latency(observations: Sequence[Observation]) -> dict[str, Any]:
    """p50 / p95 of the own-tenant answers, and each stage's p50 (over the answers that ran it)."""
    own = [item for item in observations if item.own]
    stages: dict[str, list[float]] = {}
    for item in own:
        for name, spent in item.stages.items():
            stages.setdefault(name, []).append(spent)
    return {
        "p50_ms": percentile([item.milliseconds for item in own], 0.5),
        "p95_ms": percentile([item.milliseconds for item in own], 0.95),
        "stage_p50_ms": {name: percentile(values, 0.5) for name, values in stages.items()},
    }


def metrics(observations: Sequence[Observation]) -> dict[str, Any]:
    """Every figure of one set (docstring of this module)."""
    own = [item for item in observations if item.own]
    return {
        "questions": {expect.value: sum(item.question.expect is expect for item in own) for expect in Expectation},
        "recall@1": recall_at(observations, 1),
        "recall@3": recall_at(observations, 3),
        "recall@5": recall_at(observations, 5),
        "gold_passage_recall": gold_passage_recall(observations),
        "citation_precision": citation_precision(observations),
        "citation_resolvability": resolvability(observations),
        "citations_checked": sum(len(item.citations) for item in observations),
        "verbatim_share": verbatim_share(observations),
        "refusal_correctness": refusal_correctness(observations),
        "refusal_correctness_by_class": {
            expect.value: refusal_correctness(observations, expect) for expect in Expectation
        },
        "cross_tenant_citations": cross_tenant_citations(observations),
        "asked_by_other_tenant": sum(not item.own for item in observations),
        "latency": latency(observations),
    }


def at_floor(item: Observation, floor: float) -> Observation:
    """The answer the service would have given with the sentence floor at `floor` (at or above the floor it was
    asked with): an extractive answer's claims are chosen best first and stop at the floor, so they keep the claims
    scoring at least `floor`, and the citations those claims name; none left is `insufficient_evidence`."""
    if item.outcome is not AnswerOutcome.EVIDENCE_ONLY:
        return item
    kept = [index for index, score in enumerate(item.claim_scores) if score >= floor]
    if not kept:
        return replace(
            item,
            outcome=AnswerOutcome.REFUSED,
            refusal="insufficient_evidence",
            citations=(),
            claims=0,
            verbatim_claims=0,
            claim_scores=(),
            claim_citations=(),
        )
    numbers = {number for index in kept for number in item.claim_citations[index]}
    return replace(
        item,
        citations=tuple(citation for citation in item.citations if citation.number in numbers),
        claim_scores=tuple(item.claim_scores[index] for index in kept),
        claim_citations=tuple(item.claim_citations[index] for index in kept),
    )


# --- the labelled sets ----------------------------------------------------------------------------------------


def _labelled(raw: dict[str, Any]) -> LabelledQuestion:
    return LabelledQuestion(
        id=raw["id"],
        question=raw["question"],
        expect=Expectation(raw["expect"]),
        gold=tuple(Gold(document=item["document"], snippet=item.get("snippet")) for item in raw.get("gold", ())),
    )


def load_labels(path: Path = QUESTIONS_FILE) -> dict[str, Any]:
    loaded: dict[str, Any] = json.loads(path.read_text(encoding="utf-8"))
    return loaded


def demo_questions(labels: dict[str, Any]) -> list[LabelledQuestion]:
    return [_labelled(raw) for raw in labels["demo"]["questions"]]


def scifact_questions(
    dataset: Dataset, labels: dict[str, Any], *, answerable: int | None = None
) -> list[LabelledQuestion]:
    """A seeded sample of the split's claims (answerable, gold: the qrels), a further sample whose gold documents
    are no answerable claim's (unauthorised: those documents are made unreadable while they are asked), and the
    written unanswerable questions."""
    settings = labels["scifact"]
    count = answerable if answerable is not None else int(settings["answerable"])
    claims = sorted(dataset.queries)
    random.Random(int(settings["seed"])).shuffle(claims)  # noqa: S311 (a fixed sample, not a secret)
    chosen = claims[:count]
    taken = {doc for query in chosen for doc in dataset.qrels[query]}
    unauthorised: list[str] = []
    for query in claims[count:]:
        if len(unauthorised) == int(settings["unauthorised"]):
            break
        documents = set(dataset.qrels[query])
        if not documents & taken:
            unauthorised.append(query)
            taken |= documents

    def gold(query: str) -> tuple[Gold, ...]:
        return tuple(Gold(document=doc) for doc, grade in sorted(dataset.qrels[query].items()) if grade > 0)

    return [
        *(LabelledQuestion(f"s{q}", dataset.queries[q], Expectation.ANSWERABLE, gold(q)) for q in chosen),
        *(
            LabelledQuestion(f"n{number:02d}", text, Expectation.UNANSWERABLE)
            for number, text in enumerate(settings["unanswerable"], start=1)
        ),
        *(LabelledQuestion(f"x{q}", dataset.queries[q], Expectation.UNAUTHORISED, gold(q)) for q in unauthorised),
    ]


def decoy_dataset(labels: dict[str, Any]) -> Dataset:
    return Dataset(
        corpus={name: (title, text) for name, (title, text) in labels["decoy"]["documents"].items()},
        queries={},
        qrels={},
    )


def _flat(text: str) -> str:
    return " ".join(text.split())


# --- asking ---------------------------------------------------------------------------------------------------


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
        sentence_floor: float = SENTENCE_FLOOR,
    ) -> None:
        self._container = container
        self._progress = progress
        self._sentence_floor = sentence_floor
        # The product's service with its cache off: every question answered afresh (a calibration run or a
        # second run of the same index would otherwise be served its first answers, and their latency).
        tuning = AnswerTuning(cache_lifetime=timedelta(0), sentence_floor=sentence_floor)
        self._answers = Container(container.settings, container.adapters, answer_tuning=tuning).answers

    def at_sentence_floor(self, value: float) -> "AnswerEvaluation":
        """The same evaluation with the service's sentence floor at `value` (the calibration's sweep)."""
        return AnswerEvaluation(self._container, progress=self._progress, sentence_floor=value)

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
            vectors = self._container.embedder.embed([question.question] + [claim.text for claim in answer.claims])
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


# --- calibration ----------------------------------------------------------------------------------------------


def floor_sweep(
    evaluation: AnswerEvaluation,
    sets: Sequence[tuple[str, Tenant, Sequence[LabelledQuestion]]],
    floors: Sequence[float] = CALIBRATION_FLOORS,
) -> list[dict[str, Any]]:
    """Refusal correctness (all and per class) and recall@1/3 per sentence floor, per set: every question asked
    once by its own tenant's caller with the floor at the lowest value, each higher floor's answer derived by
    `at_floor` (the same answers the service gives at that floor, save a conflict or ambiguity among sentences
    the higher floor drops). Train splits only."""
    rows = []
    for name, tenant, questions in sets:
        lowest = evaluation.at_sentence_floor(min(floors)).run(tenant, questions, other=None)
        for floor in floors:
            observed = [at_floor(item, floor) for item in lowest]
            rows.append(
                {
                    "set": name,
                    "floor": floor,
                    "refusal_correctness": refusal_correctness(observed),
                    "answerable": refusal_correctness(observed, Expectation.ANSWERABLE),
                    "unanswerable": refusal_correctness(observed, Expectation.UNANSWERABLE),
                    "recall@1": recall_at(observed, 1),
                    "recall@3": recall_at(observed, 3),
                }
            )
    return rows


# --- output ---------------------------------------------------------------------------------------------------


def _figure(value: Any) -> str:
    if value is None:
        return "-"
    if isinstance(value, float):
        return f"{value:.3f}"
    return str(value)


def _by_class(expect: str, report: dict[str, Any]) -> Any:
    return report["refusal_correctness_by_class"][expect]


def print_report(report: dict[str, dict[str, Any]]) -> None:
    """One column per set, seed 003's beside."""
    names = list(report)
    rows: list[tuple[str, str, Callable[[dict[str, Any]], Any]]] = [
        ("questions (ans/unans/unauth)", "", lambda m: "/".join(str(v) for v in m["questions"].values())),
        ("recall@1", "recall@1", lambda m: m["recall@1"]),
        ("recall@3", "recall@3", lambda m: m["recall@3"]),
        ("recall@5", "recall@5", lambda m: m["recall@5"]),
        ("gold passage recall", "", lambda m: m["gold_passage_recall"]),
        ("citation precision", "citation_precision", lambda m: m["citation_precision"]),
        ("citation resolvability", "", lambda m: m["citation_resolvability"]),
        ("citations checked", "", lambda m: m["citations_checked"]),
        ("verbatim share", "", lambda m: m["verbatim_share"]),
        ("refusal correctness", "refusal_correctness", lambda m: m["refusal_correctness"]),
        *((f"  {expect.value}", "", functools.partial(_by_class, expect.value)) for expect in Expectation),
        ("cross-tenant citations", "", lambda m: m["cross_tenant_citations"]),
        ("asked by the other tenant", "", lambda m: m["asked_by_other_tenant"]),
        ("latency p50 ms", "", lambda m: m["latency"]["p50_ms"]),
        ("latency p95 ms", "", lambda m: m["latency"]["p95_ms"]),
    ]
    print(f"{'metric':<30}" + "".join(f"{name:>14}" for name in names) + f"{'seed 003':>14}")
    for label, seed, value in rows:
        line = f"{label:<30}" + "".join(f"{_figure(value(report[name])):>14}" for name in names)
        print(line + f"{_figure(SEED_003.get(seed)) if seed else '':>14}")
    stages = sorted({stage for name in names for stage in report[name]["latency"]["stage_p50_ms"]})
    for stage in stages:
        print(
            f"{'  p50 ' + stage + ' ms':<30}"
            + "".join(f"{_figure(report[name]['latency']['stage_p50_ms'].get(stage)):>14}" for name in names)
        )


def print_sweep(rows: Sequence[dict[str, Any]]) -> None:
    columns = ("set", "floor", "refusal_correctness", "answerable", "unanswerable", "recall@1", "recall@3")
    print("".join(f"{column:>20}" for column in columns))
    for row in rows:
        print("".join(f"{_figure(row[column]):>20}" for column in columns))


def observations_json(observations: Sequence[Observation]) -> list[dict[str, Any]]:
    """Each ask as JSON (for --json: the per-question detail behind the figures)."""
    return [
        {
            **{
                key: value
                for key, value in asdict(item).items()
                if key not in ("question", "citations", "stages", "claim_citations")
            },
            "id": item.question.id,
            "expect": item.question.expect.value,
            "correct": correctly_refused(item) if item.own else None,
            "cited": [citation.document for citation in item.citations],
        }
        for item in observations
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
    """The demo set (and SciFact's, when given), each question asked by its own and by the decoy tenant's caller;
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
    try:
        progress("ingesting the demo corpus")
        tenant, questions = evaluate_demo(evaluation, demo_tenant, upload, directory, other=decoy, labels=labels)
        sets.append(("demo", tenant, questions))
        observed["demo"] = evaluation.run(tenant, questions, other=decoy)
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
        sweep = floor_sweep(evaluation, sets) if calibrate else None
    finally:
        decoy_evaluation.remove()
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
        "observations": {name: observations_json(items) for name, items in observed.items()},
    }
