"""ChatClient against the real scripted server over real HTTP: normal turns,
every docs/explanation/rules.md#models server deviation (as raw SSE chunks), and error mapping."""

from __future__ import annotations

import json
import socket
from typing import Any

import pytest

from zapcli.agent.types import ModelError, ToolSpec, Turn
from zapcli.providers.openai_chat import ChatClient
from zapcli.providers.stream import TurnAssembler
from zapcli.testing import ScriptedServer

USER = [{"role": "user", "content": "go"}]


def complete(script: Any, *, tools: list[dict[str, Any]] | None = None, server: dict | None = None,
             **client_kw: Any) -> tuple[Turn, list[tuple[str, str]], list[dict[str, Any]]]:
    deltas: list[tuple[str, str]] = []
    with ScriptedServer(script, **(server or {})) as srv:
        kw = {"api_key": "test-key", "max_retries": 3, "timeout_s": 10, **client_kw}
        client = ChatClient("scripted", base_url=srv.base_url, **kw)
        try:
            turn = client.complete(list(USER), tools or [], lambda k, d: deltas.append((k, d)))
        finally:
            requests = srv.requests
    return turn, deltas, requests


def fails(script: Any, **kw: Any) -> str:
    with pytest.raises(ModelError) as exc:
        complete(script, **kw)
    return exc.value.reason


def chunk(delta: dict[str, Any], finish: str | None = None, **extra: Any) -> dict[str, Any]:
    return {"id": "c1", "object": "chat.completion.chunk", "model": "scripted",
            "choices": [{"index": 0, "delta": delta, "finish_reason": finish}], **extra}


def call_delta(**tc: Any) -> dict[str, Any]:
    return chunk({"tool_calls": [tc]})


def raw(*items: Any, close: str = "clean") -> list[dict[str, Any]]:
    return [{"turns": [{"raw": list(items), "close": close}]}]


DONE = "data: [DONE]\n\n"


# -- ordinary turns ---------------------------------------------------------------------------

def test_text_streams_in_pieces_with_usage():
    script = [{"turns": [{"text": "The answer is forty-two, as always.",
                          "usage": {"prompt_tokens": 30, "completion_tokens": 9,
                                    "cached_tokens": 4}}]}]
    turn, deltas, _ = complete(script)
    assert turn.text == "The answer is forty-two, as always."
    assert len(deltas) > 1 and all(k == "text" for k, _ in deltas)
    assert "".join(d for _, d in deltas) == turn.text
    assert (turn.usage.input_tokens, turn.usage.output_tokens, turn.usage.cached_tokens) == (30, 9, 4)
    assert turn.finish_reason == "stop" and turn.tool_calls == [] and turn.model == "scripted"


def test_tool_calls_are_assembled_from_deltas():
    script = [{"turns": [{"tool_calls": [
        {"name": "read", "arguments": {"path": "/a/long/path/to/some/file.txt", "limit": 10}},
        {"name": "grep", "arguments": {"pattern": "x"}, "id": "call_given"}]}]}]
    turn, _, _ = complete(script)
    assert [c.name for c in turn.tool_calls] == ["read", "grep"]
    assert turn.tool_calls[0].arguments == {"path": "/a/long/path/to/some/file.txt", "limit": 10}
    assert turn.tool_calls[1].call_id == "call_given"
    assert all(c.error is None for c in turn.tool_calls)
    assert turn.finish_reason == "tool_calls"


def test_request_carries_tools_messages_and_usage_option():
    spec = ToolSpec("read", "Read a file.", {"type": "object", "properties": {}})
    _, _, requests = complete([{"turns": [{"text": "ok"}]}], tools=[spec.to_openai()])
    body = requests[0]
    assert body["tools"] == [spec.to_openai()]
    assert body["messages"] == USER and body["model"] == "scripted"
    assert body["stream"] is True and body["stream_options"] == {"include_usage": True}


def test_no_tools_key_when_no_tools():
    _, _, requests = complete([{"turns": [{"text": "ok"}]}])
    assert "tools" not in requests[0]


# -- reasoning ---------------------------------------------------------------------------------

@pytest.mark.parametrize("field", ["reasoning_content", "reasoning", "think_tags"])
def test_reasoning_becomes_thinking(field):
    script = [{"turns": [{"reasoning": "let me think about this carefully", "text": "Done.",
                          "reasoning_field": field}]}]
    turn, deltas, _ = complete(script)
    assert turn.reasoning == "let me think about this carefully"
    assert turn.text == "Done."
    assert "".join(d for k, d in deltas if k == "thinking") == turn.reasoning
    assert "".join(d for k, d in deltas if k == "text") == "Done."


def test_think_tags_split_across_chunks_are_stripped_from_text():
    script = raw(chunk({"content": "<thi"}), chunk({"content": "nk>plan: a<b"}),
                 chunk({"content": " then c</th"}), chunk({"content": "ink>\n\nFinal <b>ans"}),
                 chunk({"content": "wer</b>"}, "stop"), DONE)
    turn, _, _ = complete(script)
    assert turn.reasoning == "plan: a<b then c"
    assert turn.text == "Final <b>answer</b>"


# -- stream deviations -------------------------------------------------------------------------

def test_comments_keepalives_and_empty_data_lines_are_ignored():
    script = raw(": keep-alive\n\n", "data: \n\n", "\n\n", "data:\n\n", ": OPENROUTER PROCESSING\n\n",
                 "event: message\n", chunk({"content": "hi"}), "\r\n", "id: 7\nretry: 100\n\n",
                 chunk({}, "stop"), DONE)
    turn, _, _ = complete(script)
    assert turn.text == "hi" and turn.finish_reason == "stop"


def test_bare_json_lines_and_multiline_data_events():
    body = json.dumps(chunk({"content": "two"}), indent=1).splitlines()
    script = raw(json.dumps(chunk({"content": "one "})) + "\n",
                 "".join(f"data: {line}\n" for line in body) + "\n",
                 chunk({}, "stop"), DONE)
    turn, _, _ = complete(script)
    assert turn.text == "one two"


def test_tool_call_deltas_without_index_or_id():
    script = raw(call_delta(type="function", function={"name": "read", "arguments": ""}),
                 call_delta(function={"arguments": '{"path": '}),
                 call_delta(function={"arguments": '"a.txt"}'}),
                 call_delta(function={"name": "glob", "arguments": '{"pattern": "*.py"}'}),
                 chunk({}, "tool_calls"), DONE)
    turn, _, _ = complete(script)
    assert [(c.name, c.arguments) for c in turn.tool_calls] == [
        ("read", {"path": "a.txt"}), ("glob", {"pattern": "*.py"})]
    ids = [c.call_id for c in turn.tool_calls]
    assert all(ids) and len(set(ids)) == 2


def test_one_index_for_several_calls_with_distinct_ids():
    script = raw(call_delta(index=0, id="a", function={"name": "read", "arguments": '{"path":'}),
                 call_delta(index=0, id="a", function={"arguments": ' "x"}'}),
                 call_delta(index=0, id="b", function={"name": "read", "arguments": '{"path": "y"}'}),
                 chunk({}, "tool_calls"), DONE)
    turn, _, _ = complete(script)
    assert [(c.call_id, c.arguments) for c in turn.tool_calls] == [("a", {"path": "x"}),
                                                                  ("b", {"path": "y"})]


def test_one_index_for_several_calls_without_ids():
    script = raw(call_delta(index=0, function={"name": "read", "arguments": '{"path": "x"}'}),
                 call_delta(index=0, function={"name": "read", "arguments": '{"path": "y"}'}),
                 chunk({}, "tool_calls"), DONE)
    turn, _, _ = complete(script)
    assert [c.arguments for c in turn.tool_calls] == [{"path": "x"}, {"path": "y"}]


def test_name_repeated_in_every_delta_is_one_call():
    script = raw(call_delta(index=0, function={"name": "read", "arguments": '{"pa'}),
                 call_delta(index=0, function={"name": "read", "arguments": 'th": "x"}'}),
                 chunk({}, "tool_calls"), DONE)
    turn, _, _ = complete(script)
    assert [(c.name, c.arguments) for c in turn.tool_calls] == [("read", {"path": "x"})]


def test_tool_calls_with_finish_reason_stop_are_kept():
    script = [{"turns": [{"tool_calls": [{"name": "read", "arguments": {"path": "a"}}],
                          "finish_reason": "stop"}]}]
    turn, _, _ = complete(script)
    assert turn.finish_reason == "stop" and turn.tool_calls[0].arguments == {"path": "a"}


@pytest.mark.parametrize("args, expected", [
    ({"path": "a"}, {"path": "a"}),        # an object instead of a JSON string
    ("", {}),                              # empty
    ('"{\\"path\\": \\"a\\"}"', {"path": "a"}),  # double-encoded
])
def test_argument_forms_that_parse(args, expected):
    script = raw(call_delta(index=0, id="c", function={"name": "read", "arguments": args}),
                 chunk({}, "tool_calls"), DONE)
    turn, _, _ = complete(script)
    assert turn.tool_calls[0].arguments == expected and turn.tool_calls[0].error is None


@pytest.mark.parametrize("args, needle", [('{"path": "a"', "not valid JSON"),
                                          ("[1, 2]", "must be a JSON object")])
def test_bad_arguments_become_call_errors(args, needle):
    script = [{"turns": [{"tool_calls": [{"name": "read", "arguments": args}]}]}]
    turn, _, _ = complete(script)
    call = turn.tool_calls[0]
    assert call.arguments is None and needle in call.error and call.raw_arguments == args


def test_legacy_function_call_delta():
    script = raw(chunk({"function_call": {"name": "read", "arguments": '{"path": "z"}'}}),
                 chunk({}, "function_call"), DONE)
    turn, _, _ = complete(script)
    assert [(c.name, c.arguments) for c in turn.tool_calls] == [("read", {"path": "z"})]


def test_missing_usage_is_none():
    turn, _, _ = complete([{"turns": [{"text": "hi", "usage": None}]}])
    assert turn.text == "hi" and turn.usage is None


def test_usage_in_the_finish_chunk_is_read():
    script = raw(chunk({"content": "x"}), chunk({}, "stop", usage={"prompt_tokens": 5,
                                                                  "completion_tokens": 2}))
    turn, _, _ = complete(script)  # no [DONE] either, but the model finished
    assert turn.usage.input_tokens == 5 and turn.usage.output_tokens == 2


def test_error_object_inside_http_200():
    reason = fails([{"turns": [{"error_200": {"message": "upstream overloaded",
                                              "code": "overloaded"}}]}])
    assert "upstream overloaded" in reason and "overloaded" in reason


def test_error_event_mid_stream():
    reason = fails(raw(chunk({"content": "partial"}), "event: error\n",
                       {"error": {"message": "context window exceeded"}}))
    assert "context window exceeded" in reason


def test_stream_ending_without_done_mid_call_is_an_error():
    reason = fails(raw(chunk({"role": "assistant"}),
                       call_delta(index=0, id="c", function={"name": "write", "arguments": '{"pa'})))
    assert "ended before the model finished" in reason and "`write`" in reason


def test_stream_ending_without_done_mid_text_is_an_error():
    reason = fails(raw(chunk({"content": "I will now"})))
    assert "answer may be cut off" in reason


def test_connection_dropped_mid_stream_is_an_error():
    reason = fails(raw(call_delta(index=0, id="c", function={"name": "bash", "arguments": "{"}),
                       close="abort"))
    assert "broke mid-answer" in reason


def test_data_that_is_not_json_is_an_error():
    reason = fails(raw("data: {not json\n\n", DONE))
    assert "not JSON" in reason


def test_whole_json_body_instead_of_a_stream():
    asm = TurnAssembler(lambda k, d: None)
    asm.feed_body(json.dumps({"model": "m", "choices": [{"index": 0, "finish_reason": "stop",
              "message": {"role": "assistant", "content": "whole", "tool_calls": [
                  {"id": "i", "type": "function",
                   "function": {"name": "read", "arguments": "{}"}}]}}]}))
    turn = asm.finish()
    assert turn.text == "whole" and turn.tool_calls[0].arguments == {}


# -- HTTP errors and retries ------------------------------------------------------------------

@pytest.mark.parametrize("status", [500, 503])
def test_transient_errors_are_retried_then_succeed(status):
    script = [{"turns": [{"http_error": {"status": status, "times": 2}}, {"text": "recovered"}]}]
    turn, _, requests = complete(script)
    assert turn.text == "recovered" and len(requests) == 3


@pytest.mark.parametrize("err,wait", [({"status": 429, "retry_after": 7}, 7.0),
                                      ({"status": 429, "retry_after_ms": 1500}, 1.5),
                                      ({"status": 529}, 0.01),
                                      ({"status": 503, "type": "overloaded_error"}, 0.01)])
def test_a_rate_limit_or_overload_is_handed_to_the_loop_not_retried(err, wait):
    """Issue 19: the agent loop parks on these for as long as the server asks
    (Retry-After), visibly; the SDK's own quick retries would hide it."""
    with pytest.raises(ModelError) as exc:
        complete([{"turns": [{"http_error": {**err, "times": 5}}, {"text": "late"}]}])
    assert exc.value.retry_after == pytest.approx(wait) and exc.value.status == err["status"]
    assert "rate-limiting" in exc.value.reason or "overloaded" in exc.value.reason


def test_a_plain_503_is_still_retried_by_the_client():
    reason = fails([{"turns": [{"http_error": {"status": 503, "times": 9}}]}], max_retries=1)
    assert "HTTP 503" in reason


def test_server_error_beyond_retries():
    reason = fails([{"turns": [{"http_error": {"status": 500, "times": 9}}]}], max_retries=0)
    assert "HTTP 500" in reason


def test_unauthorized_names_the_key_variable():
    reason = fails([{"turns": [{"text": "x"}]}], server={"api_key": "right"}, api_key="wrong")
    assert "401" in reason and "OPENAI_API_KEY" in reason
    reason = fails([{"turns": [{"text": "x"}]}], server={"api_key": "right"}, api_key="wrong",
                   api_key_env="OPENROUTER_API_KEY")
    assert "OPENROUTER_API_KEY" in reason


def test_unknown_model_names_the_model():
    reason = fails([{"turns": [{"text": "x"}]}], server={"models": ["other"]})
    assert "model `scripted` was not found" in reason and "--model" in reason


def test_wrong_base_path_points_at_base_url():
    with ScriptedServer([{"turns": [{"text": "x"}]}]) as srv:
        client = ChatClient("m", base_url=srv.base_url[:-3], api_key="k", max_retries=0)
        with pytest.raises(ModelError) as exc:
            client.complete(list(USER), [], lambda k, d: None)
    assert "OPENAI_BASE_URL" in exc.value.reason and "/v1" in exc.value.reason


def test_connection_refused_points_at_base_url():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]  # closed again before the request: nobody listens
    client = ChatClient("m", base_url=f"http://127.0.0.1:{port}/v1", api_key="k", max_retries=0)
    with pytest.raises(ModelError) as exc:
        client.complete(list(USER), [], lambda k, d: None)
    assert "cannot connect" in exc.value.reason and "OPENAI_BASE_URL" in exc.value.reason


def test_slow_server_times_out_with_a_reason():
    reason = fails([{"turns": [{"delay_s": 2, "text": "slow"}]}], timeout_s=0.3, max_retries=0)
    assert "did not answer within 0.3s" in reason


def test_no_key_for_the_default_endpoint(monkeypatch):
    monkeypatch.delenv("OPENAI_API_KEY", raising=False)
    monkeypatch.delenv("OPENAI_BASE_URL", raising=False)
    with pytest.raises(ModelError) as exc:
        ChatClient("gpt-x").complete(list(USER), [], lambda k, d: None)
    assert "OPENAI_API_KEY" in exc.value.reason


def test_local_server_needs_no_key(monkeypatch):
    monkeypatch.delenv("OPENAI_API_KEY", raising=False)
    with ScriptedServer([{"turns": [{"text": "keyless"}]}]) as srv:
        turn = ChatClient("m", base_url=srv.base_url).complete(list(USER), [], lambda k, d: None)
    assert turn.text == "keyless"


def test_repr_hides_the_key():
    assert "secret" not in repr(ChatClient("m", api_key="secret-value-123"))
