"""Which trails make a tree: a subagent (or a `zapcli run`) and everything
started from inside it, or every tree of a session.

Imports `zapcli.trail` (store, runs, reader), `zapcli.errors`. A child names
its parent in its spawn record (`trace.parent_id`, taken from the
environment its spawner ran in), so the tree is found by reading the first
line of each trail, never by re-reading whole trails.
"""

from __future__ import annotations

import os
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import orjson

from zapcli import ids
from zapcli.errors import NotFound, UsageError
from zapcli.paths import subagents_dir
from zapcli.trail import reader, removals, runs, store

HEAD_MAX_BYTES = 4 << 20  # a spawn record holds a task of up to 1 MB (more once escaped)


@dataclass
class Node:
    """One trail of a tree and the trails started from it."""

    id: str
    path: Path
    spawn: dict[str, Any]
    children: list[Node] = field(default_factory=list)

    def walk(self) -> list[Node]:
        out = [self]
        for child in self.children:
            out += child.walk()
        return out

    def records(self) -> list[dict[str, Any]]:
        recs = reader.read(self.path).records
        return recs if recs and recs[0].get("type") == "spawn" else [self.spawn]


def _head(path: Path) -> dict[str, Any] | None:
    """The trail's first record, when it is its `spawn` record."""
    try:
        rec = orjson.loads(store.first_line(path, HEAD_MAX_BYTES))
    except (OSError, orjson.JSONDecodeError):
        return None
    return rec if isinstance(rec, dict) and rec.get("type") == "spawn" else None


def path_of(any_id: str) -> tuple[str, Path]:
    """(full id, trail path) of a subagent id (or its 8-hex tail) or a run id.
    Raises NotFound."""
    if runs.is_run_id(any_id):
        if not runs.exists(any_id):
            raise NotFound(f"{any_id} does not exist (no trail of that run in {runs.runs_dir()})")
        return any_id, runs.path_for(any_id)
    sid = store.resolve(any_id) if not ids.is_valid(any_id) else any_id
    path = store.path_for(sid)
    if not path.is_file():
        raise NotFound(removals.missing(sid))
    return sid, path


def _all_heads() -> dict[str, Node]:
    nodes: dict[str, Node] = {}
    try:
        names = os.listdir(subagents_dir())
    except OSError:
        names = []
    places = [(n[:-6], subagents_dir() / n) for n in names if n.endswith(".jsonl") and ids.is_valid(n[:-6])]
    places += [(r, runs.path_for(r)) for r in runs.ids_on_disk()]
    for nid, path in places:
        head = _head(path)
        if head is not None:
            nodes[nid] = Node(nid, path, head)
    return nodes


def _parent(node: Node) -> str | None:
    trace = node.spawn.get("trace")
    parent = trace.get("parent_id") if isinstance(trace, dict) else None
    return parent if isinstance(parent, str) else None


def _link(nodes: dict[str, Node]) -> None:
    for node in sorted(nodes.values(), key=lambda n: (str(n.spawn.get("ts")), n.id)):
        parent = _parent(node)
        if parent in nodes and parent != node.id:
            nodes[parent].children.append(node)


def tree(any_id: str) -> Node:
    """The tree under one subagent or run. Raises NotFound."""
    nid, _path = path_of(any_id)
    nodes = _all_heads()
    if nid not in nodes:
        raise NotFound(f"{nid}: its trail has no spawn record to start from")
    _link(nodes)
    return nodes[nid]


def session_trees(session: str) -> list[Node]:
    """Every tree of a session, oldest first: its run (a `run_…` session)
    and the subagents whose parent is not in it. Raises UsageError when the
    session has none."""
    nodes = _all_heads()
    _link(nodes)
    members = {n.id for n in nodes.values() if n.spawn.get("session") == session}
    if runs.is_run_id(session) and session in nodes:
        members.add(session)
    if not members:
        raise UsageError(f"session {session!r} has no subagents here (zapcli session prints the "
                         "current one; zapcli list --all shows every subagent's)")
    roots = [nodes[m] for m in members if _parent(nodes[m]) not in members]
    return sorted(roots, key=lambda n: (str(n.spawn.get("ts")), n.id))
