import pytest

from shared.domain.uploads import attachment_disposition


@pytest.mark.parametrize(
    "filename",
    ['report".pdf', "evil\r\nSet-Cookie: x=1.pdf", "../../etc/passwd", "naïve résumé.docx", "a;b=c.txt"],
)
def test_a_filename_cannot_escape_the_attachment_disposition(filename: str) -> None:
    header = attachment_disposition(filename)
    assert header.startswith('attachment; filename="')
    assert "\r" not in header and "\n" not in header
    ascii_part = header.split('"')[1]
    assert '"' not in ascii_part and ";" not in ascii_part and "/" not in ascii_part
