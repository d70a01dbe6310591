"""Blocks → Markdown: the renderer the document reader uses, with the citations as numbered notes."""

from shared.domain.exports import ExportFormat, RenderedFile, RenderLimits, RenderRequest, note_text
from shared.domain.rendering import render_markdown
from shared.ports import ArtifactRenderer


class MarkdownRenderer(ArtifactRenderer):
    format = ExportFormat.MARKDOWN

    def render(self, request: RenderRequest, limits: RenderLimits) -> RenderedFile:
        text = render_markdown(request.blocks)
        if request.citations:
            notes = "\n".join(f"[{note.number}] {_escaped(note_text(note))}  " for note in request.citations)
            text += f"\n---\n\nNotes\n\n{notes}\n"
        return RenderedFile(content=text.encode(), format=self.format)


def _escaped(text: str) -> str:
    return " ".join(text.split()).replace("&", "&amp;").replace("<", "&lt;")
