"""The bubblewrap command line for a `Policy`, and whether this machine can
run it (`probe`). Imports only the standard library.

Namespaces: pid (no other process's /proc is visible), ipc, uts, and net
when the network is off (only a loopback of its own; then `sockets` hides
the host's unix sockets too); a user namespace when not root (bwrap needs
one to run unprivileged, and nested ones are refused inside). The scratch
folder and /dev/shm are fresh tmpfs of at most `Policy.scratch_size` bytes
each, gone with the sandbox; TMPDIR and the package caches point there.
Every capability is dropped, root's too: a root without CAP_SYS_ADMIN
cannot remount, and without CAP_SYS_PTRACE nor a view of other pids it
reads no other process's memory.

`probe` asks for the whole sandbox, then tells apart what is missing: no
network namespace (a definition's `network: false` cannot be kept: spawn,
the trail and doctor say so, `--sandbox` refuses), or a bwrap too old to
size a tmpfs. `--die-with-parent`: the sandbox
never outlives the process that started it.

`probe` and its kept answer live in `zapcli.sandbox.probe` (named here too);
`_run_probe` here is what asks the kernel.

`Starts`: the command lines of one sandbox's starts. The sockets it covers
are those listening a moment before bwrap mounts over them; one closed in
that moment (its server exited, its folder removed) is a path bwrap cannot
mount over on the read-only root, and the sandbox never starts. Such a
start is made again, with a fresh look, while that is why it failed.
"""

from __future__ import annotations

import os
import subprocess
from collections.abc import Callable, Iterable, Mapping, Sequence

from zapcli.sandbox import caches, sockets
from zapcli.sandbox.policy import Policy

# The answer and its lines, named here too (callers ask `bwrap.cached`, `bwrap.NET_HINT`...)
from zapcli.sandbox.probe import INSTALL_HINT, USERNS_HINT, Probe
from zapcli.sandbox.probe import NET_HINT as NET_HINT
from zapcli.sandbox.probe import PROBE_CACHE as PROBE_CACHE
from zapcli.sandbox.probe import cached as cached
from zapcli.sandbox.probe import network_open as network_open
from zapcli.sandbox.probe import probe as probe
from zapcli.sandbox.probe import program as program
from zapcli.sandbox.probe import unavailable as unavailable
from zapcli.sandbox.sockets import Plan

PROBE_TIMEOUT_S = 10.0
STARTS = 12  # of one sandbox, while each failed on a socket that went away meanwhile
SET_UP_S = 10.0  # a start not set up by then is waited for as a running one
MASK = ("--ro-bind", "/dev/null")  # then the path of a socket it covers



def _order(policy: Policy, hiding: Plan) -> list[tuple[str, str, str]]:
    """(path, how, source) mounts, parents before what lies inside them, so
    a writable workspace inside a hidden folder (or the reverse) comes out
    right. Every path is the real one: bwrap follows a link in a mount's
    path inside the new tree, where a folder on the way may be hidden. A
    cover's source is a host path (bwrap reads it outside the new tree); a
    bind (a tree's own branch folder) mounts its source, writable, in the
    path's place."""
    scratch = os.path.realpath(policy.scratch) if policy.scratch else ""
    ops = ([(p, "hide", "") for p in (*policy.hidden, *hiding.hide)]
           + [(p, "rw", "") for p in policy.writable]
           + ([(scratch, "scratch", "")] if scratch else [])
           + [(target, "bind", os.path.realpath(source)) for source, target in policy.binds]
           + [(p, "ro", "") for p in (*policy.readonly, *policy.placeholders, *hiding.show)]
           + [(target, "cover", source) for source, target in policy.covers]
           + [(p, "mask", "") for p in hiding.mask])
    rank = {"hide": 0, "rw": 1, "scratch": 1, "bind": 1, "ro": 2, "cover": 3, "mask": 3}
    return sorted(((os.path.realpath(p), how, source) for p, how, source in ops),
                  key=lambda op: (op[0].rstrip("/").count("/"), rank[op[1]]))


def _size(policy: Policy) -> list[str]:
    return ["--size", str(policy.scratch_size)] if policy.scratch_size > 0 else []


def argv(policy: Policy, bwrap: str, *, root: bool | None = None, keep: Iterable[str] = (),
         hide_sockets: bool = True) -> list[str]:
    """bwrap and its options, up to and including `--`: append the command.
    `keep`: paths the command to run needs in view wherever they are (its
    interpreter); `hide_sockets` False leaves out the look at this host's
    sockets (the probe). The policy's placeholders must exist
    (`placeholders.hold`): bwrap refuses to start on a missing one rather
    than leave the name writable."""
    root = os.geteuid() == 0 if root is None else root
    out = [bwrap, "--die-with-parent", "--unshare-pid", "--unshare-ipc", "--unshare-uts"]
    if not policy.network:
        out.append("--unshare-net")
    if not root:
        out += ["--unshare-user", "--disable-userns"]
    out += ["--cap-drop", "ALL", "--ro-bind", "/", "/", "--dev", "/dev", "--proc", "/proc",
            *_size(policy), "--tmpfs", "/dev/shm"]
    if policy.own_tmp:  # before the mounts below it; capped like the scratch folder
        out += [*_size(policy), "--tmpfs", "/tmp"]
    own = ("/tmp",) if policy.own_tmp else ()  # a /tmp of its own holds no host socket
    hiding = sockets.plan(network=policy.network or not hide_sockets, writable=policy.writable,
                          scratch=policy.scratch, hidden=(*policy.hidden, *own),
                          declared=policy.sockets, keep=keep)
    for path, how, source in _order(policy, hiding):
        out += {"hide": ["--tmpfs", path], "rw": ["--bind", path, path],
                "bind": ["--bind", source, path],
                "scratch": [*_size(policy), "--tmpfs", path],
                "ro": ["--ro-bind", path, path], "cover": ["--ro-bind", source, path],
                "mask": [*MASK, path]}[how]
    for path in (*policy.hidden, *hiding.hide):
        out += ["--remount-ro", os.path.realpath(path)]
    out += ["--setenv", "ZAPCLI_SANDBOXED", "1"]  # a zapcli inside says why it cannot write
    for name, value in environment(policy, {}).items():
        out += ["--setenv", name, value]
    return [*out, "--"]


def covered(line: Sequence[str]) -> list[str]:
    """The sockets a bwrap command line covers."""
    end = line.index("--") if "--" in line else len(line)
    return [line[i + 2] for i in range(end - 2) if (line[i], line[i + 1]) == MASK]


class Starts:
    """One sandbox's starts: each command line is `make()`'s (a fresh look at
    this host's sockets); `again(said)`, after a start whose set-up failed
    (nothing inside ran) and bwrap `said` why: whether to start it once
    more — when the path it could not mount over is a socket that start was
    to cover (gone since the look), up to `STARTS` in all."""

    def __init__(self, make: Callable[[], Sequence[str]]):
        self.make = make
        self.made = 0
        self.line: list[str] = []

    def __call__(self) -> list[str]:
        self.made += 1
        self.line = list(self.make())
        return self.line

    @staticmethod
    def up(fd: int) -> bool:
        """Whether the first command inside said the sandbox is set up (a
        byte on the pipe `fd` reads, closed then), or said nothing in
        SET_UP_S (a start no longer waited for); False: bwrap ended first,
        its set-up failed and nothing inside ran."""
        import select

        try:
            if not select.select([fd], [], [], SET_UP_S)[0]:
                return True
            return os.read(fd, 1) != b""
        finally:
            os.close(fd)

    def again(self, said: str) -> bool:
        return self.made < STARTS and on_a_gone_socket(self.line, said)


def on_a_gone_socket(line: Sequence[str], said: str) -> bool:
    """Whether bwrap's set-up failure `said` names a socket its command line
    covers: one gone since the look (bwrap could not mount over its path).
    bubblewrap names it as given (`Can't create file at PATH: …`) or inside
    its new root (`… on /newroot/PATH: …`, `"/newroot/PATH"`)."""
    return any(form.format(path) in said for path in covered(line)
               for form in (" {}:", "/newroot{}:", '"/newroot{}"'))


def environment(policy: Policy, given: Mapping[str, str]) -> dict[str, str]:
    """What a command in the sandbox gets on top of `given`: TMPDIR (TMP,
    TEMP) the scratch folder, and its package caches there (C40)."""
    if not policy.scratch:
        return {}
    scratch = os.path.realpath(policy.scratch)
    return {"TMPDIR": scratch, "TMP": scratch, "TEMP": scratch,
            **caches.env(scratch, given, policy.writable)}


def _try(bwrap: str, *, network: bool, size: bool) -> str | None:
    """Start a sandbox as the tools would, with nothing to do: None when it
    ran, else what bwrap said."""
    policy = Policy(network=network, scratch_size=(1 << 20) if size else 0)
    try:
        res = subprocess.run([*argv(policy, bwrap, hide_sockets=False), "true"],
                             stdin=subprocess.DEVNULL, capture_output=True,
                             timeout=PROBE_TIMEOUT_S)
    except (OSError, subprocess.TimeoutExpired) as exc:
        return f"{bwrap} could not be run ({exc})"
    if res.returncode == 0:
        return None
    why = res.stderr.decode("utf-8", "replace").strip().splitlines()
    return why[-1] if why else f"exit code {res.returncode}"


def _run_probe(bwrap: str) -> Probe:
    """The whole sandbox first (one start on a machine that has it all),
    then without a size cap, then without a network namespace: what works
    is said, what does not is named."""
    said = _try(bwrap, network=False, size=True)
    if said is None:
        return Probe(True, program=bwrap)
    if _try(bwrap, network=False, size=False) is None:
        return Probe(True, program=bwrap, size=False)
    for size in (True, False):
        if _try(bwrap, network=True, size=size) is None:
            return Probe(True, program=bwrap, network=False, size=size,
                         network_missing=f"bwrap cannot make a network namespace here ({said})")
    if " could not be run (" in said:
        return Probe(False, said, INSTALL_HINT, bwrap)
    if any(w in said.lower() for w in ("namespace", "permission", "operation not permitted")):
        return Probe(False, f"the kernel refused bwrap's namespaces ({said})", USERNS_HINT, bwrap)
    return Probe(False, f"bwrap failed ({said})", INSTALL_HINT, bwrap)


