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
    gone = zapcli.kill(["sa_20260101_0badc0de"])
    assert gone.subagents[0].outcome == "does not exist" and not gone.subagents[0].stopped


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
                       (lambda: zapcli.spawn("x", cli="sh", timeout=True), "`timeout` must be a number")):
        with pytest.raises(zapcli.UsageError, match=said):
            call()
    assert zap.json("list", "--all")["subagents"] == []
