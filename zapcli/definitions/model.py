"""Value types of the definitions room: Diagnostic, KnowledgeSource, Definition.
Imports only the standard library and `zapcli.plain` (`dataclasses` costs a
spawn ~10 ms of imports).

A Definition is always valid (the loader never builds one from a broken file);
`to_dict()` is the frozen form written into the spawn record (docs/explanation/rules.md#the-trail) and
`from_dict()` reads it back in the child, which never re-reads YAML layers.
"""

from __future__ import annotations

import re

from zapcli.plain import field, frozen

TYPE_CHECKING = False  # `typing` costs ~5 ms of start-up; annotations only need it for mypy
if TYPE_CHECKING:
    from typing import Any

MEMORY_MODES = ("none", "private", "shared")
DEFAULT_MAX_TURNS = 40
LAYERS = ("builtin", "plugin", "system", "workspace")
MAX_FILE_BYTES = 256 * 1024  # a definition file larger than this is refused


def knowledge_path_problem(path: str) -> str | None:
    """Why a knowledge glob is refused (absolute, escaping, empty), or None.
    Here, with the values, so the grant checks it without the YAML loader."""
    if not path.strip():
        return "it is empty"
    if path.startswith(("/", "~")) or re.match(r"^[A-Za-z]:", path):
        return "it is an absolute path"
    if "\\" in path:
        return "it uses '\\' (use '/' separators)"
    if ".." in path.split("/"):
        return "it escapes the workspace ('..')"
    return None


@frozen
class Diagnostic:
    """One problem in one definition file. `line`/`column` are 1-based (0 = unknown)."""

    file: str
    line: int
    column: int
    message: str
    hint: str = ""

    def location(self) -> str:
        """`file:line:col` (or just `file` when the position is unknown)."""
        if self.line <= 0:
            return self.file
        return f"{self.file}:{self.line}:{self.column}"

    def __str__(self) -> str:
        text = f"{self.location()}: {self.message}"
        return f"{text}\n  hint: {self.hint}" if self.hint else text

    def one_line(self) -> str:
        """The diagnostic on a single line (hint after ` — `), for lists and the trail."""
        text = f"{self.location()}: {self.message}"
        return f"{text} — {self.hint}" if self.hint else text

    def to_dict(self) -> dict[str, Any]:
        return {"file": self.file, "line": self.line, "column": self.column,
                "message": self.message, "hint": self.hint}


@frozen
class KnowledgeSource:
    """`{name, path}`: `path` is a workspace-relative glob (already checked not to escape)."""

    name: str
    path: str


@frozen
class SandboxSpec:
    """`sandbox: {network, writable, sockets, scratch_size}` (docs/explanation/rules.md#sandbox): the
    network on or off (default off: undeclared means unreachable), the
    folders its commands may write, workspace-relative or absolute (None: the
    workspace and `writable_roots`), the unix sockets outside the workspace
    they may reach with the network off, and the cap of their scratch
    folder. The approval mode bounds `writable`."""

    network: bool = False
    writable: tuple[str, ...] | None = None
    sockets: tuple[str, ...] = ()  # unix sockets outside the workspace reachable with network off
    scratch_size: int | None = None  # bytes; None: the config's scratch_size, else 1 GiB

    def to_dict(self) -> dict[str, Any]:
        out: dict[str, Any] = {"network": self.network}
        if self.writable is not None:
            out["writable"] = list(self.writable)
        if self.sockets:
            out["sockets"] = list(self.sockets)
        if self.scratch_size is not None:
            out["scratch_size"] = self.scratch_size
        return out

    @classmethod
    def from_dict(cls, data: Any) -> SandboxSpec | None:
        if not isinstance(data, dict):
            return None
        writable = data.get("writable")
        size = data.get("scratch_size")
        return cls(network=data.get("network") is True,
                   writable=None if writable is None else tuple(str(p) for p in writable),
                   sockets=tuple(str(p) for p in data.get("sockets") or ()),
                   scratch_size=size if isinstance(size, int) and not isinstance(size, bool)
                   and size >= 0 else None)


@frozen
class Definition:
    """A valid subagent definition plus its provenance.

    `tools` holds canonical names, deduplicated, in declared order; an absent
    `tools` key is `()` (undeclared means unreachable). `layer` is one of
    LAYERS; `source` is the file it came from (or `builtin:<file>` /
    `plugin:<id>:<file>`).
    """

    name: str
    description: str
    tools: tuple[str, ...] = ()
    skills: tuple[str, ...] = ()
    mcp_servers: tuple[str, ...] = ()
    knowledge: tuple[KnowledgeSource, ...] = ()
    memory: str = "none"
    max_turns: int = DEFAULT_MAX_TURNS
    model: str | None = None
    env: tuple[str, ...] = ()
    prompt: str = ""
    cli: str | None = None  # the backend it runs on (`cli:`), e.g. claude; None: the built-in agent
    team: bool = False  # the session's board and message tools (`team: true`, docs/explanation/rules.md#fleets-traces-teams)
    sandbox: SandboxSpec | None = None  # None: not declared (network off, the workspace writable)
    board_labels: tuple[str, ...] = ()  # `board: {labels}`: the task labels its claims serve
    layer: str = "workspace"
    source: str = ""
    declared: frozenset[str] = field(default_factory=frozenset)  # keys present in the file

    def to_file_dict(self) -> dict[str, Any]:
        """The definition in file form (keys as written in YAML), only declared keys.

        `copy` writes this, so every dimension is carried over.
        """
        full: dict[str, Any] = {
            "name": self.name.split(":")[-1], "description": self.description,
            "tools": list(self.tools), "skills": list(self.skills),
            "mcp": {"servers": list(self.mcp_servers)},
            "knowledge": [{"name": k.name, "path": k.path} for k in self.knowledge],
            "memory": self.memory, "maxTurns": self.max_turns, "model": self.model,
            "env": list(self.env), "prompt": self.prompt, "cli": self.cli, "team": self.team,
            "sandbox": self.sandbox.to_dict() if self.sandbox else None,
            "board": {"labels": list(self.board_labels)},
        }
        keep = set(self.declared) | {"name", "description"}
        return {k: v for k, v in full.items() if k in keep}

    def to_dict(self) -> dict[str, Any]:
        """JSON-ready frozen form for the spawn record; `from_dict` reverses it."""
        return {
            "name": self.name, "description": self.description, "tools": list(self.tools),
            "skills": list(self.skills), "mcp": {"servers": list(self.mcp_servers)},
            "knowledge": [{"name": k.name, "path": k.path} for k in self.knowledge],
            "memory": self.memory, "maxTurns": self.max_turns, "model": self.model,
            "env": list(self.env), "prompt": self.prompt, "cli": self.cli, "layer": self.layer,
            "source": self.source, "declared": sorted(self.declared),
            **({"team": True} if self.team else {}),  # absent when false: older records match
            **({"sandbox": self.sandbox.to_dict()} if self.sandbox else {}),
            **({"board": {"labels": list(self.board_labels)}} if self.board_labels else {}),
        }

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> Definition:
        """Rebuild from `to_dict()` output. Raises ValueError on a malformed record."""
        try:
            memory = str(data.get("memory") or "none")
            if memory not in MEMORY_MODES:
                raise ValueError(f"memory mode {memory!r}")
            return cls(
                name=str(data["name"]), description=str(data["description"]),
                tools=tuple(str(t) for t in data.get("tools") or ()),
                skills=tuple(str(s) for s in data.get("skills") or ()),
                mcp_servers=tuple(str(s) for s in (data.get("mcp") or {}).get("servers") or ()),
                knowledge=tuple(KnowledgeSource(str(k["name"]), str(k["path"]))
                                for k in data.get("knowledge") or ()),
                memory=memory, max_turns=int(data.get("maxTurns") or DEFAULT_MAX_TURNS),
                model=data.get("model") or None,
                env=tuple(str(e) for e in data.get("env") or ()),
                prompt=str(data.get("prompt") or ""),
                cli=str(data["cli"]) if data.get("cli") else None,
                team=data.get("team") is True,
                sandbox=SandboxSpec.from_dict(data.get("sandbox")),
                board_labels=_labels(data.get("board")),
                layer=str(data.get("layer") or "workspace"),
                source=str(data.get("source") or ""),
                declared=frozenset(data.get("declared") or ()),
            )
        except (KeyError, TypeError, AttributeError) as exc:
            raise ValueError(f"malformed frozen definition: {exc}") from None


def _labels(board: Any) -> tuple[str, ...]:
    """The labels of a frozen `board: {labels}` (none when absent)."""
    labels = board.get("labels") if isinstance(board, dict) else None
    return tuple(str(x) for x in labels) if isinstance(labels, list) else ()
