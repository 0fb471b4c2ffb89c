"""Control files: every path that another program reads as configuration that
runs commands, so agent work may never write it (docs: the security model).
Imports: stdlib only (a kernel module).

One list. `BASE` names what no single backend owns: git's admin folder (of a
folder that is not yet a repository too), zapcli's own folder, direnv, editor
task and launch files, dev containers, hook managers, mise and asdf, the
package managers' and rustup's and cargo's project settings — each read by
the person's next ordinary command in the folder. Each backend adds
its own project settings as a class fact (`Backend.control_files`: `.claude`,
`.gemini`, ...) and plugins do the same through their backend classes; the
caller that knows the backends passes them in as `extra`.

A name is a path relative to a writable root, `/`-separated: a folder name
protects everything inside it, a file name that file. A root adds names of
its own (`of_root`): the folder its repository's `core.hooksPath` names
(`.githooks/`, ...), whose hooks git runs at the person's next commit.
"""

from __future__ import annotations

import os
from collections.abc import Iterable

BASE: tuple[str, ...] = (
    ".git",                      # hooks, config (core.fsmonitor, filters), a planted repository
    ".zapcli",                   # zapcli's own workspace config, MCP servers, definitions, skills
    ".agents/skills",            # skills zapcli (and other agents) load: what the next agent is told
    ".mcp.json",                 # project MCP servers (Claude Code and others start them)
    ".envrc",                    # direnv runs it on cd
    ".env.local",                # loaded by direnv's dotenv_if_exists and mise
    ".vscode/tasks.json",        # editor tasks (run on folder open with runOn: folderOpen)
    ".vscode/launch.json",       # debug launch commands
    ".vscode/settings.json",     # interpreter paths, terminal env, formatter commands
    ".vscode/mcp.json",          # MCP servers VS Code starts
    ".devcontainer",             # postCreateCommand and friends
    ".devcontainer.json",        # the same at the top (initializeCommand runs on the host)
    ".cursor",                   # Cursor's rules and mcp.json (servers it starts)
    ".pre-commit-config.yaml",   # hooks pre-commit runs at the next commit
    ".worktreeinclude",          # the ignored files zapcli copies into a new tree, where worktree.setup runs
    ".husky",                    # hooks git runs where core.hooksPath points there (husky sets it)
    "lefthook.yml",              # lefthook's hooks (git's hooks read it at every commit)
    ".lefthook.yml",
    "lefthook.yaml",
    ".lefthook.yaml",
    "lefthook-local.yml",
    ".lefthook-local.yml",
    ".overcommit.yml",           # overcommit's hooks
    ".idea",                     # JetBrains run configurations and external tools
    "mise.toml",                 # mise's tasks, hooks and env on cd
    ".mise.toml",
    "mise.local.toml",           # mise's other project files: the same keys
    ".mise.local.toml",
    ".mise",                     # .mise/config.toml, config.local.toml, conf.d/
    "mise/config.toml",
    "mise/config.local.toml",
    ".config/mise.toml",
    ".config/mise.local.toml",
    ".config/mise",              # .config/mise/config.toml, conf.d/*.toml
    ".tool-versions",            # a `path:` version: mise's and asdf's shims run a binary there
    ".npmrc",                    # node-options, script-shell: every npm (pnpm, yarn 1) script
    ".yarnrc",                   # yarn 1's yarn-path: the next `yarn` runs that file
    ".yarnrc.yml",               # yarn's yarnPath and plugins: the same
    ".pnpmfile.cjs",             # pnpm's hooks, run at every install
    ".pnpmfile.mjs",
    "bunfig.toml",               # bun's preload scripts, run before every bun run/test
    ".cargo",                    # config(.toml): build.rustc-wrapper, target runner at cargo build/run
    "rust-toolchain.toml",       # its `path`: rustup's proxies (cargo, rustc) run that toolchain
    "rust-toolchain",
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


def of_root(root: str, listed: Iterable[str]) -> tuple[str, ...]:
    """`listed` and the names `root` adds: the folder its repository's own
    config (`.git/config`, a linked worktree's common one) names as
    `core.hooksPath`, when that lies inside `root`. The config is read, never
    run; `.git` itself is a control name, so agent work cannot change it."""
    hooks = _hooks_path(root)
    out = tuple(listed)
    return out if hooks is None or hooks in out else (*out, hooks)


def _git_config(root: str) -> str | None:
    dot = os.path.join(root, ".git")
    if os.path.isdir(dot):
        return os.path.join(dot, "config")
    try:
        with open(dot, encoding="utf-8") as f:
            line = f.read(4096).strip()
    except (OSError, UnicodeDecodeError):
        return None
    if not line.startswith("gitdir:"):
        return None
    admin = os.path.join(root, line[len("gitdir:"):].strip())
    try:
        with open(os.path.join(admin, "commondir"), encoding="utf-8") as f:
            common = os.path.join(admin, f.read(4096).strip())
    except (OSError, UnicodeDecodeError):
        common = admin
    return os.path.join(common, "config")


def _hooks_path(root: str) -> str | None:
    """`core.hooksPath` of the repository at `root`, relative to it, if inside it."""
    config = _git_config(root)
    try:
        with open(config or "", encoding="utf-8") as f:
            text = f.read(1 << 20)
    except (OSError, UnicodeDecodeError):
        return None
    section, value = "", None
    for raw in text.splitlines():
        line = raw.strip()
        if line.startswith("["):
            section = line[1:line.find("]")].strip().lower() if "]" in line else ""
        elif section == "core" and "=" in line:
            key, _, rest = line.partition("=")
            if key.strip().lower() == "hookspath":
                value = rest.split(" #")[0].split(" ;")[0].strip().strip('"')
    if not value:
        return None
    path = os.path.expanduser(value)
    real = os.path.realpath(path if os.path.isabs(path) else os.path.join(root, path))
    base = os.path.realpath(root)
    rel = os.path.relpath(real, base)
    if rel == "." or rel.startswith(".."):
        return None  # outside this root (or the root itself: all of it is listed already)
    return rel.replace(os.sep, "/")
