"""Stop means stop (issue 28 item 2; C26): from the moment a `zapcli run` is
interrupted (Ctrl-C, SIGTERM, SIGHUP) no model call is made, no tool runs
and no subagent starts; an in-flight model request is abandoned; `zapcli:
interrupted` is said once; the exit code is the documented one (130, 143,
129); nothing outlives the run and what never reached its model is listed
`undelivered`. Asserted by the outside effect: the file a spawn made after
the signal would create, the requests the scripted model server got."""

from __future__ import annotations

import json
import signal
import subprocess
import sys

import psutil
import pytest

from tests.conftest import pgrep, sleep_marker, wait_until

SIGNALS = [(signal.SIGINT, 130, "interrupted"), (signal.SIGTERM, 143, "cancelled"),
           (signal.SIGHUP, 129, "interrupted")]


def _sh(task: str) -> dict:
    return {"name": "subagent", "arguments": {"action": "spawn", "cli": "sh", "task": task}}


def _start(zap, task: str, *extra: str) -> subprocess.Popen:
    return subprocess.Popen([sys.executable, "-m", "zapcli", "run", "--approval", "full", "--json",
                             *extra, "--", task], env=zap.env, cwd=zap.cwd, stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE, text=True, stdin=subprocess.DEVNULL)


def _runners_gone(zap) -> bool:
    """No process of this test's zapcli home (runner, child, shell) is left."""
    for proc in psutil.process_iter(["environ", "status"]):
        try:
            if proc.info["status"] != psutil.STATUS_ZOMBIE and (proc.info["environ"] or {}).get(
                    "ZAPCLI_HOME") == str(zap.home):
                return False
        except psutil.Error:
            continue
    return True


@pytest.mark.timeout(180)
@pytest.mark.parametrize(("signum", "code", "status"), SIGNALS, ids=["SIGINT", "SIGTERM", "SIGHUP"])
def test_a_model_answer_after_the_signal_spawns_nothing(zap, model, signum, code, status):
    """The field report: after Ctrl-C or SIGTERM the loop made one more model
    call, and that call spawned a subagent whose command ran. Here the model
    request in flight when the signal lands answers with a spawn while the
    run is still stopping its first child (which ignores SIGTERM, so the
    stop takes its grace period): the spawn's command must never run, and
    the server gets no further request."""
    marker = zap.cwd / "spawned-after-the-signal"
    m = sleep_marker(3411)
    srv = model([{"match": "stop means stop", "turns": [
        {"tool_calls": [_sh(f"trap '' TERM; sleep {m}")]},
        {"tool_calls": [_sh(f"touch {marker}")], "delay_s": 1.5},
        {"text": "never asked"}]}])
    run = _start(zap, "stop means stop", "--no-sandbox")
    try:
        wait_until(lambda: len(srv.requests) >= 2 and pgrep(f"sleep {m}"), timeout=90)
        run.send_signal(signum)
        out, err = run.communicate(timeout=60)
    finally:
        run.kill()
    wait_until(lambda: _runners_gone(zap), timeout=30)
    assert not marker.exists(), err  # the spawn asked for after the signal never ran
    assert len(srv.requests) == 2, [r["messages"][-1] for r in srv.requests]
    assert run.returncode == code, err
    assert err.count("zapcli: interrupted") == 1 and "Traceback" not in err, err
    doc = json.loads(out)
    assert doc["status"] == status and len(doc["subagents"]) == 1, doc
    assert [u["id"] for u in doc["undelivered"]] == doc["subagents"]
    assert doc["error"]["code"] == "interrupted" and doc["error"]["exit_code"] == code
    assert not pgrep(f"sleep {m}")


@pytest.mark.timeout(180)
@pytest.mark.parametrize(("signum", "code", "status"), SIGNALS, ids=["SIGINT", "SIGTERM", "SIGHUP"])
def test_a_signal_while_the_run_waits_for_results_stops_it(zap, model, signum, code, status):
    """The model ended its turn; the run waits for its two children. The
    person's signal ends the wait: both stopped, both listed undelivered,
    nothing left running, no further model call."""
    m = sleep_marker(3412)
    srv = model([{"match": "wait then stop", "turns": [
        {"tool_calls": [_sh(f"sleep {m}"), _sh(f"sleep {m}")]},
        {"text": "started both"},
        {"text": "never asked"}]}])
    run = _start(zap, "wait then stop")
    try:
        said = ""
        while "waiting for 2 subagent result(s)" not in said:  # it waits instead of ending
            line = run.stderr.readline()  # type: ignore[union-attr]
            assert line, f"the run ended instead of waiting:\n{said}"
            said += line
        wait_until(lambda: len(pgrep(f"sleep {m}")) == 2, timeout=60)
        run.send_signal(signum)
        out, rest = run.communicate(timeout=60)
        err = said + rest
    finally:
        run.kill()
    assert run.returncode == code, err
    assert err.count("zapcli: interrupted") == 1 and "Traceback" not in err, err
    doc = json.loads(out)
    assert doc["status"] == status and len(doc["subagents"]) == 2, doc
    assert sorted(u["id"] for u in doc["undelivered"]) == sorted(doc["subagents"]), doc
    assert all(u["status"] == "cancelled" for u in doc["undelivered"]), doc
    assert len(srv.requests) == 2
    wait_until(lambda: not pgrep(f"sleep {m}"), timeout=20)


@pytest.mark.timeout(180)
def test_a_question_open_at_the_signal_is_denied_even_if_answered_after_it(zap, model):
    """Ctrl-C while the run asks the person to allow a command, then a `y`
    typed after it: the command never runs, nothing more is asked of the
    model, and `zapcli: interrupted` is said once (the first Ctrl-C at a
    question used to print it twice). A child that ignores SIGTERM keeps the
    stop busy for its grace period, long enough for a late answer to land."""
    from tests.cli.test_run_approvals_pty import Terminal

    marker = zap.cwd / "allowed-after-the-signal"
    m = sleep_marker(3413)
    srv = model([{"match": "ask then stop", "turns": [
        {"tool_calls": [_sh(f"trap '' TERM; sleep {m}")]},
        {"tool_calls": [{"name": "bash", "arguments": {"command": f"touch {marker}"}}]},
        {"text": "never asked"}]}])
    term = Terminal([sys.executable, "-m", "zapcli", "run", "--approval", "confirm", "--",
                     "ask then stop"], dict(zap.env, TERM="dumb"), str(zap.cwd))
    try:
        term.expect(b"allow")  # the spawn of the child
        term.send(b"y\r")
        wait_until(lambda: pgrep(f"sleep {m}") and len(srv.requests) >= 2, timeout=60)
        term.expect(b"touch")  # the second question: the bash command
        term.proc.send_signal(signal.SIGINT)
        term.send(b"y\r")
        code = term.proc.wait(60)
        said = term.expect(b"zapcli: interrupted", 5).decode(errors="replace")
    finally:
        if term.proc.poll() is None:
            term.proc.kill()
        import os

        os.close(term.master)
    wait_until(lambda: _runners_gone(zap), timeout=30)
    assert code == 130, said
    assert not marker.exists(), said
    assert said.count("zapcli: interrupted") == 1 and "Traceback" not in said, said
    assert len(srv.requests) == 2


def _answer_with_the_signal(term, signum: int) -> tuple[int, str]:
    """With `term`'s run asking its question: freeze the run (SIGSTOP), send
    `signum`, type `y`, let it go on (SIGCONT) — the signal and the answer
    there in the same instant. Its exit code and what it said."""
    import os
    import time

    term.expect(b"(n):")  # the question waits for its answer
    time.sleep(0.2)  # it reads the terminal now
    os.kill(term.proc.pid, signal.SIGSTOP)
    wait_until(lambda: psutil.Process(term.proc.pid).status() == psutil.STATUS_STOPPED, 10)
    os.kill(term.proc.pid, signum)
    term.send(b"y\r")
    os.kill(term.proc.pid, signal.SIGCONT)
    code = term.proc.wait(60)
    return code, term.expect(b"zapcli: interrupted", 5).decode(errors="replace")


@pytest.mark.timeout(180)
@pytest.mark.parametrize(("signum", "code"), [(s, c) for s, c, _ in SIGNALS],
                         ids=["SIGINT", "SIGTERM", "SIGHUP"])
def test_an_answer_that_lands_with_the_signal_runs_nothing(zap, model, signum, code):
    """The race CI lost, made certain: the run is frozen (SIGSTOP) while its
    question is open, the signal is sent, then `y` is typed, then it goes on
    (SIGCONT): the signal and the answer are there in the same instant, and
    whichever of its threads runs first, the answer came after the signal
    and the command never runs (it ran when the run only learnt of the
    signal once its main thread's handler had run)."""
    import os

    from tests.cli.test_run_approvals_pty import Terminal

    marker = zap.cwd / "ran-after-the-signal"
    srv = model([{"match": "frozen question", "turns": [
        {"tool_calls": [{"name": "bash", "arguments": {"command": f"touch {marker}"}}]},
        {"text": "never asked"}]}])
    term = Terminal([sys.executable, "-m", "zapcli", "run", "--approval", "confirm", "--",
                     "frozen question"], dict(zap.env, TERM="dumb"), str(zap.cwd))
    try:
        term.expect(b"touch")
        got, said = _answer_with_the_signal(term, signum)
    finally:
        if term.proc.poll() is None:
            term.proc.kill()
        os.close(term.master)
    assert got == code, said
    assert not marker.exists(), said
    assert said.count("zapcli: interrupted") == 1 and "Traceback" not in said, said
    assert len(srv.requests) == 1, said


@pytest.mark.timeout(180)
def test_a_subagents_question_answered_with_the_signal_is_denied(zap):
    """The same instant for a question of the run's subagent, asked at the
    run's terminal: frozen while it is asked, Ctrl-C, `y`, go on — the
    child's command never runs and its request is denied."""
    import os

    from tests.cli.test_run_approvals_pty import _parent_script, _run
    from zapcli.testing import ScriptedServer

    with ScriptedServer(_parent_script("frozenchild", 1)) as srv:
        term = _run(zap, srv, "frozenchild")
        try:
            term.expect(b"allow")
            [sid] = [s["id"] for s in zap.json("list", "--all")["subagents"]]
            code, said = _answer_with_the_signal(term, signal.SIGINT)
        finally:
            if term.proc.poll() is None:
                term.proc.kill()
            os.close(term.master)
    wait_until(lambda: _runners_gone(zap), timeout=30)
    assert code == 130 and "Traceback" not in said, said
    assert not (zap.cwd / "out.txt").exists(), said
    decisions = [r for r in zap.json("replay", sid)["records"] if r["type"] == "approval_decision"]
    assert [d["decision"] for d in decisions] == ["deny"], decisions


@pytest.mark.timeout(180)
def test_a_question_left_open_at_ctrl_c_is_denied_as_a_question(zap):
    """Ctrl-C while the run's subagent's question waits at its terminal, no
    answer typed: the request is denied saying the run was stopped before
    anyone answered — it said "its run … ended first (the result never
    reached the run)", words for a result."""
    import os

    from tests.cli.test_run_approvals_pty import _parent_script, _run
    from zapcli.testing import ScriptedServer

    with ScriptedServer(_parent_script("openquestion", 1)) as srv:
        term = _run(zap, srv, "openquestion")
        try:
            term.expect(b"(n):")
            [sid] = [s["id"] for s in zap.json("list", "--all")["subagents"]]
            term.proc.send_signal(signal.SIGINT)
            code = term.proc.wait(60)
        finally:
            if term.proc.poll() is None:
                term.proc.kill()
            os.close(term.master)
    wait_until(lambda: _runners_gone(zap), timeout=30)
    assert code == 130
    decisions = [r for r in zap.json("replay", sid)["records"] if r["type"] == "approval_decision"]
    assert [d["decision"] for d in decisions] == ["deny"], decisions
    assert decisions[0]["reason"].endswith("was stopped before anyone answered"), decisions
    assert not (zap.cwd / "out.txt").exists()


@pytest.mark.timeout(180)
def test_a_run_started_with_nohup_outlives_its_terminal(zap, model):
    """`nohup zapcli run ...`: SIGHUP is ignored by whoever started it, so the
    closed terminal does not end the run; it waits for its result and ends
    completed (the run used to install its own SIGHUP handler over nohup's)."""
    srv = model([{"match": "nohup run", "turns": [
        {"tool_calls": [_sh("sleep 3; echo survived")]},
        {"text": "started it"},
        {"text": "got it"}]}])
    run = subprocess.Popen([sys.executable, "-m", "zapcli", "run", "--approval", "full", "--json",
                            "--", "nohup run"], env=zap.env, cwd=zap.cwd, stdout=subprocess.PIPE,
                           stderr=subprocess.PIPE, text=True, stdin=subprocess.DEVNULL,
                           preexec_fn=lambda: signal.signal(signal.SIGHUP, signal.SIG_IGN))
    try:
        wait_until(lambda: len(srv.requests) >= 2, timeout=90)
        run.send_signal(signal.SIGHUP)
        out, err = run.communicate(timeout=90)
    finally:
        run.kill()
    assert run.returncode == 0, err
    doc = json.loads(out)
    assert doc["status"] == "completed" and doc["undelivered"] == [] and doc["report"] == "got it"


@pytest.mark.timeout(180)
@pytest.mark.parametrize("stopped", [False, True], ids=["running", "ctrl-z"])
def test_zapcli_kill_of_a_run_id_stops_the_run_as_its_signal_does(zap, model, stopped):
    """New user, round 5: `zapcli kill run_…` from another terminal answered
    that the id was a run's (`outcome: does not exist` in --json) and the
    run went on. The run's id now stops it as SIGTERM does: 143, both
    children stopped and undelivered, no further model call; a second kill
    says it has already ended. A run stopped with Ctrl-Z is continued to
    act on it (it was SIGKILLed after the grace, its trail left without an
    end)."""
    m = sleep_marker(3413)
    srv = model([{"match": "kill me by id", "turns": [
        {"tool_calls": [_sh(f"sleep {m}"), _sh(f"sleep {m}")]},
        {"text": "started both"},
        {"text": "never asked"}]}])
    run = _start(zap, "kill me by id")
    try:
        said = ""
        while "waiting for 2 subagent result(s)" not in said:
            line = run.stderr.readline()  # type: ignore[union-attr]
            assert line, f"the run ended instead of waiting:\n{said}"
            said += line
        wait_until(lambda: len(pgrep(f"sleep {m}")) == 2, timeout=60)
        run_id = said.split("[run ", 1)[1].split(":", 1)[0]
        if stopped:
            run.send_signal(signal.SIGSTOP)
        killed = zap("kill", *(["--json"] if stopped else []), run_id).out
        out, rest = run.communicate(timeout=60)
    finally:
        run.kill()
    assert run.returncode == 143, said + rest
    if stopped:
        assert json.loads(killed)["subagents"][0]["outcome"] == "cancelled", killed
    else:  # the text a person reads says a run, not a subagent
        assert killed.startswith(f"[SubAgent] terminated 1 run:\n  {run_id}: cancelled (SIGTERM"), killed
    doc = json.loads(out)
    assert doc["status"] == "cancelled" and len(doc["undelivered"]) == 2, doc
    assert len(srv.requests) == 2
    wait_until(lambda: not pgrep(f"sleep {m}"), timeout=20)
    again = zap("kill", run_id)
    assert again.returncode == 0 and "already cancelled" in again.out, again.err
    assert again.out.startswith("[SubAgent] terminated 0 subagents:"), again.out
