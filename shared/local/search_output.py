"""Search answers printed for a person: each hit's source, location and quoted excerpt."""

from typing import Any

from shared.domain.transcription import time_span


def _span(first: int, last: int | None, one: str, many: str) -> str:
    return f"{one} {first}" if last is None or last == first else f"{many} {first}-{last}"


def where(citation: dict[str, Any]) -> str:
    """A citation's location in words: page (and box), sheet and cells, slide, a recording's moment, table,
    paragraphs or lines."""
    if citation.get("startSeconds") is not None:
        start = citation["startSeconds"]
        described = time_span(start, citation.get("endSeconds") or start)
        if citation.get("speaker"):
            described += f" {citation['speaker']}"
    elif citation.get("sheet"):
        described = f"sheet {citation['sheet']}" + (f"!{citation['cells']}" if citation.get("cells") else "")
    elif citation.get("slide"):
        described = f"slide {citation['slide']}"
    elif citation.get("page"):
        described = _span(citation["page"], citation.get("pageEnd"), "p.", "pp.")
        box = citation.get("box")
        if box:
            described += f" at ({box['left']:.2f}, {box['top']:.2f}) {box['width']:.2f}x{box['height']:.2f}"
    elif citation.get("tableIndex") is not None:
        described = f"table {citation['tableIndex'] + 1}"
    elif citation.get("paragraphStart") is not None:
        end = citation.get("paragraphEnd")
        described = _span(citation["paragraphStart"] + 1, None if end is None else end + 1, "paragraph", "paragraphs")
    elif citation.get("lineStart"):
        described = _span(citation["lineStart"], citation.get("lineEnd"), "line", "lines")
    else:
        described = "whole document"
    return described


def _provenance(citation: dict[str, Any]) -> str:
    """How the cited text came to be, when it is not the document's own words."""
    kind = citation.get("kind", "quote")
    if kind == "transcription" and citation.get("speechConfidence") is not None:
        return f"; heard by the speech engine, confidence {citation['speechConfidence']:.2f}"
    if kind == "transcription":
        return f"; read by OCR, confidence {citation['ocrConfidence']:.2f}"
    if kind == "description":
        return "; a model's description of the image, not the document's words"
    return ""


def print_search_result(query: str, result: dict[str, Any], *, excerpt_characters: int = 300) -> None:
    """A search answer as a person reads it: each hit with its source, location and quoted excerpt."""
    print(f'Search: "{query}"')
    if result["outcome"] != "found":
        print(f"  {result['outcome'].replace('_', ' ')}: {result['message']}")
        if not result["vectorAvailable"]:
            print("  (keyword search only: the semantic lane did not run)")
        return
    for number, hit in enumerate(result["hits"], start=1):
        citation = hit["citation"]
        path = " > ".join(citation["headingPath"])
        lanes = []
        if hit["vectorScore"] is not None:
            lanes.append(f"semantic {hit['vectorScore']:.2f}")
        if hit["lexicalScore"] is not None:
            lanes.append(f"keyword {hit['lexicalScore']:.1f}")
        named = " [named in the query]" if hit.get("directSubject") else ""
        print(f"  {number}. {citation['filename']}, {where(citation)}{' - ' + path if path else ''}{named}")
        print(f"     score {hit['score']:.4f} ({', '.join(lanes)}){_provenance(citation)}")
        text = " ".join(hit["excerpt"].split())
        if len(text) > excerpt_characters:
            text = text[:excerpt_characters].rsplit(" ", 1)[0] + " ..."
        print(f'     "{text}"')
        print(f"     file {citation['fileId']} version {citation['versionId']}")
        for place in hit.get("alsoIn", []):
            # The same text elsewhere, collapsed into this hit.
            ids = f"file {place['fileId']} version {place['versionId']}"
            print(f"     also in {place['filename']}, {where(place)} ({ids})")
    if not result["vectorAvailable"]:
        print("  (keyword search only: the semantic lane did not run)")


def print_answer(answer: dict[str, Any]) -> None:
    """An answer as a person reads it: each claim with its citation numbers, then the numbered sources."""
    print(f'Question: "{answer["question"]}"')
    confidence = answer["confidence"]
    if answer["outcome"] == "refused":
        print(f"  refused ({answer['refusal']['reason'].replace('_', ' ')}): {answer['refusal']['sentence']}")
    else:
        label = "answer" if answer["method"] == "generated" else "evidence only (sentences quoted from the sources)"
        print(f"  {label}, confidence {confidence['band']} ({confidence['score']:.2f})")
        for claim in answer["claims"]:
            marks = "".join(f"[{number}]" for number in claim["citations"]) or "[unsupported]"
            print(f"  - {claim['text']} {marks}")
    for citation in answer["citations"]:
        print(f"  [{citation['number']}] {citation['filename']}, {where(citation)}{_provenance(citation)}")
        print(f"      file {citation['fileId']} version {citation['versionId']}")
    if answer["withheld"]:
        print(f"  ({answer['withheld']} citation(s) withheld: you can no longer read their sources)")
    if answer["fallback"]:
        print(f"  ({answer['fallback']})")
