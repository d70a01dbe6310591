import threading
from pathlib import Path

import pytest

from shared.adapters.local.secret_files import SecretFileError, read_or_create_secret


def test_a_secret_is_created_once_private_and_then_reused(tmp_path: Path) -> None:
    path = tmp_path / "nested" / "jwt.key"
    first = read_or_create_secret(path)
    assert read_or_create_secret(path) == first
    assert len(first) >= 32
    assert path.stat().st_mode & 0o077 == 0
    assert [p.name for p in path.parent.iterdir()] == ["jwt.key"]  # nothing left aside


def test_concurrent_creators_agree_on_one_secret(tmp_path: Path) -> None:
    path = tmp_path / "key"
    seen: list[bytes] = []
    threads = [threading.Thread(target=lambda: seen.append(read_or_create_secret(path))) for _ in range(8)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert len(seen) == 8
    assert len(set(seen)) == 1


def test_an_empty_secret_file_is_an_error_that_names_the_file(tmp_path: Path) -> None:
    path = tmp_path / "key"
    path.write_bytes(b"")
    with pytest.raises(SecretFileError, match="key holds 0 bytes"):
        read_or_create_secret(path)
