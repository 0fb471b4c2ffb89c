"""What a placeholder file holds (`zapcli.sandbox.placeholders`): for a
control name a program reads as a file, content that program's format reads
as "nothing configured", and whether a file is still that as it was made.
Imports only the standard library.

By the name's last parts first, then by its suffix; a name known to neither
is held by an empty folder (`.git`, `.zapcli`, `.claude`, ...). `{}` for
JSON and YAML (an empty YAML document is null, which most readers refuse),
nothing for TOML, INI, dotenv files, `.envrc`, `.npmrc` and JavaScript
(valid, and sets nothing), `repos: []` for pre-commit (which refuses `{}`
and runs nothing on this), an empty task or launch list for VS Code; a name
whose program refuses every neutral file, or reads one as something set,
but passes over a folder (rustup's `rust-toolchain.toml`, pyenv's
`.python-version`) is held by an empty folder (None); so is a folder name
(`.mvn`: Maven's launcher passes over an empty one). A
control name of another format that a program reads as a file gets its
line in `BY_NAME` or `BY_SUFFIX`.
"""

from __future__ import annotations

import os

BY_NAME: tuple[tuple[str, bytes | None], ...] = (
    (".vscode/tasks.json", b'{"version": "2.0.0", "tasks": []}\n'),
    (".vscode/launch.json", b'{"version": "0.2.0", "configurations": []}\n'),
    (".pre-commit-config.yaml", b"repos: []\n"),
    (".envrc", b""),
    (".env", b""),
    (".npmrc", b""),             # INI
    (".yarnrc", b""),            # yarn 1's own format
    (".tool-versions", b""),
    (".worktreeinclude", b""),   # gitignore patterns: none
    (".pdbrc", b""),             # pdb's commands: none
    ("gradle.properties", b""),  # Java properties: none
    # pyenv reads an empty `.python-version` as `system` (another python
    # meanwhile) and passes over a folder, as uv does: an empty folder
    (".python-version", None),
    # rustup refuses an empty toolchain file (or one without a toolchain),
    # and passes over a folder: held by an empty folder, outside as inside
    ("rust-toolchain.toml", None),
    ("rust-toolchain", None),
)
BY_SUFFIX: dict[str, bytes] = {
    ".json": b"{}\n", ".jsonc": b"{}\n", ".json5": b"{}\n",
    ".yaml": b"{}\n", ".yml": b"{}\n",
    ".toml": b"", ".ini": b"", ".cfg": b"", ".conf": b"",
    ".js": b"", ".cjs": b"", ".mjs": b"",  # a module that exports nothing (`.pnpmfile.cjs`)
}


def content(path: str) -> bytes | None:
    """What the placeholder at `path` holds when its name is a file (the
    neutral content), or None when it is held by an empty folder."""
    norm = "/" + path.replace(os.sep, "/").strip("/")
    for tail, text in BY_NAME:
        if norm.endswith("/" + tail):
            return text
    name = norm.rsplit("/", 1)[-1]
    if name.startswith(".env."):  # .env.local, .env.development: dotenv files
        return b""
    return BY_SUFFIX.get(os.path.splitext(name)[1].lower())


def unchanged(path: str, st: os.stat_result, fd: int, stamps: list[list[int]]) -> bool:
    """Whether the regular file `st` (open for reading as `fd`) is still a
    placeholder as made: its name's neutral content, and (when recorded) the
    inode and change time it had once written. Any write in place or
    replacement changes one of them (the change time, the same bytes
    written again too)."""
    want = content(path)
    if want is None or st.st_size != len(want):
        return False
    if stamps and [st.st_ino, st.st_ctime_ns] not in stamps:
        return False
    try:
        return os.pread(fd, len(want) + 1, 0) == want
    except OSError:
        return False
