"""A local stack killed with SIGKILL again and again, at random moments, loses nothing it acknowledged
(tests/e2e/crash_drill.py). `make test` kills each of the four targets once (QUIRE_CRASH_KILLS, 4 by default);
`make crash` kills many more times."""

import json
import os
from pathlib import Path

from tests.e2e.cli import quire
from tests.e2e.crash_drill import Drill

KILLS = int(os.environ.get("QUIRE_CRASH_KILLS", "4"))
SEED = int(os.environ.get("QUIRE_CRASH_SEED", "30"))


def test_nothing_acknowledged_is_lost_to_kill_9_of_any_process_of_the_stack(tmp_path: Path) -> None:
    drill = Drill(tmp_path, seed=SEED)
    drill.up()
    try:
        for number in range(KILLS):
            drill.cycle(number)  # each cycle checks what was acknowledged so far, after the restart
        ledger = drill.ledger
        assert len(ledger.kills) == KILLS and {kill["target"] for kill in ledger.kills} >= {"supervisor", "postgres"}
        assert len(ledger.uploads) >= KILLS  # writes were acknowledged before the kills, not only after

        # Reconciliation (run as the stack starts, and by the workers) finishes whatever was cut off.
        states = drill.wait_until_processed()
        assert states and set(states.values()) == {"indexed"}, states
        assert drill.check_bytes() == len(states)
        drill.check_acknowledged()
        report = json.loads(quire(tmp_path, "reconcile", "--json").stdout)
        assert report["rowsWithoutBytes"] == [] and report["bytesWithoutRow"] == [], report
        assert report["stuckVersions"] == [], report

        # No request was answered with a 5xx, but 503 with Retry-After while PostgreSQL came back.
        assert ledger.server_errors == [], ledger.server_errors[:5]
        assert drill.unavailable_outside_the_kills() == []
        print(
            f"\ncrash drill: {KILLS} kills ({', '.join(k['target'] for k in ledger.kills)});"
            f" {len(ledger.uploads)} uploads and {len(ledger.deleted)} deletions acknowledged,"
            f" {len(ledger.indexed)} versions seen indexed, {sum(ledger.answers.values())} answers,"
            f" {len(ledger.unavailable)} of them 503 while PostgreSQL restarted"
        )
    finally:
        quire(tmp_path, "down", check=False)
