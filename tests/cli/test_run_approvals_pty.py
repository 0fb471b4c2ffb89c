"""`zapcli run` at a terminal (a real pty, stdlib `pty`): a subagent's approval
request is asked at once with its id, task, tool and summary while the parent
waits in its own tool call; `y` approves, Ctrl-D denies it and every later
one; the parent model is told the outcome in a notice and never decides."""

from __future__ import annotations

import os
import pty
import select
import subprocess
import sys
import time

import pytest

from zapcli.testing import ScriptedServer


def _parent_script(marker: str, bash_calls: int) -> list[dict]:
    child = [{"tool_calls": [{"name": "bash", "arguments": {"command": f"echo {marker}{i} >> out.txt"}}]}
             for i in range(bash_calls)]
    return [
        {"match": f"CHILD-{marker}", "turns": [*child, {"text": "child finished"}]},
        {"match": f"PARENT-{marker}", "turns": [
            {"tool_calls": [{"name": "subagent", "arguments": {"action": "spawn", "task": f"CHILD-{marker} job"}}]},
            {"tool_calls": [{"name": "subagent", "arguments": {"action": "wait"}}]},
            {"text": "parent done"}]}]


class Terminal:
    def __init__(self, argv: list[str], env: dict[str, str], cwd: str, stdout: int | None = None):
        self.master, slave = pty.openpty()
        self.proc = subprocess.Popen(argv, stdin=slave, stdout=slave if stdout is None else stdout,
                                     stderr=slave, env=env, cwd=cwd, start_new_session=True)
        os.close(slave)
        self.seen = b""

    def expect(self, needle: bytes, timeout: float = 40) -> bytes:
        end = time.monotonic() + timeout
        while needle not in self.seen:
            left = end - time.monotonic()
            if left <= 0:
                raise AssertionError(f"{needle!r} not seen; got:\n{self.seen.decode(errors='replace')}")
            ready, _, _ = select.select([self.master], [], [], min(left, 0.5))
            if ready:
                try:
                    self.seen += os.read(self.master, 65536)
                except OSError:  # the process ended and the pty closed
                    if self.proc.poll() is not None:
                        raise AssertionError(f"{needle!r} not seen before exit:\n"
                                             f"{self.seen.decode(errors='replace')}") from None
        return self.seen

    def send(self, data: bytes) -> None:
        os.write(self.master, data)

    def finish(self, timeout: float = 40) -> int:
        try:
            self.expect(b"parent done", timeout)
            return self.proc.wait(timeout)
        finally:
            if self.proc.poll() is None:
                self.proc.kill()
            os.close(self.master)


def _run(zap, srv, marker: str, *extra: str, stdout: int | None = None) -> Terminal:
    env = dict(zap.env, OPENAI_BASE_URL=srv.base_url, ZAPCLI_MODEL="scripted",
               OPENAI_API_KEY="sk-test-pty-0123456789", TERM="dumb")
    return Terminal([sys.executable, "-m", "zapcli", "run", *extra, f"PARENT-{marker}: delegate"],
                    env, str(zap.cwd), stdout)


def _notices(srv: ScriptedServer) -> str:
    parent = [r for r in srv.requests if "PARENT-" in str(r["messages"][:2])]
    return "\n".join(str(m.get("content")) for m in parent[-1]["messages"] if m["role"] == "user")


@pytest.mark.timeout(120)
def test_the_person_at_the_terminal_approves_a_subagents_request(zap):
    with ScriptedServer(_parent_script("ptyok", 1)) as srv:
        term = _run(zap, srv, "ptyok")
        shown = term.expect(b"allow").decode(errors="replace")
        assert "[subagent sa_" in shown and "task: CHILD-ptyok job" in shown
        assert "bash" in shown and "echo ptyok0" in shown
        term.send(b"y\r")
        assert term.finish() == 0
        notices = _notices(srv)
    assert (zap.cwd / "out.txt").read_text() == "ptyok0\n"
    assert "approved — approved at the terminal" in notices
    assert "not by you" in notices


@pytest.mark.timeout(120)
def test_ctrl_d_denies_this_and_every_later_request(zap):
    with ScriptedServer(_parent_script("ptyeof", 2)) as srv:
        term = _run(zap, srv, "ptyeof")
        term.expect(b"allow")
        term.send(b"\x04")
        assert term.finish() == 0
        asked = term.seen.count(b"allow")
        notices = _notices(srv)
    assert asked == 1  # the second request was denied without a question
    assert not (zap.cwd / "out.txt").exists()
    assert notices.count("denied — no answer at the terminal") == 2
    sid = zap.json("list", "--all")["subagents"][0]["id"]
    results = [r for r in zap.json("replay", sid)["records"] if r["type"] == "tool_result"]
    assert len(results) == 2 and not any(r["ok"] for r in results)
    assert "no answer at the terminal" in results[0]["content"]


@pytest.mark.timeout(120)
def test_sighup_ends_the_run_like_ctrl_c_and_its_childs_request_is_denied(zap):
    """#24.5: closing the terminal (SIGHUP) while a subagent's question is on it:
    the run names what it stops, --json still prints its document, its trail
    ends, exit 129; the child is stopped with its run and its request denied
    with the reason, not left until its deadline."""
    import json
    import signal

    from tests.conftest import trail_records, wait_until

    with ScriptedServer(_parent_script("ptyhup", 1)) as srv:
        term = _run(zap, srv, "ptyhup", "--json", stdout=subprocess.PIPE)
        try:
            term.expect(b"allow")
            [sid] = [s["id"] for s in zap.json("list", "--all")["subagents"]]
            term.proc.send_signal(signal.SIGHUP)
            out = term.proc.stdout.read()  # type: ignore[union-attr]
            code = term.proc.wait(30)
            said = term.expect(b"still running", 10).decode(errors="replace")
        finally:
            if term.proc.poll() is None:
                term.proc.kill()
            os.close(term.master)
        doc = json.loads(out)
        decided = wait_until(lambda: next((r for r in trail_records(zap.trail(sid))
                                           if r["type"] == "approval_decision"), None), 30)
    assert code == 129 and "Traceback" not in said, said
    assert doc["status"] == "interrupted" and "the terminal closed (SIGHUP)" in doc["reason"]
    assert doc["running"] == [sid] and doc["error"]["exit_code"] == 129
    assert "the terminal closed (SIGHUP)" in said and "1 subagent(s) of this run still running" in said
    ended = [r for r in trail_records(zap.home / "runs" / f"{doc['run_id']}.jsonl")
             if r["type"] == "status"]
    assert ended and ended[-1]["reason"] == "the terminal closed (SIGHUP)"
    # the run stopped its tree as it ended: the request is settled with why, not left open
    assert decided["decision"] == "deny" and decided["reason"] == \
        f"its run {doc['run_id']} was stopped before anyone answered"  # type: ignore[index]
    assert zap.status(sid) == "cancelled"
    assert not (zap.cwd / "out.txt").exists()


@pytest.mark.timeout(120)
def test_a_question_answered_from_another_terminal_says_so_on_its_line(zap):
    """`zapcli approve ID` from another terminal while the run asks: the run's
    question does not stay open above what follows — its line ends with what
    happened, the request is not asked again, the work goes on, and the
    parent model is told the decision."""
    import re

    with ScriptedServer(_parent_script("ptyelse", 1)) as srv:
        term = _run(zap, srv, "ptyelse")
        term.expect(b"(n):")
        [sid] = [s["id"] for s in zap.json("list", "--all")["subagents"]]
        assert zap("approve", sid).returncode == 0
        term.expect(b"approved elsewhere")
        assert term.finish() == 0
        notices = _notices(srv)
    shown = re.sub(r"\x1b\[[0-9;]*m", "", term.seen.decode(errors="replace"))
    question = next(x for x in shown.splitlines() if "(n):" in x)
    assert question.rstrip().endswith("(n): approved elsewhere (zapcli approve or top)"), shown
    assert shown.count("(n):") == 1, shown
    assert (zap.cwd / "out.txt").read_text() == "ptyelse0\n"
    assert f"{sid} asked to run" in notices and "approved — approved by the user" in notices
