"""The registries the adapters are chosen from: a parser per media type, a renderer per export format, and the
user pool's signing keys (a pass-through for functions/cognito_keys)."""

from shared.domain.exports import ExportFormat
from shared.ports import ArtifactRenderer, DocumentParser


def cognito_signing_keys(issuer_url: str) -> str:
    """A user pool's public signing keys, read from its JWKS endpoint now, as the JSON QUIRE_COGNITO_JWKS holds
    (the deploy-time snapshot functions/cognito_keys takes)."""
    from shared.adapters.aws.cognito_tokens import snapshot_signing_keys

    return snapshot_signing_keys(issuer_url)


def export_renderers() -> dict[ExportFormat, ArtifactRenderer]:
    """One renderer per export format."""
    from shared.adapters.renderers.docx import DocxRenderer
    from shared.adapters.renderers.html import HtmlRenderer
    from shared.adapters.renderers.markdown import MarkdownRenderer
    from shared.adapters.renderers.pdf import PdfRenderer
    from shared.adapters.renderers.plain import CsvRenderer, TextRenderer, XlsxRenderer

    renderers: list[ArtifactRenderer] = [
        PdfRenderer(),
        DocxRenderer(),
        HtmlRenderer(),
        MarkdownRenderer(),
        TextRenderer(),
        CsvRenderer(),
        XlsxRenderer(),
    ]
    return {renderer.format: renderer for renderer in renderers}


def document_parsers() -> list[DocumentParser]:
    """Every parser the pipeline's Extractor chooses from, by media type."""
    from shared.adapters.parsers.csv_table import CsvParser
    from shared.adapters.parsers.docx import DocxParser
    from shared.adapters.parsers.html import HtmlParser
    from shared.adapters.parsers.image import ImageParser
    from shared.adapters.parsers.markdown import MarkdownParser
    from shared.adapters.parsers.pdf import PdfParser
    from shared.adapters.parsers.plain_text import PlainTextParser
    from shared.adapters.parsers.pptx import PptxParser
    from shared.adapters.parsers.xlsx import XlsxParser

    return [
        PdfParser(),
        DocxParser(),
        XlsxParser(),
        PptxParser(),
        HtmlParser(),
        MarkdownParser(),
        CsvParser(),
        PlainTextParser(),
        ImageParser(),
    ]
