"""Results land back (issue 28 item 1; C26, C27): a `zapcli run` whose model
answers while subagents it started still work does not end; it waits for the
next result, hands it to the model as results are announced before every
call, and lets the model go on until every result reached it. Only the run's
deadline, its budget or the person end it earlier (then nothing outlives it
and what never reached the model is listed `undelivered`; the signals are in
test_stop.py). The same for work a child leaves running (C27), and for a
built-in agent subagent whose model ends its turn while its own children run.
The scripted model server's requests are what the model was told."""

from __future__ import annotations

import json
import sys
from pathlib import Path

from tests.conftest import final_status, pgrep, record_of, sleep_marker, wait_until


def _sh(task: str) -> dict:
    return {"name": "subagent", "arguments": {"action": "spawn", "cli": "sh", "task": task}}


def _told(srv, after: int = 0) -> str:
    """Everything the model was told in user messages, from request `after` on."""
    return "\n".join(str(m.get("content")) for r in srv.requests[after:] for m in r["messages"]
                     if m["role"] == "user")


def test_a_parent_that_ends_its_turn_at_once_gets_every_result(zap, model):
    """The field report: four children, "I've started them", and all four
    `cancelled — its run ended first` 0.4 s in. Now each result reaches a
    later model call and the run ends completed with nothing lost."""
    srv = model([{"match": "fan four", "turns": [
        {"tool_calls": [_sh(f"sleep 1; echo result-{n}") for n in range(4)]},
        {"text": "I've started them."}]}])  # later turns: the server's closing text
    proc = zap("run", "--approval", "full", "--json", "--", "fan four", timeout=180)
    doc = json.loads(proc.stdout)
    assert proc.returncode == 0 and doc["status"] == "completed", (doc, proc.err)
    children = doc["subagents"]
    assert len(children) == 4 and doc["undelivered"] == [], doc
    assert len(srv.requests) >= 3  # the model was called again after its answer
    told = _told(srv, 2)
    for sid in children:
        assert f"[SubAgent] {sid} finished: completed" in told, told
    for n in range(4):
        assert f"result-{n}" in told, told
    env = {"ZAPCLI_SESSION": doc["run_id"]}
    for sid in children:
        assert zap.json("poll", "--no-wait", sid, env=env)["subagents"][0]["status"] == "completed"
    assert sorted(r["id"] for r in doc["late_results"]) == sorted(children), doc
    assert "cancelled" not in proc.err and "never reached the run" not in proc.err


def test_the_stream_shows_each_late_result(zap, model):
    model([{"match": "stream late", "turns": [
        {"tool_calls": [_sh("sleep 1; echo streamed-result")]},
        {"text": "started it"},
        {"text": "got it"}]}])
    proc = zap("run", "--approval", "full", "--", "stream late", timeout=120)
    assert proc.returncode == 0, proc.err
    assert "waiting for 1 subagent result" in proc.err, proc.err
    assert "finished: completed" in proc.err and "streamed-result" in proc.err, proc.err
    assert "got it" in proc.out


def test_every_note_starts_on_a_line_of_its_own_after_text_left_open(zap, model):
    """stdout and stderr are one terminal: the model's text without a trailing
    newline, then the run's note that it waits (and the late result's
    announcement) — each note begins its own line, never glued to the text."""
    import subprocess

    model([{"match": "glued", "turns": [
        {"text": "Starting one.", "tool_calls": [_sh("sleep 1; echo late-result")]},
        {"text": "I started it and will wait for its result."},
        {"text": "All in."}]}])
    proc = subprocess.run([sys.executable, "-m", "zapcli", "run", "--approval", "full", "--",
                           "glued"], stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
                          stdin=subprocess.DEVNULL, cwd=zap.cwd, env=zap.env, timeout=120)
    seen = proc.stdout.decode(errors="replace")
    assert proc.returncode == 0, seen
    lines = seen.splitlines()
    assert "I started it and will wait for its result." in lines, seen
    notes = [x for x in lines if "zapcli: note:" in x or "⇠" in x or "· subagent" in x]
    assert any("waiting for 1 subagent result" in x for x in notes), seen
    assert all(x.startswith(("zapcli: note:", "⇠", "· subagent")) for x in notes), seen
    import re  # a spawn's time as people read the others: to the second, local, not ISO microseconds

    assert re.search(r"Created: \d{4}-\d\d-\d\d \d\d:\d\d:\d\d\b", seen), seen
    assert not re.search(r"Created: .*\.\d{6}Z", seen), seen


def test_the_deadline_ends_the_wait_and_lists_what_never_arrived(zap, model):
    m = sleep_marker(3401)
    model([{"match": "walk away", "turns": [
        {"tool_calls": [_sh(f"sleep {m}"), _sh(f"sleep {m}")]},
        {"text": "not waiting for them"}]}])
    proc = zap("run", "--approval", "full", "--timeout", "8", "--json", "--", "walk away",
               timeout=120)
    doc = json.loads(proc.stdout)
    assert proc.returncode == 1 and doc["status"] == "timeout", (doc, proc.err)
    assert sorted(u["id"] for u in doc["undelivered"]) == sorted(doc["subagents"])
    for lost in doc["undelivered"]:
        assert lost["status"] == "cancelled" and f"its run {doc['run_id']} ended" in lost["summary"]
    assert "2 result(s) never reached the run" in proc.err
    wait_until(lambda: not pgrep(f"sleep {m}"), timeout=20)  # nothing outlives the run


def test_the_budget_ends_the_wait_and_lists_what_never_arrived(zap, model):
    """The late result arrives, but the run's next model call would not fit
    its --max-tokens: the run stops with the tree budget's reason, and the
    results its model never saw are listed."""
    model([{"match": "spend then wait", "turns": [
        {"tool_calls": [_sh("sleep 1; echo quick"), _sh("sleep 3; echo slower")],
         "usage": {"prompt_tokens": 80, "completion_tokens": 20}},
        {"text": "started both", "usage": {"prompt_tokens": 5000, "completion_tokens": 500}},
        {"text": "never asked"}]}])
    proc = zap("run", "--approval", "full", "--max-tokens", "10000", "--json", "--",
               "spend then wait", timeout=120)
    doc = json.loads(proc.stdout)
    assert proc.returncode == 1 and doc["status"] == "failed", (doc, proc.err)
    assert doc["reason"].startswith("token budget"), doc["reason"]
    assert sorted(u["id"] for u in doc["undelivered"]) == sorted(doc["subagents"]), doc


def test_c27_work_a_child_leaves_running_reaches_a_run_that_ended_its_turn(zap, model):
    """The child (a shell) spawns a grandchild and ends at once; the run's
    model ends its turn at once too. The run takes the grandchild over,
    waits for it, and its result reaches the model."""
    late = "late grandchild result"
    grandchild = f"{sys.executable} -m zapcli spawn --cli sh -- 'sleep 2; echo {late}' > gc.id"
    srv = model([{"match": "C27 early end", "turns": [
        {"tool_calls": [_sh(f"{grandchild}; echo child done")]},
        {"text": "started"}]}])
    proc = zap("run", "--approval", "full", "--no-sandbox", "--json", "--", "C27 early end",
               timeout=180)
    doc = json.loads(proc.stdout)
    assert proc.returncode == 0 and doc["status"] == "completed", (doc, proc.err)
    gc = (zap.cwd / "gc.id").read_text().strip()
    child = next(s for s in doc["subagents"] if s != gc)
    assert gc in doc["subagents"] and doc["undelivered"] == [], doc
    told = _told(srv, 2)
    assert f"[SubAgent] {gc} finished: completed — {late}" in told, told
    assert zap.status(gc) == "completed" and zap.status(child) == "completed"


def _spawner_definition(zap) -> None:
    """A built-in agent that may run `zapcli spawn` from its shell: zapcli's
    places pass to its commands (the user's own layer: no trust needed)."""
    folder = Path(zap.env["ZAPCLI_CONFIG_HOME"]) / "subagents"
    folder.mkdir(parents=True, exist_ok=True)
    (folder / "spawner.yml").write_text(
        "name: spawner\ndescription: Starts subagents of its own.\ntools: [bash]\n"
        "env: [ZAPCLI_HOME, ZAPCLI_CONFIG_HOME, ZAPCLI_SESSION]\nprompt: You delegate.\n")


def test_a_spawned_agent_that_ends_its_turn_gets_its_own_childrens_results(zap, model):
    """A built-in agent subagent starts two children with `zapcli spawn` and
    ends its turn: it does not end with them `pending`; each result reaches
    its model, which answers last; nothing is left to take over."""
    _spawner_definition(zap)
    spawn = f"{sys.executable} -m zapcli spawn --cli sh -- 'sleep 2; echo grandchild-{{n}}' >> kids"
    srv = model([{"match": "AGENT-SPAWNS", "turns": [
        {"tool_calls": [{"name": "bash", "arguments": {"command": spawn.format(n=1)}}]},
        {"tool_calls": [{"name": "bash", "arguments": {"command": spawn.format(n=2)}}]},
        {"text": "I started two."},
        {"text": "both results in"},
        {"text": "both results in"}]}])
    sid = zap("spawn", "--agent", "spawner", "--approval", "full", "--no-sandbox", "--",
              "AGENT-SPAWNS two children").out.strip()
    assert zap("wait", sid, "--timeout", "120", timeout=150).returncode == 0
    kids = (zap.cwd / "kids").read_text().split()
    assert len(kids) == 2, kids
    end = record_of(zap, sid, "status")
    assert end["status"] == "completed" and not end.get("pending"), end
    told = _told(srv, 3)
    for n, kid in enumerate(kids, 1):
        assert f"[SubAgent] {kid} finished: completed — grandchild-{n}" in told, told
        assert final_status(zap.trail(kid)) == "completed"
    assert zap.json("poll", "--no-wait", sid)["subagents"][0]["report"] == "both results in"


def test_a_result_removed_before_it_landed_is_told_by_the_end_it_had(zap):
    """A subagent removed (`rm`, `clean`, `gc`) before its parent's model was
    told of it: the line the model reads gives the end it had (the note its
    removal left, as `wait` counts it), not only that it is gone. (Before
    this, every such line said "nothing of it is left to read".)"""
    from zapcli.lifecycle import landing

    bad = zap.spawn_sh("echo half; exit 5")
    assert zap("wait", bad).returncode == 3
    assert zap("rm", bad).returncode == 0
    line = landing.gone(bad)
    assert line.startswith(f"[SubAgent] {bad} finished: failed"), line
    assert "5" in line.split("—", 1)[1], line  # its reason: the exit code it had
    assert " UTC by rm, clean or gc: its report and output are gone)" in line, line  # when, as every command says it
    never = "sa_20260101_00000000"
    assert "nothing of it is left to read" in landing.gone(never)


def test_a_run_stopped_before_a_call_says_how_big_that_call_was_foreseen(zap, model):
    """New user, round 5: `run --max-tokens 3000` failed at once with 'token
    budget: 0 of 3,000 tokens used by this run and its subagents, and its
    next model call would not fit' — no word of how big the call was (its
    trail said 'about 4,999'), so nothing said what budget would do."""
    srv = model([{"match": "too small a budget", "turns": [{"text": "never asked"}]}])
    proc = zap("run", "--max-tokens", "1000", "--json", "--", "too small a budget", timeout=120)
    doc = json.loads(proc.stdout)
    assert proc.returncode == 1 and doc["status"] == "failed", (doc, proc.err)
    about = doc["reason"].split("next model call (about ", 1)[1].split(")", 1)[0]
    assert int(about.replace(",", "")) > 1000 and doc["reason"].endswith("would not fit"), doc
    assert srv.requests == []  # stopped before the call
