"""`quire upload`'s options for uploads by parts and the note it keeps of an open session (.quire/uploads/): found
again for the same file, not for a changed one, removed once complete; `--resume` without a note says what to give
(the flow itself, killed and resumed on a running stack, is tests/e2e/test_upload_resume.py)."""

import os
from pathlib import Path
from typing import Any

import pytest

from shared import cli
from shared.cli.app import build_parser
from shared.cli.upload_state import UploadState

TICKET: dict[str, Any] = {
    "uploadId": "65f15de1-b56c-40a3-9846-5f6706df1a75",
    "fileId": "e2a2c84a",
    "partCount": 3,
    "partSize": 5,
}


def test_the_part_options_parse_and_a_part_size_is_whole_mib_from_five() -> None:
    args = build_parser().parse_args(["upload", "a.pdf", "--multipart", "--part-size", "8", "--checksums"])
    assert (args.multipart, args.part_size, args.checksums, args.resume) == (True, 8 * 2**20, True, None)
    assert build_parser().parse_args(["upload", "a.pdf", "--resume"]).resume == ""
    assert build_parser().parse_args(["upload", "a.pdf", "--resume", TICKET["uploadId"]]).resume == TICKET["uploadId"]


@pytest.mark.parametrize("value", ["4", "5.5", "x", "-5"])
def test_a_part_size_below_five_mib_or_not_whole_is_a_usage_error(
    value: str, capsys: pytest.CaptureFixture[str]
) -> None:
    with pytest.raises(SystemExit) as exited:
        build_parser().parse_args(["upload", "a.pdf", "--part-size", value])
    assert exited.value.code == 2
    assert "at least 5 (S3's smallest part)" in capsys.readouterr().err


def test_the_note_of_a_session_is_found_for_the_same_file_only(tmp_path: Path) -> None:
    state = UploadState.in_directory(tmp_path)
    path = tmp_path / "big.pdf"
    path.write_bytes(b"%PDF-" + b"x" * 100)
    state.remember(path, TICKET, "docs")
    found = state.find(path)
    assert found is not None and (found["uploadId"], found["collectionId"]) == (TICKET["uploadId"], "docs")
    assert found["byteSize"] == 105 and found["path"] == str(path.resolve())
    assert (state.folder / os.listdir(state.folder)[0]).stat().st_mode & 0o077 == 0  # owner-only

    # Changed since (its modification time, here with the same size): another file, whose session it does not find.
    os.utime(path, ns=(path.stat().st_atime_ns, path.stat().st_mtime_ns + 10**9))
    assert state.find(path) is None
    state.remember(path, TICKET, "docs")
    state.forget(path)
    assert state.find(path) is None


def test_resume_without_an_id_or_a_note_says_what_to_give(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.chdir(tmp_path)
    (tmp_path / "big.pdf").write_bytes(b"%PDF-" + b"x" * 100)
    assert cli.main(["upload", "big.pdf", "--resume"]) == 1
    err = capsys.readouterr().err
    assert "no interrupted upload of this file is written down" in err and "--resume UPLOAD_ID" in err


def test_resume_with_an_id_takes_one_file(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert cli.main(["upload", "a.pdf", "b.pdf", "--resume", TICKET["uploadId"]]) == 2
    assert "names the session of one file" in capsys.readouterr().err


def test_a_language_is_read_as_its_iso_code_and_an_unknown_one_is_a_usage_error_naming_the_fix(
    capsys: pytest.CaptureFixture[str],
) -> None:
    assert build_parser().parse_args(["upload", "a.pdf", "--language", "de-CH"]).language == "de"
    assert build_parser().parse_args(["upload", "a.pdf"]).language is None
    for junk in ("klingon", "", "x" * 500):
        with pytest.raises(SystemExit) as exited:
            build_parser().parse_args(["upload", "a.pdf", "--language", junk])
        assert exited.value.code == 2
        err = capsys.readouterr().err
        assert "--language" in err and "is not a language Quire knows" in err and "ISO 639-1" in err
        assert len(err) < 600  # a long value is shown shortened


def test_resume_keeps_the_language_its_session_was_opened_with(capsys: pytest.CaptureFixture[str]) -> None:
    assert cli.main(["upload", "a.pdf", "--resume", TICKET["uploadId"], "--language", "de"]) == 2
    err = capsys.readouterr().err
    assert "--resume finishes an upload as it was opened" in err and "upload the file again with --language" in err
