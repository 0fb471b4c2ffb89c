"""Helpers of the Ray executor tests: point a `zap` at the cluster, read
the worker node's files, poll."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from tests.conftest import Zap, record_of
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


def job(info: cluster.ClusterInfo, sid: str) -> dict:
    return cluster._get_json(f"{info.dashboard}/api/jobs/zapcli-{sid}")  # type: ignore[return-value]
