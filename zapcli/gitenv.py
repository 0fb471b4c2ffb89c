"""What git zapcli starts is never told by the environment, and the one git
it starts outside `zapcli.worktrees.git` (the one runner).

Imports the standard library and `zapcli.paths`. `DROPPED`: the variables
that point git at another repository (git's own "local repository" list: a
hook's environment) or name a program; no git zapcli starts gets them.

`config_origins`: `git config --list --show-origin -z` in a folder, found
the way the person's own git finds it there (discovery from the folder,
their own and the system's config files, every include) — the question
`zapcli.control.of_root` asks to hold every file git reads as configuration.
The runner cannot ask it: it names each repository outright and overrides
the configuration. Reading the configuration runs no program (no hook,
filter, fsmonitor or pager: `--list` to a pipe); git is looked up as every
git zapcli runs is (`zapcli.paths.own_lookups`: never in a folder agent work
wrote), with `DROPPED` and the locale left out, so its messages are git's
English.
"""

from __future__ import annotations

import os

DROPPED = frozenset({
    "GIT_DIR", "GIT_WORK_TREE", "GIT_COMMON_DIR", "GIT_INDEX_FILE", "GIT_OBJECT_DIRECTORY",
    "GIT_ALTERNATE_OBJECT_DIRECTORIES", "GIT_IMPLICIT_WORK_TREE", "GIT_GRAFT_FILE",
    "GIT_NO_REPLACE_OBJECTS", "GIT_REPLACE_REF_BASE", "GIT_PREFIX", "GIT_SHALLOW_FILE",
    "GIT_NAMESPACE", "GIT_CEILING_DIRECTORIES", "GIT_DISCOVERY_ACROSS_FILESYSTEM",
    "GIT_CONFIG", "GIT_CONFIG_PARAMETERS", "GIT_CONFIG_COUNT", "GIT_ATTR_SOURCE",
    "GIT_INTERNAL_SUPER_PREFIX", "GIT_EXTERNAL_DIFF", "GIT_DIFF_OPTS", "GIT_SSH",
    "GIT_SSH_COMMAND", "GIT_PROXY_COMMAND", "GIT_ASKPASS", "SSH_ASKPASS", "GIT_EDITOR",
    "GIT_SEQUENCE_EDITOR", "GIT_PAGER", "PAGER", "EDITOR", "VISUAL", "GIT_EXEC_PATH",
    "GIT_TEMPLATE_DIR", "GIT_ALLOW_PROTOCOL", "GIT_PROTOCOL_FROM_USER"})
# left out of `config_origins` too: the person's next git in the folder reads the
# system's file, whatever this process was started with; git's messages in English
_NOT_THE_PERSONS = frozenset({"GIT_CONFIG_NOSYSTEM", "LANGUAGE", "LC_ALL", "LC_MESSAGES"})


def config_origins(top: str, timeout: float = 30.0, file: str = "") -> tuple[bytes, bytes] | None:
    """(stdout, stderr) of `git config --list --show-origin -z` run in `top`
    (names in it are relative to `top` when git found the repository there);
    `file`: that file alone, its includes not followed (git's default there);
    None when git cannot be run."""
    import subprocess

    from zapcli.paths import own_lookups

    env = {k: v for k, v in os.environ.items() if k not in DROPPED | _NOT_THE_PERSONS}
    own_lookups(env)
    env.update(LC_ALL="C", GIT_TERMINAL_PROMPT="0", GIT_OPTIONAL_LOCKS="0")
    try:
        only = ["--file", file] if file else []
        done = subprocess.run(["git", "--no-pager", "config", *only, "--list", "--show-origin", "-z"],
                              cwd=top, env=env, stdin=subprocess.DEVNULL, capture_output=True,
                              timeout=timeout, check=False)
    except (OSError, subprocess.SubprocessError):
        return None
    return done.stdout, done.stderr
