"""Helpers of the Ray executor tests: point a `zap` at the cluster, read
the worker node's files, look at the Ray side of a caller's pool (its job,
placement groups, keys, files), poll."""

from __future__ import annotations

import json
import urllib.error
import urllib.parse
import urllib.request
from pathlib import Path
from typing import Any

from tests.conftest import Zap, record_of, trail_records
from tests.ray import cluster


def remote(zap: Zap, info: cluster.ClusterInfo, **config: Any) -> Zap:
    """`executor: ray` in the zap's config.yaml, placed on the worker node by
    its custom resource; RAY_ADDRESS names the cluster. `config` adds keys
    (`ray` merges into the ray section)."""
    ray = {"resources": {cluster.WORKER_RESOURCE: 1}, **config.pop("ray", {})}
    doc = {"executor": "ray", "ray": ray, **config}
    folder = Path(zap.env["ZAPCLI_CONFIG_HOME"])
    folder.mkdir(parents=True, exist_ok=True)
    (folder / "config.yaml").write_text(json.dumps(doc))  # JSON is YAML
    zap.env["RAY_ADDRESS"] = info.dashboard
    return zap


def poll(zap: Zap, sid: str) -> dict:
    return zap.json("poll", "--no-wait", sid)["subagents"][0]


def home_record(zap: Zap, sid: str, rtype: str) -> dict | None:
    """Poll (which collects) and return the first `rtype` record that came home."""
    poll(zap, sid)
    return record_of(zap, sid, rtype)


def node_file(info: cluster.ClusterInfo, sid: str, suffix: str = ".jsonl") -> Path:
    return Path(info.worker_home) / "subagents" / f"{sid}{suffix}"


def node_runs(path: Path) -> list[dict]:
    """The runner starts a node trail records (one per launch)."""
    return [r for r in trail_records(path) if r["type"] == "start"]


def pool_of(zap: Zap) -> dict:
    """This caller's record of its pool (`<state>/ray/<K>.json`), with its key."""
    (path,) = (zap.home / "ray").glob("*.json")
    return {**json.loads(path.read_text()), "key": path.stem}


def _get(info: cluster.ClusterInfo, path: str) -> Any:
    return cluster._get_json(f"{info.dashboard}{path}", timeout=10)


def pool_jobs(info: cluster.ClusterInfo, key: str) -> dict[str, str]:
    """The jobs in Ray's job table that are this pool's: id -> status."""
    return {j["submission_id"]: j["status"] for j in _get(info, "/api/jobs/")
            if str(j.get("submission_id")).startswith(f"zapcli-pool-{key}-")}


def subagent_jobs(info: cluster.ClusterInfo) -> list[str]:
    """Jobs of single subagents (what the executor did before the pool)."""
    return [j["submission_id"] for j in _get(info, "/api/jobs/")
            if str(j.get("submission_id")).startswith("zapcli-sa_")]


def placement_group(info: cluster.ClusterInfo, sid: str) -> str | None:
    """The state of its placement group (None: there is none)."""
    query = urllib.parse.urlencode({"filter_keys": "name", "filter_predicates": "=",
                                    "filter_values": f"zapcli-{sid}", "limit": 10})
    found = _get(info, f"/api/v0/placement_groups?{query}")["data"]["result"]["result"]
    states = [p["state"] for p in found]
    return "CREATED" if "CREATED" in states else (states[0] if states else None)


def kv_has(info: cluster.ClusterInfo, name: str) -> bool:
    """Whether the caller's key `name` (gcs://name) is in the cluster's store."""
    try:
        urllib.request.urlopen(f"{info.dashboard}/api/packages/gcs/{name}", timeout=10).read()  # noqa: S310
    except urllib.error.HTTPError as exc:
        if exc.code == 404:
            return False
        raise
    return True


def pool_files(info: cluster.ClusterInfo, pool: dict) -> list[str]:
    """The pool's files in its node's Ray log folder (frames, status)."""
    query = urllib.parse.urlencode({"node_id": pool["node"], "glob": f"zapcli/{pool['key']}/*"})
    found = _get(info, f"/api/v0/logs?{query}")["data"]["result"]
    return sorted(f for files in found.values() for f in files)


def placement_groups(info: cluster.ClusterInfo, sids: list[str]) -> dict[str, list[str]]:
    """Ray's public state API on the placement groups of `sids`: name -> the
    states of every group of that name Ray still lists."""
    names = {f"zapcli-{sid}" for sid in sids}
    found = _get(info, "/api/v0/placement_groups?limit=10000&detail=true")["data"]["result"]["result"]
    out: dict[str, list[str]] = {}
    for group in found:
        if group.get("name") in names:
            out.setdefault(group["name"], []).append(group["state"])
    return out


def held_bundles(info: cluster.ClusterInfo) -> list[str]:
    """Resources of placement-group bundles (`*_group_*`) any alive node still
    has (Ray's public state API: each node's total resources): a bundle that
    was reserved and never returned."""
    return sorted(k for n in cluster._alive_nodes(info.dashboard)
                  for k in n.get("resources_total", {}) if "_group_" in k)


def ray_status(info: cluster.ClusterInfo) -> str:
    """`ray status` (the public command line): usage and pending demands."""
    import subprocess

    res = subprocess.run([str(cluster.RAY_BIN), "status", "--address", info.gcs_address],
                         capture_output=True, text=True, timeout=60)
    return res.stdout + res.stderr


def actors(info: cluster.ClusterInfo, class_name: str) -> list[dict]:
    """Ray's public state API on the actors of a class (alive and dead)."""
    query = urllib.parse.urlencode({"filter_keys": "class_name", "filter_predicates": "=",
                                    "filter_values": class_name, "limit": 10000, "detail": "true"})
    return _get(info, f"/api/v0/actors?{query}")["data"]["result"]["result"]


def node_of(info: cluster.ClusterInfo, resource: str) -> str:
    """The id of the alive node that has `resource`."""
    (node,) = [n["node_id"] for n in cluster._alive_nodes(info.dashboard) if resource in n.get("resources_total", {})]
    return node
