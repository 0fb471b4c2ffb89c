"""The bubblewrap command line for a `Policy`, and whether this machine can
run it (`probe`). Imports only the standard library.

Namespaces: pid (no other process's /proc is visible), ipc, uts, and net
when the network is off (only a loopback of its own); a user namespace when
not root (bwrap needs one to run unprivileged, and nested ones are refused
inside). Every capability is dropped, root's too: a root without
CAP_SYS_ADMIN cannot remount, and without CAP_SYS_PTRACE nor a view of other
pids it reads no other process's memory. `--die-with-parent`: the sandbox
never outlives the process that started it.

`ZAPCLI_BWRAP` names the program (default `bwrap` on PATH), for a build in
another place and for tests that need it missing.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
from dataclasses import dataclass
from pathlib import Path

from zapcli.sandbox.policy import Policy

INSTALL_HINT = "install bubblewrap (Debian/Ubuntu: apt-get install bubblewrap; Fedora: dnf install bubblewrap)"
USERNS_HINT = ("allow unprivileged user namespaces: sysctl kernel.unprivileged_userns_clone=1 "
               "(Debian), user.max_user_namespaces > 0, or on Ubuntu 24.04+ "
               "kernel.apparmor_restrict_unprivileged_userns=0 or an AppArmor profile for bwrap")
PROBE_TIMEOUT_S = 10.0
PROBE_CACHE = "sandbox-probe.json"  # in the state folder


def program() -> str | None:
    """The bwrap executable, or None when it is not installed."""
    name = os.environ.get("ZAPCLI_BWRAP") or "bwrap"
    found = shutil.which(name)
    return os.path.realpath(found) if found else None


def _order(policy: Policy) -> list[tuple[str, str, str]]:
    """(path, how, source) mounts, parents before what lies inside them, so a
    writable workspace inside a hidden folder (or the reverse) comes out right."""
    ops = ([(p, "hide", p) for p in policy.hidden] + [(p, "rw", p) for p in policy.writable]
           + ([(policy.scratch, "rw", policy.scratch)] if policy.scratch else [])
           + [(target, "rw", source) for source, target in policy.binds]
           + [(p, "ro", p) for p in policy.readonly])
    rank = {"hide": 0, "rw": 1, "ro": 2}
    return sorted(ops, key=lambda op: (op[0].rstrip("/").count("/"), rank[op[1]]))


def argv(policy: Policy, bwrap: str, *, root: bool | None = None) -> list[str]:
    """bwrap and its options, up to and including `--`: append the command."""
    root = os.geteuid() == 0 if root is None else root
    out = [bwrap, "--die-with-parent", "--unshare-pid", "--unshare-ipc", "--unshare-uts"]
    if not policy.network:
        out.append("--unshare-net")
    if not root:
        out += ["--unshare-user", "--disable-userns"]
    out += ["--cap-drop", "ALL", "--ro-bind", "/", "/", "--dev", "/dev", "--proc", "/proc",
            "--tmpfs", "/dev/shm"]
    for path, how, source in _order(policy):
        out += {"hide": ["--tmpfs", path], "rw": ["--bind", source, path],
                "ro": ["--ro-bind", path, path]}[how]
    for path in policy.hidden:
        out += ["--remount-ro", path]
    out += ["--setenv", "ZAPCLI_SANDBOXED", "1"]  # a zapcli inside says why it cannot write
    if policy.scratch:
        out += ["--setenv", "TMPDIR", policy.scratch]
    return [*out, "--"]


@dataclass(frozen=True)
class Probe:
    """Whether commands can be sandboxed here; when not, `missing` says what
    is missing and `fix` what to do about it."""

    ok: bool
    missing: str = ""
    fix: str = ""
    program: str = ""

    def sentence(self) -> str:
        return "available" if self.ok else f"{self.missing}; {self.fix}"


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


def _run_probe(bwrap: str) -> Probe:
    """Start a sandbox as the tools would, with nothing to do."""
    try:
        res = subprocess.run([*argv(Policy(), bwrap), "true"], stdin=subprocess.DEVNULL,
                             capture_output=True, timeout=PROBE_TIMEOUT_S)
    except (OSError, subprocess.TimeoutExpired) as exc:
        return Probe(False, f"{bwrap} could not be run ({exc})", INSTALL_HINT, bwrap)
    if res.returncode == 0:
        return Probe(True, program=bwrap)
    why = res.stderr.decode("utf-8", "replace").strip().splitlines()
    said = why[-1] if why else f"exit code {res.returncode}"
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
                             str(saved.get("fix", "")), bwrap)
        except (OSError, ValueError, KeyError, TypeError, AttributeError):
            pass
    found = _run_probe(bwrap)
    if cache is not None:
        try:
            cache.parent.mkdir(mode=0o700, parents=True, exist_ok=True)
            tmp = cache.with_name(f".{cache.name}.{os.getpid()}")
            tmp.write_text(json.dumps({"key": key, "ok": found.ok, "missing": found.missing,
                                       "fix": found.fix}), encoding="utf-8")
            os.replace(tmp, cache)
        except OSError:
            pass
    return found


def cached(state: Path, *, fresh: bool = False) -> Probe:
    """`probe`, its answer kept in the state folder `state`."""
    return probe(state / PROBE_CACHE, fresh=fresh)


def unavailable(found: Probe) -> str:
    """The one line spawn and the trail give when commands run unsandboxed."""
    return (f"commands run WITHOUT a sandbox: {found.missing}; {found.fix} "
            "(zapcli doctor checks it; --no-sandbox says you meant it)")
