"""A format that is not read, but converts to one that is, is refused with the conversion named."""

import pytest

from shared.domain.errors import UnsupportedMediaType
from shared.domain.uploads import accepted_type


@pytest.mark.parametrize(
    ("media_type", "filename", "extension"),
    [
        ("application/msword", "minutes.doc", ".docx"),
        ("application/rtf", "letter.rtf", ".docx"),
        ("application/vnd.oasis.opendocument.text", "notes.odt", ".docx"),
        ("application/vnd.ms-excel", "budget.xls", ".xlsx"),
        ("application/vnd.ms-powerpoint", "deck.ppt", ".pptx"),
        # Browsers often send nothing better than octet-stream: the extension still names the format.
        ("application/octet-stream", "minutes.doc", ".docx"),
    ],
)
def test_a_legacy_or_open_document_format_is_refused_naming_the_conversion(
    media_type: str, filename: str, extension: str
) -> None:
    with pytest.raises(UnsupportedMediaType, match=rf"save it as \{extension} \(or export a PDF\)"):
        accepted_type(media_type, filename)


def test_an_unknown_format_is_refused_with_the_accepted_list_only() -> None:
    with pytest.raises(UnsupportedMediaType, match="not accepted; accepted types: application/pdf") as refused:
        accepted_type("application/json", "data.json")
    assert "save it as" not in str(refused.value)
