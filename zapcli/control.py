"""Control files: every path that another program reads as configuration that
runs commands, so agent work may never write it (docs: the security model).
Imports: the standard library (a kernel module); `zapcli.gitconfigs` for
what git reads as a repository's configuration and what that runs (git is
asked: `git config`, never a hook or a filter); PyYAML only to read a
`.yarnrc.yml` that exists.

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
its own (`of_root`): every file git reads as its repository's configuration
(git is asked: includes, `includeIf`, the person's own files), and the
folder `core.hooksPath` names (`.githooks/`, ...), whose hooks git runs at
the person's next commit; the file its `.yarnrc.yml`'s `yarnPath` names,
which every `yarn` runs (read with PyYAML, imported only when that file
exists); mise's per-environment files that exist there. What git reads is
`zapcli.gitconfigs`'s to find (and what cannot be held, `unholdable`: the
sandbox refuses to let agent work write there).
"""

from __future__ import annotations

import os
from collections.abc import Iterable

TYPE_CHECKING = False  # `typing` costs ~5 ms of start-up; annotations only need it for mypy
if TYPE_CHECKING:
    from typing import Any

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


def of_root(root: str, listed: Iterable[str], others: Iterable[str] = (),
            runs: list[Any] | None = None, asked: dict[str, Any] | None = None) -> tuple[str, ...]:
    """`listed` and the names `root` adds, each when it lies inside `root`
    and no listed name holds it already: every file git reads as the
    configuration of the repository `root` is in, as git says (the
    repository's, the person's, the system's, and each file they include,
    `includeIf` too: `../.gitconfig`, `tools/git/config`), and the folder
    git's answer names as `core.hooksPath`; the file `.yarnrc.yml` names as
    `yarnPath` (`.yarnrc`: `yarn-path`), which every `yarn` in the folder
    runs, or the whole `.yarn` where that file does not parse; and mise's
    per-environment files that exist (`mise.production.toml`: read where
    `MISE_ENV` names that environment). Those files are read, never run;
    each is itself a control name, so agent work cannot change what they
    name. `others`: the other writable roots of the same work — what the
    repository each is in reads (its git's files, hooks, programs) is held
    where it lies in `root` too (a project's `core.hooksPath =
    ../tooling/hooks`, the tooling checkout given to write in as well).
    Asks git once where a root is in a repository (~5 ms), never
    elsewhere. `runs` gets what `zapcli.gitconfigs.files` says of the
    programs git runs there that are held by their folder or cannot be
    held (`zapcli.gitconfigs.unholdable` reads it), each once. `asked`:
    kept between the calls of one question (`zapcli.gitconfigs.files`)."""
    out = list(listed)
    from zapcli import gitconfigs

    tops = dict.fromkeys(t for t in map(gitconfigs.repository, (root, *others)) if t is not None)
    found_runs: list[gitconfigs.Run] = []
    found = [_inside(root, f) for top in tops for f in gitconfigs.files(top, found_runs, asked)]
    if runs is not None:
        runs += [r for r in found_runs if r[:3] not in [o[:3] for o in runs]]
    for name in (*found, *_yarn_paths(root), *_mise_env_files(root)):
        if name is not None and not match(name, out):
            out.append(name)
    return tuple(out)


def named(folder: str, *, repository: bool) -> list[str]:
    """What `of_root` adds, for a folder below a writable root's top that the
    sandbox's walk found control files in (`zapcli.sandbox.deeper`), as
    absolute paths, there or not: where `repository` (`folder` is a
    repository's top: a `.git` there), every file git reads as its
    configuration and what those name (hooks folder, programs); the file
    `.yarnrc.yml`'s `yarnPath` names; mise's per-environment files."""
    from zapcli import gitconfigs

    out = gitconfigs.files(folder) if repository else []
    rel = [*_yarn_paths(folder), *_mise_env_files(folder)]
    return out + [os.path.join(folder, r) for r in rel if r is not None]


def named_above(path: str, root: str) -> str | None:
    """What a repository between `root` (left out: `of_root` is its) and
    `path` names in its config (`named`: its hooks folder, an included file,
    a program), where `path` is it or lies in it; else None. The file tools
    ask before such a write, as the sandbox holds it. Git is asked only
    where a folder on the way has a `.git`."""
    folder = os.path.dirname(path)
    while folder != root and folder.startswith(root.rstrip(os.sep) + os.sep):
        if os.path.lexists(os.path.join(folder, ".git")):
            for place in map(os.path.normpath, named(folder, repository=True)):
                if path == place or path.startswith(place.rstrip(os.sep) + os.sep):
                    return place
        folder = os.path.dirname(folder)
    return None


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


_LIMIT = 1 << 20  # a settings file longer than this is not read: what it names is not known


def _read(path: str) -> str | None:
    """The file's text ("" where there is none), None when too long to read.
    Bytes that are not UTF-8 read as node reads them (replaced), not as no file."""
    try:
        with open(path, encoding="utf-8", errors="replace") as f:
            text = f.read(_LIMIT + 1)
    except OSError:
        return ""
    return None if len(text) > _LIMIT else text


def _compiled(pattern: str) -> Any:
    """`re.compile(pattern)` (re keeps what it compiled), imported at first use:
    the patterns below read a root's files, and `zapcli merge`, which only
    matches paths against the list (`match`), never pays for `re`."""
    import re

    return re.compile(pattern)


# yarn 2+ reads a `.yarnrc.yml` that starts as a yarn 1 lockfile (`# yarn lockfile v1`,
# after comments only) in yarn 1's format, not as YAML (@yarnpkg/parsers, LEGACY_REGEXP);
# matched loosely (unicode case folding and spaces): such a file is read both ways
_YARN1_HEADER = (r"(?i)(#[^\r\n\u2028\u2029]*\r?\n)*?#[\s\ufeff]+yarn[\s\ufeff]+lockfile"
                 r"[\s\ufeff]+v1\r?\n")
_YARN1_TOKEN = r'"(?:[^"\\]|\\.)*"?|[:,]|[^\s:,]+'
_YARN_HOME = ".yarn"  # held whole where what a `.yarnrc.yml` names cannot be known


def _yarn_paths(root: str) -> list[str | None]:
    """The files a `.yarnrc.yml` (its top-level `yarnPath`, read as yarn reads
    YAML) and a `.yarnrc` (`yarn-path`, yarn 1's format) at `root` name; the
    whole `.yarn` folder where a `.yarnrc.yml` does not parse."""
    out: list[str | None] = []
    text = _read(os.path.join(root, ".yarnrc.yml"))
    if text is None:
        out.append(_YARN_HOME)
    elif text.strip() not in ("", "{}"):  # `{}`, a placeholder's: an empty mapping, no YAML to load
        legacy = _yarn1_values(text, "yarnPath") if _compiled(_YARN1_HEADER).match(text) else []
        out += [_yarn_file(root, v) for v in [*legacy, *_yaml_values(text, "yarnPath")]]
    text = _read(os.path.join(root, ".yarnrc"))
    out += [_yarn_file(root, v) for v in _yarn1_values(text or "", "yarn-path")]
    return out


def _yaml_values(text: str, key: str) -> list[str]:
    """The scalar values of `key` in the top-level mapping of `text`, as
    written (yarn reads its settings with js-yaml's failsafe schema: every
    scalar a string); `_YARN_HOME` when the text is not YAML. PyYAML only
    here, and only for a file that exists."""
    import yaml

    try:
        node = yaml.compose(text, Loader=yaml.SafeLoader)
    except yaml.YAMLError:
        return [_YARN_HOME]
    if not isinstance(node, yaml.MappingNode):
        return []  # yarn refuses a file that is not a mapping
    return [v.value for k, v in node.value if isinstance(k, yaml.ScalarNode) and k.value == key
            and isinstance(v, yaml.ScalarNode)]


def _yarn1_values(text: str, key: str) -> list[str]:
    """The values of `key` in yarn 1's lockfile format, line by line: `key value`,
    `key: value`, either maybe quoted, or after other keys (`a, key value`);
    at any depth (holding one more file costs nothing)."""
    out = []
    token = _compiled(_YARN1_TOKEN)
    for line in text.lstrip("\ufeff").splitlines():
        tokens: list[tuple[str, str]] = []  # (":" or "," or "s" for a string, the string)
        for found in token.finditer(line):
            tok = found.group()
            if tok.startswith("#"):
                break  # a comment
            tokens.append((tok, "") if tok in (":", ",") else ("s", _yarn1_string(tok)))
        keys, i = [], 0
        while i < len(tokens) and tokens[i][0] == "s":
            keys.append(tokens[i][1])
            i += 1
            if i >= len(tokens) or tokens[i][0] != ",":
                break
            i += 1
        i += i < len(tokens) and tokens[i][0] == ":"
        if key in keys and i < len(tokens) and tokens[i][0] == "s":
            out.append(tokens[i][1])
    return out


def _yarn1_string(tok: str) -> str:
    if not tok.startswith('"'):
        return tok
    import json

    try:
        return str(json.loads(tok))
    except ValueError:
        return tok.strip('"')


def _yarn_file(root: str, value: str) -> str | None:
    """The name a yarn path setting gives below `root`. yarn puts the
    environment's variables in (`${NAME}`, `${NAME:-default}`): the folder
    before the first one is held."""
    if "${" in value:
        value = os.path.dirname(value[:value.index("${")])
    return _inside(root, value) if value.strip() else None


# mise's project files with an environment's name in them, by folder:
# `mise.{env}.toml` (`.mise.`, `.local.toml`), `.config/mise.{env}.toml`,
# `mise/config.{env}.toml` (`.mise/` and `.config/mise/` are held whole).
_MISE_ENV = ((".", r"\.?mise\..+\.toml"), (".config", r"mise\..+\.toml"), ("mise", r"config\..+\.toml"))


def _mise_env_files(root: str) -> list[str | None]:
    out: list[str | None] = []
    for folder, pattern in _MISE_ENV:
        try:
            entries = sorted(os.listdir(os.path.join(root, folder)))
        except OSError:
            continue
        out += [entry if folder == "." else f"{folder}/{entry}"
                for entry in entries if _compiled(pattern).fullmatch(entry)]
    return out
