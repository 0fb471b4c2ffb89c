"""One real fleet, looked at four ways (issue 21 items 1, 4, 5, 6).

A `zapcli run` (the scripted model on 127.0.0.1) spawns a built-in-agent
subagent (its `bash` prints its TRACEPARENT, its `read` fails) and an `sh`
subagent that spawns another `sh` subagent from inside (which fails); one
more subagent in the run's session waits for an approval. With
OTEL_EXPORTER_OTLP_ENDPOINT pointing at Arize Phoenix, started here, the
spans are read back from Phoenix's own API; the ATIF export is checked by
Harbor's published validator; the timeline page is rendered by headless
chromium; the Perfetto file is checked against the trace-event format.
"""

from __future__ import annotations

import json
import os
import re
import socket
import subprocess
import sys
import threading
import uuid
from pathlib import Path

import pytest

from tests.conftest import REPO, trail_records, wait_until
from tests.telemetry import receivers
from tests.telemetry.conftest import GROUP
from zapcli import tracecontext
from zapcli.testing import ScriptedServer

pytestmark = [pytest.mark.xdist_group(GROUP), pytest.mark.timeout(420)]


def _u(p: int, c: int) -> dict:
    return {"prompt_tokens": p, "completion_tokens": c}


# the sh child waits for its grandchild (its result reaches its parent): else the run would take
# it over and wait for it after its model's last answer, one model call more or not by timing
SH_TASK = ("echo TP=$TRACEPARENT; gc=$(zapcli spawn --cli sh -- 'echo grandchild; exit 3'); "
           "echo $gc; zapcli wait $gc > /dev/null || true")
SCRIPT = [
    {"match": "lead the fleet", "turns": [
        {"tool_calls": [{"name": "subagent", "arguments": {"action": "spawn", "task": "child agent work"}},
                        {"name": "subagent", "arguments": {"action": "spawn", "cli": "sh", "task": SH_TASK}}],
         "usage": _u(100, 10)},
        {"tool_calls": [{"name": "subagent", "arguments": {"action": "wait", "timeout": 60}}],
         "usage": _u(200, 20)},
        {"text": "fleet done", "usage": _u(300, 30)}]},
    {"match": "child agent work", "turns": [
        {"tool_calls": [{"name": "bash", "arguments": {"command": "echo TP=$TRACEPARENT"}},
                        {"name": "read", "arguments": {"path": "missing.txt"}}], "usage": _u(40, 4)},
        {"text": "child done", "usage": _u(50, 5)}]},
    {"match": "needs approval", "turns": [
        {"tool_calls": [{"name": "bash", "arguments": {"command": "echo approved"}}], "usage": _u(10, 1)},
        {"text": "approved and done", "usage": _u(11, 2)}]},
]


class Fleet:
    def __init__(self, root: Path):
        self.root = root
        self.project = f"zapcli-fleet-{uuid.uuid4().hex[:8]}"
        self.env = {k: v for k, v in os.environ.items() if not k.startswith(("ZAPCLI_", "OTEL_"))}
        self.env.update(ZAPCLI_HOME=str(root / "state"), ZAPCLI_CONFIG_HOME=str(root / "config"),
                        PYTHONPATH=str(REPO), NO_COLOR="1",
                        PATH=f"{Path(sys.executable).parent}{os.pathsep}{os.environ.get('PATH', '')}")
        self.cwd = root / "work"
        self.cwd.mkdir()

    def zap(self, *args: str, env: dict | None = None, timeout: float = 120) -> subprocess.CompletedProcess:
        return subprocess.run([sys.executable, "-m", "zapcli", *args], env={**self.env, **(env or {})},
                              cwd=self.cwd, capture_output=True, text=True, timeout=timeout,
                              stdin=subprocess.DEVNULL)

    def records(self, nid: str) -> list[dict]:
        folder = "runs" if nid.startswith("run_") else "subagents"
        return trail_records(self.root / "state" / folder / f"{nid}.jsonl")


# session-scoped although only this module uses it: a worker that runs another
# module's tests between two of these would tear a module fixture down and run
# the whole fleet again. The module's xdist_group keeps it on one worker
# (tests/conftest.py carries xdist's group tag over to pytest 9's node ids),
# with the session's Phoenix (its spans under a project of the fleet's own).
@pytest.fixture(scope="session")
def fleet(tmp_path_factory, phoenix_server):
    root = tmp_path_factory.mktemp("fleet")
    f = Fleet(root)
    phoenix = phoenix_server
    if phoenix is not None:
        f.env.update(OTEL_EXPORTER_OTLP_ENDPOINT=phoenix.url, OTEL_BSP_SCHEDULE_DELAY="200",
                     OTEL_RESOURCE_ATTRIBUTES=f"openinference.project.name={f.project}")
    srv = ScriptedServer(SCRIPT)
    srv.start()
    f.env.update(OPENAI_BASE_URL=srv.base_url, ZAPCLI_MODEL="scripted", OPENAI_API_KEY="sk-test-fleet-0123456789")
    try:
        # no sandbox: the sh subagent spawns from inside, and a sandboxed run's
        # shell spawns are sandboxed, where zapcli's state is hidden
        run = f.zap("run", "--approval", "full", "--no-sandbox", "lead the fleet", timeout=180)
        assert run.returncode == 0, run.stderr
        f.run_id = re.search(r"\[run (run_\d{8}_[0-9a-f]{8})", run.stderr).group(1)  # type: ignore[union-attr]
        waiter = f.zap("spawn", "--approval", "confirm", "--", "needs approval", env={"ZAPCLI_SESSION": f.run_id})
        f.waiter = waiter.stdout.strip()
        wait_until(lambda: f.zap("poll", "--no-wait", "--json", f.waiter).stdout.count("awaiting_approval") > 0,
                   60, 0.2)
        assert f.zap("approve", f.waiter).returncode == 0
        listed = json.loads(f.zap("list", "--all", "--json", "--limit", "0").stdout)["subagents"]
        f.ids = [s["id"] for s in listed]
        f.zap("wait", *f.ids, "--timeout", "60")
        f.phoenix = phoenix
        yield f
    finally:
        srv.stop()


def _by_task(fleet: Fleet) -> dict[str, str]:
    out = {}
    for sid in fleet.ids:
        task = fleet.records(sid)[0]["task"]
        out["child" if task == "child agent work" else "sh" if task == SH_TASK
            else "waiter" if task == "needs approval" else "grandchild"] = sid
    return out


def test_spans_reach_a_real_collector_as_one_tree_per_trace(fleet):
    if fleet.phoenix is None:
        pytest.skip("Arize Phoenix is not installed: make test-tools")
    ids = _by_task(fleet)
    # 7 spans of the run, 5 of the agent child, 2 of each sh subagent, 4 of the one approved
    spans = wait_until(lambda: (s := fleet.phoenix.spans(fleet.project)) and len(s) >= 20 and s, 60, 0.5)
    assert len(spans) == 20, sorted(s["name"] for s in spans)
    by_id = {s["context"]["span_id"]: s for s in spans}
    agents = {s["attributes"]["gen_ai.agent.id"]: s for s in spans if s["name"].startswith("invoke_agent")}
    assert set(agents) == {fleet.run_id, *ids.values()}
    run = agents[fleet.run_id]
    tree = {fleet.run_id, ids["child"], ids["sh"], ids["grandchild"]}
    assert {agents[a]["context"]["trace_id"] for a in tree} == {run["context"]["trace_id"]}
    assert run["parent_id"] is None and agents[ids["waiter"]]["context"]["trace_id"] != run["context"]["trace_id"]
    # each child hangs under the run's `execute_tool subagent` span that spawned it
    for key in ("child", "sh"):
        parent = by_id[agents[ids[key]]["parent_id"]]
        assert parent["name"] == "execute_tool subagent" and parent["parent_id"] == run["context"]["span_id"]
    # the grandchild under the sh command's span, whose id its command saw as TRACEPARENT
    sh_work = by_id[agents[ids["grandchild"]]["parent_id"]]
    assert sh_work["name"] == "execute_tool sh" and sh_work["parent_id"] == agents[ids["sh"]]["context"]["span_id"]
    out = (fleet.root / "state" / "subagents" / f"{ids['sh']}.out").read_text()
    assert f"-{sh_work['context']['span_id']}-" in out
    # the child's bash ran under its own execute_tool span
    child = agents[ids["child"]]
    bash = next(s for s in spans if s["name"] == "execute_tool bash" and s["parent_id"] == child["context"]["span_id"])
    result = next(r for r in fleet.records(ids["child"]) if r["type"] == "tool_result" and "TP=" in r["content"])
    assert f"-{bash['context']['span_id']}-" in result["content"]
    assert bash["attributes"]["gen_ai.tool.call.id"]
    read = next(s for s in spans if s["name"] == "execute_tool read")
    assert read["status_code"] == "ERROR" and read["attributes"]["error.type"] == "tool_error"
    # model calls: tokens, model, conversation
    chats = [s for s in spans if s["parent_id"] == run["context"]["span_id"] and s["name"].startswith("chat")]
    assert sorted(c["attributes"]["gen_ai.usage.input_tokens"] for c in chats) == [100, 200, 300]
    assert {c["attributes"]["gen_ai.request.model"] for c in chats} == {"scripted"}
    assert {c["attributes"]["gen_ai.provider.name"] for c in chats} == {"openai"}
    assert {c["attributes"]["gen_ai.conversation.id"] for c in chats} == {fleet.run_id}
    assert run["attributes"]["gen_ai.usage.input_tokens"] == 600
    assert child["attributes"]["gen_ai.agent.name"] == "general"
    # status and error: the grandchild exited 3
    grand = agents[ids["grandchild"]]
    assert grand["status_code"] == "ERROR" and grand["attributes"]["error.type"] == "failed"
    assert sh_work["status_code"] == "UNSET"
    assert next(s for s in spans if s["parent_id"] == grand["context"]["span_id"])["attributes"]["process.exit.code"] == 3
    # the approval shows on the waiting subagent's span
    assert {"approval_request", "approval_decision"} <= {e["name"] for e in agents[ids["waiter"]]["events"]}


def test_atif_export_passes_harbors_validator(fleet, tmp_path):
    out = tmp_path / "fleet.atif.json"
    proc = fleet.zap("export", fleet.run_id, "--format", "atif", "-o", str(out))
    assert proc.returncode == 0, proc.stderr
    checked = receivers.harbor_validate(out)
    assert checked.returncode == 0, checked.stdout + checked.stderr
    doc = json.loads(out.read_text())
    ids = _by_task(fleet)
    assert doc["schema_version"] == "ATIF-v1.7" and doc["trajectory_id"] == fleet.run_id
    subs = {t["trajectory_id"]: t for t in doc["subagent_trajectories"]}
    assert set(subs) == {ids["child"], ids["sh"]}
    assert [t["trajectory_id"] for t in subs[ids["sh"]]["subagent_trajectories"]] == [ids["grandchild"]]
    refs = [r["trajectory_id"] for s in doc["steps"] for res in (s.get("observation") or {}).get("results", [])
            for r in res.get("subagent_trajectory_ref", [])]
    assert sorted(refs) == sorted(subs)  # each referenced from the spawn call that made it
    child = subs[ids["child"]]
    calls = [c["function_name"] for s in child["steps"] for c in s.get("tool_calls") or []]
    assert calls == ["bash", "read"]
    assert doc["final_metrics"]["total_prompt_tokens"] == 600 and child["final_metrics"]["total_prompt_tokens"] == 90
    grand = subs[ids["sh"]]["subagent_trajectories"][0]
    assert grand["extra"]["zapcli"]["status"] == "failed" and "exit code 3" in grand["notes"]
    # the validator is live: a broken document is refused
    doc["steps"][1]["step_id"] = 7
    out.write_text(json.dumps(doc))
    assert receivers.harbor_validate(out).returncode != 0


class _Proxy:
    """Every request chromium makes goes here (and no further): the request
    lines, so that the page's own can be told from the browser's services."""

    BROWSER = re.compile(r"^\S+ (https?://)?[^/ ]*(google\.com|googleapis\.com|gvt1\.com|gstatic\.com)[:/ ]")

    def __init__(self) -> None:
        self.sock = socket.socket()
        self.sock.bind(("127.0.0.1", 0))
        self.sock.listen(16)
        self.lines: list[str] = []
        self.flags = [f"--proxy-server=http://127.0.0.1:{self.sock.getsockname()[1]}",
                      "--proxy-bypass-list=<-loopback>"]
        threading.Thread(target=self._accept, daemon=True).start()

    def _accept(self) -> None:
        while True:
            try:
                conn, _ = self.sock.accept()
                conn.settimeout(2)
                self.lines.append(conn.recv(512).decode("latin-1").split("\r\n")[0])
                conn.close()
            except OSError:
                continue

    def page_requests(self) -> list[str]:
        return [line for line in self.lines if not self.BROWSER.match(line)]


def test_the_timeline_page_renders_in_a_real_browser(fleet, tmp_path):
    page = tmp_path / "fleet.html"
    proc = fleet.zap("timeline", "--session", fleet.run_id, "--html", str(page))
    assert proc.returncode == 0, proc.stderr
    text = page.read_text()
    assert "Content-Security-Policy" in text and "<script src" not in text and "<link" not in text
    proxy = _Proxy()
    net = proxy.flags
    dom = receivers.browse(page, tmp_path / "profile1", *net, "--virtual-time-budget=5000", "--dump-dom").stdout
    # a bar per subagent (the run, 4 subagents) and per call (6 + 4 + 1 + 1 + 3)
    assert dom.count('data-kind="subagent"') == 5, dom[:2000]
    assert len(re.findall(r'class="bar call [a-z]+', dom)) == 15
    assert 'data-kind="awaiting"' in dom and 'data-kind="queued"' in dom and 'data-rendered="5"' in dom
    assert "600 in / 60 out" in dom  # tokens on the run's row (its label)
    shot = tmp_path / "shot.png"
    receivers.browse(page, tmp_path / "profile2", *net, "--virtual-time-budget=5000",
                     f"--screenshot={shot}", "--window-size=1400,900")
    from PIL import Image

    with Image.open(shot) as img:
        colors = img.convert("RGB").getcolors(maxcolors=1 << 20) or []
    assert len(colors) > 20, "the screenshot is blank"  # bars in several colours, text, grid
    assert proxy.page_requests() == []
    # the control: a page that does load something is seen by the same proxy
    control = tmp_path / "control.html"
    control.write_text('<html><body><img src="http://zapcli-control.test/x.png"></body></html>')
    receivers.browse(control, tmp_path / "profile3", *net, "--virtual-time-budget=3000", "--dump-dom")
    assert any("zapcli-control.test" in line for line in proxy.page_requests()), proxy.lines


def test_perfetto_trace_event_json_nests_and_links(fleet, tmp_path):
    out = tmp_path / "fleet.perfetto.json"
    proc = fleet.zap("timeline", "--session", fleet.run_id, "--format", "perfetto", "-o", str(out))
    assert proc.returncode == 0, proc.stderr
    doc = json.loads(out.read_text())
    events = doc["traceEvents"]
    names = {e["args"]["name"] for e in events if e["ph"] == "M" and e["name"] == "thread_name"}
    assert sum(1 for n in names if "calls" not in n) == 5
    complete = [e for e in events if e["ph"] == "X"]
    assert all(e["dur"] >= 0 and e["ts"] >= 0 and {"pid", "tid", "name"} <= set(e) for e in complete)
    assert sum(1 for e in complete if e["cat"] in ("model", "tool", "sh")) == 15
    for tid in {e["tid"] for e in complete}:  # slices on one thread nest (Perfetto's rule)
        stack: list[float] = []
        for e in sorted((e for e in complete if e["tid"] == tid), key=lambda e: (e["ts"], -e["dur"])):
            while stack and e["ts"] >= stack[-1] - 1e-3:
                stack.pop()
            assert not stack or e["ts"] + e["dur"] <= stack[-1] + 1e-3, (tid, e)
            stack.append(e["ts"] + e["dur"])
    flows = [e for e in events if e["ph"] in ("s", "f")]
    assert len(flows) == 2 * 3 and {e["id"] for e in flows if e["ph"] == "s"} == {e["id"] for e in flows if e["ph"] == "f"}
    assert {e["name"] for e in events if e["ph"] == "i"} >= {"completed", "failed"}


def test_the_run_trail_is_the_root_of_its_tree(fleet):
    run = fleet.records(fleet.run_id)
    assert run[0]["type"] == "spawn" and run[0]["run"] is True and run[-1]["status"] == "completed"
    ids = _by_task(fleet)
    for key in ("child", "sh"):
        trace = fleet.records(ids[key])[0]["trace"]
        assert trace["parent_id"] == fleet.run_id
        call = next(r for r in run if r["type"] == "tool_call" and r["arguments"].get("action") == "spawn"
                    and (r["arguments"].get("cli") == "sh") == (key == "sh"))
        assert trace["parent_span_id"] == tracecontext.child_id(run[0]["trace"]["span_id"],
                                                                tracecontext.tool_key(call["call_id"]))


def test_a_collector_that_was_down_loses_nothing(fleet):
    """Live export to a dead endpoint changes nothing about the subagent (status,
    output, stderr); `zapcli trace export` sends the same spans afterwards."""
    if fleet.phoenix is None:
        pytest.skip("Arize Phoenix is not installed: make test-tools")
    dead = f"http://127.0.0.1:{receivers.free_port()}"
    down = {"OTEL_EXPORTER_OTLP_ENDPOINT": dead, "OTEL_EXPORTER_OTLP_TIMEOUT": "1", "ZAPCLI_SESSION": "later"}
    sid = fleet.zap("spawn", "--cli", "sh", "--", "echo TP=$TRACEPARENT", env=down).stdout.strip()
    assert fleet.zap("wait", sid, "--timeout", "60", env=down).returncode == 0
    assert (fleet.root / "state" / "subagents" / f"{sid}.err").read_bytes() == b""
    seen = fleet.zap("output", sid).stdout
    project = f"later-{uuid.uuid4().hex[:8]}"
    up = {"OTEL_RESOURCE_ATTRIBUTES": f"openinference.project.name={project}"}
    proc = fleet.zap("trace", "export", sid, env=up)
    assert proc.returncode == 0 and "sent 2 spans of 1 subagent" in proc.stdout, proc.stdout + proc.stderr
    spans = wait_until(lambda: len(s := fleet.phoenix.spans(project)) == 2 and s, 30, 0.3)
    work = next(s for s in spans if s["name"] == "execute_tool sh")
    assert f"-{work['context']['span_id']}-" in seen  # the very span its command ran under
    proc = fleet.zap("trace", "export", "--session", fleet.run_id, "--json", env=up)
    assert json.loads(proc.stdout)["spans"] == 20 and json.loads(proc.stdout)["subagents"] == 5
