"""The Ray executor without a cluster: no command imports `ray` (not even for
a remote subagent: the caller talks HTTP); `list` over 1,000 local and remote
subagents asks the cluster nothing about finished ones (and about the
running one, the pool once); a wrong or unreachable address is one line at
spawn with nothing created; the `ray` settings are validated; frames merge
once, in order, past the cursor."""

from __future__ import annotations

import json
import re
import socket
import subprocess
import sys
import threading
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

import orjson

from tests.conftest import Zap, trail_records, wait_until


def _closed_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def test_no_command_imports_ray(zap: Zap) -> None:
    """Local subagents, and a remote one whose cluster does not answer: spawn,
    list, poll, wait, output, replay, kill, doctor run without `ray` loaded."""
    local = zap.spawn_sh("echo hi")
    assert zap("wait", local).returncode == 0
    remote = _fake_remote(zap, f"http://127.0.0.1:{_closed_port()}", running=True)
    code = ("import sys; from zapcli.cli.entry import main\n"
            "for argv in sys.argv[1:]:\n"
            "    sys.argv = ['zapcli', *argv.split()]\n"
            "    try: main()\n"
            "    except SystemExit: pass\n"
            "print('RAY-IMPORTED' if any(m == 'ray' or m.startswith('ray.') for m in sys.modules) "
            "else 'NO-RAY', file=sys.stderr)\n")
    argvs = ["spawn --cli sh -- true", "list", f"poll --no-wait {local} {remote}", f"wait {local}",
             f"output {local}", f"replay {remote}", f"kill {local}", f"output {remote}"]
    res = subprocess.run([sys.executable, "-c", code, *argvs], env=zap.env, cwd=zap.cwd,
                         capture_output=True, text=True, timeout=120)
    assert res.stderr.strip().endswith("NO-RAY"), res.stderr


def _fake_remote(zap: Zap, address: str, *, running: bool, sid: str | None = None) -> str:
    """A remote subagent's trail as the caller holds it (no cluster needed),
    in pool `fakepool`."""
    from zapcli import ids
    from zapcli.trail import records

    sid = sid or ids.new_id()
    folder = zap.home / "subagents"
    folder.mkdir(parents=True, exist_ok=True)
    now = time.time()
    recs = [records.make("spawn", 0, {"session": zap.env["ZAPCLI_SESSION"], "cli": "sh", "task": "x",
                                      "cwd": str(zap.cwd), "workspace": str(zap.cwd), "timeout_s": 300,
                                      "executor": "ray", "ray": {"address": address, "pool": "fakepool"}},
                          now - 60),
            records.make("process", 1, {"executor": "ray", "address": address, "pool": "fakepool", "sid": sid,
                                        "session": "s1", "mono": time.monotonic() - 60,
                                        "deadline_mono": time.monotonic() + 240}, now - 60)]
    if not running:
        recs += [records.make("status", 2, {"status": "completed", "exit_code": 0, "node_seq": 5}, now - 30),
                 records.make("collected", 3, {"complete": True, "reason": "its runner ended"}, now - 29)]
    (folder / f"{sid}.jsonl").write_bytes(b"".join(orjson.dumps(r) + b"\n" for r in recs))
    (zap.home / "ray").mkdir(exist_ok=True)
    (zap.home / "ray" / "fakepool.json").write_text(json.dumps({"job": "zapcli-pool-fakepool-1", "gen": 1,
                                                                "node": "n1", "hello": {"ok": True}}))
    return sid


class _Counting(BaseHTTPRequestHandler):
    hits: list[str] = []
    running: str = ""

    def do_GET(self) -> None:  # noqa: N802 - http.server's name
        self.hits.append(self.path)
        if self.path.startswith("/api/jobs/zapcli-pool-fakepool-1"):
            body = json.dumps({"status": "RUNNING", "message": "", "driver_node_id": "n1"})
        elif self.path.startswith("/api/v0/logs/file") and "status" in self.path:
            body = json.dumps({"v": 1, "pool": "zapcli-pool-fakepool-1", "session": "s1",
                               "subs": {self.running: ["running", 0, None]}}) + "\n"
        else:
            self.send_error(404)
            return
        data = body.encode()
        self.send_response(200)
        self.send_header("Content-Type", "application/json" if body.startswith("{\"status") else "text/plain")
        self.send_header("Content-Length", str(len(data)))
        self.end_headers()
        self.wfile.write(data)

    def log_message(self, *args: object) -> None:
        pass


def test_list_of_1000_does_not_ask_the_cluster_about_finished_ones(zap: Zap) -> None:
    server = ThreadingHTTPServer(("127.0.0.1", 0), _Counting)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    address = f"http://127.0.0.1:{server.server_address[1]}"
    try:
        for _ in range(3):  # a few real local ones, finished
            assert zap("wait", zap.spawn_sh("true")).returncode == 0
        local_done = trail_records(zap.trail(zap.json("list")["subagents"][0]["id"]))
        folder = zap.home / "subagents"
        from zapcli import ids

        for _ in range(497):  # local finished ones: copies of a real trail
            sid = ids.new_id()
            (folder / f"{sid}.jsonl").write_bytes(b"".join(orjson.dumps(r) + b"\n" for r in local_done))
        for _ in range(499):
            _fake_remote(zap, address, running=False)
        running = _fake_remote(zap, address, running=True)
        _Counting.running = running
        _Counting.hits.clear()
        res = zap.json("list", "--all", "--limit", "0")
        assert len(res["subagents"]) == 1000
        assert sorted({v["status"] for v in res["subagents"]}) == ["completed", "running"]
        # the running one's pool: its job and status line, asked once each
        assert _Counting.hits and len(_Counting.hits) <= 4, _Counting.hits
    finally:
        server.shutdown()


def test_an_unreachable_cluster_is_one_line_at_spawn_and_nothing_is_created(zap: Zap) -> None:
    port = _closed_port()
    res = zap("spawn", "--executor", "ray", "--cli", "sh", "--", "echo hi",
              env={"RAY_ADDRESS": f"http://127.0.0.1:{port}"})
    assert res.returncode == 1
    assert res.err.count("\n") == 1 and f"cannot reach the Ray cluster at http://127.0.0.1:{port}" in res.err, res.err
    assert not (zap.home / "subagents").exists() or not list((zap.home / "subagents").iterdir())
    res = zap("spawn", "--executor", "ray", "--cli", "sh", "--", "echo hi", env={"RAY_ADDRESS": "ray://10.0.0.1:10001"})
    assert res.returncode == 1 and "not the dashboard's http address" in res.err
    res = zap("spawn", "--executor", "ray", "--cli", "sh", "--", "echo hi")
    assert res.returncode == 1 and "set RAY_ADDRESS or ray.address" in res.err
    res = zap("spawn", "--executor", "slurm", "--cli", "sh", "--", "echo hi")
    assert res.returncode == 2 and "unknown --executor 'slurm'" in res.err
    assert not (zap.home / "subagents").exists() or not list((zap.home / "subagents").iterdir())


def test_a_blackholed_cluster_fails_fast(zap: Zap) -> None:
    from zapcli.executors import ray_api

    with socket.socket() as hole:  # accepts connections, never answers
        hole.bind(("127.0.0.1", 0))
        hole.listen(8)
        t0 = time.monotonic()
        res = zap("spawn", "--executor", "ray", "--cli", "sh", "--", "echo hi",
                  env={"RAY_ADDRESS": f"127.0.0.1:{hole.getsockname()[1]}"})
        took = time.monotonic() - t0
    assert res.returncode == 1 and "timed out" in res.err, res.err
    assert took < ray_api.HTTP_TIMEOUT_S + 3


def test_the_ray_settings_are_checked_and_a_workspace_cannot_choose_the_cluster(zap: Zap) -> None:
    config = Path(zap.env["ZAPCLI_CONFIG_HOME"])
    config.mkdir(parents=True, exist_ok=True)
    (config / "config.yaml").write_text("executor: rayy\nray:\n  resources: {CPU: -1}\n  adress: x\n")
    res = zap("spawn", "--cli", "sh", "--", "true")
    assert res.returncode != 0
    # every executor is named (a plugin's may follow: tests/plugin adds one), and the bad section key
    named = re.search(r"key 'executor': expected one of ([^\n]*)", res.err)
    assert named and {"local", "ray"} <= {n.strip(" ,.") for n in named.group(1).split(",")}, res.err
    assert "unknown key ray.adress (valid: address," in res.err, res.err
    (config / "config.yaml").write_text("ray:\n  resources: {CPU: -1}\n  pool_idle_s: 0\n")
    res = zap("spawn", "--cli", "sh", "--", "true")
    assert res.returncode != 0 and "ray.resources: expected a mapping" in res.err, res.err
    (config / "config.yaml").write_text("ray:\n  pool_idle_s: 0\n")
    res = zap("spawn", "--cli", "sh", "--", "true")
    assert res.returncode != 0 and "ray.pool_idle_s: expected a number of seconds above 0" in res.err, res.err
    (config / "config.yaml").write_text("")
    (zap.cwd / ".zapcli").mkdir()
    (zap.cwd / ".zapcli" / "config.yaml").write_text("executor: ray\nray: {address: 'http://evil:8265', env: [OPENAI_API_KEY]}\n")
    zap("trust", check=True)  # even a trusted workspace never chooses where work and keys go
    res = zap("spawn", "--cli", "sh", "--", "true")
    assert res.returncode == 0, res.err
    assert "`executor` was not applied" in res.err and "`ray` was not applied" in res.err
    assert "executor" not in trail_records(zap.trail(res.out.strip()))[0]


def test_frames_merge_once_in_order_past_the_cursor(zap: Zap) -> None:
    """Two observers collecting the same frames, in any order, one damaged and
    one past a gap: each record and byte comes home once, renumbered after
    the caller's own; the cursor stops at the gap."""
    from zapcli.executors import ray_collect
    from zapcli.executors import ray_wire as wire

    sid = _fake_remote(zap, "http://127.0.0.1:9", running=True)

    def recs(*pairs: tuple[int, str]) -> bytes:
        return b"".join(orjson.dumps({"v": 1, "seq": n, "ts": "t", "type": t, "mono": 1.0}) + b"\n"
                        for n, t in pairs)

    lines = [wire.frame(1, "o", 0, b"hel"), wire.frame(0, "t", 0, recs((0, "spawn"), (1, "process"), (2, "start"))),
             "2 o 3 ###", wire.frame(2, "o", 3, b"lo"), wire.frame(3, "t", 99, recs((3, "text"))),
             wire.frame(5, "o", 5, b"after a gap"), wire.end_frame(6, "recorded")]
    first, cursor = ray_collect.apply(sid, lines, 0)
    assert (first.records, first.out_bytes, first.ended, cursor) == (2, 5, False, 4)
    again, same = ray_collect.apply(sid, lines, 0)  # a second observer with an old cursor
    assert (again.records, again.out_bytes, same) == (0, 0, 4)
    rest, end = ray_collect.apply(sid, [wire.frame(4, "e", 0, b"err"), *lines], cursor)
    assert (rest.err_bytes, rest.out_bytes, rest.ended, end) == (3, 11, True, 7)
    local = trail_records(zap.trail(sid))
    assert [(r["type"], r["seq"], r.get("node_seq")) for r in local[2:]] == [
        ("start", 2, 2), ("text", 3, 3), ("collected", 4, None)]  # said with the end, under the same lock
    assert local[-1]["complete"] is True
    assert "mono" not in local[2] and local[2]["node_mono"] == 1.0
    assert (zap.home / "subagents" / f"{sid}.out").read_bytes() == b"helloafter a gap"


def test_the_observer_that_brings_the_end_home_says_so_before_the_pool_forgets(zap: Zap) -> None:
    """Two observers of one ended remote runner: the first brings its last
    frames home and lets the pool forget it; the second, a moment later,
    finds nothing left to fetch. The trail says everything came home, not
    the second's "what could come home did" (a CI run saw the second win)."""
    from zapcli.executors import ray_collect
    from zapcli.executors import ray_wire as wire
    from zapcli.lifecycle import observe

    sid = _fake_remote(zap, "http://127.0.0.1:9", running=True)
    lines = [wire.frame(0, "o", 0, b"done\n"), wire.end_frame(1, "recorded")]
    got, _cursor = ray_collect.apply(sid, lines, 0)
    assert got.ended
    observe._mark_collected(sid, False, "its runner ended on its Ray node")  # the late one
    collected = [r for r in trail_records(zap.trail(sid)) if r["type"] == "collected"]
    assert [r["complete"] for r in collected] == [True]


RETRY_KEYS = {"max_restarts": 0, "max_task_retries": 0, "max_retries": 0, "retry_exceptions": False}


def _options_of(call: Any, module: Any) -> dict[str, Any]:
    """The keyword options of a call (a `**NAME` splat of a dict literal in
    the module read through)."""
    import ast

    out: dict[str, Any] = {}
    for kw in call.keywords:
        if kw.arg is not None:
            out[kw.arg] = ast.literal_eval(kw.value) if isinstance(kw.value, ast.Constant) else kw.value
        elif isinstance(kw.value, ast.Name):
            for node in ast.walk(module):
                if isinstance(node, ast.Assign) and any(isinstance(t, ast.Name) and t.id == kw.value.id
                                                        for t in node.targets):
                    out.update(ast.literal_eval(node.value))
    return out


def test_ray_retries_nothing_of_zapclis_anywhere() -> None:
    """Exactly once holds for every way Ray can run work again: each Ray
    remote zapcli makes (actor or task, decorator or call) says it is never
    restarted or retried — task retries (OOM kills included), actor restarts
    and so lineage reconstruction — and no `.options(...)` anywhere turns a
    retry back on. Read from the sources, so a new remote cannot slip by."""
    import ast

    from tests.conftest import REPO

    remotes, bad = 0, []
    for path in sorted((REPO / "zapcli").rglob("*.py")):
        module = ast.parse(path.read_text(), str(path))
        parents = {child: node for node in ast.walk(module) for child in ast.iter_child_nodes(node)}
        for node in ast.walk(module):
            where = f"{path.relative_to(REPO)}:{getattr(node, 'lineno', 0)}"
            is_remote = (isinstance(node, ast.Attribute) and node.attr == "remote"
                         and isinstance(node.value, ast.Name) and node.value.id == "ray")
            if is_remote:
                remotes += 1
                up = parents.get(node)  # ray.remote(X) -> .options(...)(...)
                call = parents.get(up) if isinstance(up, ast.Call) else None
                opts = (parents.get(call) if isinstance(call, ast.Attribute) and call.attr == "options" else None)
                got = _options_of(opts, module) if isinstance(opts, ast.Call) else (
                    _options_of(up, module) if isinstance(up, ast.Call) and up.func is node and up.keywords else {})
                target = up.args[0] if isinstance(up, ast.Call) and up.func is node and up.args else None
                holder = parents.get(up) if isinstance(up, ast.Call) else up  # a decorated def
                actor = (isinstance(target, ast.Name) and target.id[:1].isupper()) or isinstance(holder, ast.ClassDef)
                kinds = ("max_restarts", "max_task_retries") if actor else ("max_retries", "retry_exceptions")
                if any(got.get(k, "unset") != RETRY_KEYS[k] for k in kinds):
                    bad.append(f"{where}: ray.remote without {', '.join(f'{k}={RETRY_KEYS[k]}' for k in kinds)}")
            if isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute) and node.func.attr == "options":
                for key, value in _options_of(node, module).items():
                    if key in RETRY_KEYS and value != RETRY_KEYS[key]:
                        bad.append(f"{where}: .options({key}={ast.unparse(value) if isinstance(value, ast.AST) else value})")
    assert remotes >= 1, "no Ray remote found: the check reads nothing"
    assert not bad, bad


def test_a_start_made_again_after_its_agent_died_runs_the_work_once(zap: Zap) -> None:
    """The window in which Ray's memory monitor (or any death) takes a node's
    agent after it launched a runner and before it recorded the launch: the
    pool asks the next agent to start it again, which launches a second
    runner — and the runners' claim on the trail keeps the work to one run.
    Real runners and files on this machine, the node agent as plain Python."""
    from zapcli import __version__, ids
    from zapcli.executors import ray_node
    from zapcli.trail import store
    from zapcli.trail.records import SCHEMA_VERSION

    seed = zap.spawn_sh("true")
    assert zap("wait", seed).returncode == 0
    marker = zap.cwd / "runs"
    spawn = json.loads(zap.trail(seed).read_bytes().split(b"\n", 1)[0])
    spawn["task"] = f"echo ran >> {marker}; sleep 1"
    sid = ids.new_id()
    store.create_trail_line(sid, orjson.dumps(spawn) + b"\n")  # the node trail, as the dead agent made it
    ray_node._launch(sid, str(zap.cwd), {})  # ... and its launch, never recorded
    agent = ray_node.NodeAgent({"zapcli": __version__, "format": SCHEMA_VERSION})
    assert agent.start(sid, {"spawn": "", "env": {}})["ok"] is True
    ended = wait_until(lambda: next((r for r in trail_records(zap.trail(sid)) if r["type"] == "status"), None), 30, 0.2)
    assert ended["status"] == "completed", ended  # type: ignore[index]
    time.sleep(6)  # the first runner's claim gives up after 5 s
    assert marker.read_text().split() == ["ran"]
    assert [r["type"] for r in trail_records(zap.trail(sid))].count("start") == 1
    assert store.path_for(sid, ".err").read_text() == "", "a refused runner spoke in its stderr"


def test_a_ray_that_is_found_but_does_not_import_is_said_as_the_probe_would(tmp_path: Path) -> None:
    """The pool job's probe finds ray without importing it (~0.35 s a pool
    start); a ray that is there but fails to import (adversary round 11: the
    job then died on a traceback, where the old probe said why) is said by the
    dispatcher in the probe's words, which `no_python` turns into the advice."""
    import os

    from zapcli.executors import ray_wire

    broken = tmp_path / "site" / "ray"
    broken.mkdir(parents=True)
    (broken / "__init__.py").write_text("raise ImportError('this ray is broken')\n")
    cmd = ray_wire.entrypoint(sys.executable, ["key", "1", "e30=", "5"])
    env = {**os.environ, "PYTHONPATH": f"{tmp_path / 'site'}{os.pathsep}{Path(__file__).parents[2]}"}
    res = subprocess.run(["sh", "-c", cmd], cwd=tmp_path, env=env, capture_output=True, text=True,
                         timeout=60)
    assert res.returncode == 3, (res.stdout, res.stderr)
    said = ray_wire.no_python("127.0.0.1:1", None, res.stdout, {"status": "FAILED"})
    assert "cannot import zapcli and ray" in said and "this ray is broken" in said, said
