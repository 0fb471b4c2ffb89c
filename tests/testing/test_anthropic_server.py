"""The scripted Anthropic Messages server, spoken to by the official `anthropic`
SDK (its stream accumulator checks the event sequence) and by plain urllib
for the raw wire; the real Claude Code CLI drives it in
tests/backends/test_claude_adapter.py.
"""

from __future__ import annotations

import json
import urllib.error
import urllib.request
from typing import Any

import pytest

from zapcli.testing.anthropic import SIDE_TEXT, conversation_key
from zapcli.testing.server import ScriptedServer

anthropic = pytest.importorskip("anthropic")

SCRIPT = [{"match": "list the files", "turns": [
    {"reasoning": "Let me look.", "text": "Looking now.",
     "tool_calls": [{"name": "Bash", "arguments": {"command": "ls -la"}}],
     "usage": {"prompt_tokens": 120, "completion_tokens": 30, "cached_tokens": 100}},
    {"text": "There are three files."}]}]


def _client(srv: ScriptedServer, retries: int = 0) -> Any:
    return anthropic.Anthropic(base_url=srv.base_url, api_key="sk-test", max_retries=retries)


def _ask(text: str, system: Any = None) -> dict[str, Any]:
    req: dict[str, Any] = {"model": "scripted", "max_tokens": 100,
                           "messages": [{"role": "user", "content": text}]}
    if system is not None:
        req["system"] = system
    return req


def test_streamed_turn_has_thinking_text_and_tool_use_blocks() -> None:
    with ScriptedServer(SCRIPT, protocol="anthropic") as srv:
        with _client(srv).messages.stream(**_ask("please list the files")) as stream:
            kinds = [e.type for e in stream]
            msg = stream.get_final_message()
    assert kinds[0] == "message_start" and kinds[-1] == "message_stop"
    assert [b.type for b in msg.content] == ["thinking", "text", "tool_use"]
    assert msg.content[0].thinking == "Let me look." and msg.content[1].text == "Looking now."
    assert msg.content[2].name == "Bash" and msg.content[2].input == {"command": "ls -la"}
    assert msg.stop_reason == "tool_use"
    assert (msg.usage.input_tokens, msg.usage.output_tokens) == (120, 30)
    assert msg.usage.cache_read_input_tokens == 100


def test_non_streamed_turns_advance_one_conversation() -> None:
    with ScriptedServer(SCRIPT, protocol="anthropic") as srv:
        client = _client(srv)
        first = client.messages.create(**_ask("please list the files"))
        second = client.messages.create(**_ask("please list the files"))
    assert first.content[2].type == "tool_use" and first.content[2].input == {"command": "ls -la"}
    assert second.content[0].text == "There are three files."
    assert second.stop_reason == "end_turn"


def test_system_reminders_and_billing_header_do_not_split_the_conversation() -> None:
    def body(reminder: str, header: str) -> dict[str, Any]:
        return {"system": [{"type": "text", "text": f"x-anthropic-billing-header: cc={header};"},
                           {"type": "text", "text": "You are an agent."}],
                "messages": [{"role": "user", "content": [
                    {"type": "text", "text": f"<system-reminder>\n{reminder}\n</system-reminder>\n"},
                    {"type": "text", "text": "please list the files"}]}]}
    assert conversation_key(body("date is monday", "1f1")) == \
        conversation_key(body("date is tuesday", "593")) == \
        ("You are an agent.", "please list the files")


def test_side_requests_get_a_short_text_and_consume_no_turn() -> None:
    with ScriptedServer(SCRIPT, protocol="anthropic") as srv:
        client = _client(srv)
        side = client.messages.create(**_ask("Generate a title for this session", "titles"))
        main = client.messages.create(**_ask("please list the files"))
        assert srv.side_requests == 1
    assert side.content[0].text == SIDE_TEXT
    assert main.content[-1].type == "tool_use"  # still the script's first turn


def test_http_error_has_anthropic_shape_and_429_retry_headers() -> None:
    script = [{"match": "boom", "turns": [
        {"http_error": {"status": 429, "message": "slow down", "retry_after_ms": 1500}},
        {"http_error": {"status": 400, "message": "bad thing"}}, {"text": "fine"}]}]
    with ScriptedServer(script, protocol="anthropic") as srv:
        req = urllib.request.Request(srv.base_url + "/v1/messages?beta=true", method="POST",
                                     data=json.dumps(_ask("boom")).encode(),
                                     headers={"content-type": "application/json"})
        with pytest.raises(urllib.error.HTTPError) as err:
            urllib.request.urlopen(req, timeout=10)
        assert err.value.code == 429
        assert err.value.headers["retry-after"] == "2"
        assert err.value.headers["retry-after-ms"] == "1500"
        assert json.loads(err.value.read()) == {"type": "error", "request_id": "req_scripted",
                                                "error": {"type": "rate_limit_error",
                                                          "message": "slow down"}}
        with pytest.raises(anthropic.BadRequestError) as bad:
            _client(srv).messages.create(**_ask("boom"))
        assert "bad thing" in str(bad.value)
        assert _client(srv).messages.create(**_ask("boom")).content[0].text == "fine"


def test_error_200_is_an_error_event_after_the_stream_began() -> None:
    script = [{"match": "boom", "turns": [{"error_200": {"message": "Overloaded",
                                                         "type": "overloaded_error"}}]}]
    with ScriptedServer(script, protocol="anthropic") as srv:
        with pytest.raises(anthropic.APIStatusError) as err:
            with _client(srv).messages.stream(**_ask("boom")) as stream:
                for _ in stream:
                    pass
    assert "Overloaded" in str(err.value)


def test_raw_abort_cuts_the_stream_short() -> None:
    start = {"type": "message_start", "message": {
        "id": "m1", "type": "message", "role": "assistant", "model": "x", "content": [],
        "stop_reason": None, "usage": {"input_tokens": 3, "output_tokens": 1}}}
    script = [{"match": "cut", "turns": [{"raw": [start, {
        "type": "content_block_start", "index": 0, "content_block": {"type": "text", "text": ""}}],
        "close": "abort"}]}]
    with ScriptedServer(script, protocol="anthropic") as srv:
        with pytest.raises(Exception, match="incomplete|closed|Connection"):  # noqa: B017
            with _client(srv).messages.stream(**_ask("cut")) as stream:
                for _ in stream:
                    pass


def test_start_up_routes_answer_offline() -> None:
    with ScriptedServer(SCRIPT, protocol="anthropic", models=["claude-x"]) as srv:
        head = urllib.request.Request(srv.root_url + "/api/hello", method="HEAD")
        assert urllib.request.urlopen(head, timeout=5).status == 200
        client = _client(srv)
        assert [m.id for m in client.models.list()] == ["claude-x"]
        count = client.messages.count_tokens(model="claude-x", messages=[
            {"role": "user", "content": "x" * 400}])
        assert count.input_tokens >= 100
        with pytest.raises(anthropic.NotFoundError):
            client.messages.create(**dict(_ask("please list the files"), model="other"))
