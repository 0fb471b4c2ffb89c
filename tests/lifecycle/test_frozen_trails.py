"""Frozen v1 trails, recorded with today's format, must load forever (pueue's
"restore at all costs"): each gives the same status and poll view whatever
the code becomes. A torn tail, a corrupt line in the middle, a trimmed
trail, an old record layout and a runner that died before a reboot included.
The fixtures are copied first: observing one may append to it."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest

FROZEN = Path(__file__).parent / "frozen"

# id -> (status, exit_code, reason, report, input_tokens, output_tokens, output head)
EXPECTED = {
    "sa_20261130_f0000001": ("failed", 3, "exit code 3", None, 0, 0, "hello\n"),
    "sa_20261130_f0000002": ("completed", 0, None, None, 0, 0, "line1\nline2\n"),
    "sa_20261130_f0000003": ("completed", 0, None, "There is one JSON file.", 300, 24,
                             "There is one JSON file.\n"),
    "sa_20261130_f0000004": ("completed", 0, None, None, 0, 0, "line1\nline2\n"),  # torn tail
    "sa_20261130_f0000005": ("completed", 0, None, "There is one JSON file.", 300, 24,
                             "There is one JSON file.\n"),  # trimmed
    "sa_20261130_f0000006": ("cancelled", None, "killed by the user", None, 0, 0, ""),  # old layout
    "sa_20261130_f0000007": ("interrupted", None, "the machine restarted while it ran", None,
                             300, 24, "There is one JSON file."),  # died before a reboot
    "sa_20261130_f0000008": ("completed", 0, None, None, 0, 0, "line1\nline2\n"),  # corrupt line
}


@pytest.fixture
def frozen(zap):
    folder = zap.home / "subagents"
    folder.mkdir(parents=True)
    for f in FROZEN.iterdir():
        shutil.copy(f, folder / f.name)
    return zap


@pytest.mark.parametrize("sid", sorted(EXPECTED))
def test_a_frozen_trail_gives_the_same_poll_view(frozen, sid):
    doc = frozen.json("poll", "--no-wait", sid)["subagents"][0]
    status, code, reason, report, tin, tout, head = EXPECTED[sid]
    assert (doc["status"], doc["exit_code"], doc["reason"], doc["report"]) == (status, code, reason, report)
    assert (doc["input_tokens"], doc["output_tokens"]) == (tin, tout)
    assert (doc["output"] or {}).get("head", "") == head
    assert doc["terminal"] is True


def test_frozen_trails_replay_and_list(frozen):
    assert frozen.json("list", "--all")["count"] == len(EXPECTED)
    torn = frozen("replay", "sa_20261130_f0000004")
    assert torn.returncode == 0 and "incomplete record" in torn.err
    corrupt = frozen("replay", "sa_20261130_f0000008")
    assert corrupt.returncode == 0 and "corrupt line 3 skipped" in corrupt.out
    trimmed = frozen.json("replay", "sa_20261130_f0000005")["records"]
    assert [r["type"] for r in trimmed][:2] == ["spawn", "process"]
    assert any(r["type"] == "trimmed" for r in trimmed)
    failed = frozen("poll", "--no-wait", "sa_20261130_f0000001")
    assert "oops" in failed.out and failed.returncode == 0


def test_the_fixtures_themselves_never_change():
    """Observing copies only: a fixture with a dead runner stays unended on disk."""
    text = (FROZEN / "sa_20261130_f0000007.jsonl").read_text()
    assert '"type":"status"' not in text and '"type":"report"' not in text


def test_an_interrupted_subagent_ran_until_its_last_record_before_the_reboot(frozen):
    """Its end was recorded after the reboot, on another boot's monotonic clock:
    the elapsed time is from its launch to its last record (1.26 s), not a
    difference of two clocks."""
    doc = frozen.json("poll", "--no-wait", "sa_20261130_f0000007")["subagents"][0]
    assert doc["status"] == "interrupted" and doc["elapsed_s"] == pytest.approx(1.258, abs=0.01)
