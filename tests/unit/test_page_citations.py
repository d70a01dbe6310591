"""Citations precise to the page: a hit for words on page 2 of a scanned PDF points at page 2, and at the
box of the block that holds them, through the real chunker and the real retrieval service (over a fake
index, named as one, that matches query words the way the keyword lane does)."""

from collections.abc import Sequence
from contextlib import AbstractContextManager, nullcontext
from datetime import UTC, datetime

import pytest

from shared.domain.auth import Role, with_role
from shared.domain.capabilities import CapabilityStatus
from shared.domain.chunking import StructuralChunker
from shared.domain.citations import regions_are_blocks
from shared.domain.document import Block, BlockCollector, BlockKind, ExtractedDocument, ExtractionLimits, Location
from shared.domain.knowledge import ChunkDraft, ChunkLocation, CollectionCoverage, RankedChunk
from shared.domain.recognition import BoundingBox
from shared.domain.search import (
    ChunkSnapshot,
    Citation,
    CitedKind,
    Found,
    RetrievalTuning,
    SearchMode,
    SearchQuery,
    query_terms,
)
from shared.domain.similarity import MINILM_SCALE
from shared.domain.usage import Usage
from shared.services.authorization import ClaimsAuthorizationPolicy
from shared.services.retrieval import Retrieval

NOW = datetime(2026, 11, 29, tzinfo=UTC)
TOP = BoundingBox(left=0.1, top=0.1, width=0.8, height=0.2)
MIDDLE = BoundingBox(left=0.1, top=0.4, width=0.8, height=0.2)
BOTTOM = BoundingBox(left=0.1, top=0.7, width=0.8, height=0.2)


class FakeIndex:
    """Both lanes and the store over chunk drafts held in memory. The keyword lane ranks chunks by how many
    of the query's terms (stopwords stripped) their content holds; the vector lane finds every chunk."""

    def one_moment(self, tenant_id: str) -> AbstractContextManager[None]:
        return nullcontext()  # fixed rankings in memory: one moment already

    def __init__(self, drafts: Sequence[ChunkDraft]) -> None:
        self.drafts = {f"v:{draft.ordinal}": draft for draft in drafts}

    def search(self, tenant_id, collections, query, *, limit, filters, k1, b, context_weight=1.0, constraints=None):  # type: ignore[no-untyped-def]
        terms = query_terms(query)
        scored = [
            (chunk_id, len(terms & query_terms(draft.content)))
            for chunk_id, draft in self.drafts.items()
            if terms & query_terms(draft.content)
        ]
        scored.sort(key=lambda item: -item[1])
        return [RankedChunk(chunk_id=c, rank=i, score=float(s)) for i, (c, s) in enumerate(scored[:limit], start=1)]

    def nearest(self, tenant_id, collections, embedding, *, embedding_model, limit, filters, constraints=None):  # type: ignore[no-untyped-def]
        return [RankedChunk(chunk_id=c, rank=i, score=0.9) for i, c in enumerate(list(self.drafts)[:limit], start=1)]

    def snapshots(self, tenant_id, collections, chunk_ids):  # type: ignore[no-untyped-def]
        return [
            ChunkSnapshot(
                chunk_id=chunk_id,
                file_id="f",
                version_id="v",
                filename="scan.pdf",
                media_type="application/pdf",
                collection_id="docs",
                location=self.drafts[chunk_id].location,
                heading_path=self.drafts[chunk_id].heading_path,
                body=self.drafts[chunk_id].text,
                block_kind=self.drafts[chunk_id].block_kind,
            )
            for chunk_id in chunk_ids
        ]

    def same_text(self, tenant_id, collections, text_hashes, *, filters, per_text, excluding=()):  # type: ignore[no-untyped-def]
        return []

    def replace_chunks(self, *args, **kwargs):  # type: ignore[no-untyped-def]
        raise AssertionError("not used")

    def versions_to_reindex(self, *args, **kwargs):  # type: ignore[no-untyped-def]
        raise AssertionError("not used")

    def coverage(self, *args, **kwargs) -> list[CollectionCoverage]:  # type: ignore[no-untyped-def]
        raise AssertionError("not used")


class FakeEmbedder:
    languages: frozenset[str] | None = None  # every language, as a multilingual model
    similarity_scale = MINILM_SCALE
    model_id = "fake"
    dimension = 3
    max_tokens = 100

    def capability(self) -> CapabilityStatus:
        return CapabilityStatus.ready("fake")

    def count_tokens(self, text: str) -> int:
        return len(text.split())

    def embed(self, texts: Sequence[str]) -> list[list[float]]:
        return [[1.0, 0.0, 0.0] for _ in texts]

    def usage(self, tokens: int) -> Usage:
        raise AssertionError("not used")

    def embed_queries(self, questions: Sequence[str]) -> list[list[float]]:
        return self.embed(questions)


def scanned(*blocks: tuple[int, BoundingBox, str]) -> ExtractedDocument:
    """A scanned PDF as OCR hands it over: recognised paragraphs, each with its page, box and confidence."""
    collector = BlockCollector(ExtractionLimits())
    for page, box, text in blocks:
        collector.add(
            Block(kind=BlockKind.PARAGRAPH, text=text, location=Location(page=page, box=box), confidence=0.91)
        )
    return collector.document("application/pdf", page_count=max(page for page, _, _ in blocks))


def cite(document: ExtractedDocument, query: str, mode: SearchMode = SearchMode.KEYWORD) -> Citation:
    drafts = StructuralChunker(lambda text: len(text.split()), 200).chunk(document)
    retrieval = Retrieval(
        authorization=ClaimsAuthorizationPolicy(),
        knowledge=FakeIndex(drafts),
        vectors=FakeIndex(drafts),
        keywords=FakeIndex(drafts),
        embedder=FakeEmbedder(),
        tuning=RetrievalTuning(),
        clock=lambda: NOW,
    )
    principal = with_role("acme", "ann", {"docs"}, Role.ADMIN)
    outcome = retrieval.search(principal, SearchQuery(text=query, mode=mode))
    assert isinstance(outcome, Found)
    return outcome.hits[0].citation


TWO_PAGES = scanned(
    (1, TOP, "Remittance advice for invoice 4471 from Halvorsen Shipping."),
    (1, BOTTOM, "Payment terms are thirty days net."),
    (2, TOP, "The balance was settled by bank transfer to Nordbank."),
    (2, MIDDLE, "Reference Kestrel-88 appears on the statement."),
)


def test_words_on_page_two_of_a_scan_are_cited_on_page_two_in_the_box_that_holds_them() -> None:
    # Given a two-page scan whose four recognised paragraphs would all fit one chunk
    # When the words of the second paragraph on page 2 are searched
    citation = cite(TWO_PAGES, "Kestrel-88 statement")
    # Then the citation names page 2 alone, and the box of that paragraph, as OCR's reading
    assert (citation.page, citation.page_end, citation.box) == (2, 2, MIDDLE)
    assert [(region.page, region.box) for region in citation.regions] == [(2, MIDDLE)]
    assert citation.kind is CitedKind.TRANSCRIPTION and citation.ocr_confidence == 0.91


def test_words_on_page_one_are_cited_on_page_one() -> None:
    # Given the same scan, when words of page 1's last paragraph are searched
    citation = cite(TWO_PAGES, "payment terms")
    # Then the citation names page 1 and that paragraph's box
    assert (citation.page, citation.page_end, citation.box) == (1, 1, BOTTOM)


def test_query_words_are_matched_whatever_their_case_and_stopwords_match_nothing() -> None:
    # Given the scan, when a query in capitals, with stopwords, names a word of one paragraph on page 2
    citation = cite(TWO_PAGES, "WAS THE BALANCE")
    # Then only that paragraph is cited: "was" and "the" (in other paragraphs too) are not search terms
    assert (citation.page, citation.box) == (2, TOP)
    assert [region.box for region in citation.regions] == [TOP]


def test_a_hit_with_no_query_word_in_its_blocks_cites_every_block_of_its_chunk() -> None:
    # Given the scan, when a purely semantic search shares no word with page 1
    citation = cite(TWO_PAGES, "seafaring", mode=SearchMode.SEMANTIC)
    # Then the citation is the chunk on page 1: its union box and every block's region
    assert (citation.page, citation.page_end) == (1, 1)
    assert citation.box is not None
    assert citation.box.model_dump() == pytest.approx({"left": 0.1, "top": 0.1, "width": 0.8, "height": 0.8})
    assert [region.box for region in citation.regions] == [TOP, BOTTOM]


def test_a_chunk_stored_before_regions_still_cites_its_pages() -> None:
    # Given a chunk location as stored before regions were kept: pages 1-2, no box
    stored = ChunkLocation.model_validate_json('{"page_start": 1, "page_end": 2, "ocr_confidence": 0.8}')
    # When it is cited
    citation = Citation.at(
        stored,
        file_id="f",
        version_id="v",
        filename="scan.pdf",
        media_type="application/pdf",
        collection_id="docs",
        excerpt="text",
        retrieved_at=NOW,
    )
    # Then it cites as it always did: pages 1-2, no box, a transcription, and no regions
    assert (citation.page, citation.page_end, citation.box, citation.regions) == (1, 2, None, ())
    assert citation.kind is CitedKind.TRANSCRIPTION


def test_a_cited_region_is_checked_against_the_blocks_of_the_document() -> None:
    # Given the scan's citation for page 2's second paragraph
    citation = cite(TWO_PAGES, "Kestrel-88")
    # When its regions are checked against the document, then they hold its blocks
    assert regions_are_blocks(TWO_PAGES, citation)
    # and a region moved to page 1 (where no block sits in that box) does not
    moved = citation.model_copy(update={"regions": (citation.regions[0].model_copy(update={"page": 1}),)})
    assert not regions_are_blocks(TWO_PAGES, moved)
