"""The programs git runs from its configuration: which settings git runs as a
command (`RUNS`), and the files such a setting's words name by a path
(`found`, `command`) — the script a person's `core.fsmonitor`, alias or
filter runs at their next `git status`, and what that script imports or
sources (`zapcli.gitscripts`) — which `zapcli.control` then holds read-only
to agent work; and the folders the setting lists that cannot be held (the
top, for `*/check.sh`), for which the sandbox refuses a writable root.
Imports only the standard library and `zapcli.gitscripts` (kernel modules);
it reads the words, never runs them.
"""

from __future__ import annotations

import os

TYPE_CHECKING = False  # `typing` costs ~5 ms of start-up; annotations only need it for mypy
if TYPE_CHECKING:
    from typing import Any


def _within(top: str, folder: str) -> bool:
    """Whether `folder` lies below `top` (not `top` itself)."""
    rel = os.path.relpath(folder, top)
    return rel != "." and not rel.startswith("..")


def _expansion() -> Any:
    import re  # at first use: `zapcli merge` reads no config words

    return re.compile(_EXPANSION)


# Settings whose value git runs as a command (`*` any middle part): the
# program a path there names runs at the person's next `git status`, `git
# log`, `git st`, `git difftool`, `git mergetool`, ... from the work tree's top.
RUNS = ("core.fsmonitor", "core.sshcommand", "core.pager", "core.editor", "core.askpass",
        "sequence.editor", "diff.external", "gpg.program", "gpg.*.program", "credential.helper",
        "credential.*.helper", "alias.*", "pager.*", "interactive.difffilter", "diff.*.textconv",
        "diff.*.command", "filter.*.clean", "filter.*.smudge", "filter.*.process", "merge.*.driver",
        "hook.*.command", "uploadpack.packobjectshook", "receive.procreceive", "core.gitproxy",
        "difftool.*.cmd", "difftool.*.path", "mergetool.*.cmd", "mergetool.*.path",
        "submodule.*.update", "gpg.ssh.defaultkeycommand", "sendemail.sendmailcmd",
        "sendemail.smtpserver", "core.alternaterefscommand", "trailer.*.command",
        "trailer.*.cmd", "browser.*.cmd", "browser.*.path", "man.*.cmd", "man.*.path",
        "tar.*.command", "remote.*.uploadpack", "remote.*.receivepack")


def programs(key: str, value: str, top: str) -> list[str]:
    """The files and folders `found` holds for one setting."""
    return found(key, value, top).paths


class Found:
    """What a command-running setting runs from the work tree at `top`:
    `paths` (absolute) to hold read-only; `listed`, (the word, the folder,
    the pattern from it) for each folder a glob lists that cannot be held —
    the top itself (`*/check.sh`: a folder made there later matches it;
    pattern `*/check.sh`), or what a script imports where its folder is the
    top (`zapcli.gitscripts`; pattern "": any depth); `said`,
    a line for the sandbox's notes per folder held whole and why."""

    def __init__(self) -> None:
        self.paths: list[str] = []
        self.listed: list[tuple[str, str, str]] = []
        self.said: list[str] = []

    def add(self, other: Found) -> None:
        self.paths += [p for p in other.paths if p not in self.paths]
        self.listed += [w for w in other.listed if w not in self.listed]
        self.said += [s for s in other.said if s not in self.said]


def found(key: str, value: str, top: str) -> Found:
    """What a command-running setting (`RUNS`) runs, as git would from
    `top` (it runs the value with the shell there): the files its words name
    (`command`), and what each script among them reads as code — its
    imports, what it sources (`zapcli.gitscripts`), read on from there.
    Nothing for an alias that is a git command."""
    first, _, rest = key.partition(".")
    middle, _, last = rest.rpartition(".")
    if key not in RUNS and f"{first}.*.{last}" not in RUNS and f"{first}.*" not in RUNS:
        return Found()
    if first == "alias" and not value.startswith("!"):
        return Found()  # a git command, not a program
    value = value[1:] if value.startswith("!") else value  # an alias's, a submodule's update
    out = command(value, top)
    from zapcli import gitscripts

    out.add(gitscripts.reads(out.paths, top, hint=gitscripts.hint(words(value)),
                             modules=modules(value, top)))
    return out


def command(value: str, top: str, runs_only: bool = False) -> Found:
    """The files the words of a shell command name by a path, as the shell
    would find them from `top`: the program — the first word, an alias's
    after its `!` — and every other word that is a path: an interpreter's
    script (`sh tools/x.sh`), a shell's `-c` command and each command in it
    (`f() { tools/x.sh; }; f`), an option's
    value after `=`, a Python module (`-m tools.x`: its files and its
    packages' `__init__.py`). A program, or a word written as a path (`./x`,
    `../x`, `~/x`, `/x`), is held there or not (made later, it would run);
    another word only where that file exists (a `sed s/a/b/` is no file).
    A word is read from the top and from every folder of the tree the
    command names (`cd tools && ./x.sh` runs tools/x.sh), and with its
    expansions left out (`"$(git rev-parse --show-toplevel)"/tools/x.sh`,
    `${GIT_PREFIX:-.}/x`: what follows the expansion, and an absolute
    word, from the top too, where that file exists); a `cd` to a folder not
    known here (`cd "${GIT_PREFIX:-.}"`: where the person stands) reads a
    word from every folder of the tree; a glob, or a word around an
    expansion (`${d}ols/x.sh`), matches the tree's files, and the folder a
    glob lists is held whole (a file made there later matches it) — where
    that folder is the top (`*/check.sh`, `tool?/x.sh`: an unquoted pattern,
    after no `cd`), it is `listed`, as the top cannot be held; a
    `PATH=dir:...` the command sets is a folder its program is found in.
    Nothing for a program on PATH, `true`, a boolean. `runs_only` (a
    script's lines): only the words that run — programs, what `.`, `source`
    or an interpreter takes, a word with a script's suffix — not its data."""
    every, globbed, folders, anywhere = _parse(value)
    said = every
    if runs_only:
        ran = _ran(value)
        said = [(w, p) for w, p in every if p or w in ran]
        globbed = [g for g in globbed if g in ran]
        folders = [f for f in folders if f[0] in ran]
    bases = [top]
    for word, _ in every:
        folder = os.path.normpath(os.path.join(top, os.path.expanduser(word))) if word else top
        if folder not in bases and os.path.isdir(folder) and _within(top, folder):
            bases.append(folder)  # cd tools, git -C tools, make -C tools
    named_bases = len(bases)
    if anywhere:  # a folder not known here: every folder of the tree (where the file exists)
        bases += [f for f in _folders(top) if f not in bases]
    out = Found()
    out.paths, out.listed = _listed(top, bases, folders, globbed, named_bases)
    for word, program in said:
        if not word or "://" in word or word in (".", "..") or _assigns(word):
            continue  # `NAME=value`: its value is a word of its own
        named = word.startswith(("./", "../", "~/", "/"))
        for at, base in enumerate(bases):
            path = os.path.expanduser(word)
            path = path if os.path.isabs(path) else os.path.join(base, path)
            if (program or named) and "/" in word and at < named_bases or os.path.isfile(path):
                out.paths.append(path)
    return out


def _parse(value: str) -> tuple[list[tuple[str, bool]], list[str], list[Glob], bool]:
    """(each word with whether it is a program, the patterns to match against
    the tree, each glob the shell expands (`Glob`), whether a `cd` goes to
    a folder not known here)."""
    said: list[tuple[str, bool]] = []
    globbed: list[str] = []
    folders: list[Glob] = []  # listed by a glob
    module = False
    anywhere = False  # `cd "${GIT_PREFIX:-.}" && ./x.sh`: x.sh where the person stands
    before = ""
    unquoted = _unquoted_globs(value)
    moved = False  # `cd tools && for f in */x.sh`: the glob lists tools, not the top
    for word, program in words(value):
        if before in ("cd", "pushd", "-C", "--directory") and word != _expansion().sub("", word) \
                and not _expansion().sub("", word).strip("/."):
            anywhere = True
        if before in ("cd", "pushd"):  # to a folder named here, not `..`, `-`, `/x`, `$X`
            moved = "(" not in value and word == _expansion().sub("", word) \
                and not word.startswith(("/", "~", "-")) and ".." not in word.split("/")
        before = word
        if module or word.startswith("-m") and len(word) > 2:  # python -m pkg.mod, -mpkg.mod
            said += [(m, False) for m in _module_files(word if module else word[2:])]
        module = word == "-m"
        said.append((word, program))
        bare = _expansion().sub("", word)
        if bare != word or word.startswith("/"):  # what follows an expansion (`$(...)/x` is
            said.append((bare.lstrip("/"), False))  # split in two unquoted): from the top too
        wild = _expansion().sub("*", word)  # `${d}ols/x`, `tool?/x`: what the shell may make
        if _wild(wild) and wild.strip("*/."):  # not a bare `$LOCAL`
            globbed.append(wild)
        parts = bare.split("/")  # a glob of its own: a file made later matches it too, so
        at = next((n for n, p in enumerate(parts) if _wild(p)), -1)
        if at >= 0 and word in unquoted and _from_top(word):
            folders.append((word, "/".join(parts[:at]), moved, "/".join(parts[at:])))  # held
            # whole where it lies below the top (`tools/hooks.d/*`)
    return said, globbed, folders, anywhere


_RUNNERS = {".", "source", "exec", "sh", "bash", "dash", "zsh", "ksh", "node", "perl", "ruby"}
_SCRIPT = (".sh", ".bash", ".py", ".js", ".cjs", ".mjs", ".pl", ".rb")


def _ran(value: str) -> set[str]:
    """The words of a command that name what runs: after `.`, `source` or
    an interpreter, or with a script's suffix; as written, their
    expansions read as `*`, and with them left out."""
    out: set[str] = set()
    before = ""
    for word, _ in words(value):
        name = os.path.basename(before)
        if name in _RUNNERS or name.startswith(("python", "pypy")) or word.endswith(_SCRIPT):
            bare = _expansion().sub("", word)
            out |= {word, bare, bare.lstrip("/"), _expansion().sub("*", word)}
        if before == "-m" or word.startswith("-m") and len(word) > 2:  # python -m tools.x
            out.update(_module_files(word if before == "-m" else word[2:]))
        before = word
    return out


def _module_files(name: str) -> list[str]:
    """The files `python -m name` may run, from the top: each package's
    `__init__.py`, the module, or its package's `__main__.py`."""
    parts = [p for p in name.split(".") if p]
    out = ["/".join(parts[:n]) + "/__init__.py" for n in range(1, len(parts))]
    return out + ["/".join(parts) + ".py", "/".join(parts) + "/__main__.py",
                  "/".join(parts) + "/__init__.py"]


def modules(value: str, top: str) -> list[str]:
    """The files a `-m` module of the command is, that exist (Python runs
    them with the top first on its path)."""
    out: list[str] = []
    module = False
    for word, _ in words(value):
        if module or word.startswith("-m") and len(word) > 2:
            out += [os.path.join(top, m) for m in _module_files(word if module else word[2:])]
        module = word == "-m"
    return [p for p in out if os.path.isfile(p)]


def _from_top(word: str) -> bool:
    """Whether the folder a glob lists is known here: no expansion before
    its pattern, or one naming the top or a folder in it (`$(git rev-parse
    --show-toplevel)/*`, `$PWD/*`), not another (`$HOME/bin/*`)."""
    import re

    head = re.split(r"[*?[]", word, maxsplit=1)[0]
    return all(re.search(_TOP, e) for e in _expansion().findall(head))


_TOP = r"rev-parse|\bpwd\b|\bPWD\b|GIT_PREFIX|GIT_WORK_TREE|dirname"


def _assigns(word: str) -> bool:
    return "=" in word and word.partition("=")[0].isidentifier()


def _wild(part: str) -> bool:
    """Whether the shell expands `part` as a pattern: a `*`, a `?` or a
    bracket expression (`[` alone is the test command)."""
    return "*" in part or "?" in part or ("[" in part and "]" in part[part.index("["):])


def _unquoted_globs(command: str, depth: int = 0) -> set[str]:
    """The words of `command` with a pattern the shell expands: one outside
    quotes (`git diff -- '*.c'` gives git the pattern; the shell lists
    nothing), and in a quoted command (`sh -c 'for f in */x.sh; ...'`)."""
    import shlex

    out: set[str] = set()
    for raw, bare in _raw_words(command):
        try:
            inner = shlex.split(raw)
        except ValueError:
            inner = [raw]
        if _wild(bare):
            out.update(inner)
        elif depth < 3 and len(inner) == 1 and any(c.isspace() or c in ";&|" for c in inner[0]):
            out |= _unquoted_globs(inner[0], depth + 1)
    return out


def _raw_words(command: str) -> list[tuple[str, str]]:
    """Each word of `command` as written, with what of it stands outside
    quotes (`"$(x)"/*/a` gives `/*/a`), split where the shell splits words."""
    out: list[tuple[str, str]] = []
    raw, bare, quote, escaped, depth = "", "", "", False, 0
    for c in command + " ":
        if escaped:
            raw, escaped = raw + c, False
        elif c == "\\" and quote != "'":
            raw, escaped = raw + c, True
        elif quote:
            raw += c
            quote = "" if c == quote else quote
        elif c in "'\"":
            raw, quote = raw + c, c
        elif depth == 0 and (c.isspace() or c in ";&|<>"):
            out += [(raw, bare)] if raw else []
            raw, bare = "", ""
        else:
            depth += (raw + c).endswith("$(") - (c == ")" and depth > 0)
            raw, bare = raw + c, bare + c
    return out


# (the word, the folder its pattern lists from where the command stands,
# whether a `cd` to a folder named in the command comes before it, the
# pattern from that folder)
Glob = tuple[str, str, bool, str]


def _listed(top: str, bases: list[str], folders: list[Glob], globbed: list[str], named: int
            ) -> tuple[list[str], list[tuple[str, str, str]]]:
    """(the folders a glob lists — held whole: a file made there later matches
    it too — and each file a pattern matches, from the top and each folder;
    (the word, the folder) for each folder listed that is the top or lies
    outside it: not to be held). A glob after a `cd` lists from the
    folders the command names, not the top, where there are such. A folder
    listed from the top or a folder the command names is held there or not
    (made later, its files would match); from every folder, where it is."""
    out: list[str] = []
    listed: list[tuple[str, str, str]] = []
    for word, folder, moved, rest in folders:
        for at, base in enumerate(bases):
            if moved and at == 0 and len(bases) > 1:
                continue
            path = os.path.normpath(os.path.join(base, folder))
            if _within(top, path):
                out += [path] if at < named or os.path.isdir(path) else []
            elif (f"its pattern {word} matches what is made in", path, rest) not in listed:
                listed.append((f"its pattern {word} matches what is made in", path, rest))
    for pattern in globbed:
        for base in bases:
            out += [p for p in _glob(os.path.join(base, pattern.lstrip("/"))) if os.path.isfile(p)]
    return out, listed


def _folders(top: str, most: int = 20000) -> list[str]:
    """Every folder below `top` but git's own, links not followed; `most` at most."""
    out: list[str] = []
    for folder, subs, _ in os.walk(top):
        subs[:] = [d for d in subs if d != ".git"]
        out += [os.path.join(folder, d) for d in subs]
        if len(out) >= most:
            break
    return out[:most]


def _glob(pattern: str) -> list[str]:
    """The paths `pattern` (absolute) matches, a `*` within one folder, hidden names too."""
    from fnmatch import fnmatchcase

    found = ["/"]
    for part in [p for p in pattern.split("/") if p][:32]:
        if not any(c in part for c in "*?["):
            found = [os.path.join(f, part) for f in found if os.path.lexists(os.path.join(f, part))]
            continue
        matched = []
        for folder in found[:256]:
            try:
                names = os.listdir(folder)
            except OSError:
                continue
            matched += [os.path.join(folder, n) for n in names if fnmatchcase(n, part)]
        found = matched
    return found


# a shell expansion in a word: its value is not known here
_EXPANSION = (r"\$\([^()]*\)|\$\{[^}]*\}|\$[A-Za-z_][A-Za-z0-9_]*|\$[0-9@*#?$!-]|`[^`]*`")


_SHELL_WORDS = {"&&", "||", ";", ";;", "&", "|", "(", ")", "{", "}", "!", "do", "then", "else",
                "elif", "exec", "command", "env", "nohup", "time", "if", "while", "until"}


def words(command: str, depth: int = 0) -> list[tuple[str, bool]]:
    """Each word of a shell command with whether it stands where a program
    does (a command's first word); an argument that is itself a command (a
    shell's `-c` argument, a quoted string) is split again — a program's
    name is one word, spaces and all; a `name=value` word gives its value too."""
    import shlex

    lexer = shlex.shlex(command, posix=True, punctuation_chars=";&|()<>")
    lexer.whitespace_split = True
    try:
        tokens = list(lexer)
    except ValueError:
        tokens = command.split()
    out: list[tuple[str, bool]] = []
    starts = True
    for token in tokens:
        if token in _SHELL_WORDS or all(c in ";&|()<>" for c in token):
            starts = True
            continue
        if token.endswith("()"):  # a function's name
            starts = True
            continue
        out.append((token, starts))
        assigned = starts and "=" in token and token.partition("=")[0].isidentifier()
        if "=" in token:
            value = token.partition("=")[2]
            out.append((value, False))
            if ":" in value:  # `PATH=tools:$PATH fsmon`: each folder a program is looked up in
                out += [(part, False) for part in value.split(":") if part]
        if depth < 3 and not starts and any(c.isspace() or c in ";&|" for c in token):
            out += words(token, depth + 1)
        starts = assigned  # `NAME=value cmd`: cmd is still the program
    return out
