"""The scripted server speaks the real protocol: the official SDK talks to it
unmodified, in-process and as a separate process."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import urllib.error
import urllib.request

import openai
import pytest

from zapcli.testing import ScriptedServer, ScriptError, load_script
from zapcli.testing.scripted_server import EXHAUSTED_TEXT


def sdk(srv: ScriptedServer) -> openai.OpenAI:
    return openai.OpenAI(base_url=srv.base_url, api_key="k", max_retries=0)


def ask(client: openai.OpenAI, user: str, system: str | None = None) -> str:
    msgs = ([{"role": "system", "content": system}] if system else []) + [
        {"role": "user", "content": user}]
    out = client.chat.completions.create(model="m", messages=msgs)
    return out.choices[0].message.content or ""


def test_models_endpoint():
    with ScriptedServer([], models=["a", "b"]) as srv:
        assert [m.id for m in sdk(srv).models.list()] == ["a", "b"]


def test_non_streaming_completion_with_tool_calls_and_reasoning():
    script = [{"turns": [{"text": "calling", "reasoning": "hmm",
                          "tool_calls": [{"name": "read", "arguments": {"path": "x"}}],
                          "usage": {"prompt_tokens": 7, "completion_tokens": 3}}]}]
    with ScriptedServer(script) as srv:
        out = sdk(srv).chat.completions.create(model="m", messages=[{"role": "user", "content": "q"}])
    msg = out.choices[0].message
    assert msg.content == "calling" and out.choices[0].finish_reason == "tool_calls"
    assert json.loads(msg.tool_calls[0].function.arguments) == {"path": "x"}
    assert msg.model_extra["reasoning_content"] == "hmm"
    assert (out.usage.prompt_tokens, out.usage.completion_tokens) == (7, 3)


def test_sdk_stream_parser_reads_it():
    script = [{"turns": [{"text": "streamed text", "tool_calls": [{"name": "t", "arguments": {}}]}]}]
    with ScriptedServer(script) as srv:
        stream = sdk(srv).chat.completions.create(
            model="m", messages=[{"role": "user", "content": "q"}], stream=True,
            stream_options={"include_usage": True})
        chunks = list(stream)
    assert "".join(c.choices[0].delta.content or "" for c in chunks if c.choices) == "streamed text"
    assert chunks[-1].usage is not None and chunks[-1].choices == []


def test_rules_match_user_or_system_and_conversations_advance_separately():
    script = [{"match": "alpha", "turns": [{"text": "a1"}, {"text": "a2"}]},
              {"match": "REVIEWER", "turns": [{"text": "r1"}]},
              {"turns": [{"text": "fallback"}], "loop": True}]
    with ScriptedServer(script) as srv:
        c = sdk(srv)
        assert ask(c, "task alpha") == "a1"
        assert ask(c, "other alpha task") == "a1"  # a new conversation starts at turn 0
        assert ask(c, "task alpha") == "a2"
        going_on = [{"role": "user", "content": "task alpha"}, {"role": "assistant", "content": "a2"},
                    {"role": "user", "content": "and then?"}]
        out = c.chat.completions.create(model="m", messages=going_on)  # type: ignore[arg-type]
        assert out.choices[0].message.content == EXHAUSTED_TEXT  # past its turns: a closing text
        assert ask(c, "anything", system="You are REVIEWER") == "r1"
        assert ask(c, "zzz") == ask(c, "zzz") == "fallback"  # loop: true repeats
        assert len(srv.requests) == 7


def test_the_same_task_again_after_its_turns_were_played_is_an_error_not_a_completed_answer():
    """A tutorial reader re-ran a step against the same server: the run got
    `[scripted server: this conversation has no more turns]` and exited 0, as
    if it had worked. A request that opens a conversation (nothing the model
    said in it) whose turns were all played is a 409 saying what to do."""
    with ScriptedServer([{"match": "summarise", "turns": [{"text": "done"}]}]) as srv:
        c = sdk(srv)
        assert ask(c, "summarise the notes") == "done"
        with pytest.raises(openai.APIStatusError) as exc:
            ask(c, "summarise the notes")
    assert exc.value.status_code == 409
    assert "already played all 1 turn(s)" in str(exc.value) and "restart the server" in str(exc.value)


def test_no_matching_rule_is_a_400_naming_the_message():
    with ScriptedServer([{"match": "never", "turns": []}]) as srv:
        with pytest.raises(openai.BadRequestError) as exc:
            ask(sdk(srv), "hello there")
    assert "hello there" in str(exc.value)


def test_http_error_then_next_turn_and_placeholders():
    script = [{"turns": [{"http_error": {"status": 503, "times": 1}},
                         {"text": "root is {workspace}"}]}]
    with ScriptedServer(script, variables={"workspace": "/tmp/ws"}) as srv:
        with pytest.raises(openai.InternalServerError):
            ask(sdk(srv), "q")
        assert ask(sdk(srv), "q") == "root is /tmp/ws"


def test_api_key_is_checked_when_set():
    with ScriptedServer([{"turns": [{"text": "x"}]}], api_key="good") as srv:
        with pytest.raises(openai.AuthenticationError):
            ask(sdk(srv), "q")


def test_unknown_path_is_404():
    with ScriptedServer([]) as srv:
        with pytest.raises(urllib.error.HTTPError) as exc:
            urllib.request.urlopen(srv.base_url + "/nothing", timeout=5)
    assert exc.value.code == 404


@pytest.mark.parametrize("bad, needle", [
    ({"turns": []}, "list of rules"),
    ([{"turn": []}], "rule 0"),
    ([{"turns": [{"txt": "x"}]}], "rule 0 turn 0: unknown key"),
    ([{"turns": [{"http_error": {"status": 500, "times": 0}}]}], "times >= 1"),
    ([{"turns": [{"error_200": True}]}], "error_200 needs"),
    ([{"turns": [{"error_200": "boom"}]}], "error_200 needs"),
    ([{"turns": [{"text": "cut", "close": True}]}], "goes with `raw`"),
    ([{"turns": [{"raw": ["data: {}\n\n"], "close": "never"}]}], "close is"),
    ([{"turns": [{"raw": "data: [DONE]"}]}], "raw is a list"),
    ([{"turns": [{"text": "x", "hold": ""}]}], "hold is a name"),
])
def test_malformed_scripts_are_refused(bad, needle):
    with pytest.raises(ScriptError, match=needle):
        ScriptedServer(bad)


def test_a_held_turn_answers_once_released_and_when_the_server_stops():
    """`hold`: the call stays open until the test lets it go; stopping the
    server lets every held call go (no thread left waiting)."""
    import threading

    script = [{"match": "first", "turns": [{"text": "let go", "hold": "a"}]},
              {"match": "second", "turns": [{"text": "stopped", "hold": "b"}]}]
    srv = ScriptedServer(script).start()
    got: dict[str, str] = {}

    def call(user: str) -> None:
        try:
            got[user] = ask(sdk(srv), user)
        except openai.APIError as exc:  # the stopped server may cut it off
            got[user] = type(exc).__name__

    calls = [threading.Thread(target=call, args=(u,)) for u in ("first", "second")]
    for t in calls:
        t.start()
    calls[0].join(1.0)
    assert calls[0].is_alive() and not got  # held: no answer yet
    srv.release("a")
    calls[0].join(30)
    assert got == {"first": "let go"} and calls[1].is_alive()
    srv.stop()
    calls[1].join(30)
    assert not calls[1].is_alive()


def test_yaml_script_file(tmp_path):
    f = tmp_path / "s.yaml"
    f.write_text("- match: hi\n  turns:\n    - text: hello\n      usage: null\n", encoding="utf-8")
    assert load_script(f) == [{"match": "hi", "turns": [{"text": "hello", "usage": None}]}]


def test_runs_as_a_process_until_sigterm(tmp_path):
    f = tmp_path / "s.json"
    f.write_text(json.dumps([{"turns": [{"text": "from {who}"}]}]), encoding="utf-8")
    proc = subprocess.Popen([sys.executable, "-m", "zapcli.testing.scripted_server",
                             "--script", str(f), "--port", "0", "--var", "who=a process"],
                            stdout=subprocess.PIPE, text=True,
                            env={**os.environ, "PYTHONPATH": os.getcwd()})
    try:
        first = proc.stdout.readline().strip()
        assert first.startswith("listening http://127.0.0.1:") and first.endswith("/v1")
        client = openai.OpenAI(base_url=first.split()[1], api_key="k", max_retries=0)
        assert ask(client, "q") == "from a process"
        proc.send_signal(signal.SIGTERM)
        assert proc.wait(timeout=10) == 0
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()
