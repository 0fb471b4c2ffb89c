"""Keys out of every tool's reach (docs/explanation/rules.md#sandbox): a zapcli process that lives a
while keeps no secret in its initial environment block (what
/proc/<pid>/environ shows) and is non-dumpable (no process of the same user
may read its /proc/<pid>/mem or environ, nor ptrace it).

Imports `zapcli.redact` (the one handoff: secret-named variables in an
inherited memory file, as `zapcli.supervisor.launch` starts a runner).
`guard()` is the child's side: take the variables from that file, then
turn the dump flag off. `seal()` is for a command a person or a client
started with keys in its environment (`zapcli run`, `mcp serve`, `wait`…):
the keys' values in its environment block are overwritten (it already holds
them; an exec through the memory file would cost a second interpreter
start), then the dump flag goes off. Root can still read memory with CAP_SYS_PTRACE; the
sandbox's own pid namespace is what keeps a root tool from seeing zapcli.
"""

from __future__ import annotations

import os
import sys

PR_SET_DUMPABLE = 4


def non_dumpable() -> None:
    """PR_SET_DUMPABLE 0 for this process (Linux; elsewhere nothing).

    Through `_ctypes`, the C half of `ctypes`, calling `prctl` as ctypes'
    own `CDLL(None).prctl` does: the `ctypes` package above it (struct, its
    type classes: ~1.5 ms and ~250 KB of every runner) is loaded only if
    that fails."""
    if not sys.platform.startswith("linux"):
        return
    try:
        import _ctypes

        class Prctl(_ctypes.CFuncPtr):  # what CDLL makes for one function: cdecl
            _flags_ = _ctypes.FUNCFLAG_CDECL
            _restype_ = None  # the result is not needed: a failure leaves it dumpable, as before

        class Libc:  # the process's own symbols, as CDLL(None)
            _handle = _ctypes.dlopen(None, 0)  # type: ignore[arg-type]  # None: ourselves

        Prctl(("prctl", Libc))(PR_SET_DUMPABLE, 0, 0, 0, 0)  # type: ignore[arg-type]
        return
    except (ImportError, OSError, AttributeError, TypeError):
        pass
    try:
        import ctypes

        ctypes.CDLL(None).prctl(PR_SET_DUMPABLE, 0, 0, 0, 0)
    except (OSError, AttributeError):
        pass


def guard() -> None:
    """Take the secret variables our launcher handed over outside our
    environment block (into os.environ: this process's own copy), and make
    this process non-dumpable."""
    from zapcli.redact import restore_secrets

    restore_secrets()
    non_dumpable()


def _scrub_block() -> None:
    """Overwrite the values of the secret-named entries of this process's
    initial environment block (the memory /proc/<pid>/environ reads, between
    env_start and env_end of /proc/self/stat) with `*`: the block stays well
    formed (a reader such as psutil stops at the first empty entry, and would
    miss the subagent marker after it). Each variable stays this process's
    own: os.environ, and the C library's environment (the pointer to the old
    bytes removed first, the value put back on the heap), so children given
    no environment still get it."""
    from zapcli.redact import is_secret_name

    with open("/proc/self/stat", "rb") as fh:
        fields = fh.read().rsplit(b")", 1)[1].split()
    start, end = int(fields[47]), int(fields[48])  # fields 50 and 51 (man 5 proc)
    if not 0 < start < end:
        return
    with open("/proc/self/mem", "r+b", buffering=0) as mem:
        mem.seek(start)
        block = mem.read(end - start)
        at = start
        for entry in block.split(b"\0"):
            raw, eq, value = entry.partition(b"=")
            name = raw.decode("utf-8", "surrogateescape")
            if eq and value and is_secret_name(name):
                os.unsetenv(name)
                mem.seek(at + len(raw) + 1)
                mem.write(b"*" * len(value))
                if name in os.environ:
                    os.putenv(name, os.environ[name])
            at += len(entry) + 1


def seal() -> None:
    """For a long-lived command a person or a client started with keys in its
    environment (`zapcli run`, `mcp serve`, `wait`…; `zapcli.cli.lifespan`
    decides which): no key left in its environment block, then non-dumpable
    — with no second start, so a short `poll` pays a few system calls, not
    an interpreter. The block is overwritten first: a process that is not
    root can no longer open its own /proc/self/mem once it is non-dumpable
    (the file then belongs to root), and the keys would stay. The values stay
    this process's own (it needs them: the model's key, what it hands its
    subagents). Call it first thing, before any thread starts."""
    from zapcli.redact import restore_secrets

    restore_secrets()
    if sys.platform.startswith("linux"):
        try:
            _scrub_block()
        except (OSError, ValueError, IndexError):
            pass  # no /proc: the dump flag still keeps same-user tools out
    non_dumpable()
