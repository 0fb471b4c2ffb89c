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

import orjson

from tests.conftest import Zap, trail_records


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
    assert [(r["type"], r["seq"], r.get("node_seq")) for r in local[2:]] == [("start", 2, 2), ("text", 3, 3)]
    assert "mono" not in local[2] and local[2]["node_mono"] == 1.0
    assert (zap.home / "subagents" / f"{sid}.out").read_bytes() == b"helloafter a gap"
