"""A model's text cannot rewrite the terminal or the reader of zapcli's JSON
(issue 27 item 9): orjson escapes C0 controls but leaves C1 controls (CSI
U+009B is ESC [ to many terminals) and the bidi overrides (U+202A-202E,
U+2066-2069, which reorder what a reader sees) raw. Every JSON zapcli
prints must carry them as \\u escapes, and lose nothing: the document
decodes to the same text.

The effect asserted: the raw bytes on stdout (or in the file written).
"""

from __future__ import annotations

import json

import pytest

# CSI via C1 (clear screen), NEL, an RLO override and an LRI isolate, and DEL
NASTY = "a\u009b2Jb\u0085c\u202etxt.exe\u2066d\u007fe"
RAW = [ch.encode() for ch in ("\u009b", "\u0085", "\u202e", "\u2066", "\u007f")]


def _clean(data: bytes, where: str) -> None:
    found = [r for r in RAW if r in data]
    assert not found, f"{where}: raw {found} in {data[:400]!r}"


def _has_text(doc: object) -> bool:
    return NASTY in json.dumps(doc, ensure_ascii=False)


@pytest.fixture
def nasty_subagents(zap, model):
    """A shell subagent that prints the text, and an agent whose task, tool
    call and answer carry it."""
    model([{"match": "say it", "turns": [
        {"tool_calls": [{"name": "bash", "arguments": {"command": f"printf '%s\\n' '{NASTY}'"}}]},
        {"text": f"done: {NASTY}"}]}])
    sh = zap.spawn_sh(f"printf '%s\\n' '{NASTY}'")
    agent = zap("spawn", "--approval", "full", "--", f"say it {NASTY}").out.strip()
    assert zap("wait", "--timeout", "60", sh, agent).returncode == 0, zap("replay", agent).out
    return sh, agent


def test_every_json_view_escapes_c1_controls_and_bidi_overrides(zap, nasty_subagents, tmp_path):
    sh, agent = nasty_subagents
    views = {
        "poll": ["poll", "--no-wait", sh, agent, "--json"],
        "wait": ["wait", sh, agent, "--json"],
        "list": ["list", "--all", "--json"],
        "output": ["output", sh, "--json"],
        "replay": ["replay", agent, "--json"],
        "replay --raw": ["replay", agent, "--raw"],
        "export": ["export", agent],
        "usage": ["usage", "--json"],
        "timeline": ["timeline", agent, "--format", "perfetto", "-o", "-"],
    }
    for name, argv in views.items():
        res = zap(*argv)
        assert res.returncode == 0, (name, res.err)
        _clean(res.stdout, name)
        docs = ([json.loads(line) for line in res.stdout.splitlines() if line.strip()]
                if name == "replay --raw" else [json.loads(res.stdout)])
        if name in ("poll", "wait", "output", "replay", "replay --raw", "export"):
            assert any(_has_text(d) for d in docs), (name, res.out[:2000])  # nothing lost
    page = tmp_path / "t.json"
    assert zap("timeline", agent, "--format", "perfetto", "-o", str(page)).returncode == 0
    _clean(page.read_bytes(), "timeline file")


def test_run_json_escapes_the_answer(zap, model):
    model([{"match": "answer", "turns": [{"text": f"here: {NASTY}"}]}])
    res = zap("run", "--json", "--", "answer me")
    assert res.returncode == 0, res.err
    _clean(res.stdout, "run --json")
    assert _has_text(json.loads(res.stdout))


def test_errors_in_json_escape_what_they_quote(zap):
    res = zap("poll", f"sa_{NASTY}", "--json")
    _clean(res.stdout, "error document")
