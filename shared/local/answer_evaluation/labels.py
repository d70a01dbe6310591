"""The labelled questions of `quire eval --answers` (shared/local/answer_questions.json): the demo set, a seeded
sample of SciFact's train claims, the encyclopedia set (articles and questions written for it), and the decoy
tenant's corpus."""

import json
import random
from dataclasses import dataclass
from enum import StrEnum
from pathlib import Path
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from shared.local.evaluation import Dataset

QUESTIONS_FILE = Path(__file__).parent.parent / "answer_questions.json"
DEMO_COLLECTION = "demo"
RESTRICTED = "restricted"


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
    dataset: "Dataset", labels: dict[str, Any], *, answerable: int | None = None
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


def encyclopedia_questions(labels: dict[str, Any]) -> list[LabelledQuestion]:
    """The encyclopedia set's questions: answerable (gold: the article and a snippet of the answer) and on-topic
    unanswerable ones."""
    return [_labelled(raw) for raw in labels["encyclopedia"]["questions"]]


def encyclopedia_dataset(labels: dict[str, Any]) -> "Dataset":
    """The encyclopedia set's articles, indexed as a corpus (id → title, text)."""
    from shared.local.evaluation import Dataset

    documents = labels["encyclopedia"]["documents"]
    return Dataset(corpus={name: (title, text) for name, (title, text) in documents.items()}, queries={}, qrels={})


def decoy_dataset(labels: dict[str, Any]) -> "Dataset":
    from shared.local.evaluation import Dataset

    return Dataset(
        corpus={name: (title, text) for name, (title, text) in labels["decoy"]["documents"].items()},
        queries={},
        qrels={},
    )
