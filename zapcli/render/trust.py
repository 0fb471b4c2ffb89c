"""`trust`: what a trust covers (each file and its hash, as direnv shows an
allowed .envrc), the trusted folders, a revoke — human lines and the JSON
document side by side."""

from __future__ import annotations

import shlex
from dataclasses import asdict
from typing import Any

from zapcli.render.common import Lines
from zapcli.render.docschema import stamp
from zapcli.render.text import escape_controls

SHORT = 16  # hex digits of a hash a person reads (the JSON document has them all)
WORDS = {"trusted": "trusted", "changed": "CHANGED", "new": "new", "unreadable": "UNREADABLE",
         "revoked": "revoked", "gone": "gone"}


def _hash(sha: str | None) -> str:
    return (sha or "-").replace("sha256:", "")[:SHORT].ljust(SHORT)


def _command(workspace: str) -> str:
    return f"zapcli trust {shlex.quote(workspace)}"


def _files(res: Any) -> Lines:
    return [("green" if f.state == "trusted" else "yellow",
             f"  {WORDS.get(f.state, f.state):<10} {_hash(f.digest)}  {escape_controls(f.path)}")
            for f in res.files]


def _head(res: Any) -> str:
    ws = escape_controls(res.workspace)
    given = f" (the workspace of {escape_controls(res.given)})" if res.given else ""
    count = f"{len(res.files)} file(s)"
    if res.outcome == "trusted":
        return f"trusted {ws}{given}: {count}"
    if res.outcome == "revoked":
        return f"{ws}{given} is no longer trusted: its zapcli files are ignored from now on"
    if res.outcome == "not_trusted":
        return f"{ws}{given} was not trusted; nothing changed"
    differ = sum(1 for f in res.files if f.state != "trusted")
    state = {"config": "trusted by `trusted:` in your config.yaml",
             "trusted": f"trusted since {res.trusted_at}" + (
                 f", but {differ} of its files changed or are new since" if differ else "")
             }.get(res.how, "not trusted")
    if res.nested_in:
        why = ("a folder agent work was given to write in" if res.nested_why == "worked"
               else "a repository")
        state += (f" (`trusted:` {escape_controls(res.trusted_folder or '')} does not cover a "
                  f"folder inside {why}, here {escape_controls(res.nested_in)}, where that work "
                  "could have made its zapcli files: only `zapcli trust` does)")
    return f"{ws}{given}: {state}; {count}"


def lines(res: Any) -> Lines:
    out: Lines = [("bold", _head(res))]
    if res.outcome in ("revoked", "not_trusted"):
        return out
    out += _files(res)
    out += [("yellow", f"  ! {escape_controls(p)} can be changed by someone else (its owner or "
                       "group): a change is ignored until you trust the folder again")
            for p in res.shared]
    if not res.files:
        out.append(("dim", "  it has no zapcli files of its own (.zapcli/config.yaml, mcp.json, "
                           "subagents/, skills/) yet; nothing to trust"))
    elif res.outcome == "trusted":
        out.append(("dim", "zapcli uses them as they are; a changed or new file is ignored until "
                           f"you run `{_command(res.workspace)}` again"))
    if res.problems:
        out.append(("yellow", "note: these files have problems; the commands that use them will "
                              "say so until they are fixed (then trust again):"))
        out += [("yellow", f"  ! {escape_controls(p)}") for p in res.problems]
    elif not res.trusted:
        out.append(("", f"to use them: {_command(res.workspace)}"))
    return out


def doc(res: Any) -> dict[str, Any]:
    return stamp("trust", {**asdict(res), "files": [asdict(f) for f in res.files]})


def list_lines(res: Any) -> Lines:
    if not res.folders:
        return [("dim", "no folder is trusted (zapcli trust PATH trusts one)")]
    out: Lines = []
    for f in res.folders:
        state = "folder gone" if not f["exists"] else \
            f"{len(f['differs'])} file(s) differ since" if f["differs"] else "unchanged since"
        out.append(("yellow" if f["differs"] or not f["exists"] else "",
                    f"{escape_controls(f['workspace'])}  {f['files']} file(s)  trusted "
                    f"{f['trusted_at'] or '?'}  ({state})"))
        out += [("dim", f"  {WORDS.get(d['state'], d['state']):<10} {escape_controls(d['path'])}")
                for d in f["differs"]]
    return out


def list_doc(res: Any) -> dict[str, Any]:
    return stamp("trust-list", {"trusted": res.folders})
