"""The Ray executor: a subagent's runner as a Ray job (SPEC §15).

Imports `zapcli.executors.base`, `zapcli.executors.ray_api` (the dashboard's
HTTP routes, urllib only), `zapcli.executors.ray_collect`, `zapcli.trail`;
never `ray` itself: the caller needs no Ray installed, only the cluster's
dashboard address. The nodes run `zapcli.executors.ray_node`.

- check (spawn): the address answers as a Ray dashboard; the `ray` settings
  are frozen into the spawn record.
- launch: the caller's `spawn` record (and the values of the variables named
  by `ray.env`) go in a working_dir package stored in the cluster's GCS; the
  job `zapcli-<id>` runs `python -m zapcli.executors.ray_node run <id>` with
  placement from `ray.resources` (CPU/GPU/memory become Ray's
  entrypoint_num_cpus/_gpus/_memory, the rest entrypoint_resources).
- alive: the job's status (PENDING/RUNNING alive; anything else dead, with
  Ray's message as the reason; no answer: unknown).
- signal: the caller delivered its terminal status first, so the node side
  ends the runner's tree itself within the grace; if the job has not ended by
  then, stop it (Ray TERMs every process of it, waits, KILLs).
- collect: the job's log holds the node's files as frames (`ray_collect`).
- deliver: one GCS entry per record (`zapcli_in_<id>_<seq>.json`), which the
  node side polls every 100 ms and appends to the node's trail.
"""

from __future__ import annotations

import json
import math
import shlex
import time
import urllib.error
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

import orjson

from zapcli.executors import ray_api as api
from zapcli.executors.base import Collected, Executor, ExecutorError, Launched, Liveness, Signalled
from zapcli.trail import reader, store

SHIP_MARGIN_S = 2  # the node side ships its last frames after the runner ended
ALIVE_STATES = ("PENDING", "RUNNING")
JOB_PREFIX = "zapcli-"


def placement(resources: Mapping[str, Any] | None) -> dict[str, Any]:
    """`ray.resources` as the job's entrypoint_* fields."""
    out: dict[str, Any] = {}
    custom: dict[str, float] = {}
    for name, amount in (resources or {}).items():
        if name == "CPU":
            out["entrypoint_num_cpus"] = float(amount)
        elif name == "GPU":
            out["entrypoint_num_gpus"] = float(amount)
        elif name == "memory":
            out["entrypoint_memory"] = int(amount)
        else:
            custom[str(name)] = float(amount)
    if custom:
        out["entrypoint_resources"] = custom
    return out


def _reason(status: str, message: str) -> str:
    """Ray's verdict in one line; a node that died is said first."""
    lines = [ln.strip() for ln in message.strip().splitlines() if ln.strip()]
    node = next((ln for ln in lines if "node has died" in ln or "node was terminated" in ln
                 or "node died" in ln.lower()), None)
    if node:
        return f"its Ray node died ({node[:200]})"
    return f"its Ray job {status.lower()}" + (f": {lines[0][:200]}" if lines else "")


def _spawn_line(sid: str) -> tuple[bytes, dict[str, Any]]:
    line = store.read_bytes(store.path_for(sid)).split(b"\n", 1)[0] + b"\n"
    rec = orjson.loads(line)
    return line, rec if isinstance(rec, dict) else {}


RAY_KEYS = ("address", "resources", "python", "env", "max_concurrent")


class RayExecutor(Executor):
    name = "ray"
    summary = "a Ray cluster: RAY_ADDRESS or ray.address"
    remote = True
    config_keys = RAY_KEYS

    def check_config(self, value: Any) -> dict[str, Any]:
        """The `ray:` section: address (the dashboard's), resources (Ray's
        entrypoint resources), python (the interpreter on the nodes), env (names
        of variables forwarded to the runner), max_concurrent (a cap of its own)."""
        value = super().check_config(value)
        for key, item in value.items():
            if key in ("address", "python") and not (isinstance(item, str) and item.strip()):
                raise ValueError(f"ray.{key}: expected text, got {item!r}")
            if key == "resources" and not (isinstance(item, dict) and all(
                    isinstance(n, str) and isinstance(a, (int, float)) and not isinstance(a, bool)
                    and a >= 0 for n, a in item.items())):
                raise ValueError("ray.resources: expected a mapping of resource name to amount, "
                                 "e.g. {CPU: 1, my_node_type: 1}")
            if key == "env" and not (isinstance(item, list) and all(isinstance(n, str) for n in item)):
                raise ValueError("ray.env: expected a list of environment variable names")
            if key == "max_concurrent" and (isinstance(item, bool) or not isinstance(item, int)
                                            or item < 0):
                raise ValueError(f"ray.max_concurrent: expected a whole number, 0 or more, got {item!r}")
        return value

    # -- spawn ------------------------------------------------------------
    def check(self, options: Mapping[str, Any]) -> dict[str, Any]:
        addr = api.address(options)
        ray_version = api.version(addr)
        conf = {"address": addr, "resources": dict(options.get("resources") or {}),
                "python": str(options.get("python") or "python"),
                "env": [str(n) for n in options.get("env") or ()], "ray_version": ray_version}
        return {"ray": conf}

    def launch(self, sid: str, argv: Sequence[str], *, env: Mapping[str, str], cwd: str,
               stderr_path: Path) -> Launched:
        line, rec = _spawn_line(sid)
        conf: dict[str, Any] = rec["ray"] if isinstance(rec.get("ray"), dict) else {}
        addr = str(conf.get("address") or "")
        if not addr:
            raise ExecutorError("its spawn record names no Ray cluster")
        files = {"spawn.jsonl": line}
        early = [r for r in reader.read(store.path_for(sid)).records if r.get("type") == "steer"]
        if early:  # sent while it was queued: the node takes them before the runner starts
            files["inbox.jsonl"] = b"".join(orjson.dumps(r) + b"\n" for r in early)
        forwarded = {n: env[n] for n in conf.get("env") or () if isinstance(n, str) and n in env}
        if forwarded:  # in the package, not in env_vars: the dashboard shows env_vars to anyone
            files["env.json"] = json.dumps(forwarded).encode()
        name, data = api.package(files)
        grace = float(rec["kill_grace_s"]) if isinstance(rec.get("kill_grace_s"), (int, float)) else 3.0
        job_id = JOB_PREFIX + sid
        body = {
            "entrypoint": f"exec {shlex.quote(str(conf.get('python') or 'python'))} "
                          f"-m zapcli.executors.ray_node run {sid}",
            "submission_id": job_id, "metadata": {"zapcli_id": sid},
            "runtime_env": {"working_dir": f"gcs://{name}", "env_vars": {
                "ZAPCLI_SESSION": str(env.get("ZAPCLI_SESSION", "")),
                # Ray's own TERM -> KILL wait when a job is stopped (an int, or Ray fails the stop)
                "RAY_JOB_STOP_WAIT_TIME_S": str(math.ceil(grace) + SHIP_MARGIN_S)}},
            **placement(conf.get("resources")),
        }
        try:
            api.put_package(addr, name, data, timeout=30.0)  # up to 1 MB of task
            api.post_json(addr, "/api/jobs/", body)
        except (OSError, ValueError) as exc:
            raise ExecutorError(f"the Ray cluster at {addr} did not take the job ({api.why(exc)})") from None
        return Launched({"executor": self.name, "address": addr, "job_id": job_id})

    # -- later ------------------------------------------------------------
    def alive(self, process: Mapping[str, Any]) -> Liveness:
        addr, job_id = str(process.get("address")), str(process.get("job_id"))
        try:
            info = api.call(addr, "GET", f"/api/jobs/{job_id}")
        except urllib.error.HTTPError as exc:
            if exc.code == 404:
                return Liveness(False, f"the Ray cluster at {addr} has no job {job_id} "
                                       "(it was restarted or replaced)")
            return Liveness(None, f"the Ray cluster at {addr} did not answer ({api.why(exc)})")
        except (OSError, ValueError) as exc:
            return Liveness(None, f"the Ray cluster at {addr} did not answer ({api.why(exc)})")
        status = str(info.get("status")) if isinstance(info, dict) else "?"
        if status in ALIVE_STATES:
            return Liveness(True, status)
        return Liveness(False, _reason(status, str(info.get("message") or "") if isinstance(info, dict) else ""))

    def _wait_ended(self, process: Mapping[str, Any], seconds: float) -> bool:
        give_up = time.monotonic() + seconds
        while True:
            if self.alive(process).alive is not True:
                return True
            if time.monotonic() >= give_up:
                return False
            time.sleep(0.1)

    def signal(self, process: Mapping[str, Any], grace_s: float) -> Signalled:
        """Give the node side the grace to end the runner's tree itself (it got
        the caller's terminal status through `deliver`); then stop the job."""
        job_id = str(process.get("job_id"))
        if self.alive(process).alive is not True:
            return Signalled()
        if self._wait_ended(process, grace_s + SHIP_MARGIN_S):
            return Signalled([job_id], root_alive=True, how="Ray job ended on its node")
        try:
            api.call(str(process.get("address")), "POST", f"/api/jobs/{job_id}/stop")
        except (OSError, ValueError):
            return Signalled(root_alive=True, how="the Ray cluster did not answer")
        ended = self._wait_ended(process, math.ceil(grace_s) + 2 * SHIP_MARGIN_S + 3)
        return Signalled([job_id], [job_id], root_alive=True,
                         how="Ray job stopped" if ended else "Ray job stop requested")

    def collect(self, sid: str, process: Mapping[str, Any]) -> Collected | None:
        from zapcli.executors import ray_collect

        try:
            log = api.call(str(process.get("address")), "GET", f"/api/jobs/{process.get('job_id')}/logs",
                           timeout=max(api.HTTP_TIMEOUT_S, 10.0))
        except (OSError, ValueError):
            return None
        text = log.get("logs", "") if isinstance(log, dict) else str(log)
        return ray_collect.apply(sid, ray_collect.parse(text or ""))

    def deliver(self, sid: str, process: Mapping[str, Any], records: Sequence[Mapping[str, Any]]) -> None:
        addr = str(process.get("address"))
        for rec in records:
            seq = rec.get("seq")
            if not isinstance(seq, int):
                continue
            try:
                api.put_package(addr, api.inbox_name(sid, seq), orjson.dumps(dict(rec)))
            except (OSError, ValueError) as exc:
                raise ExecutorError(f"recorded here, but it could not be sent to the Ray node of {sid} "
                                    f"({api.why(exc)})") from None
