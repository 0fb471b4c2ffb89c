"""An agent CLI's whole process in zapcli's sandbox (issue 27 item 10), the
runner's side: `confine` decides it, `Confined` turns the CLI's request and
launch into ones that run under bubblewrap; its `Broker`
(`zapcli.backends.cli_broker`) answers, outside, what the CLI reaches
through the wall.

Imports `zapcli.backends.sandboxed` (the policy for the approval mode and the
definition), `zapcli.approvals` (its MCP gate's policy), `zapcli.sandbox`
(`whole`, `bwrap`, the relay), `cli_broker`, `cli_mcpgate`,
`cli_home`, `cli_request` (zapcli's own servers' names),
`zapcli.backends.clis.base`, `zapcli.redact`, `zapcli.supervisor.launch`.

The whole CLI — its own file tools as much as every command it starts —
sees what the built-in agent's commands see, and less: it writes only where
its approval mode and definition let commands write, plus its private home;
control files stay read-only; zapcli's state and config and the user's home
are out of view (an empty folder), but for the interpreter and package it
runs from; it sees no other process; no key but its own is in its
environment. The network is on, because the CLI itself must reach its
model. With the definition's `network: false` the sandbox has a loopback of
its own and reaches only the model's endpoint, through a relay: at the same
address for an endpoint on this machine, through an HTTP proxy
(HTTPS_PROXY) that opens only that host and port for a remote one.

MCP servers — zapcli's team and approval servers, and those a definition
declares — run outside, started by the runner as the built-in agent's are:
the CLI's config names the relay (`python -I -S relay.py mcp SOCKET`), and
the runner answers each connection to SOCKET (in a folder of the private
home that is read-only inside) by starting the server with the connection as
its stdin and stdout. So no trail, token or kept environment of another
subagent comes inside, and a server's keys stay with it. Every connection
goes through the run's `McpGate` (`zapcli.backends.cli_mcpgate`): a socket
serves the CLI's own session only (the first), and on it each request that
runs the server's code is held to zapcli's approvals.
"""

from __future__ import annotations

import ipaddress
import os
import shutil
import stat
import subprocess
import sys
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit

from zapcli import plain  # the sandbox's policy is one of the house's data classes
from zapcli.approvals import Policy as Approvals
from zapcli.backends.cli_broker import Broker
from zapcli.backends.cli_home import write_files
from zapcli.backends.cli_mcpgate import McpGate
from zapcli.backends.cli_request import APPROVAL_SERVER, TEAM_SERVER
from zapcli.backends.clis.base import Cli, CliLaunch, CliRequest, McpServer
from zapcli.redact import is_secret_name
from zapcli.sandbox import bwrap, relay
from zapcli.sandbox.policy import Policy
from zapcli.sandbox.whole import git_common, in_view, install_root, under, whole
from zapcli.supervisor.launch import MARKER
from zapcli.trail.model import Outcome, Status

SOCKETS = "zapcli-sockets"  # in the private home: the relay's sockets, read-only inside
EMPTY = "zapcli-empty"  # in the private home: shown over a folder's own CLI settings
RELAY = os.path.realpath(relay.__file__)
PROXY_PORT = 3128  # the relay's HTTP proxy, on the sandbox's own loopback
NESTED_ID = 1000  # the uid and gid root's codex has inside (outside, its files are root's)
# what an MCP server starts with besides its own `env`, as the MCP SDK's stdio client gives it
SERVER_ENV = ("HOME", "LOGNAME", "PATH", "SHELL", "TERM", "USER", "LANG")
HOME_VARS = {"HOME": "", "XDG_CONFIG_HOME": ".config", "XDG_DATA_HOME": ".local/share",
             "XDG_STATE_HOME": ".local/state", "XDG_CACHE_HOME": ".cache"}
PROXY_VARS = ("HTTPS_PROXY", "https_proxy", "HTTP_PROXY", "http_proxy", "ALL_PROXY",
              "all_proxy", "NO_PROXY", "no_proxy")


def _diag(message: str, name: str = "cli") -> dict[str, str]:
    return {"dimension": "sandbox", "name": name, "message": message}


def user_homes(env: dict[str, str] | Any) -> list[str]:
    """The user's home folders: HOME, and the account's own when it differs."""
    out = [str(env.get("HOME") or "")]
    try:
        import pwd

        out.append(pwd.getpwuid(os.getuid()).pw_dir)
    except (KeyError, ImportError):
        pass
    return [h for h in dict.fromkeys(out) if h]


@dataclass(frozen=True)
class Endpoint:
    """Where the CLI's model calls go: what `network: false` lets through."""

    host: str
    port: int
    loopback: bool
    http_prefix: str | None = None  # plain HTTP: the model API's path ("" none); None: TLS

    @property
    def address(self) -> str:
        return f"{self.host}:{self.port}"


def endpoint(backend: Cli, env: Any) -> Endpoint | str:
    """The CLI's model endpoint from its variable (or its default), or why
    there is none `network: false` can let through."""
    if backend.endpoint_env is None:
        return (f"{backend.name} names no model endpoint zapcli knows, so its definition's "
                "`network: false` would leave it no way to its model: set network: true")
    var, default = backend.endpoint_env
    url = str(env.get(var) or default)
    try:
        parts = urlsplit(url)
        host = parts.hostname or ""
        port = parts.port or (443 if parts.scheme == "https" else 80)
    except ValueError:
        return f"{var} is not a URL ({url!r})"
    if not host:
        return f"{var} is not a URL ({url!r})"
    try:
        loopback = host == "localhost" or ipaddress.ip_address(host).is_loopback
    except ValueError:
        loopback = False
    if not loopback and parts.scheme != "https":
        return (f"{var} is {url}: with `network: false` zapcli lets a remote endpoint through "
                "its proxy only over https; use https, a local endpoint, or set network: true")
    if loopback and port < 1024:
        return (f"{var} is {url}: with `network: false` zapcli relays a local endpoint at its "
                "own port, which must be 1024 or above inside the sandbox; serve it on a higher "
                "port or set network: true")
    plain = parts.scheme == "http"
    return Endpoint(host.lower(), port, loopback, parts.path.rstrip("/") if plain else None)


def git_identity(env: dict[str, str], home: Path) -> str | None:
    """A global git config holding only the user's name and email (their own
    ~/.gitconfig is out of view, and may hold credentials or commands), so
    the CLI's commits carry them; its path, or None when git has none."""
    git = shutil.which("git", path=env.get("PATH"))
    if git is None:
        return None
    try:
        found = subprocess.run([git, "config", "--global", "--get-regexp", r"^user\.(name|email)$"],
                               env=env, capture_output=True, text=True, timeout=10,
                               stdin=subprocess.DEVNULL).stdout
    except (OSError, subprocess.TimeoutExpired):
        return None
    lines = [ln.split(" ", 1) for ln in found.splitlines() if " " in ln]
    if not lines:
        return None
    def quoted(value: str) -> str:
        value = " ".join(value.split()).replace("\\", "\\\\").replace('"', '\\"')
        return f'"{value}"'

    text = "[user]\n" + "".join(f"\t{k.split('.', 1)[1]} = {quoted(v)}\n" for k, v in lines)
    path = home / "zapcli-gitconfig"
    write_files(home, {path.name: text})
    return str(path)


class Unshowable(Exception):
    """A folder's own settings for the CLI that its sandbox cannot show empty."""


KERNEL = ("/proc", "/dev", "/sys")  # made anew inside the sandbox: no mount of ours holds them
BLANK = ("/dev", "/dev/null")  # a link to /dev/null reads empty as it is


def kernel_way(folder: str, name: str, bound: tuple[str, ...] = ()) -> str | None:
    """The first place in /proc, /dev or /sys (but a folder of `bound`, a
    host folder mounted there) that `name` in `folder` (a real path) passes
    through, each link on the way followed as the CLI would follow it inside
    (`/proc/self` is the CLI there, not zapcli), or None."""
    rest, done, hops = [c for c in name.split("/") if c], folder, 0
    while rest:
        part = rest.pop(0)
        if part in (".", ".."):
            done = os.path.dirname(done) if part == ".." else done
            continue
        step = os.path.join(done, part)
        if step not in BLANK and any(under(step, k) for k in KERNEL) and \
                not any(under(step, b) for b in bound):
            return step
        try:
            target = os.readlink(step)
        except OSError:  # no link (or nothing there): on to the next part
            done = step
            continue
        hops += 1
        if hops > 40:  # a loop: nothing the CLI could read
            return None
        done = "/" if target.startswith("/") else done
        rest = [c for c in target.split("/") if c] + rest
    return None


def _folder_config(policy: Policy, names: tuple[str, ...], cwd: str, home: Path) -> Policy:
    """`policy` with each of `names` that exists in `cwd` or a folder above it
    (and is in view) shown empty: /dev/null over a file, an empty read-only
    folder of the private home over a folder. The CLI reads them as its own
    settings and environment; a cloned repository ships them. Raises
    Unshowable for one that leads into /proc, /dev or /sys (but /dev/null):
    made anew inside, no mount of ours holds it (/dev/zero would be read for
    ever, /proc/self/fd/1 is the CLI's own output)."""
    found: list[str] = []
    folder = os.path.realpath(cwd)
    bound = tuple(os.path.realpath(b) for b in (*policy.writable, *policy.readonly,
                                                 policy.scratch) if b)
    while names:
        for name in names:
            path = os.path.join(folder, name)
            way = kernel_way(folder, name, bound) if os.path.lexists(path) else None
            if way is not None:
                raise Unshowable(f"{path} leads to {way}, which the CLI would read as its own "
                                 "settings and its sandbox cannot show empty: remove that "
                                 "link; nothing was run")
            found += [path] if os.path.exists(path) else []
        if os.path.dirname(folder) == folder:
            break
        folder = os.path.dirname(folder)
    # a link's target: a mount covers what it leads to; a FIFO, which would hold the
    # CLI's read for good, is covered as a file
    found = [p for p in found if in_view(policy, p)]
    if not found:
        return policy
    empty = _fresh_folder(home, EMPTY)  # what an earlier run of the CLI left there goes
    covers = [(str(empty) if os.path.isdir(p) else os.devnull, os.path.realpath(p))
              for p in found]
    return plain.replace(policy, readonly=(*policy.readonly, str(empty)),
                         covers=(*policy.covers, *covers))


def _fresh_folder(home: Path, name: str = SOCKETS) -> Path:
    """The sockets folder (or `name`), made anew (0700): whatever a copied home
    (or the CLI, in an earlier run) left at that name, a link included, goes first."""
    path = home / name
    try:
        st = os.lstat(path)
    except FileNotFoundError:
        st = None
    if st is not None:
        if stat.S_ISDIR(st.st_mode):
            shutil.rmtree(path)
        else:
            os.unlink(path)
    os.mkdir(path, 0o700)
    return path


# ---------------------------------------------------------------- the request


@dataclass
class Confined:
    """One CLI run in the sandbox: `request` before the backend's launch,
    `wrap` after it, `close` when the CLI has ended."""

    backend: Cli
    policy: Policy
    bwrap: str
    sid: str
    approvals: Approvals  # the run's approval mode and folders: what its MCP gate decides by
    endpoint: Endpoint | None = None
    python: str = field(default_factory=lambda: os.path.realpath(sys.executable))
    broker: Broker | None = None
    dropped: list[str] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)
    held: Any = None  # the control files' placeholders, made and held while the CLI runs

    def _server_env(self, server: McpServer, own: dict[str, str]) -> dict[str, str]:
        env = {k: os.environ[k] for k in SERVER_ENV if os.environ.get(k)}
        if server.name in (APPROVAL_SERVER, TEAM_SERVER):  # zapcli's: its state and session
            env.update(own)
        env.update(server.env)
        env[MARKER] = self.sid
        return env

    def request(self, req: CliRequest) -> CliRequest:
        """`req` as the CLI inside sees it: MCP servers through the relay, no
        key but its own in its environment."""
        self.broker = Broker(_fresh_folder(Path(req.config_home)))
        own = {k: os.environ[k] for k in ("ZAPCLI_HOME", "ZAPCLI_CONFIG_HOME", "ZAPCLI_SESSION",
                                          "PYTHONPATH") if os.environ.get(k)}

        gate = McpGate(self.sid, self.approvals, own=(req.approval_server,),
                       servers=req.mcp_servers)

        def through(server: McpServer) -> McpServer:
            assert self.broker is not None
            path = self.broker.mcp(server.name, server, self._server_env(server, own), req.cwd,
                                   gate)
            return McpServer(name=server.name, command=self.python,
                             args=("-I", "-S", RELAY, "mcp", path), allow=server.allow,
                             trusted=server.trusted)

        keep = self.backend.key_env
        env = dict(req.env)
        if keep is not None:
            self.dropped = sorted(k for k in env if is_secret_name(k) and k not in keep)
            for name in self.dropped:
                del env[name]
        return replace(req, env=env, boxed=True,
                       mcp_servers=tuple(through(s) for s in req.mcp_servers),
                       approval_server=through(req.approval_server) if req.approval_server
                       else None)

    def wrap(self, launch: CliLaunch, req: CliRequest, command: list[str]) -> CliLaunch:
        """The launch under bubblewrap: the policy made whole for this CLI, its
        environment pointed at what it can see, the relay in front when the
        network is off. `command`: the program as config.yaml or PATH gave it
        (a wrapper's script among its arguments is shown too)."""
        env = dict(launch.env)
        program = launch.argv[0]
        from zapcli.sandbox import execonly

        out = execonly.argv(list(launch.argv), env.get("PATH"), self.backend.launcher)
        for var, value in out.env.items():  # what its launcher gives the program it starts
            if value is None:
                env.pop(var, None)
            else:
                env[var] = value
        node = shutil.which("node", path=env.get("PATH"))
        # node: the folder of its binary (a version manager's holds node alone, and the links
        # of global packages); Python (for the relay): its standard library's prefix
        roots = [req.workspace, req.cwd, *self.policy.writable]
        named = [install_root(a) for a in command[1:] if os.path.isabs(a) and os.path.isfile(a)]
        show = [install_root(program), *named,
                *([os.path.dirname(os.path.realpath(node))] if node else []),
                os.path.realpath(sys.base_prefix), self.python, os.path.dirname(RELAY), *roots,
                *([execonly.folder()] if out.copied else []), *out.sees,
                *filter(None, (git_common(r) for r in roots))]  # a --worktree tree's repository
        assert self.broker is not None
        policy, notes = whole(self.policy, home=str(req.config_home), hide=user_homes(env),
                              show=show)
        policy = plain.replace(policy, readonly=(*policy.readonly, str(self.broker.folder)))
        policy = _folder_config(policy, self.backend.folder_config, req.cwd,
                                Path(os.path.realpath(req.config_home)))
        self.policy, self.notes = policy, notes
        home = os.path.realpath(req.config_home)
        identity = git_identity(env, Path(home))  # from the user's own config, before HOME moves
        if identity:
            env["GIT_CONFIG_GLOBAL"] = identity
        for var, rel in HOME_VARS.items():  # a folder out of view: the private home's instead
            value = env.get(var)
            if value and not in_view(policy, value):
                env[var] = os.path.join(home, rel) if rel else home
        argv = out.argv
        if argv[0] == program and not in_view(policy, os.path.dirname(os.path.abspath(program))):
            argv[0] = os.path.realpath(program)
        if out.why:  # the commands it runs could reach into it (execonly)
            self.notes.append(f"{self.backend.name} runs as a program its commands can reach "
                              f"into (its open files, its MCP sessions): {out.why}")
        if not policy.network:
            for var in PROXY_VARS:
                env.pop(var, None)
        # the relay is the sandbox's pid 1 either way; with the network on it listens for nothing
        argv = [self.python, "-I", "-S", RELAY, "run",
                *(self._relay(env) if not policy.network else []), "--", *argv]
        from zapcli.host.sandbox import records
        from zapcli.sandbox import placeholders

        self.held = placeholders.hold(policy, records())  # bwrap refuses a missing one
        self.notes += self.held.notes
        outer = bwrap.argv(self.held.policy, self.bwrap,
                           root=False if self.backend.nests else None)
        # no reaper of bwrap's as pid 1 (a fork of bwrap: dumpable, holding the CLI's stdout,
        # the stream zapcli reads its usage from); the relay is, out of every command's reach
        outer.insert(1, "--as-pid-1")
        if self.backend.nests:  # a user namespace of its own, where its sandbox makes others
            outer.remove("--disable-userns")
            if os.geteuid() == 0:  # root inside would make its bwrap take the privileged way
                at = outer.index("--unshare-user") + 1
                outer[at:at] = ["--uid", str(NESTED_ID), "--gid", str(NESTED_ID)]
        return replace(launch, argv=[*outer, *argv], env=env)

    def _relay(self, env: dict[str, str]) -> list[str]:
        """The relay's listeners in front of the CLI: its model endpoint, and
        nothing else."""
        assert self.broker is not None and self.endpoint is not None
        ep = self.endpoint
        path = self.broker.tcp(ep.host, ep.port, ep.http_prefix)
        if ep.loopback:
            opts = ["--tcp", f"{ep.port}={path}"]
        else:
            opts = ["--connect", f"{PROXY_PORT}={ep.address}={path}"]
            proxy = f"http://127.0.0.1:{PROXY_PORT}"
            env.update(HTTPS_PROXY=proxy, https_proxy=proxy, HTTP_PROXY=proxy, http_proxy=proxy)
        return opts

    def diagnostics(self) -> list[dict[str, str]]:
        """What the sandbox does for this CLI, said at every start."""
        p, name = self.policy, self.backend.name
        writable = ", ".join(w for w in p.writable) or "nothing"
        if p.network:
            net = (f"the network is on: {name} itself must reach its model, so the commands it "
                   "runs can reach other hosts too (a definition's `sandbox: {network: false}` "
                   "leaves only the model's endpoint)")
        elif self.endpoint is not None and self.endpoint.loopback:
            net = (f"the network is off but for its model's endpoint {self.endpoint.address}, "
                   "relayed by zapcli at the same address")
        else:
            net = (f"the network is off but for its model's endpoint "
                   f"{self.endpoint.address if self.endpoint else '?'}, through zapcli's proxy "
                   "(HTTPS_PROXY; a CLI that ignores it cannot reach its model)")
        keys = ("every key in its environment stays (this backend names none of its own)"
                if self.backend.key_env is None else
                f"keys other than its own are left out of its environment"
                f"{' (' + ', '.join(self.dropped) + ')' if self.dropped else ''}")
        out = [_diag(f"{name} runs inside zapcli's sandbox as a whole, its own file tools and "
                     f"every command it starts: it writes only in {writable}, "
                     f"its scratch folder {p.scratch} and its private home; control files stay "
                     "read-only; your home folder and zapcli's state and config are out of "
                     f"view; it sees no other process; {keys}; {net}; MCP servers run outside "
                     "the sandbox, started by zapcli as for the built-in agent", name)]
        out += [_diag(note, name) for note in self.notes]
        return out

    def close(self) -> None:
        if self.broker is not None:
            self.broker.close()
        held, self.held = self.held, None
        if held is not None:  # the CLI has ended: nothing mounts them any more
            held.release()


def confine(ctx: Any, backend: Cli) -> Confined | Outcome | None:
    """The CLI's sandbox for this run (None: it runs unsandboxed, as a
    diagnostic says), or the `failed` Outcome when one was asked for and
    cannot be had, or `network: false` would leave the CLI no way to its
    model."""
    from zapcli.backends.sandboxed import cli_policy

    prepared = cli_policy(ctx)
    if isinstance(prepared, Outcome) or prepared.policy is None:
        return prepared if isinstance(prepared, Outcome) else None
    spawn = ctx.spawn
    box = Confined(backend, prepared.policy, prepared.bwrap, ctx.sid, Approvals(
        spawn.approval, spawn.workspace, spawn.cwd, tuple(spawn.writable_roots), spawn.unattended))
    if not prepared.policy.network:
        found = endpoint(backend, os.environ)
        if isinstance(found, str):
            return Outcome(Status.FAILED, None, f"the definition turns the network off: {found}")
        box.endpoint = found
    return box
