"""`--output-schema FILE` (docs/explanation/rules.md#parallel-coding): validated with jsonschema, retried by the
built-in agent, checked the same way for `sh`, `structured` in poll --json."""

from __future__ import annotations

import json

SCHEMA = {"type": "object", "required": ["answer"], "additionalProperties": False,
          "properties": {"answer": {"type": "integer"}}}


def _schema(zap) -> str:
    path = zap.cwd / "schema.json"
    path.write_text(json.dumps(SCHEMA))
    return str(path)


def _doc(zap, sid):
    return zap.json("poll", "--no-wait", sid)["subagents"][0]


def test_the_agent_gets_its_errors_back_and_fixes_its_answer(zap, model):
    srv = model([{"match": "give the answer", "turns": [
        {"text": "The answer is 42."},
        {"text": '```json\n{"answer": 42}\n```'}]}])
    proc = zap("spawn", "--output-schema", _schema(zap), "--", "give the answer")
    assert proc.returncode == 0, proc.err
    sid = proc.out.strip()
    assert zap("wait", "--timeout", "30", sid).returncode == 0, zap("replay", sid).out
    assert _doc(zap, sid)["structured"] == {"answer": 42}
    # wait gives it too, and so the Python API's wait (a new user found it None there)
    assert zap.json("wait", sid)["subagents"][0]["structured"] == {"answer": 42}
    import zapcli

    assert zapcli.wait([sid]).subagents[0].structured == {"answer": 42}
    system = srv.requests[0]["messages"][0]["content"]
    assert '"answer"' in system and "JSON Schema" in system  # the agent is told the schema
    retry = srv.requests[1]["messages"][-1]
    assert retry["role"] == "user" and "not JSON" in retry["content"]


def test_three_invalid_answers_fail_with_output_schema(zap, model):
    srv = model([{"match": "answer badly", "turns": [
        {"text": "no json here"}, {"text": '{"answer": "x"}'}, {"text": '{"answer": 1, "extra": 2}'},
        {"text": '{"answer": 7}'}]}])
    proc = zap("spawn", "--output-schema", _schema(zap), "--", "answer badly")
    sid = proc.out.strip()
    assert zap("wait", "--timeout", "30", sid).returncode == 3
    doc = _doc(zap, sid)
    assert doc["status"] == "failed" and doc["reason"].startswith("output schema:")
    assert "Additional properties" in doc["reason"] and doc["structured"] is None
    assert len(srv.requests) == 3  # three answers, no fourth try
    assert "is not of type 'integer'" in srv.requests[2]["messages"][-1]["content"]


def test_an_invalid_schema_is_refused_at_spawn(zap):
    bad = zap.cwd / "bad.json"
    bad.write_text(json.dumps({"type": "object", "properties": {"a": {"type": "no-such-type"}}}))
    for path, words in ((bad, "not a valid JSON Schema"), (zap.cwd / "missing.json", "cannot read")):
        proc = zap("spawn", "--cli", "sh", "--output-schema", str(path), "--", "echo {}")
        assert proc.returncode == 2 and words in proc.err
    assert not (zap.home / "subagents").exists() or not list((zap.home / "subagents").iterdir())


def test_every_backend_is_checked_the_same_way(zap):
    schema = _schema(zap)
    good = zap.spawn_sh("echo '{\"answer\": 3}'", "--output-schema", schema)
    bad = zap.spawn_sh("echo 'three'", "--output-schema", schema)
    zap("wait", "--timeout", "30", good, bad)
    assert _doc(zap, good)["structured"] == {"answer": 3}
    doc = _doc(zap, bad)
    assert doc["status"] == "failed" and doc["reason"].startswith("output schema: the final report is not JSON")


def test_the_deadline_holds_while_the_report_is_checked(zap):
    """Tryout: a schema whose pattern backtracks for ever ((a+)+$ on a's and a
    '!') ran ~30 s past --timeout 8 after the command had finished: the check
    ran with no watchdog and no backstop. The check is in C and holds the
    interpreter, so only the SIGALRM backstop can stop it."""
    import time

    schema = zap.cwd / "s7.json"
    schema.write_text(json.dumps({"type": "string", "pattern": "(a+)+$"}))
    report = '"' + "a" * 44 + '!"'
    started = time.monotonic()
    sid = zap.spawn_sh(f"echo '{report}'", "--output-schema", str(schema), timeout=3)
    assert zap.wait_status(sid, timeout=30) == "timeout"
    took = time.monotonic() - started
    doc = _doc(zap, sid)
    assert took < 3 + 2 + 4, took  # the deadline, the backstop's 2 s, start-up
    assert "output schema" in doc["reason"], doc["reason"]


def test_one_json_fence_with_text_around_it_is_the_report(zap):
    """Tryout: 'Here you go:' + a ```json fence was refused with a parser
    position ("Expecting value: line 1 column 1")."""
    schema = _schema(zap)
    fenced = zap.spawn_sh("printf 'Here you go:\\n```json\\n{\"answer\": 5}\\n```\\nDone.\\n'",
                          "--output-schema", schema)
    two = zap.spawn_sh("printf '```json\\n{\"answer\": 1}\\n```\\nor\\n```json\\n{\"answer\": 2}\\n```\\n'",
                       "--output-schema", schema)
    prose = zap.spawn_sh("echo 'The answer is 3.'", "--output-schema", schema)
    zap("wait", "--timeout", "30", fenced, two, prose)
    assert _doc(zap, fenced)["structured"] == {"answer": 5}, _doc(zap, fenced)
    doc = _doc(zap, two)
    assert doc["status"] == "failed" and "2 ```json fences" in doc["reason"], doc["reason"]
    reason = _doc(zap, prose)["reason"]
    assert reason.startswith("output schema: the final report is not JSON")
    assert "bare JSON or one ```json fence" in reason and "column" not in reason, reason


def test_a_deeply_nested_schema_under_the_size_cap_is_a_clear_error(zap):
    """#24.12: nesting, not size, made json (and jsonschema) raise RecursionError."""
    deep = zap.cwd / "deep.json"
    deep.write_text("[" * 3000 + "]" * 3000)  # 6 KB, under the 32 KB cap
    checked = zap.cwd / "checked.json"  # parses, but checking it recurses per level
    checked.write_text('{"items": ' * 400 + "{}" + "}" * 400)
    inline = '{"items": ' * 2000 + "{}" + "}" * 2000  # 22 KB
    for given in (str(deep), str(checked), inline):
        proc = zap("spawn", "--cli", "sh", "--output-schema", given, "--", "echo {}")
        assert proc.returncode == 2 and "Traceback" not in proc.err, proc.err[-500:]
        assert "nested too deeply" in proc.err and len(proc.err.splitlines()) == 1, proc.err
    assert not (zap.home / "subagents").exists() or not list((zap.home / "subagents").iterdir())
    # a report nested that deep is a failed check, never a crash of its runner
    sid = zap.spawn_sh("python3 -c 'print(\"[\" * 3000 + \"]\" * 3000)'", "--output-schema",
                       _schema(zap))
    assert zap.wait_status(sid) == "failed"
    assert "nested too deeply" in _doc(zap, sid)["reason"]
