"""Citations precise to the page on real PostgreSQL: a scanned PDF's chunks as the chunker cuts them, stored
with their regions in the `location` jsonb, found by the real keyword lane and cited by the real retrieval
service; and a chunk stored before regions were kept still cites as it did."""

import uuid

import psycopg

from shared.adapters.local.unavailable import UnavailableEmbedder
from shared.adapters.postgres.database import Database
from shared.adapters.postgres.knowledge import PostgresKnowledgeIndex
from shared.domain.auth import Role, with_role
from shared.domain.chunking import StructuralChunker
from shared.domain.document import Block, BlockCollector, BlockKind, ExtractionLimits, Location
from shared.domain.knowledge import ChunkDraft, ChunkLocation
from shared.domain.recognition import BoundingBox
from shared.domain.search import Citation, CitedKind, Found, RetrievalTuning, SearchQuery
from shared.services.authorization import ClaimsAuthorizationPolicy
from shared.services.retrieval import Retrieval
from tests.integration.knowledge_rows import DIMENSION, index_drafts

TOP = BoundingBox(left=0.1, top=0.1, width=0.8, height=0.2)
MIDDLE = BoundingBox(left=0.1, top=0.4, width=0.8, height=0.2)
BOTTOM = BoundingBox(left=0.1, top=0.7, width=0.8, height=0.2)


def tenant() -> str:
    return f"t{uuid.uuid4().hex[:12]}"


def search(database: Database, tenant_id: str, query: str) -> Citation:
    index = PostgresKnowledgeIndex(database)
    retrieval = Retrieval(
        authorization=ClaimsAuthorizationPolicy(),
        knowledge=index,
        vectors=index,
        keywords=index,
        embedder=UnavailableEmbedder("no model in this test", dimension=DIMENSION),
        tuning=RetrievalTuning(),
    )
    principal = with_role(tenant_id, "ann", {"docs"}, Role.ADMIN)
    outcome = retrieval.search(principal, SearchQuery(text=query))
    assert isinstance(outcome, Found), outcome
    return outcome.hits[0].citation


def test_words_on_page_two_of_a_stored_scan_are_cited_on_page_two_in_their_box(app_database: Database) -> None:
    # Given a two-page scan, recognised by OCR, chunked and stored
    collector = BlockCollector(ExtractionLimits())
    for page, box, text in [
        (1, TOP, "Remittance advice for invoice 4471 from Halvorsen Shipping."),
        (1, BOTTOM, "Payment terms are thirty days net."),
        (2, TOP, "The balance was settled by bank transfer to Nordbank."),
        (2, MIDDLE, "Reference Kestrel-88 appears on the statement."),
    ]:
        collector.add(Block(kind=BlockKind.PARAGRAPH, text=text, location=Location(page=page, box=box), confidence=0.9))
    drafts = StructuralChunker(lambda text: len(text.split()), 200).chunk(collector.document("application/pdf"))
    acme = tenant()
    index_drafts(app_database, acme, "docs", drafts, filename="scan.pdf", media_type="application/pdf")

    # When the words of page 2's second paragraph are searched
    citation = search(app_database, acme, "Kestrel-88 statement")

    # Then the citation names page 2 alone and that paragraph's box, read back from the stored location
    assert (citation.page, citation.page_end, citation.box) == (2, 2, MIDDLE)
    assert [(region.page, region.box) for region in citation.regions] == [(2, MIDDLE)]
    assert citation.kind is CitedKind.TRANSCRIPTION
    assert "Kestrel-88" in citation.excerpt


def test_a_chunk_stored_before_regions_were_kept_cites_as_before(
    app_database: Database, owner_connection: psycopg.Connection
) -> None:
    # Given a chunk over pages 1-2 whose stored location has no regions (as every chunk had before)
    acme = tenant()
    draft = ChunkDraft(
        ordinal=0,
        text="Payment terms are thirty days net.\n\nThe balance was settled by bank transfer.",
        heading_path=(),
        block_kind=BlockKind.PARAGRAPH,
        location=ChunkLocation(page_start=1, page_end=2, ocr_confidence=0.8),
        block_start=0,
        block_end=1,
        parent=None,
        token_count=14,
    )
    _, version_id = index_drafts(app_database, acme, "docs", [draft], filename="old.pdf", media_type="application/pdf")
    stripped = owner_connection.execute(
        "UPDATE knowledge_chunks SET location = location - 'regions'"
        " WHERE tenant_id = %s AND version_id = %s AND location ? 'regions'",
        (acme, version_id),
    )
    assert stripped.rowcount == 1

    # When its page-2 words are searched
    citation = search(app_database, acme, "bank transfer")

    # Then it is cited as it always was: pages 1-2, no box, a transcription, no regions
    assert (citation.page, citation.page_end, citation.box, citation.regions) == (1, 2, None, ())
    assert citation.kind is CitedKind.TRANSCRIPTION and citation.ocr_confidence == 0.8
