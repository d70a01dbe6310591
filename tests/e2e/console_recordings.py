"""The console plays a cited moment of a recording (issue 35, item 4), driven in a real browser by
tests/e2e/test_console.py on its stack: speech generated here is uploaded through the picker, transcribed by the
stack's local engine, found by a spoken identifier, and its citation opens the recording at the cited second,
stopping at the cited end, with the transcript beside it and the cited segment lit."""

import time
from pathlib import Path
from typing import Any

from shared.local.speech_corpus import SpokenRecording, encoded, spoken_recording

SENTENCES = (
    "The quarterly report was filed on Tuesday morning.",
    "The project code name is Falcon 42.",
    "Every invoice needs a purchase order number.",
)


def write_talk(folder: Path) -> tuple[Path, SpokenRecording]:
    talk = spoken_recording(SENTENCES, lead_seconds=1.0, gap_seconds=2.0)
    recording = encoded(talk, "wav", name="code-name-briefing")
    path = folder / recording.filename
    path.write_bytes(recording.content)
    return path, talk


def until(page: Any, expression: str, *, seconds: float) -> Any:
    """Poll `expression` in the page until it is truthy (the console's CSP refuses the eval wait_for_function
    uses); its last value, or AssertionError naming it."""
    ends = time.monotonic() + seconds
    while True:
        value = page.evaluate(expression)
        if value:
            return value
        assert time.monotonic() < ends, f"still false after {seconds} s: {expression}"
        time.sleep(0.1)


PLAYER = "document.querySelector('[data-testid=player]')"


def check_cited_moment(page: Any, talk: SpokenRecording) -> None:
    """The citation's view: a player whose source names the cited span, positioned at its start once loaded, that
    stops at its end when played; the transcript with the cited segment lit; how surely it was heard."""
    placed = next(sentence for sentence in talk.sentences if "Falcon 42" in sentence.text)
    player = page.get_by_test_id("player")
    player.wait_for()
    start, end = float(player.get_attribute("data-start")), float(player.get_attribute("data-end"))
    assert abs(start - placed.start_seconds) <= 1.0 and end > start, (start, end, placed)
    assert player.get_attribute("src").endswith(
        f"#t={player.get_attribute('data-start')},{player.get_attribute('data-end')}"
    )
    # Loaded through the signed read (media-src allows the store), and positioned at the cited second.
    until(page, f"{PLAYER}.readyState >= 1", seconds=30)
    position = page.evaluate(f"{PLAYER}.currentTime")
    assert abs(position - start) <= 0.5, position
    # The transcript is read in windows after the player is shown; the source is busy until it is all in.
    page.locator("div.source:not([aria-busy]) [data-testid=transcript]").wait_for(timeout=30_000)
    cited = page.locator("[data-testid=transcript] li.segment.cited")
    assert cited.count() >= 1 and "Falcon 42" in cited.first.inner_text(), cited.all_inner_texts()
    assert "Heard with confidence" in page.locator("dl.facts").inner_text()
    # Played, it stops at the cited end (muted: a headless browser has no one to hear it).
    page.evaluate(
        f"(() => {{ const p = {PLAYER}; p.muted = true; p.currentTime = Math.max(0, p.dataset.end - 0.6);"
        " return p.play(); })()"
    )
    until(page, f"{PLAYER}.paused", seconds=15)
    stopped = page.evaluate(f"{PLAYER}.currentTime")
    assert end - 0.05 <= stopped <= end + 0.75, (stopped, end)
    # A segment clicked plays from its start.
    first = page.locator("[data-testid=transcript] li.segment").first
    first.get_by_role("button").click()
    until(page, f"{PLAYER}.currentTime < 1.5 + {float(first.get_attribute('data-start'))}", seconds=15)
