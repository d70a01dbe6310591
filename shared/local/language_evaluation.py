"""`quire eval` over a multilingual set: one BEIR dataset per language (`DIR/<language>/corpus.jsonl`, …), each
ingested into a scratch tenant of its own and measured per lane by `Evaluation`, reported per language. The tune
queries are `qrels/train.tsv`'s and the held-out ones `qrels/test.tsv`'s (`make language-sets` builds such sets from
registry packages: bench/language_sets/SOURCES.md).
"""

import json
import statistics
from collections.abc import Callable
from pathlib import Path

from shared.bootstrap import Container
from shared.domain.metrics import ndcg_at
from shared.domain.search import SearchQuery, fuse
from shared.local.evaluation import COLLECTION, DEPTH, HELD_OUT, TUNE, EvalReport, Evaluation, load_beir

LANES = ("keyword", "semantic", "hybrid")


def language_directories(directory: Path) -> dict[str, Path]:
    """The per-language datasets of a multilingual set, by language (none: `directory` is one BEIR dataset)."""
    if (directory / "corpus.jsonl").is_file():
        return {}
    return {
        child.name: child
        for child in sorted(directory.iterdir())
        if child.is_dir() and (child / "corpus.jsonl").is_file()
    }


def held_out_queries(directory: Path) -> set[str]:
    """The query ids of qrels/test.tsv: never tuned on."""
    test = directory / "qrels" / "test.tsv"
    if not test.is_file():
        return set()
    return {line.split("\t")[0] for line in test.read_text(encoding="utf-8").splitlines()[1:] if line.strip()}


def evaluate_languages(
    container: Container,
    directory: Path,
    *,
    languages: dict[str, Path],
    progress: Callable[[str], None] = lambda _: None,
    keep: bool = False,
) -> dict[str, EvalReport]:
    """Each language of the set measured on its own (the corpus of one language in one collection), in order."""
    reports = {}
    for language, path in languages.items():
        progress(f"{directory.name}/{language}")
        dataset = load_beir(path, "all")
        evaluation = Evaluation(container, progress=progress)
        try:
            reports[language] = evaluation.run(
                dataset, name=f"{directory.name}/{language}", split="all", held=held_out_queries(path)
            )
            # Each language's figures as soon as they are measured: a long run stopped early keeps what it found.
            progress(f"{directory.name}/{language}: " + json.dumps(reports[language].metrics))
        finally:
            if not keep:
                evaluation.remove()
    return reports


def print_languages(name: str, reports: dict[str, EvalReport]) -> None:
    """One row per language: nDCG@10 of each lane over every query, then hybrid's on the tune and held-out ones."""
    first = next(iter(reports.values()), None)
    if first is None:
        print(f"{name}: no language datasets found")
        return
    print(f"{name}: nDCG@10 per language ({first.embedding_model}; {first.fusion})")
    print(
        f"{'language':<9} {'documents':>9} {'chunks':>7} {'queries':>7} "
        + " ".join(f"{lane:>9}" for lane in LANES)
        + f" {'hybrid tune':>12} {'held out':>9} {'R@10':>6}"
    )
    for language, report in reports.items():
        hybrid = report.splits.get("hybrid", {})
        print(
            f"{language:<9} {report.documents:>9} {report.chunks:>7} {report.queries:>7} "
            + " ".join(f"{report.metrics[lane]['ndcg@10']:>9.4f}" for lane in LANES)
            + f" {hybrid.get(TUNE, {}).get('ndcg@10', float('nan')):>12.4f}"
            + f" {hybrid.get(HELD_OUT, {}).get('ndcg@10', float('nan')):>9.4f}"
            + f" {report.metrics['hybrid']['recall@10']:>6.3f}"
        )
    if len(reports) > 1:
        means = {lane: statistics.fmean(r.metrics[lane]["ndcg@10"] for r in reports.values()) for lane in LANES}
        print(f"{'mean':<9} {'':>9} {'':>7} {'':>7} " + " ".join(f"{means[lane]:>9.4f}" for lane in LANES))


# The vector lane's weights a sweep fuses each question with (the keyword lane's is 1 minus it).
SWEEP_WEIGHTS = (0.0, 0.05, 0.1, 0.2, 0.3, 0.4, 0.55, 0.7)


def sweep_languages(
    container: Container,
    languages: dict[str, Path],
    *,
    progress: Callable[[str], None] = lambda _: None,
) -> dict[str, dict[float, float]]:
    """Per language, hybrid nDCG@10 over the tune queries (qrels/train.tsv, never the held-out ones) for each
    vector weight of SWEEP_WEIGHTS: the figures the weight for uncovered languages is chosen from."""
    table: dict[str, dict[float, float]] = {}
    retrieval = container.retrieval
    covered = container.embedder.languages
    for language, path in languages.items():
        # A language the model does not cover is swept as search weighs it: where a lane has too few documents for a
        # z-score, reciprocal rank weighs the vector lane in the same proportion (Retrieval.tuning_for).
        uncovered = covered is not None and language not in covered
        tunings = {
            weight: retrieval.tuning.model_copy(
                update={"vector_weight": weight, "uncovered_vector_weight": weight, "question_uncovered": True}
                if uncovered
                else {"vector_weight": weight}
            )
            for weight in SWEEP_WEIGHTS
        }
        dataset = load_beir(path, "train")
        evaluation = Evaluation(container, progress=progress)
        try:
            evaluation.ingested(dataset)
            lanes = {
                query_id: retrieval.lanes(
                    evaluation.tenant, frozenset({COLLECTION}), SearchQuery(text=text), candidates=3 * DEPTH
                )
                for query_id, text in dataset.queries.items()
            }
            table[language] = {
                weight: round(
                    statistics.fmean(
                        ndcg_at(
                            evaluation.documents_of(
                                [
                                    chunk_id
                                    for chunk_id, _ in fuse(
                                        [found.vector, found.keyword],
                                        tunings[weight],
                                    )
                                ]
                            ),
                            dataset.qrels[query_id],
                            10,
                        )
                        for query_id, found in lanes.items()
                    ),
                    4,
                )
                for weight in SWEEP_WEIGHTS
            }
            progress(f"{path.parent.name}/{language}: {table[language]}")
        finally:
            evaluation.remove()
    return table


def print_weight_sweep(name: str, table: dict[str, dict[float, float]]) -> None:
    print(f"{name}: hybrid nDCG@10 on the tune queries by the vector lane's weight")
    print(f"{'language':<9} " + " ".join(f"{weight:>7}" for weight in SWEEP_WEIGHTS))
    for language, row in table.items():
        print(f"{language:<9} " + " ".join(f"{row[weight]:>7.4f}" for weight in SWEEP_WEIGHTS))
