"""The programs git runs from its configuration: which settings git runs as a
command (`RUNS`), and the files such a setting's words name by a path
(`programs`) — the script a person's `core.fsmonitor`, alias or filter runs
at their next `git status`, which `zapcli.control` then holds read-only to
agent work. Imports only the standard library (a kernel module); it reads
the words, never runs them.
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
    """The files a command-running setting (`RUNS`) names by a path, as git
    would find them from `top` (it runs the value with the shell there): the
    program — the first word, an alias's after its `!` — and every other word
    that is a path: an interpreter's script (`sh tools/x.sh`), a shell's `-c`
    command and each command in it (`f() { tools/x.sh; }; f`), an option's
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
    glob lists is held whole (a file made there later matches it: not
    where that folder is the top, `*/check.sh`); a `PATH=dir:...`
    the command sets is a folder its program is found in.
    Nothing for a program on PATH, `true`, a boolean."""
    first, _, rest = key.partition(".")
    middle, _, last = rest.rpartition(".")
    if key not in RUNS and f"{first}.*.{last}" not in RUNS and f"{first}.*" not in RUNS:
        return []
    if first == "alias" and not value.startswith("!"):
        return []  # a git command, not a program
    value = value[1:] if value.startswith("!") else value  # an alias's, a submodule's update
    said: list[tuple[str, bool]] = []
    globbed: list[str] = []
    folders: list[str] = []  # listed by a glob
    module = False
    anywhere = False  # `cd "${GIT_PREFIX:-.}" && ./x.sh`: x.sh where the person stands
    before = ""
    for word, program in words(value):
        if before in ("cd", "pushd", "-C", "--directory") and word != _expansion().sub("", word) \
                and not _expansion().sub("", word).strip("/."):
            anywhere = True
        before = word
        if module or word.startswith("-m") and len(word) > 2:  # python -m pkg.mod, -mpkg.mod
            name = word if module else word[2:]
            parts = [p for p in name.split(".") if p]
            said += [("/".join(parts[:n]) + "/__init__.py", False) for n in range(1, len(parts))]
            said += [("/".join(parts) + ".py", False), ("/".join(parts) + "/__main__.py", False),
                      ("/".join(parts) + "/__init__.py", False)]
        module = word == "-m"
        said.append((word, program))
        bare = _expansion().sub("", word)
        if bare != word or word.startswith("/"):  # what follows an expansion (`$(...)/x` is
            said.append((bare.lstrip("/"), False))  # split in two unquoted): from the top too
        wild = _expansion().sub("*", word)  # `${d}ols/x`, `tool?/x`: what the shell may make
        if any(c in wild for c in "*?[") and wild.strip("*/."):  # not a bare `$LOCAL`
            globbed.append(wild)
        parts = bare.split("/")  # a glob of its own: a file made later matches it too, so
        at = next((n for n, p in enumerate(parts) if any(c in p for c in "*?[")), 0)
        if at:  # the folder it lists is held whole (`tools/hooks.d/*`: tools/hooks.d)
            folders.append("/".join(parts[:at]))
    bases = [top]
    for word, _ in said:
        folder = os.path.normpath(os.path.join(top, os.path.expanduser(word))) if word else top
        if folder not in bases and os.path.isdir(folder) and _within(top, folder):
            bases.append(folder)  # cd tools, git -C tools, make -C tools
    named_bases = len(bases)
    if anywhere:  # a folder not known here: every folder of the tree (where the file exists)
        bases += [f for f in _folders(top) if f not in bases]
    out = _listed(top, bases, folders, globbed)
    for word, program in said:
        if not word or "://" in word or word in (".", ".."):
            continue
        named = word.startswith(("./", "../", "~/", "/"))
        for at, base in enumerate(bases):
            path = os.path.expanduser(word)
            path = path if os.path.isabs(path) else os.path.join(base, path)
            if (program or named) and "/" in word and at < named_bases or os.path.isfile(path):
                out.append(path)
    return out


def _listed(top: str, bases: list[str], folders: list[str], globbed: list[str]) -> list[str]:
    """The folders a glob lists (held whole: a file made there later matches it
    too) and each file a pattern matches, from the top and each folder."""
    out = [p for folder in folders for p in (os.path.normpath(os.path.join(b, folder))
                                             for b in bases) if os.path.isdir(p) and _within(top, p)]
    for pattern in globbed:
        for base in bases:
            out += [p for p in _glob(os.path.join(base, pattern.lstrip("/"))) if os.path.isfile(p)]
    return out


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
