"""Evidence: overlapping candidates dropped, a prefix of the ranking selected within a budget, the blocks the
generator is sent, and the ids and quotes that point back into them."""

import re
from collections.abc import Mapping, Sequence

from shared.domain.answers import Evidence, EvidenceBlock
from shared.domain.knowledge import ChunkRegion
from shared.domain.search import words_of

MAX_EVIDENCE = 8
# The generator sends at most this many blocks (its own bound, shared/adapters/aws/bedrock_answers.py): what is
# built here always fits it, so every selected piece reaches the model.
MAX_EVIDENCE_BLOCKS = 20
EVIDENCE_BUDGET_CHARACTERS = 12_000
# Shingle containment above which a lower-ranked chunk repeats a higher-ranked one (3-word shingles): an
# overlapping neighbour of one block sequence shares its overlap block, a re-upload shares nearly everything.
NEAR_DUPLICATE = 0.8
NEIGHBOUR_OVERLAP = 0.5


def word_shingles(text: str) -> frozenset[tuple[str, ...]]:
    words = words_of(text)  # a CJK run's pairs are its words
    if len(words) < 3:
        return frozenset({tuple(words)}) if words else frozenset()
    return frozenset(tuple(words[index : index + 3]) for index in range(len(words) - 2))


def shingle_containment(smaller: frozenset[tuple[str, ...]], larger: frozenset[tuple[str, ...]]) -> float:
    if not smaller or not larger:
        return 0.0
    if len(smaller) > len(larger):
        smaller, larger = larger, smaller
    return len(smaller & larger) / len(smaller)


def _version_and_ordinal(chunk_id: str) -> tuple[str, int | None]:
    version, _, ordinal = chunk_id.rpartition(":")
    return (version, int(ordinal)) if ordinal.isdigit() else (chunk_id, None)


def _neighbours(first: str, second: str) -> bool:
    (version_a, ordinal_a), (version_b, ordinal_b) = _version_and_ordinal(first), _version_and_ordinal(second)
    return (
        version_a == version_b and ordinal_a is not None and ordinal_b is not None and abs(ordinal_a - ordinal_b) == 1
    )


def deduplicated(candidates: Sequence[Evidence]) -> list[Evidence]:
    """The candidates in order, less each one that repeats a better-ranked one: near-identical text anywhere (a
    re-upload, a copied paragraph), or a neighbouring chunk of the same block sequence that is mostly overlap."""
    kept: list[tuple[Evidence, frozenset[tuple[str, ...]]]] = []
    for candidate in candidates:
        shingles = word_shingles(candidate.text)
        repeats = False
        for earlier, earlier_shingles in kept:
            overlap = shingle_containment(shingles, earlier_shingles)
            neighbour = _neighbours(candidate.chunk_id, earlier.chunk_id)
            if overlap >= NEAR_DUPLICATE or (neighbour and overlap >= NEIGHBOUR_OVERLAP):
                repeats = True
                break
        if not repeats:
            kept.append((candidate, shingles))
    return [candidate for candidate, _ in kept]


def selected(
    candidates: Sequence[Evidence], *, limit: int = MAX_EVIDENCE, budget: int = EVIDENCE_BUDGET_CHARACTERS
) -> list[Evidence]:
    """A prefix of the ranking (direct subjects already first) within `limit` pieces and `budget` characters of
    text, numbered E1, E2, … in that order: the first piece is always taken (evidence_blocks cuts it to the budget)."""
    chosen: list[Evidence] = []
    spent = 0
    for candidate in candidates:
        if len(chosen) == limit:
            break
        size = len(candidate.text)
        if chosen and spent + size > budget:
            break
        spent += size
        chosen.append(candidate)
    return [piece.model_copy(update={"evidence_id": f"E{number}"}) for number, piece in enumerate(chosen, start=1)]


def evidence_blocks(
    evidence: Sequence[Evidence], *, budget: int = EVIDENCE_BUDGET_CHARACTERS, max_blocks: int = MAX_EVIDENCE_BLOCKS
) -> list[EvidenceBlock]:
    """What the generator is sent: each piece's Quire blocks (its regions: a paragraph, a table, a slide's shape) as
    blocks of their own, id'd `E2.1`, `E2.2`, … (a piece with one region, or none stored, is one block, `E2`), with
    the piece's heading path. At most `max_blocks` in all, shared fairly: a piece with more regions than its share
    has its adjacent regions joined, so every selected piece is seen. `budget` characters in all, the last cut."""
    share = max(1, max_blocks // max(1, len(evidence)))
    blocks: list[EvidenceBlock] = []
    left = budget
    for piece in evidence:
        body = piece.text
        regions = piece.snapshot.location.regions
        spans = [(region.start, region.end) for region in regions] if len(regions) > 1 else [(0, len(body))]
        if len(spans) > share:
            # Runs of adjacent regions, as even as the share allows, each from the first's start to the last's end.
            size = -(-len(spans) // share)
            spans = [
                (spans[index][0], spans[min(index + size, len(spans)) - 1][1]) for index in range(0, len(spans), size)
            ]
        for number, (start, end) in enumerate(spans, start=1):
            text = body[start:end].strip()
            if not text or left <= 0 or len(blocks) == max_blocks:
                continue
            evidence_id = f"{piece.evidence_id}.{number}" if len(spans) > 1 else piece.evidence_id
            blocks.append(
                EvidenceBlock(evidence_id=evidence_id, heading_path=piece.snapshot.heading_path, text=text[:left])
            )
            left -= len(text)
    return blocks


def piece_of(evidence_id: str, evidence: Mapping[str, Evidence], sent: frozenset[str] | None = None) -> str | None:
    """The piece an id names: a piece's own id (E2) or one of its blocks' (E2.1) among those `sent` (every block
    id of a sent piece, when not given); None for anything else: an id the model was never given."""
    if evidence_id in evidence:
        return evidence_id
    piece, _, block = evidence_id.rpartition(".")
    if piece not in evidence or not (block.isascii() and block.isdigit()):  # "²" is a digit int() refuses
        return None
    if sent is not None:
        return piece if evidence_id in sent else None
    return piece if 1 <= int(block) <= max(len(evidence[piece].snapshot.location.regions), 1) else None


def quoted_regions(piece: Evidence, quote: str | None) -> tuple[ChunkRegion, ...]:
    """The piece's regions (blocks) the quote lies in, found verbatim in its text (white space normalised); none
    when it cannot be placed, and then the citation names the chunk's regions as search does."""
    if not quote:
        return ()
    body = piece.text
    start = body.find(quote)
    end = start + len(quote)
    if start < 0:
        # The quote is compared with white space normalised: place it by its words.
        words = quote.split()
        pattern = r"\s+".join(re.escape(word) for word in words)
        match = re.search(pattern, body) if words else None
        if match is None:
            return ()
        start, end = match.span()
    return tuple(region for region in piece.snapshot.location.regions if region.start < end and start < region.end)
