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

`ZAPCLI_BWRAP` names the program (default `bwrap` on PATH), for a build in
another place and for tests that need it missing.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from pathlib import Path

from zapcli.sandbox import caches, sockets
from zapcli.sandbox.policy import Policy
from zapcli.sandbox.sockets import Plan

INSTALL_HINT = "install bubblewrap (Debian/Ubuntu: apt-get install bubblewrap; Fedora: dnf install bubblewrap)"
USERNS_HINT = ("allow unprivileged user namespaces: sysctl kernel.unprivileged_userns_clone=1 "
               "(Debian), user.max_user_namespaces > 0, or on Ubuntu 24.04+ "
               "kernel.apparmor_restrict_unprivileged_userns=0 or an AppArmor profile for bwrap")
NET_HINT = ("allow network namespaces (user.max_net_namespaces > 0; in a container, one "
            "that may create them)")
PROBE_TIMEOUT_S = 10.0
PROBE_CACHE = "sandbox-probe.json"  # in the state folder


def program() -> str | None:
    """The bwrap executable, or None when it is not installed."""
    name = os.environ.get("ZAPCLI_BWRAP") or "bwrap"
    found = shutil.which(name)
    return os.path.realpath(found) if found else None


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
                "mask": ["--ro-bind", "/dev/null", path]}[how]
    for path in (*policy.hidden, *hiding.hide):
        out += ["--remount-ro", os.path.realpath(path)]
    out += ["--setenv", "ZAPCLI_SANDBOXED", "1"]  # a zapcli inside says why it cannot write
    for name, value in environment(policy, {}).items():
        out += ["--setenv", name, value]
    return [*out, "--"]


def environment(policy: Policy, given: Mapping[str, str]) -> dict[str, str]:
    """What a command in the sandbox gets on top of `given`: TMPDIR (TMP,
    TEMP) the scratch folder, and its package caches there (C40)."""
    if not policy.scratch:
        return {}
    scratch = os.path.realpath(policy.scratch)
    return {"TMPDIR": scratch, "TMP": scratch, "TEMP": scratch,
            **caches.env(scratch, given, policy.writable)}


@dataclass(frozen=True)
class Probe:
    """Whether commands can be sandboxed here; when not, `missing` says what
    is missing and `fix` what to do about it. A sandbox that works may still
    lack two things: `network` False when bwrap cannot make a network
    namespace here (`network_missing` says why; then a definition's
    `network: false` cannot be kept), `size` False for a bwrap too old to
    cap a tmpfs (before 0.6: the scratch folder's cap is the kernel's
    default, half the memory)."""

    ok: bool
    missing: str = ""
    fix: str = ""
    program: str = ""
    network: bool = True
    network_missing: str = ""
    size: bool = True

    def sentence(self) -> str:
        return "available" if self.ok else f"{self.missing}; {self.fix}"

    def to_dict(self) -> dict[str, object]:
        return {"ok": self.ok, "missing": self.missing, "fix": self.fix,
                "network": self.network, "network_missing": self.network_missing,
                "size": self.size}


def _key(bwrap: str) -> str:
    """What a cached answer depends on: the program, this user, this boot."""
    try:
        boot = Path("/proc/sys/kernel/random/boot_id").read_text().strip()
    except OSError:
        boot = ""
    try:
        mtime = os.stat(bwrap).st_mtime_ns
    except OSError:
        mtime = 0
    return f"{bwrap}:{mtime}:{os.geteuid()}:{boot}"


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


def probe(cache: Path | None = None, *, fresh: bool = False) -> Probe:
    """Can this machine sandbox commands? The answer is cached in `cache`
    (a file) per program, user and boot; `fresh` asks the kernel again."""
    bwrap = program()
    if bwrap is None:
        name = os.environ.get("ZAPCLI_BWRAP") or "bwrap"
        return Probe(False, f"{name} (bubblewrap) is not installed", INSTALL_HINT)
    key = _key(bwrap)
    if cache is not None and not fresh:
        try:
            saved = json.loads(cache.read_text(encoding="utf-8"))
            if saved.get("key") == key:
                return Probe(bool(saved["ok"]), str(saved.get("missing", "")),
                             str(saved.get("fix", "")), bwrap,
                             network=saved.get("network") is not False,
                             network_missing=str(saved.get("network_missing", "")),
                             size=saved.get("size") is not False)
        except (OSError, ValueError, KeyError, TypeError, AttributeError):
            pass
    found = _run_probe(bwrap)
    if cache is not None:
        _keep(cache, json.dumps({"key": key, **found.to_dict()}).encode())
    return found


def _keep(cache: Path, data: bytes) -> None:
    """Write the probe's answer: 0600 whatever the umask (it tells what this
    kernel allows), atomically; on a full disk no copy is left behind, and the
    answer stands without its file."""
    tmp = cache.with_name(f".{cache.name}.{os.getpid()}.{os.urandom(4).hex()}")
    try:
        cache.parent.mkdir(mode=0o700, parents=True, exist_ok=True)
        fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW | os.O_CLOEXEC,
                     0o600)
        try:
            with os.fdopen(fd, "wb") as fh:
                fh.write(data)
            os.replace(tmp, cache)
        except BaseException:
            tmp.unlink(missing_ok=True)
            raise
    except OSError:
        pass


def cached(state: Path, *, fresh: bool = False) -> Probe:
    """`probe`, its answer kept in the state folder `state`."""
    return probe(state / PROBE_CACHE, fresh=fresh)


def unavailable(found: Probe) -> str:
    """The one line spawn and the trail give when commands run unsandboxed."""
    return (f"commands run WITHOUT a sandbox: {found.missing}; {found.fix} "
            "(zapcli doctor checks it; --no-sandbox says you meant it)")


def network_open(found: Probe) -> str:
    """The one line spawn and the trail give when a definition's `network:
    false` cannot be kept: the rest of the sandbox holds, the network not."""
    return (f"commands run in the sandbox but WITH the network: {found.network_missing}; "
            f"{NET_HINT} (zapcli doctor checks it; --sandbox refuses to run so)")
