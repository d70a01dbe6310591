"""The title lane's pure rules: normalisation, the question's n-grams, and which named titles keep authority."""

from shared.domain.document import Block, BlockKind, ExtractedDocument, Location
from shared.domain.titles import (
    MAX_QUESTION_KEYS,
    MAX_TITLE_CHARACTERS,
    MAX_TITLE_WORDS,
    DirectChunk,
    DirectSubjects,
    NamedTitle,
    TitleSource,
    document_title_keys,
    filename_stem,
    first_heading,
    maximal_titles,
    named_documents,
    question_keys,
    title_key,
)

PLAN = "jlpt n2 window weekly plan"


def test_a_title_key_ignores_case_punctuation_spacing_and_compatibility_forms() -> None:
    assert title_key("JLPT N2 Window Weekly Plan") == PLAN
    assert title_key("  jlpt   N2 — Window: Weekly-Plan! ") == PLAN
    full_width = "\uff2a\uff2c\uff30\uff34 \uff2e\uff12 Window Weekly Plan"  # JLPT N2, full-width letters and digits
    assert title_key(full_width) == PLAN  # NFKC
    assert title_key("Straße") == title_key("STRASSE") == "strasse"  # case folding, not just lower case
    assert title_key("q3_budget") == "q3 budget"  # an underscore separates words, as in the keyword lane


def test_what_is_no_title_has_no_key() -> None:
    assert title_key("") is None
    assert title_key("— ? —") is None
    assert title_key("The") is None  # only stopwords: every question would name it
    assert title_key("2024") is None and title_key("The 2024") is None  # nor a bare number ("2024.pdf")
    assert title_key("2024 plan") == "2024 plan"
    assert title_key(" ".join(["word"] * MAX_TITLE_WORDS)) is not None
    assert title_key(" ".join(["word"] * (MAX_TITLE_WORDS + 1))) is None
    assert title_key("x" * MAX_TITLE_CHARACTERS) is not None
    assert title_key("x" * (MAX_TITLE_CHARACTERS + 1)) is None


def test_a_filename_title_is_the_name_without_its_last_extension() -> None:
    assert filename_stem("q3-budget.xlsx") == "q3-budget"
    assert filename_stem("archive.tar.gz") == "archive.tar"
    assert filename_stem(".env") == ".env"
    assert filename_stem("folder/Notes.md") == "Notes"
    assert document_title_keys(None, "q3-budget.xlsx") == {"q3 budget": TitleSource.FILENAME}


def test_a_document_has_its_heading_and_its_filename_as_titles_once_each() -> None:
    both = document_title_keys("JLPT N2 Window Weekly Plan", "plan.md")
    assert both == {PLAN: TitleSource.HEADING, "plan": TitleSource.FILENAME}
    same = document_title_keys("Q3 Budget", "q3-budget.xlsx")
    assert same == {"q3 budget": TitleSource.HEADING}


def test_the_first_heading_is_the_first_heading_block_with_text() -> None:
    blocks = (
        Block(kind=BlockKind.PARAGRAPH, text="preamble", location=Location()),
        Block(kind=BlockKind.HEADING, text="  ", location=Location()),
        Block(kind=BlockKind.HEADING, text=" Weekly Plan ", location=Location()),
        Block(kind=BlockKind.HEADING, text="Later", location=Location()),
    )
    assert first_heading(ExtractedDocument(media_type="text/markdown", blocks=blocks)) == "Weekly Plan"
    assert first_heading(ExtractedDocument(media_type="text/markdown", blocks=blocks[:1])) is None


def test_the_questions_keys_are_its_word_ngrams_normalised_like_titles() -> None:
    keys = question_keys("What is in the JLPT N2 Window Weekly-Plan?")
    assert PLAN in keys and "jlpt n2" in keys and "n2" in keys
    assert "the" not in keys and "what is" not in keys  # stopwords alone name nothing
    assert "2" not in question_keys("chapter 2 of it") and "chapter 2" in question_keys("chapter 2 of it")
    assert len(keys) == len(set(keys))
    assert all(title_key(key) == key for key in keys)  # each is looked up as a stored title would be
    # Bounded by the longest title: a 2,000-character question gives a bounded number of lookups.
    long = question_keys(" ".join(f"w{i}" for i in range(400)))
    assert max(len(key.split(" ")) for key in long) == MAX_TITLE_WORDS
    assert len(long) <= 400 * MAX_TITLE_WORDS
    # A question of two-character words at the length limit would give 13,000: the lookups stop at the cap.
    words = [
        first + second for first in "abcdefghijklmnopqrstuvwxyz" for second in "0123456789abcdefghijklmnopqrstuvwxyz"
    ]
    question = " ".join(words[:660])
    assert len(question) <= 2_000
    letters = question_keys(question)
    assert len(letters) == MAX_QUESTION_KEYS


def test_a_title_inside_a_longer_named_title_loses_its_authority_by_words_not_characters() -> None:
    question = "What is due this week in the JLPT N2 Window Weekly Plan?"
    assert maximal_titles(question, {"jlpt n2", PLAN}) == [PLAN]
    assert maximal_titles(question, {"n2", "jlpt n2", PLAN}) == [PLAN]
    # Characters alone do not contain: "plan" is no title inside "planning".
    assert maximal_titles("the planning guide", {"plan", "planning guide"}) == ["planning guide"]
    assert maximal_titles("the planning guide", {"plan"}) == []


def test_unrelated_or_overlapping_titles_named_together_are_peers() -> None:
    question = "Compare the Q3 Budget with the Hiring Plan"
    assert maximal_titles(question, {"q3 budget", "hiring plan"}) == ["q3 budget", "hiring plan"]
    # Overlapping without either containing the other: both keep authority.
    assert sorted(maximal_titles("alpha beta gamma", {"alpha beta", "beta gamma"})) == ["alpha beta", "beta gamma"]


def test_a_shorter_title_named_again_on_its_own_keeps_its_authority() -> None:
    question = "Is the JLPT N2 Window Weekly Plan enough for JLPT N2?"
    assert maximal_titles(question, {"jlpt n2", PLAN}) == [PLAN, "jlpt n2"]


def test_named_documents_are_the_maximal_titles_documents_longest_first_and_bounded() -> None:
    titles = [
        NamedTitle(key="jlpt n2", file_id="f1", version_id="v1"),
        NamedTitle(key=PLAN, file_id="f2", version_id="v2"),
        NamedTitle(key=PLAN, file_id="f3", version_id="v3"),  # two documents with one title: peers
        NamedTitle(key="hiring plan", file_id="f4", version_id="v4"),
    ]
    question = "JLPT N2 Window Weekly Plan and the hiring plan"
    assert named_documents(question, titles) == ["v2", "v3", "v4"]
    assert named_documents(question, titles, limit=2) == ["v2", "v3"]
    assert named_documents("nothing named", titles) == []


def test_direct_subjects_join_after_the_fused_candidates_and_sort_first() -> None:
    direct = DirectSubjects.of(
        [
            DirectChunk(chunk_id="v2:4", version_id="v2", found=True),
            DirectChunk(chunk_id="v3:0", version_id="v3", found=False),
            DirectChunk(chunk_id="v3:1", version_id="v3", found=False),
        ]
    )
    fused = [("other:0", 0.2), ("v2:4", 0.1)]
    assert direct.joined(fused) == [("other:0", 0.2), ("v2:4", 0.1), ("v3:0", 0.0), ("v3:1", 0.0)]
    assert direct.first(["other:0", "v2:4", "v3:0", "v3:1"]) == ["v2:4", "v3:0", "v3:1", "other:0"]
    assert DirectSubjects().first(["b", "a"]) == ["b", "a"]
