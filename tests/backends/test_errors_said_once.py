"""An agent CLI that says the same error more than once (pi: each of its own
retries ends in an error message; opencode: an error event per attempt) ends
with that error said once in its reason. New user, round 5: a pi subagent at
a coding plan's usage limit ended 'usage limit, resets 14:50 UTC — pi: 429
Usage limit reached …; 429 Usage limit reached …', the same words twice.
The parsers are fed the CLIs' own event shapes (as recorded in their JSON
modes); two different errors are both kept, in order."""

from __future__ import annotations

from zapcli.backends.clis.opencode import OpencodeParser
from zapcli.backends.clis.pi import PiParser

LIMIT = "429 Usage limit reached for 5 hour. Your limit will reset at 2026-12-07 22:50:40"


def _pi_error(text: str) -> dict:
    return {"type": "message_end", "message": {"role": "assistant", "content": [],
                                               "stopReason": "error", "errorMessage": text}}


def test_pi_says_a_repeated_error_once():
    parser = PiParser()
    for event in (_pi_error(LIMIT), _pi_error(LIMIT), {"type": "agent_end"}):
        parser.feed(event)
    assert parser.finish(1, "").reason == LIMIT
    other = PiParser()
    for event in (_pi_error("first"), _pi_error("second"), _pi_error("first")):
        other.feed(event)
    assert other.finish(1, "").reason == "first; second"


def test_opencode_says_a_repeated_error_once():
    parser = OpencodeParser(model="gpt-test")
    for _ in range(2):
        parser.feed({"type": "error", "error": {"name": "APIError", "data": {"message": LIMIT}}})
    assert parser.finish(1, "").reason == LIMIT
