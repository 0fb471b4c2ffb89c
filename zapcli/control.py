"""Control files: every path that another program reads as configuration that
runs commands, so agent work may never write it (docs: the security model).
Imports: stdlib only (a kernel module).

One list. `BASE` names what no single backend owns: git's admin folder (of a
folder that is not yet a repository too), zapcli's own folder, direnv, editor
task and launch files, dev containers, hook managers, mise and asdf, the
package managers' and rustup's and cargo's project settings, Maven's and
Gradle's, pdb's and uv's — each read by the person's next ordinary command
in the folder. `PRESENT` names are held only where they exist (a placeholder
would change what the person's tool does meanwhile). Each backend adds
its own project settings as a class fact (`Backend.control_files`: `.claude`,
`.gemini`, ...) and plugins do the same through their backend classes; the
caller that knows the backends passes them in as `extra`.

A name is a path relative to a writable root, `/`-separated: a folder name
protects everything inside it, a file name that file. A root adds names of
its own (`of_root`): the folder its repository's `core.hooksPath` names
(`.githooks/`, ...), whose hooks git runs at the person's next commit; the
file its `.yarnrc.yml`'s `yarnPath` names, which every `yarn` runs; mise's
per-environment files that exist there.
"""

from __future__ import annotations

import os
import re
from collections.abc import Iterable

BASE: tuple[str, ...] = (
    ".git",                      # hooks, config (core.fsmonitor, filters), a planted repository
    ".zapcli",                   # zapcli's own workspace config, MCP servers, definitions, skills
    ".agents/skills",            # skills zapcli (and other agents) load: what the next agent is told
    ".mcp.json",                 # project MCP servers (Claude Code and others start them)
    ".envrc",                    # direnv runs it on cd
    ".env",                      # direnv's dotenv, mise's _.file, docker compose, python-dotenv
    ".env.local",                # loaded by direnv's dotenv_if_exists and mise
    ".pdbrc",                    # pdb runs its lines (Python too) at `python -m pdb`, breakpoint()
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
    ".mvn",                      # jvm.config (java's command line at every mvn), maven.config, extensions.xml
    "gradle.properties",         # org.gradle.jvmargs: the daemon's java command line
    ".python-version",           # uv takes an interpreter path or folder there (pyenv: names only)
)

# Held only where they exist: a placeholder would change what the person's
# own tool does while a run lasts (a `pnpm-workspace.yaml` makes the folder
# a pnpm workspace root). The file tools ask before each, existing or not.
PRESENT: tuple[str, ...] = (
    "pnpm-workspace.yaml",       # pnpm 10's settings (scriptShell, pnpmfile, ...)
)


def names(extra: Iterable[str] = ()) -> tuple[str, ...]:
    """The whole list: `BASE`, `PRESENT` and the names backends and plugins declare."""
    out = [*BASE, *PRESENT]
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
    """`listed` and the names `root` adds, each when it lies inside `root`:
    the folder its repository's own config (`.git/config`, a linked
    worktree's common one) names as `core.hooksPath`; the file its
    `.yarnrc.yml` names as `yarnPath` (`.yarnrc`: `yarn-path`), which every
    `yarn` in the folder runs; and mise's per-environment files that exist
    (`mise.production.toml`: read where `MISE_ENV` names that environment).
    Those files are read, never run; each is itself a control name, so agent
    work cannot change what they name."""
    out = list(listed)
    for name in (_hooks_path(root), *_yarn_paths(root), *_mise_env_files(root)):
        if name is not None and name not in out:
            out.append(name)
    return tuple(out)


def _inside(root: str, value: str) -> str | None:
    """`value` (relative to `root`, or absolute) as a name below `root`, `/`-separated;
    None when it is `root` itself or lies outside it. Links are not followed:
    a link on the way is the sandbox's to note, as for any name."""
    path = os.path.normpath(os.path.join(root, os.path.expanduser(value)))
    for base in dict.fromkeys((os.path.normpath(root), os.path.realpath(root))):
        rel = os.path.relpath(path, base)
        if rel != "." and not rel.startswith(".."):
            return rel.replace(os.sep, "/")
    return None


def _read(path: str) -> str:
    try:
        with open(path, encoding="utf-8") as f:
            return f.read(1 << 20)
    except (OSError, UnicodeDecodeError):
        return ""


def _unquote(value: str) -> str:
    value = value.strip()
    if value[:1] in ("'", '"'):
        end = value.find(value[0], 1)
        return value[1:end] if end > 0 else ""
    return value.split(" #")[0].strip()


def _yarn_paths(root: str) -> list[str | None]:
    """The files a `.yarnrc.yml` (a top-level `yarnPath:`) and a `.yarnrc`
    (`yarn-path`, yarn 1's format) at `root` name."""
    out: list[str | None] = []
    for line in _read(os.path.join(root, ".yarnrc.yml")).splitlines():
        if line.startswith("yarnPath:"):
            value = _unquote(line[len("yarnPath:"):])
            out.append(_inside(root, value) if value else None)
    for line in _read(os.path.join(root, ".yarnrc")).splitlines():
        line = line.strip()
        for key in ("yarn-path", '"yarn-path"'):
            if line.startswith(key) and line[len(key):][:1] in (" ", "\t"):
                value = _unquote(line[len(key):])
                out.append(_inside(root, value) if value else None)
    return out


# mise's project files with an environment's name in them, by folder:
# `mise.{env}.toml` (`.mise.`, `.local.toml`), `.config/mise.{env}.toml`,
# `mise/config.{env}.toml` (`.mise/` and `.config/mise/` are held whole).
_MISE_ENV = ((".", re.compile(r"\.?mise\..+\.toml")), (".config", re.compile(r"mise\..+\.toml")),
             ("mise", re.compile(r"config\..+\.toml")))


def _mise_env_files(root: str) -> list[str | None]:
    out: list[str | None] = []
    for folder, pattern in _MISE_ENV:
        try:
            entries = sorted(os.listdir(os.path.join(root, folder)))
        except OSError:
            continue
        out += [entry if folder == "." else f"{folder}/{entry}"
                for entry in entries if pattern.fullmatch(entry)]
    return out


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
