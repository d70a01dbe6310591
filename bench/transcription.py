"""Local transcription: how fast faster-whisper transcribes a minute of generated speech, how many words it gets
wrong, and what its sandboxed child holds in memory, for each pinned model (docs/transcription.md).

The recording is shared/local/speech_corpus.py's script (ten sentences, about 58 s, espeak-ng's voice, FLAC), run
as the pipeline runs it: `start` in this process, the decoding and the model in a fresh sandboxed child per
recording (so each run pays the model's load). Each run is its own interpreter, so the peak resident memory and the
CPU time of its children (RUSAGE_CHILDREN) are that one child's. The real-time factor is wall-clock seconds per
second of audio (lower is faster; its data also has the child's CPU seconds per audio second); the word error rate
is over the script's words (shared/local/speech_corpus.py).
"""

import json
import resource
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

from shared.local import speech_corpus

RUNS = 3
MODELS = ("tiny.en", "base")


def figures(result: Any) -> list[dict[str, Any]]:
    names = {model: _names(model) for model in MODELS}
    missing = speech_corpus.espeak_missing()
    if missing is not None:  # a named skip (bench/run.py's table prints it)
        return [
            {"name": name, "value": None, "unit": unit, "baseline": None, "ratio": None, "data": {"skipped": missing}}
            for model in MODELS
            for name, unit in names[model]
        ]
    speech = speech_corpus.spoken_recording()
    recording = speech_corpus.encoded(speech, "flac", name="minute")
    figures: list[dict[str, Any]] = []
    with tempfile.TemporaryDirectory(prefix="quire-bench-speech-") as directory:
        path = Path(directory) / recording.filename
        path.write_bytes(recording.content)
        for model in MODELS:
            runs = [_run(model, path) for _ in range(RUNS)]
            (rtf_name, _), (wer_name, _), (memory_name, _) = names[model]
            facts = {
                "model": model,
                "audio_seconds": round(speech.duration_seconds, 1),
                "words": len(speech.text.split()),
            }
            figures += [
                result(
                    rtf_name,
                    [run["seconds"] / speech.duration_seconds for run in runs],
                    "x",
                    # CPU seconds of the child (every thread) per audio second: what a busy machine does not inflate.
                    cpu_per_audio_second=[round(run["cpu_seconds"] / speech.duration_seconds, 3) for run in runs],
                    **facts,
                ),
                result(
                    wer_name,
                    [100 * speech_corpus.word_error_rate(speech.text, run["text"]) for run in runs],
                    "%",
                    language=runs[-1]["language"],
                    **facts,
                ),
                result(memory_name, [run["peak_mb"] for run in runs], "MB", **facts),
            ]
    return figures


def _names(model: str) -> list[tuple[str, str]]:
    where = f"local faster-whisper {model}, a minute of generated speech"
    return [
        (f"Transcription real-time factor, {where} (wall s per audio s)", "x"),
        (f"Transcription word error rate, {where}", "%"),
        (f"Transcription peak resident memory of the child, {where}", "MB"),
    ]


def _run(model: str, path: Path) -> dict[str, Any]:
    completed = subprocess.run(
        [sys.executable, "-m", "bench.transcription", model, str(path)], capture_output=True, text=True, check=False
    )
    if completed.returncode != 0:
        raise RuntimeError(f"transcribing with {model} failed: {completed.stderr[-2000:]}")
    answer: dict[str, Any] = json.loads(completed.stdout.splitlines()[-1])
    return answer


def _transcribe_once(model: str, path: Path) -> dict[str, Any]:
    """One recording through the engine as the pipeline calls it; in its own interpreter (see the module)."""
    import shutil

    from shared.adapters.local.whisper_transcription import FasterWhisperTranscription
    from shared.domain.transcription import MediaSource

    def fetch(target: Path) -> None:
        shutil.copyfile(path, target)

    source = MediaSource(media_type="audio/flac", storage_key="bench/minute.flac", storage_version_id=None, fetch=fetch)
    begun = time.perf_counter()
    transcript = FasterWhisperTranscription(model).start(source)
    child = resource.getrusage(resource.RUSAGE_CHILDREN)
    return {
        "seconds": time.perf_counter() - begun,
        "cpu_seconds": child.ru_utime + child.ru_stime,
        "text": transcript.text,
        "language": transcript.language,
        "peak_mb": child.ru_maxrss / 1024,
    }


if __name__ == "__main__":
    print(json.dumps(_transcribe_once(sys.argv[1], Path(sys.argv[2]))))
