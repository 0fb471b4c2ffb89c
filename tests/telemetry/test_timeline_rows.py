"""The timeline page's rows (issue 28 item 9), in real headless chromium:
each row names its task, not only its id; its token label is shown whole
however long the task; rows of several sessions are ordered by start time
(not session by session)."""

from __future__ import annotations

import json
import re
import time

from tests.telemetry import receivers

LONG = "summarise every module of the repository and list what each one imports " * 3


def _u(p: int, c: int) -> dict:
    return {"prompt_tokens": p, "completion_tokens": c}


def test_rows_name_their_task_show_tokens_whole_and_follow_start_time(zap, model, tmp_path):
    model([{"match": "", "loop": True, "turns": [{"text": "done", "usage": _u(123456, 7890)}]}])
    ids = []
    for session, task in (("sess-b", f"first {LONG}"), ("sess-a", "second short task"),
                          ("sess-b", "third in b")):
        sid = zap("spawn", "--", task, env={"ZAPCLI_SESSION": session}).out.strip()
        assert zap("wait", "--timeout", "60", sid, env={"ZAPCLI_SESSION": session}).returncode == 0
        ids.append(sid)
        time.sleep(0.05)
    page = tmp_path / "t.html"
    proc = zap("timeline", "--session", "sess-a", "--session", "sess-b", "--html", str(page))
    assert proc.returncode == 0, proc.err
    # measure in the page itself, after it drew: which labels are cut
    probe = ("<script>addEventListener('load',()=>{const out=[];"
             "for(const r of document.querySelectorAll('.row')){const l=r.querySelector('.label');"
             "const t=l.querySelector('.tok');const k=l.querySelector('.task');"
             "out.push({id:r.dataset.id,task:k?k.textContent:'',tok:t.textContent,"
             "tokWhole:t.getBoundingClientRect().right<=l.getBoundingClientRect().right+0.5"
             "&&t.scrollWidth<=t.clientWidth+0.5});}"
             "document.body.dataset.probe=JSON.stringify(out);});</script>")
    page.write_text(page.read_text().replace("</body>", probe + "</body>"))
    dom = receivers.browse(page, tmp_path / "profile", "--virtual-time-budget=5000",
                           "--window-size=1400,900", "--dump-dom").stdout
    found = re.search(r'data-probe="([^"]*)"', dom)
    assert found, dom[:2000]
    rows = json.loads(found.group(1).replace("&quot;", '"').replace("&amp;", "&"))
    assert [r["id"] for r in rows] == ids, rows  # b, a, b: by start time
    assert rows[0]["task"].startswith("first summarise every module") and \
        rows[1]["task"] == "second short task", rows
    for r in rows:
        assert r["tok"].startswith("123.5k in / 7.9k out"), r
        assert r["tokWhole"], r


def test_a_runs_timeline_counts_its_subagents_as_list_does(zap, model, tmp_path):
    """`zapcli timeline` of a run's session said "3 subagents" where `list`
    says 2: the run itself is the run, not a subagent — on the command's line,
    the page's summary, and `export`'s."""
    model([{"match": "lead", "turns": [
        {"tool_calls": [{"name": "subagent", "arguments": {"action": "spawn", "task": f"kid {n}"}}
                        for n in (1, 2)]},
        {"tool_calls": [{"name": "subagent", "arguments": {"action": "wait", "timeout": 60}}]},
        {"text": "both done"}]},
        {"match": "kid", "loop": True, "turns": [{"text": "kid report"}]}])
    doc = json.loads(zap("run", "--json", "--", "lead two kids", timeout=120).stdout)
    run_id = doc["run_id"]
    listed = zap.json("list", env={"ZAPCLI_SESSION": run_id})["subagents"]
    assert len(listed) == 2
    page = tmp_path / "run.html"
    proc = zap("timeline", "--session", run_id, "--html", str(page))
    assert proc.returncode == 0, proc.err
    assert f"of run {run_id} and its 2 subagents" in proc.out, proc.out
    assert "1 run, 2 subagents," in page.read_text()
    assert zap.json("timeline", "--session", run_id, "--html", str(page))["subagents"] == 2
    exported = zap("export", run_id, "-o", str(tmp_path / "run.json"))
    assert f"of run {run_id} and its 2 subagents" in exported.out, exported.out
    # with another session's subagent beside the run's: not counted as the run's
    other = zap("spawn", "--", "kid elsewhere", env={"ZAPCLI_SESSION": "elsewhere"}).out.strip()
    assert zap("wait", "--timeout", "60", other, env={"ZAPCLI_SESSION": "elsewhere"}).returncode == 0
    both = zap("timeline", "--session", run_id, "--session", "elsewhere", "--html", str(page))
    assert f"of run {run_id} and its 2 subagents, and 1 other subagent:" in both.out, both.out
    assert zap.json("timeline", "--session", run_id, "--session", "elsewhere",
                    "--html", str(page))["subagents"] == 3


def test_a_timeline_asked_without_a_file_says_how_to_get_one(zap, tmp_path):
    """`--format html` without a file, `--json` alone, and a format it does
    not write each say what to type (a new user met all three), exit 2,
    and write nothing."""
    sid = zap.spawn_sh("echo drawn")
    assert zap.wait_status(sid) == "completed"
    for args, says in ((["--format", "html"], "--format html -o "),
                       (["--json"], "--json says what was written"),
                       (["--format", "json"], "choose: html (with -o FILE), perfetto")):
        proc = zap("timeline", sid, *args)
        assert proc.returncode == 2 and says in proc.err, (args, proc.err)
        assert "Traceback" not in proc.err
    page = tmp_path / "page.html"
    assert zap("timeline", sid, "--format", "html", "-o", str(page)).returncode == 0
    assert "drawn" in page.read_text() or sid[-8:] in page.read_text()
    assert sorted(p.name for p in zap.cwd.iterdir()) == []
