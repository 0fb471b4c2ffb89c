"""Whether this machine can sandbox commands with bubblewrap: the answer
(`Probe`), kept in the state folder per program, user and boot, and the
lines spawn, the trail and doctor give about it. Imports only the standard
library; `zapcli.sandbox.bwrap` only when the kernel must
be asked (no answer kept), so a spawn that reads the kept answer does not
load the command-line builder, the policy or subprocess.

`ZAPCLI_BWRAP` names the program (default `bwrap` on PATH), for a build in
another place and for tests that need it missing.
"""

from __future__ import annotations

import json
import os
from pathlib import Path

INSTALL_HINT = "install bubblewrap (Debian/Ubuntu: apt-get install bubblewrap; Fedora: dnf install bubblewrap)"
USERNS_HINT = ("allow unprivileged user namespaces: sysctl kernel.unprivileged_userns_clone=1 "
               "(Debian), user.max_user_namespaces > 0, or on Ubuntu 24.04+ "
               "kernel.apparmor_restrict_unprivileged_userns=0 or an AppArmor profile for bwrap")
NET_HINT = ("allow network namespaces (user.max_net_namespaces > 0; in a container, one "
            "that may create them)")
PROBE_CACHE = "sandbox-probe.json"  # in the state folder


def program() -> str | None:
    """The bwrap executable, or None when it is not installed."""
    name = os.environ.get("ZAPCLI_BWRAP") or "bwrap"
    found = _which(name)
    return os.path.realpath(found) if found else None


def _which(name: str) -> str | None:
    """`shutil.which(name)` on POSIX (shutil costs a spawn its compression
    modules): a name with a slash as it is, else the first executable file
    of that name in PATH."""
    def runnable(path: str) -> bool:
        return os.path.exists(path) and os.access(path, os.X_OK) and not os.path.isdir(path)

    if os.path.dirname(name):
        return name if runnable(name) else None
    path = os.environ.get("PATH")
    if path is None:
        try:
            path = os.confstr("CS_PATH") or os.defpath
        except (AttributeError, ValueError):
            path = os.defpath
    seen = set()
    for folder in path.split(os.pathsep):
        if not os.path.isabs(folder) or folder in seen:  # "" or "./bin": the folder it runs in
            continue
        seen.add(folder)
        candidate = os.path.join(folder, name)
        if runnable(candidate):
            return candidate
    return None


class Probe:
    """Whether commands can be sandboxed here; when not, `missing` says what
    is missing and `fix` what to do about it. A sandbox that works may still
    lack two things: `network` False when bwrap cannot make a network
    namespace here (`network_missing` says why; then a definition's
    `network: false` cannot be kept), `size` False for a bwrap too old to
    cap a tmpfs (before 0.6: the scratch folder's cap is the kernel's
    default, half the memory). A read-only value, as a frozen dataclass
    (this room imports only the standard library, and `dataclasses` costs
    a spawn ~10 ms of imports)."""

    __slots__ = ("ok", "missing", "fix", "program", "network", "network_missing", "size")
    ok: bool
    missing: str
    fix: str
    program: str
    network: bool
    network_missing: str
    size: bool

    def __init__(self, ok: bool, missing: str = "", fix: str = "", program: str = "",
                 network: bool = True, network_missing: str = "", size: bool = True) -> None:
        for name, value in zip(self.__slots__, (ok, missing, fix, program, network,
                                                network_missing, size), strict=True):
            object.__setattr__(self, name, value)

    def __setattr__(self, name: str, value: object) -> None:
        raise AttributeError(f"cannot assign to field {name!r}: a Probe is read-only")

    def _values(self) -> tuple[object, ...]:
        return tuple(getattr(self, name) for name in self.__slots__)

    def __eq__(self, other: object) -> bool:
        return self._values() == other._values() if isinstance(other, Probe) else NotImplemented

    def __hash__(self) -> int:
        return hash(self._values())

    def __repr__(self) -> str:
        return "Probe(" + ", ".join(f"{n}={getattr(self, n)!r}" for n in self.__slots__) + ")"

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
    from zapcli.sandbox.bwrap import _run_probe  # the kernel is asked: a sandbox is started

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
