"""What every set shares: the held-out split, the BEIR layout Quire's reader expects (shared/local/evaluation.py:
load_beir), the questions written for the sets, and the manifest that records sizes and source versions."""

from __future__ import annotations

import hashlib
import json
import re
from pathlib import Path
from typing import Any

QUESTIONS = Path(__file__).resolve().parent / "questions"
SPLITS = ("all", "train", "test")
# The held-out share of the parallel items (a UDHR section, a help page, a document), rounded up.
TEST_FRACTION_NUM, TEST_FRACTION_DEN = 2, 5
SPLIT_RULE = (
    "qrels/train.tsv = tune, qrels/test.tsv = held-out (the 40% of items with the smallest sha1 of their key),"
    " same items in every language"
)

Passage = dict[str, str]  # {"_id", "title", "text"}, in that order
Query = dict[str, str]  # {"_id", "text"}
Judgement = tuple[str, str, str]  # (query id, corpus id, the parallel item's key, which decides the split)
SetStats = dict[str, dict[str, Any]]  # language → counts (and a set's own figures)


def held_out_items(item_keys: set[str]) -> set[str]:
    """The held-out items: the 40% (rounded up) with the smallest sha1 of their key, so the split is the same in
    every language and changes only where items are added or removed."""
    ranked = sorted(item_keys, key=lambda key: hashlib.sha1(key.encode("utf-8"), usedforsecurity=False).hexdigest())
    count = -(-len(ranked) * TEST_FRACTION_NUM // TEST_FRACTION_DEN)
    return set(ranked[:count])


def collapse(text: str) -> str:
    """Runs of white space as one space, trimmed."""
    return re.sub(r"\s+", " ", text).strip()


def write_beir(directory: Path, corpus: list[Passage], queries: list[Query], qrels: list[Judgement]) -> dict[str, int]:
    """corpus.jsonl, queries.jsonl and qrels/{all,train,test}.tsv (with BEIR's header line) under directory; the
    number of judgements in each split."""
    (directory / "qrels").mkdir(parents=True, exist_ok=True)
    for name, rows in (("corpus.jsonl", corpus), ("queries.jsonl", queries)):
        with (directory / name).open("w", encoding="utf-8") as file:
            file.writelines(json.dumps(row, ensure_ascii=False) + "\n" for row in rows)
    test_keys = held_out_items({key for _, _, key in qrels})
    split_rows: dict[str, list[tuple[str, str]]] = {split: [] for split in SPLITS}
    for query_id, corpus_id, key in qrels:
        split_rows["all"].append((query_id, corpus_id))
        split_rows["test" if key in test_keys else "train"].append((query_id, corpus_id))
    for split, pairs in split_rows.items():
        with (directory / "qrels" / f"{split}.tsv").open("w", encoding="utf-8") as file:
            file.write("query-id\tcorpus-id\tscore\n")
            file.writelines(f"{query_id}\t{corpus_id}\t1\n" for query_id, corpus_id in pairs)
    return {split: len(pairs) for split, pairs in split_rows.items()}


def questions(name: str) -> dict[str, Any]:
    """questions/<name>.json without its "_about" note: item key → {language: question, …}."""
    loaded: dict[str, Any] = json.loads((QUESTIONS / f"{name}.json").read_text(encoding="utf-8"))
    loaded.pop("_about", None)
    return loaded


def update_manifest(out: Path, name: str, entry: object) -> None:
    """Merge one set's entry into out/manifest.json, so one set can be rebuilt alone."""
    path = out / "manifest.json"
    manifest = json.loads(path.read_text(encoding="utf-8")) if path.is_file() else {}
    manifest[name] = entry
    path.write_text(json.dumps(manifest, indent=1, ensure_ascii=False) + "\n", encoding="utf-8")
