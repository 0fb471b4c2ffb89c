"""Control files: every path that another program reads as configuration that
runs commands, so agent work may never write it (docs: the security model).
Imports: stdlib only (a kernel module).

One list. `BASE` names what no single backend owns: git's admin folder (of a
folder that is not yet a repository too), zapcli's own folder, direnv, editor
task and launch files, dev containers, pre-commit and mise. Each backend adds
its own project settings as a class fact (`Backend.control_files`: `.claude`,
`.gemini`, ...) and plugins do the same through their backend classes; the
caller that knows the backends passes them in as `extra`.

A name is a path relative to a writable root, `/`-separated: a folder name
protects everything inside it, a file name that file.
"""

from __future__ import annotations

from collections.abc import Iterable

BASE: tuple[str, ...] = (
    ".git",                      # hooks, config (core.fsmonitor, filters), a planted repository
    ".zapcli",                   # zapcli's own workspace config, MCP servers, definitions, skills
    ".mcp.json",                 # project MCP servers (Claude Code and others start them)
    ".envrc",                    # direnv runs it on cd
    ".env.local",                # loaded by direnv's dotenv_if_exists and mise
    ".vscode/tasks.json",        # editor tasks (run on folder open with runOn: folderOpen)
    ".vscode/launch.json",       # debug launch commands
    ".vscode/settings.json",     # interpreter paths, terminal env, formatter commands
    ".devcontainer",             # postCreateCommand and friends
    ".pre-commit-config.yaml",   # hooks pre-commit runs at the next commit
    ".husky",                    # hooks git runs where core.hooksPath points there (husky sets it)
    ".idea",                     # JetBrains run configurations and external tools
    "mise.toml",                 # mise's tasks, hooks and env on cd
    ".mise.toml",
)


def names(extra: Iterable[str] = ()) -> tuple[str, ...]:
    """The whole list: `BASE` and the names backends and plugins declare."""
    out = list(BASE)
    for name in extra:
        name = str(name).strip().strip("/")
        if name and name not in out:
            out.append(name)
    return tuple(out)


def match(rel: str, listed: Iterable[str] | None = None, *, anywhere: bool = False) -> str | None:
    """The control name that `rel` (a path relative to a writable root) is or
    lies inside, else None. Compared by whole components, so `.gitignore` and
    `src/.git-notes` are not `.git`. `anywhere`: in a subfolder too
    (`sub/.envrc`: direnv runs it on `cd sub`), as the file tools check;
    the sandbox can hold only a root's own names read-only before they exist."""
    parts = [p for p in rel.replace("\\", "/").split("/") if p and p != "."]
    wanted = [name.split("/") for name in (names() if listed is None else listed)]
    for start in range(len(parts) if anywhere else min(1, len(parts))):
        for want in wanted:
            if parts[start:start + len(want)] == want:
                return "/".join(want)
    return None
