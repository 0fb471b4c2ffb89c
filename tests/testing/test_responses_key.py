"""The scripted Responses server keys a conversation by its opening
messages. codex 0.169 opens `input` with an `additional_tools` item before
the developer and user messages; the key used to stop there, so no rule with
a `match` could ever serve codex (tryout)."""

from __future__ import annotations

from zapcli.testing.responses import conversation_key


def test_items_that_are_not_messages_before_the_task_are_skipped():
    body = {"instructions": "base", "prompt_cache_key": "thread-1", "input": [
        {"type": "additional_tools", "role": "developer", "tools": []},
        {"type": "message", "role": "developer", "content": [{"type": "input_text", "text": "rules"}]},
        {"type": "message", "role": "user", "content": [{"type": "input_text", "text": "say hi codex"}]},
        {"type": "reasoning", "summary": []},
        {"type": "function_call", "call_id": "c1", "name": "shell", "arguments": "{}"},
        {"type": "function_call_output", "call_id": "c1", "output": "ok"},
        {"type": "message", "role": "user", "content": [{"type": "input_text", "text": "later"}]},
    ]}
    assert conversation_key(body) == ("base\n\nrules", "say hi codex", "thread-1")


def test_the_first_model_made_item_ends_the_opening_messages():
    body = {"input": [
        {"role": "user", "content": "task"},
        {"type": "message", "role": "assistant", "content": "answer"},
        {"role": "user", "content": "follow-up"},
    ]}
    assert conversation_key(body) == ("", "task", "")
    assert conversation_key({"input": "just text"}) == ("", "just text", "")
