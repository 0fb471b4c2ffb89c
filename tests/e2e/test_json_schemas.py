"""Every `--json` document carries `"schema": "zapcli/<name>@1"` and is valid
against its published JSON Schema, docs/reference/json/<name>.schema.json
(#31.8). Each command runs for real (sh subagents, the built-in agent
against a scripted model, real git worktrees, the board), and what it prints
is validated with jsonschema. Every document name `render.docschema` knows
has its schema file, and every schema file a name.

ZAPCLI_DUMP_DOCS=<folder> also writes each document seen there (to author a
schema from real output).
"""

from __future__ import annotations

import json
import os
import subprocess
from pathlib import Path

import pytest
from jsonschema import Draft202012Validator

from tests.conftest import REPO, wait_until
from zapcli.render.docschema import NAMES, name_of
from zapcli.testing import ScriptedServer

SCHEMAS = REPO / "docs" / "reference" / "json"
GIT = ["git", "-c", "user.email=t@t", "-c", "user.name=t"]
COMMIT = "git -c user.email=s@s -c user.name=s commit -qm"
# one worker runs the whole file: `test_every_document_was_seen` reads what the others saw
pytestmark = pytest.mark.xdist_group("json-schemas")

seen: set[str] = set()


def schema_of(name: str) -> dict:
    return json.loads((SCHEMAS / f"{name}.schema.json").read_text())


def check(name: str, doc: dict) -> dict:
    """`doc` is the `name` document, valid against its schema."""
    dump = os.environ.get("ZAPCLI_DUMP_DOCS")
    if dump:
        Path(dump).mkdir(parents=True, exist_ok=True)
        with (Path(dump) / f"{name}.jsonl").open("a") as f:
            f.write(json.dumps(doc) + "\n")
    assert doc.get("schema") == name_of(name), (name, doc.get("schema"))
    if dump:
        seen.add(name)
        return doc
    validator = Draft202012Validator(schema_of(name))
    errors = [f"at {'/'.join(map(str, e.absolute_path)) or '(top)'}: {e.message[:300]}"
              for e in validator.iter_errors(doc)]
    assert not errors, f"{name}: " + "\n".join(errors)
    seen.add(name)
    return doc


def run_json(zap, name: str, *args: str, code: int | None = 0, **kw) -> dict:
    at = args.index("--") if "--" in args else len(args)
    proc = zap(*args[:at], "--json", *args[at:], **kw)
    assert proc.stdout, (args, proc.returncode, proc.err)
    if code is not None:
        assert proc.returncode == code, (args, proc.returncode, proc.err)
    return check(name, json.loads(proc.stdout))


def test_every_document_has_a_schema_and_every_schema_a_document():
    files = {p.name[:-len(".schema.json")] for p in SCHEMAS.glob("*.schema.json")}
    assert files == set(NAMES), (sorted(files - set(NAMES)), sorted(set(NAMES) - files))
    for name in NAMES:
        schema = schema_of(name)
        Draft202012Validator.check_schema(schema)
        assert schema["properties"]["schema"] == {"const": name_of(name)}, name
        assert "schema" in schema["required"], name
        assert schema.get("title") and schema.get("description"), name


def test_every_command_that_prints_json_names_its_document():
    """A new command is a decision: it prints a named, versioned document (or is
    declared here as printing another format)."""
    from zapcli.cli.gen import argspec

    # other formats, or (call) the document of the verb it calls
    other_formats = {"tool-schema", "export", "timeline", "mcp", "completion", "man", "__complete",
                     "call"}
    printed_by = " ".join(NAMES.values()).replace(",", " ").split()
    missing = [name for name, entry in argspec(with_groups=True).items()
               if "--json" in entry["options"] and name.split()[0] not in other_formats
               and name.split()[0] not in printed_by]
    assert missing == [], f"commands with --json whose document docschema.NAMES does not name: {missing}"


def test_the_subagent_verbs(zap, tmp_path):
    spawned = run_json(zap, "spawn", "spawn", "--cli", "sh", "--", "echo hi; echo oops >&2; exit 3")
    sid = spawned["id"]
    run_json(zap, "wait", "wait", sid, "--timeout", "30", code=3)
    run_json(zap, "poll", "poll", "--no-wait", sid)
    run_json(zap, "list", "list")
    run_json(zap, "output", "output", sid)
    run_json(zap, "output", "output", sid, "--stderr")
    run_json(zap, "replay", "replay", sid)
    run_json(zap, "list", "call", '{"action": "list"}')  # a tool call answers the same documents
    run_json(zap, "poll", "call", json.dumps({"action": "poll", "ids": [sid], "no_wait": True}))
    run_json(zap, "error", "call", '{"action": "poll", "ids": ["x"], "wait": 1}', code=2)
    long = zap.spawn_sh("sleep 30")
    run_json(zap, "poll", "poll", "--no-wait", long, "sa_20260101_deadbeef", code=1)
    run_json(zap, "wait", "wait", long, "--timeout", "0", code=4)
    run_json(zap, "kill", "kill", long, "sa_20260101_deadbeef", code=1)
    run_json(zap, "usage", "usage")
    run_json(zap, "session", "session")
    run_json(zap, "trust", "trust", "--show")
    run_json(zap, "trust", "trust")
    run_json(zap, "trust-list", "trust", "--list")
    run_json(zap, "trust", "untrust")
    run_json(zap, "doctor", "doctor", code=None)
    run_json(zap, "gc", "gc", "--dry-run")
    run_json(zap, "remove", "rm", sid)
    run_json(zap, "remove", "clean", "--all")
    run_json(zap, "error", "spawn", "--cli", "nope", "--", "x", code=2)
    run_json(zap, "error", "poll", "--wait-secs", "99", sid, code=2)
    other = zap.spawn_sh("echo again")
    zap("wait", other, "--timeout", "30")
    run_json(zap, "written", "export", other, "--output", str(tmp_path / "atif.json"))
    run_json(zap, "written", "timeline", other, "--format", "perfetto", "--output",
             str(tmp_path / "trace.json"))
    env = {"OTEL_EXPORTER_OTLP_ENDPOINT": "http://127.0.0.1:9", "OTEL_EXPORTER_OTLP_TIMEOUT": "1"}
    run_json(zap, "error", "trace", "export", "--session", "no-such-session", env=env, code=2)


def test_the_trace_export_document(zap):
    """Spans go to an OTLP/HTTP endpoint on 127.0.0.1 that takes them (200)."""
    import threading
    from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

    class Collector(BaseHTTPRequestHandler):
        def do_POST(self) -> None:  # noqa: N802 - http.server's name
            self.rfile.read(int(self.headers.get("Content-Length") or 0))
            self.send_response(200)
            self.send_header("Content-Type", "application/x-protobuf")
            self.send_header("Content-Length", "0")
            self.end_headers()

        def log_message(self, *args: object) -> None:
            pass

    pytest.importorskip("opentelemetry.sdk", reason="the otel extra: pip install 'zapcli[otel]'")
    server = ThreadingHTTPServer(("127.0.0.1", 0), Collector)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    try:
        sid = zap.spawn_sh("echo traced")
        zap("wait", sid, "--timeout", "30")
        env = {"OTEL_EXPORTER_OTLP_ENDPOINT": f"http://127.0.0.1:{server.server_address[1]}",
               "OTEL_EXPORTER_OTLP_TIMEOUT": "5"}
        run_json(zap, "trace-export", "trace", "export", sid, env=env)
    finally:
        server.shutdown()
        server.server_close()


@pytest.fixture
def agent(zap):
    ask = [{"tool_calls": [{"name": "bash", "arguments": {"command": "true"}}]}, {"text": "done"}]
    srv = ScriptedServer([{"match": "ask alpha", "turns": ask}, {"match": "ask beta", "turns": ask},
                          {"match": "lead", "turns": [{"text": "all done"}]}])
    srv.start()
    zap.env.update(OPENAI_BASE_URL=srv.base_url, ZAPCLI_MODEL="scripted", OPENAI_API_KEY="sk-schemas-1")
    yield srv
    srv.stop()


def test_steering_approvals_definitions_and_run(zap, agent, tmp_path):
    ask = [run_json(zap, "spawn", "spawn", "--", f"ask {word}")["id"] for word in ("alpha", "beta")]

    def pending(sid: str):
        doc = zap.json("poll", "--no-wait", sid)["subagents"][0]
        return doc if doc["status"] == "awaiting_approval" else None

    for sid in ask:
        wait_until(lambda sid=sid: pending(sid), 60)
    run_json(zap, "poll", "poll", "--no-wait", *ask)
    run_json(zap, "send", "send", ask[0], "keep going")
    run_json(zap, "decision", "approve", ask[0])
    run_json(zap, "decision", "deny", ask[1], "--reason", "not now")
    run_json(zap, "wait", "wait", *ask, "--timeout", "60", code=None)
    run_json(zap, "usage", "usage")
    run_json(zap, "agents", "agents", "list")
    run_json(zap, "agent", "agents", "show", "explorer")
    (tmp_path / "checker.yml").write_text("name: checker\ndescription: checks docs\ntools: [read]\n")
    run_json(zap, "agent-change", "agents", "save", str(tmp_path / "checker.yml"))
    run_json(zap, "agent-change", "agents", "disable", "checker")
    run_json(zap, "agent-change", "agents", "enable", "checker")
    run_json(zap, "agent-change", "agents", "model", "checker", "other-model")
    run_json(zap, "agent-change", "agents", "copy", "checker", "--as", "checker-two")
    run_json(zap, "agent-change", "agents", "delete", "checker")
    run_id = run_json(zap, "run", "run", "--approval", "full", "--no-sandbox", "--", "lead",
                      timeout=120)["run_id"]
    run_json(zap, "replay", "replay", run_id)  # a run's own trail, as a subagent's
    run_json(zap, "usage", "usage", run_id)


def test_the_board(zap):
    subprocess.run([*zap_cmd(), "board", "add", "write the parser"], env=zap.env, cwd=zap.cwd,
                   check=True, capture_output=True)
    run_json(zap, "board-change", "board", "add", "--after", "t1", "--label", "qa", "test it")
    run_json(zap, "board", "board", "list")
    run_json(zap, "board-claim", "board", "claim", "t1")
    run_json(zap, "board-change", "board", "done", "t1", "--result", "parser written")
    run_json(zap, "board-claim", "board", "claim")
    run_json(zap, "board-change", "board", "release", "t2")
    run_json(zap, "board-task", "board", "show", "t1")


def zap_cmd() -> list[str]:
    import sys

    return [sys.executable, "-m", "zapcli"]


@pytest.fixture
def repo(zap) -> Path:
    work = zap.cwd
    for args in (["init", "-q", "-b", "main"], ["add", "README"], ["commit", "-q", "-m", "base"]):
        if args[0] == "add":
            (work / "README").write_text("base\n")
        subprocess.run([*GIT, *args], cwd=work, check=True, capture_output=True)
    return work


def test_worktrees_merge_and_attempts(zap, repo):
    sid = zap.spawn_sh(f"echo one > one.txt && git add one.txt && {COMMIT} one && echo two > two.txt",
                       "--worktree")
    assert zap("wait", "--timeout", "60", sid).returncode == 0
    run_json(zap, "poll", "poll", "--no-wait", sid)
    run_json(zap, "diff", "diff", sid)
    run_json(zap, "diff", "diff", sid, "--stat")
    run_json(zap, "worktrees", "worktree", "list")
    run_json(zap, "merge", "merge", sid)
    run_json(zap, "worktree-rm", "worktree", "rm", sid)
    two = [zap.spawn_sh("true", "--worktree") for _ in range(2)]
    assert zap("wait", "--timeout", "60", *two).returncode == 0
    several = run_json(zap, "worktree-rm", "worktree", "rm", *two, "sa_20260101_deadbeef", code=1)
    assert [w["id"] for w in several["worktrees"]] == two and not several["removed"]
    assert several["refused"][0]["code"] == "not_found"
    spawned = run_json(zap, "spawn-attempts", "spawn", "--cli", "sh", "--attempts", "2", "--",
                       "echo $RANDOM > attempt.txt")
    first = spawned["ids"][0]
    assert zap("wait", "--timeout", "60", *spawned["ids"]).returncode == 0
    run_json(zap, "attempts", "attempts", first, "--check", "test -s attempt.txt")
    run_json(zap, "pick", "pick", first)
    run_json(zap, "gc", "gc", "--dry-run")


def test_an_id_that_names_no_subagent_keeps_each_document_valid(zap):
    """A new user's `poll --json nope` printed a poll document its own schema
    refused (the entry's id, as asked, is no `sa_…` id): every command that
    looks up ids keeps its document valid for a malformed, a partial or an
    unknown id."""
    for ident in ("nope", "x y", "sa_2026", "SA_20260101_DEADBEEF", "deadbeef",
                  "sa_20260101_deadbeef"):
        for name, *cmd in (("poll", "poll"), ("poll", "poll", "--no-wait"), ("kill", "kill"),
                           ("remove", "rm"), ("error", "output"), ("error", "wait"),
                           ("error", "replay")):
            doc = run_json(zap, name, *cmd, ident, code=1)
            if name == "poll":
                assert doc["subagents"][0]["id"] == ident, doc  # said as asked
                assert doc["subagents"][0]["error"]["code"] == "not_found", doc
    doc = run_json(zap, "poll", "call", json.dumps({"action": "poll", "ids": ["nope"], "no_wait": True}),
                   code=1)
    assert doc["subagents"][0]["error"]["code"] == "not_found", doc


def test_every_document_was_seen():
    """Runs last in this file: every name was printed by some command above."""
    if len(seen) < 5:
        pytest.skip("only part of this file ran")
    assert seen == set(NAMES), sorted(set(NAMES) - seen)
