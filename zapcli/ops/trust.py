"""`zapcli trust`: trust a workspace's own zapcli files, show what a trust
covers, list the trusted folders, revoke one. Returns result objects and
never prints. Imports `zapcli.trust`, `zapcli.trust_store`, `zapcli.paths`,
`zapcli.errors`.

PATH names a folder; what is trusted is its workspace (the git top-level, as
every command finds it), and the result says so when they differ.
"""

from __future__ import annotations

import os
from dataclasses import dataclass, field
from pathlib import Path

from zapcli import trust, trust_store
from zapcli.errors import UsageError, ZapcliError, param
from zapcli.paths import workspace_of


@dataclass
class FileState:
    """One file (or skill folder) a trust covers: its sha256 now and its state
    (trusted, changed, new, unreadable)."""

    path: str
    digest: str | None
    state: str


@dataclass
class TrustResult:
    """What `trust`, `trust --show` and `trust --revoke` did or found."""

    workspace: str
    outcome: str  # trusted | shown | revoked | not_trusted (a revoke that found nothing)
    files: list[FileState] = field(default_factory=list)
    trusted: bool = False  # every file is trusted now
    how: str = "none"  # trusted (the record), config (`trusted:`), none
    trusted_at: str | None = None
    given: str | None = None  # PATH, when its workspace is another folder
    shared: list[str] = field(default_factory=list)  # files someone else may change
    # a `trusted:` folder would cover it, but it is a repository inside this one
    nested_in: str | None = None
    trusted_folder: str | None = None  # that `trusted:` folder
    # why it does not: "repository" (one inside another), "worked" (agent work wrote there)
    nested_why: str | None = None
    # what is wrong in its files (`file:line: message`): a command that reads
    # them refuses until they are fixed (and trusted again)
    problems: list[str] = field(default_factory=list)


@dataclass
class TrustList:
    folders: list[dict] = field(default_factory=list)


def _folder(path: str | None) -> tuple[Path, str | None]:
    """(workspace, PATH as given when it differs). Raises UsageError."""
    given = Path(path) if path else Path.cwd()
    if path is not None and not path.strip():
        raise UsageError("PATH is empty; give a folder, or nothing for this one")
    if not given.exists():
        raise UsageError(f"no such folder: {path}; give the folder whose zapcli files to trust")
    if not given.is_dir():
        raise UsageError(f"{path} is a file, not a folder; trust the folder it is in: "
                         f"zapcli trust {given.resolve().parent}")
    ws = trust.real(workspace_of(given.resolve()))
    return ws, (path if path and trust.real(given) != ws else None)


def _states(verdict: trust.Verdict) -> list[FileState]:
    return [FileState(rel, verdict.digest(rel), verdict.state(rel)) for rel in verdict.units()]


def _shared(ws: Path, rels: list[str]) -> list[str]:
    """Files another user owns, or that others may write: they can change what
    was trusted (the change is then ignored, until trusted again)."""
    out = []
    for rel in rels:
        try:
            st = os.stat(ws / rel)
        except OSError:
            continue
        if st.st_uid != os.geteuid() or st.st_mode & 0o022:
            out.append(rel)
    return out


def _problems(ws: Path, verdict: trust.Verdict) -> list[str]:
    """What is wrong in the files a trust covers, as the commands that read them
    would say it (`file:line: message`): the config file's keys and values, each
    definition's diagnostics. The trust stands: the person decides."""
    out: list[str] = []
    raw = verdict.read(trust.CONFIG)
    if raw is not None:
        from zapcli.backends.sections import OWNERS
        from zapcli.config import _load_file
        from zapcli.errors import ConfigError

        try:
            _load_file(ws / trust.CONFIG, OWNERS, workspace=True, raw=raw)
        except ConfigError as exc:
            out += exc.message.splitlines()
    definitions = [rel for rel in verdict.units() if rel.startswith(trust.DEFINITIONS + "/")]
    if definitions:
        from zapcli.definitions.schema import parse_definition
        from zapcli.definitions.yamlload import read_text

        for rel in definitions:
            if (data := verdict.read(rel)) is None:
                continue
            text, diags = read_text(data, str(ws / rel))
            if text is not None:
                diags = parse_definition(text, str(ws / rel), layer="workspace")[1]
            out += [d.one_line() for d in diags]
    return out


def trust_folder(path: str | None) -> TrustResult:
    """Trust PATH's workspace's own files as they are now. Raises ZapcliError."""
    ws, given = _folder(path)
    try:
        verdict = trust_store.grant(ws)
    except OSError as exc:
        raise ZapcliError(f"could not record the trust in {trust_store.folder()}: "
                          f"{exc.strerror or exc}") from None
    files = _states(verdict)
    return TrustResult(str(ws), "trusted", files, all(f.state == "trusted" for f in files),
                       "trusted", verdict.at, given, _shared(ws, [f.path for f in files]),
                       problems=_problems(ws, verdict))


def show(path: str | None) -> TrustResult:
    """What trusting PATH's workspace covers, and each file's state; changes nothing."""
    ws, given = _folder(path)
    verdict = trust.decide(ws)
    if verdict.how == "none" and (rec := trust_store.read(ws)):
        # a record of a folder without zapcli files now: trusted, as `trust` said
        verdict = trust.Verdict(ws, rec["files"], "trusted", rec.get("trusted_at"),
                                verdict.nested_in, verdict.worked)
    files = _states(verdict)
    prefix, outer = verdict.nested_in or (None, None)
    return TrustResult(str(ws), "shown", files, all(f.state == "trusted" for f in files),
                       verdict.how, verdict.at, given, _shared(ws, [f.path for f in files]),
                       str(outer) if outer else None, str(prefix) if prefix else None,
                       ("worked" if verdict.worked else "repository") if outer else None)


def revoke(path: str | None) -> TrustResult:
    """Stop trusting PATH's workspace (also a folder that no longer exists)."""
    if path is not None and not path.strip():
        raise UsageError("PATH is empty; give a folder, or nothing for this one")
    given = Path(path) if path else Path.cwd()
    if given.is_file():
        raise UsageError(f"{path} is a file, not a folder; give the folder that was trusted")
    ws = trust.real(workspace_of(given.resolve())) if given.is_dir() else \
        Path(os.path.abspath(given))
    try:
        rec = trust_store.remove(ws)
    except OSError as exc:
        raise ZapcliError(f"could not change {trust_store.folder()}: {exc.strerror or exc}") from None
    files = [FileState(rel, sha, "revoked") for rel, sha in (rec or {}).get("files", {}).items()]
    return TrustResult(str(ws), "revoked" if rec else "not_trusted", files,
                       given=path if path and str(ws) != os.path.abspath(path) else None)


def list_trusted() -> TrustList:
    """Every trusted folder: its files, when, whether it still exists, and
    which of its files no longer match (changed, new, or gone)."""
    out = []
    for rec in trust_store.every():
        ws = Path(rec["path"])
        entry = {"workspace": rec["path"], "files": len(rec["files"]),
                 "trusted_at": rec.get("trusted_at"), "by": rec.get("by"),
                 "exists": ws.is_dir(), "differs": []}
        if entry["exists"]:
            now = trust.Verdict(ws, rec["files"], "trusted")
            entry["differs"] = [{"path": rel, "state": state} for rel, state in now.ignored()] + \
                [{"path": rel, "state": "gone"} for rel in rec["files"] if rel not in now.units()]
        out.append(entry)
    return TrustList(out)


def execute(path: str | None, list_: bool, show_: bool, revoke_: bool) -> TrustResult | TrustList:
    """The one verb behind `zapcli trust` and `zapcli untrust`. Raises ZapcliError."""
    chosen = [name for name, on in (("list", list_), ("show", show_), ("revoke", revoke_)) if on]
    if len(chosen) > 1:
        raise UsageError(" and ".join(param(n) for n in chosen) + " contradict each other; "
                         "give one of them")
    if list_:
        if path is not None:
            raise UsageError(f"{param('list')} lists every trusted folder and takes no PATH; "
                             f"for one folder: zapcli trust {param('show')} PATH")
        return list_trusted()
    if show_:
        return show(path)
    return revoke(path) if revoke_ else trust_folder(path)


def first(workspace: Path, wanted: bool) -> None:
    """`--trust` on spawn, run and doctor: trust the workspace's own files as
    they are now, before anything reads them (refused inside a subagent's
    work). Raises ZapcliError."""
    if not wanted:
        return
    try:
        trust_store.grant(workspace, "--trust")
    except OSError as exc:
        raise ZapcliError(f"{param('trust')}: could not record the trust in "
                          f"{trust_store.folder()}: {exc.strerror or exc}") from None
