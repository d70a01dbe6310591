"""The console's pure helpers under node's own test runner (tests/console/*.test.js): one pytest test, so that
`make test` and `make test-unit` stay one command; a failure shows node's report."""

import shutil
import subprocess
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]
NODE_TESTS = sorted((REPO / "tests" / "console").glob("*.test.js"))


def test_the_console_helpers_pass_their_node_tests() -> None:
    node = shutil.which("node")
    assert node is not None, "the console's unit tests need node (20 or later) on the PATH"
    assert NODE_TESTS, "no tests/console/*.test.js found"
    ran = subprocess.run(
        [node, "--test", *map(str, NODE_TESTS)], cwd=REPO, capture_output=True, text=True, timeout=120, check=False
    )
    assert ran.returncode == 0, f"node --test failed:\n{ran.stdout}\n{ran.stderr}"
    assert "# fail 0" in ran.stdout, ran.stdout
