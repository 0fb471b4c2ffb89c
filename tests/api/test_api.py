"""The Python API (`zapcli.api`, re-exported as `zapcli.*`) with real
subagents: typed results carrying the documents `--json` prints, errors as
the one ZapcliError family (parameters spelled as Python spells them), and
what a program sees is what the CLI sees."""

from __future__ import annotations

import json
import subprocess
import sys

import pytest
from jsonschema import Draft202012Validator

import zapcli
from tests.conftest import REPO, wait_until
from zapcli.api import Status

SCHEMAS = REPO / "docs" / "reference" / "json"


def valid(name: str, doc: dict) -> None:
    schema = json.loads((SCHEMAS / f"{name}.schema.json").read_text())
    errors = [e.message for e in Draft202012Validator(schema).iter_errors(doc)]
    assert not errors, errors


def test_spawn_wait_output_poll_list(zap):
    spawned = zapcli.spawn("echo hello; echo warn >&2", cli="sh", timeout=60)
    assert spawned.status in (Status.RUNNING, Status.QUEUED) and spawned.cli == "sh"
    valid("spawn", spawned.document)
    done = zapcli.wait([spawned.id], timeout=30)
    assert not done.timed_out and done.all_completed and done.exit_code == 0
    (sub,) = done.subagents
    assert sub.id == spawned.id and sub.status is Status.COMPLETED and sub.terminal
    assert sub.exit_code == 0 and sub.record["id"] == spawned.id and "terminal" in sub.record
    valid("wait", done.document)
    out = zapcli.output(spawned.id)
    assert out.text == "hello\n" and out.data == b"hello\n" and not out.truncated
    assert zapcli.output(spawned.id, stderr=True).text == "warn\n"
    polled = zapcli.poll(spawned.id, no_wait=True)
    assert polled.subagents[0].output is not None and polled.subagents[0].output.text == "hello\n"
    valid("poll", polled.document)
    listed = zapcli.list()
    assert spawned.id in [s.id for s in listed.subagents]
    # the CLI sees the program's subagent, and says the same
    cli_doc = zap.json("poll", "--no-wait", spawned.id)
    assert cli_doc["subagents"][0]["status"] == "completed"
    assert {k: v for k, v in cli_doc.items() if k != "waited_s"} == \
        {k: v for k, v in polled.document.items() if k != "waited_s"}


def test_wait_times_out_and_kill_stops_the_tree(zap):
    sid = zapcli.spawn("sleep 60", cli="sh").id
    res = zapcli.wait(sid, timeout=0.5)
    assert res.timed_out and res.exit_code == 4 and not res.all_completed
    assert res.subagents[0].status is Status.RUNNING
    killed = zapcli.kill([sid], grace=1)
    assert killed.subagents[0].stopped and killed.subagents[0].outcome == "cancelled"
    assert zapcli.poll([sid], no_wait=True).subagents[0].status is Status.CANCELLED
    with pytest.raises(zapcli.NotFound):  # as poll, output, wait and send
        zapcli.kill(["sa_20260101_0badc0de"])


def test_errors_are_one_family_spelled_for_python(zap):
    with pytest.raises(zapcli.NotFound) as missing:
        zapcli.poll(["sa_20260101_0badc0de"], no_wait=True)
    assert missing.value.code == "not_found" and "sa_20260101_0badc0de" in str(missing.value)
    with pytest.raises(zapcli.UsageError) as usage:
        zapcli.poll(["sa_20260101_0badc0de"], wait_secs=99)
    assert "`wait_secs` must be between 0 and 30" in str(usage.value)
    assert "--wait-secs" not in str(usage.value) and usage.value.exit_code == 2
    with pytest.raises(zapcli.UsageError) as bad:
        zapcli.spawn("x", cli="no-such-backend")
    assert "unknown backend 'no-such-backend' for `cli`" in str(bad.value)
    assert isinstance(bad.value, zapcli.ZapcliError)
    with pytest.raises(zapcli.NotFound):
        zapcli.wait(["sa_20260101_0badc0de"], timeout=0)
    with pytest.raises(TypeError):
        zapcli.spawn_attempts("x", 2, colour="red")
    assert zapcli.list().subagents == ()  # nothing was created by the refused spawn


KEY = "sk-api-test-0123456789"


def test_send_approve_and_deny_an_agent(zap, model, monkeypatch):
    ask = [{"tool_calls": [{"name": "bash", "arguments": {"command": "true"}}]}, {"text": "done"}]
    model([{"match": "ask alpha", "turns": ask}, {"match": "ask beta", "turns": ask}])
    for k, v in zap.env.items():  # the API reads the model's address from this process's environment
        if k.startswith(("OPENAI_", "ZAPCLI_MODEL")):
            monkeypatch.setenv(k, v)
    alpha, beta = (zapcli.spawn(f"ask {w}").id for w in ("alpha", "beta"))
    for sid in (alpha, beta):
        wait_until(lambda sid=sid: zapcli.poll(sid, no_wait=True).subagents[0].pending_approval, 60)
    sent = zapcli.send(alpha, "keep going")
    assert sent.id == alpha and sent.steer_id
    yes = zapcli.approve(alpha)
    assert yes.decision == "approve" and yes.tool == "bash"
    no = zapcli.deny(beta, reason="not now")
    assert no.decision == "deny"
    done = zapcli.wait([alpha, beta], timeout=60)
    assert all(s.terminal for s in done.subagents)
    assert done.subagents[0].report == "done"


def test_import_zapcli_loads_no_api_until_used():
    code = ("import sys, zapcli\n"
            "assert not [m for m in sys.modules if m.startswith(('zapcli.api', 'zapcli.ops'))]\n"
            "f = zapcli.spawn\n"
            "assert 'zapcli.api' in sys.modules and f is sys.modules['zapcli.api.verbs'].spawn\n"
            "assert zapcli.aio.wait.__module__ == 'zapcli.api.aio'\n"
            "print('ok')")
    res = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, cwd=REPO,
                         timeout=60)
    assert res.stdout.strip() == "ok", res.stderr
    with pytest.raises(AttributeError):
        zapcli.no_such_name  # noqa: B018


def test_arguments_of_the_wrong_type_are_a_usage_error_naming_them(zap):
    """A new user's zapcli.spawn(None, cli="sh") raised AttributeError, and
    timeout="abc" a TypeError from deep inside; nothing may be created."""
    import pytest

    import zapcli

    for call, said in ((lambda: zapcli.spawn(None, cli="sh"), "`task` must be a string"),
                       (lambda: zapcli.spawn("x", cli="sh", timeout="abc"), "`timeout` must be a number"),
                       (lambda: zapcli.spawn("x", cli="sh", max_tokens=1.5), "`max_tokens` must be a whole"),
                       (lambda: zapcli.spawn("x", cli=3), "`cli` must be a string"),
                       (lambda: zapcli.spawn("x", cli="sh", timeout=True), "`timeout` must be a number"),
                       # new user, round 5: poll(5) raised TypeError ('int' object is not iterable)
                       (lambda: zapcli.poll(5), "`ids` must be a subagent id"),
                       (lambda: zapcli.wait([5]), "`ids` must be a subagent id"),
                       (lambda: zapcli.kill(b"sa_20260101_0badc0de"), "`ids` must be a subagent id"),
                       (lambda: zapcli.spawn("x", cli="sh", after=7), "`after` must be a subagent id")):
        with pytest.raises(zapcli.UsageError, match=said):
            call()
    assert zap.json("list", "--all")["subagents"] == []
    # the other verbs' options too (a string for a number was a TypeError: '>=' not supported …)
    import asyncio

    from zapcli.api import aio

    sid = zapcli.spawn("sleep 60", cli="sh").id
    try:
        for call, said in ((lambda: zapcli.poll(sid, wait_secs="3"), "`wait_secs` must be a number"),
                           (lambda: zapcli.wait(sid, timeout="3"), "`timeout` must be a number"),
                           (lambda: zapcli.list(limit="3"), "`limit` must be a whole number"),
                           (lambda: zapcli.kill(sid, grace="x"), "`grace` must be a number"),
                           (lambda: zapcli.send(sid, 5), "`text` must be a string"),
                           (lambda: zapcli.deny(sid, reason=5), "`reason` must be a string"),
                           (lambda: zapcli.approve(sid, 1), "`req` must be a request id"),
                           (lambda: asyncio.run(aio.wait(sid, timeout="3")), "`timeout` must be a number"),
                           (lambda: asyncio.run(aio.poll(sid, wait_secs="3")), "`wait_secs` must be a number")):
            with pytest.raises(zapcli.UsageError, match=said):
                call()
        assert zapcli.poll(sid, no_wait=True).subagents[0].status is Status.RUNNING  # nothing done to it
    finally:
        zapcli.kill([sid], grace=0)


def test_an_empty_list_of_ids_is_nothing_to_wait_for(zap):
    """A script whose list of ids happened to be empty: `zapcli.wait([])`
    waited for every running subagent of the session (work it never
    started). Only None (the default) means the session's; an empty list or
    tuple is nothing — answered at once, empty — by wait, poll and kill, and
    in the event loop too."""
    import asyncio
    import time

    from zapcli.api import aio

    other = zapcli.spawn("sleep 60", cli="sh").id  # the session's, not the script's
    try:
        for empty in ([], (), iter(())):
            began = time.monotonic()
            done = zapcli.wait(empty, timeout=5)
            assert done.subagents == () and not done.timed_out and done.exit_code == 0, empty
            assert time.monotonic() - began < 2
            assert zapcli.poll(empty).subagents == ()
            assert zapcli.kill(empty).subagents == ()
        assert asyncio.run(aio.wait([], timeout=5)).subagents == ()
        assert asyncio.run(aio.poll([])).subagents == ()
        assert zapcli.poll(other, no_wait=True).subagents[0].status is Status.RUNNING
        assert zapcli.wait(timeout=0).subagents[0].id == other  # None: the session's
        with pytest.raises(zapcli.UsageError):
            zapcli.kill()  # no ids and not all: nothing says what to stop
    finally:
        zapcli.kill([other], grace=1)


def test_unknown_ids_and_names_raise_the_documented_errors(zap):
    """`kill` of an id that does not exist raises NotFound as poll, output,
    wait and send do (it answered `Killed(outcome='does not exist')`), and
    stops nothing of the ids given with it; an unknown agent definition is
    NotFound too (it was the bare ZapcliError), its code kept."""
    alive = zapcli.spawn("sleep 60", cli="sh").id
    try:
        for call in (lambda: zapcli.kill(["sa_20260101_0badc0de"]),
                     lambda: zapcli.kill([alive, "sa_20260101_0badc0de"]),
                     lambda: zapcli.kill("deadbeef"),
                     lambda: zapcli.output("sa_20260101_0badc0de"),
                     lambda: zapcli.send("sa_20260101_0badc0de", "hi")):
            with pytest.raises(zapcli.NotFound) as info:
                call()
            assert info.value.code == "not_found" and "does not exist" in str(info.value)
        assert zapcli.poll(alive, no_wait=True).subagents[0].status is Status.RUNNING
        with pytest.raises(zapcli.NotFound) as unknown:
            zapcli.spawn("look around", agent="no-such-agent")
        assert unknown.value.code == "definition_unknown" and unknown.value.exit_code == 1
        assert "no subagent definition named 'no-such-agent'" in str(unknown.value)
    finally:
        zapcli.kill([alive], grace=1)
    assert zap("spawn", "--agent", "no-such-agent", "x").returncode == 1


def test_kill_of_a_run_id_answers_for_that_run(zap, model):
    """A `zapcli run`'s id is killed as `zapcli kill` kills it (that run, as
    its Ctrl-C; tests/parallel/test_stop.py stops a live one): one that
    ended says so. It raised NotFound, 'is a `zapcli run`, not a subagent'."""
    model([{"match": "say hello", "turns": [{"text": "hello"}]}])
    ran = zap("run", "--json", "--", "say hello")
    run_id = json.loads(ran.out)["run_id"]
    (entry,) = zapcli.kill(run_id).subagents
    assert entry.id == run_id and entry.outcome == "already completed" and not entry.stopped
    with pytest.raises(zapcli.NotFound):  # a run id that names no run is still not found
        zapcli.kill("run_20260101_0badc0de")
