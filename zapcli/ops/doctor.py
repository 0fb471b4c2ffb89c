"""`zapcli doctor`: one line per check, each saying what to fix.

Imports `zapcli.config`, `zapcli.paths`, `zapcli.trust`, `zapcli.definitions`, `zapcli.capabilities`
(config of MCP servers), the backend and executor registries, `zapcli.executors.ray` when a Ray cluster is configured; the model check is `zapcli.providers.probe`, imported
by the CLI command, the one parent command that pays for the openai SDK.
"""

from __future__ import annotations

import errno
import tempfile
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from zapcli.config import Settings
from zapcli.errors import ZapcliError


@dataclass
class Check:
    """One check: `detail` is a one-line summary, `problems` one line each."""

    name: str
    ok: bool
    detail: str
    problems: list[str] = field(default_factory=list)
    warning: bool = False  # ok, but worth a look (doctor still exits 0)
    note: bool = False  # not checked, and why that is fine (doctor still exits 0)


LOW_SPACE = 64 * 2**20  # under this a few busy trails (5 MB each before trimming) fill the disk
PROBE = b"\0" * 65536  # a write the size of a busy batch: an empty file fits a full disk


def _size(n: float) -> str:
    for unit in ("bytes", "KB", "MB", "GB"):
        if n < 1024 or unit == "GB":
            return f"{n:.0f} {unit}" if unit == "bytes" else f"{n:.1f} {unit}"
        n /= 1024
    return f"{n:.1f} TB"  # unreachable; for mypy


def _probe_write(folder: Path) -> None:
    """Really write (and fsync) some bytes in `folder`, then remove them: a full
    disk still lets a file be created, only its first block fails."""
    import os

    with tempfile.NamedTemporaryFile(dir=folder, prefix=".doctor-") as fh:
        fh.write(PROBE)
        fh.flush()
        os.fsync(fh.fileno())


def _state() -> Check:
    """The state folder exists (0700), a write really lands there, and its disk
    has room (bytes and inodes); a nearly full disk is a warning."""
    import os

    from zapcli.paths import ensure_dir, subagents_dir

    try:
        folder = ensure_dir(subagents_dir())
        fs = os.statvfs(folder)
        free = fs.f_bavail * fs.f_frsize
        inodes = fs.f_favail if fs.f_files else None  # some filesystems do not count inodes
        _probe_write(folder)
    except ZapcliError as exc:
        return Check("state folder", False, exc.message)
    except OSError as exc:  # a full disk, a read-only file system: said, and the other checks go on
        fix = ("; the disk is full: free some space there or set ZAPCLI_HOME to a folder on "
               "another disk (subagents cannot record anything until then)"
               if exc.errno in (errno.ENOSPC, errno.EDQUOT) else
               "; zapcli keeps every subagent's trail there: make it writable or set "
               "ZAPCLI_HOME to a writable folder")
        return Check("state folder", False,
                     f"a test write failed: {exc.strerror or exc} ({folder} cannot be written){fix}")
    detail = f"{folder} ({_size(free)} free)"
    if free < LOW_SPACE or inodes is not None and inodes < 1000:
        room = f"only {_size(free)}" if free < LOW_SPACE else f"only {inodes} inodes"
        return Check("state folder", True, detail, [
            f"{room} free on the disk holding {folder}: trails (up to 5 MB each before "
            "trimming) and captured output (1 MB each) may not fit; free some space or set "
            "ZAPCLI_HOME elsewhere"], warning=True)
    return Check("state folder", True, detail)


def _database(state: Check) -> Check:
    """The state folder's check, failed too when zapcli.db is damaged or
    cannot be read (it holds the switches, model overrides and token ledger)."""
    from zapcli import statedb

    why = statedb.check()
    if why is None:
        return state
    return Check(state.name, False, state.detail if not state.ok else f"{state.detail}; "
                 "its database cannot be used", [*state.problems, why])


def run_checks(trust: bool = False) -> tuple[list[Check], Settings]:
    """Every check but the model's, and the settings the model check should use.

    An invalid config layer fails the config check and is skipped (as the
    watching commands do), so the other checks still run and report. The
    workspace's own files count only as its trust goes (`trust`: trust them
    first, as `zapcli trust` does): an untrusted mcp.json starts nothing.
    """
    from zapcli import trust as trusting
    from zapcli.ops.trust import first as trust_first
    from zapcli.paths import workspace_of

    workspace = workspace_of(Path.cwd())
    trust_first(workspace, trust)
    with trusting.Scope(workspace) as verdict:
        checks, settings = _checks(workspace)
    if verdict.units():  # a folder with no zapcli files of its own has nothing to trust
        checks.insert(1, _trust(verdict))
    return checks, settings


def _trust(verdict: Any) -> Check:
    """The workspace's own zapcli files: trusted (by whom, since when), or
    what was ignored and the command that trusts it (a warning: spawn goes
    on without them)."""
    notice = verdict.notice()
    if notice:
        ignored = verdict.ignored()  # the line names four; more are listed under it
        return Check("workspace trust", True, notice, [f"{rel}: {verdict.why(rel)}" for rel, _
                                                        in ignored] if len(ignored) > 4 else [],
                     warning=True)
    units = verdict.units()
    how = {"config": "by `trusted:` in your config.yaml", "inherited": "by the work that started "
           "this", "trusted": f"since {verdict.at}" if verdict.at else ""}.get(verdict.how, "")
    return Check("workspace trust", True,
                 f"{verdict.workspace}: its {len(units)} zapcli file(s) are trusted {how}".rstrip())


def _checks(workspace: Path) -> tuple[list[Check], Settings]:
    from zapcli.backends.sections import OWNERS
    from zapcli.config import load_settings

    settings = load_settings(workspace, lenient=True, owners=OWNERS)
    invalid = [line for p in settings.problems for line in p.splitlines()]
    problems = invalid + list(settings.notes)
    detail = ("config files are valid" if not problems else
              f"{len(invalid)} problem(s): spawn and run refuse to start until they are fixed "
              "(the other checks below ran without the invalid files)" if invalid else
              f"{len(problems)} workspace setting(s) not applied")
    # A setting not applied is a warning: spawn and run go on without it (and say
    # so); a cloned repository's would otherwise keep doctor failing for good.
    checks = [Check("config", not invalid, detail, problems, warning=bool(problems) and not invalid),
              _database(_state())]
    from zapcli.definitions import discover

    catalog = discover(workspace)
    checks.append(_definitions(catalog))
    from zapcli.backends.agent import grant_problems

    missing = [f"{d.name}: {g['dimension']} {g['name']}: {g['message']}"
               for d in catalog.all() for g in grant_problems(d, workspace)]
    # A warning, not a failure: spawn goes on without them (docs/how-to/definitions.md).
    checks.append(Check("capabilities", True,
                        "every declared capability is available" if not missing else
                        f"{len(missing)} declared but not available here (spawn goes on "
                        "without them)", missing, warning=bool(missing)))
    checks.append(_mcp(workspace))
    checks.append(_sandbox())
    listed = _git_lists(workspace)
    if listed is not None:
        checks.append(listed)
    checks.append(_model_shells(settings))
    checks.append(_backends(settings))
    checks.append(_executors())
    cluster = _cluster(settings)
    if cluster is not None:
        checks.append(cluster)
    return checks, settings


def _sandbox() -> Check:
    """Whether the built-in agent's commands and the agent CLIs can run in the sandbox (asked of
    the kernel again, and the answer spawn uses cached anew), and if not,
    what is missing."""
    import subprocess

    from zapcli.paths import state_dir
    from zapcli.sandbox import bwrap

    found = bwrap.cached(state_dir(), fresh=True)
    if not found.ok:
        return Check("sandbox", False, "the built-in agent's commands and the agent CLIs run "
                     "WITHOUT a sandbox (spawn says so)", [found.missing, found.fix])
    try:
        version = subprocess.run([found.program, "--version"], capture_output=True, text=True,
                                 timeout=10).stdout.strip() or found.program
    except (OSError, subprocess.TimeoutExpired):
        version = found.program
    lacks = []
    if not found.network:
        lacks.append(f"the network is NOT cut off for definitions with network: false: "
                     f"{found.network_missing}; {bwrap.NET_HINT} (until then spawn says so "
                     "each time, and --sandbox refuses them)")
    if not found.size:
        lacks.append("the scratch folder's cap (scratch_size) is the kernel's default, half the "
                     "memory: this bubblewrap is older than 0.6 and cannot size a tmpfs")
    what = ("the network as each definition says" if found.network else
            "the network ON whatever a definition says")
    return Check("sandbox", True, f"{version} ({found.program}): the built-in agent's commands "
                 "run in their own pid namespace, read-only but the writable roots and a capped "
                 f"scratch folder, {what}; an agent CLI runs there as a whole, its private home "
                 "writable, your home out of view, the network on unless its definition says "
                 "network: false (then its model's endpoint only)", lacks, warning=bool(lacks))


def _git_lists(workspace: Path) -> Check | None:
    """A setting of the person's git that lists a folder the sandbox cannot
    hold (the top of this repository: `for f in */check.sh`): sandboxed work
    here that writes or runs commands is refused at its start
    (`zapcli.gitconfigs.unholdable`), so doctor says it first. None where
    the workspace is in no repository, or nothing lists such a folder."""
    from zapcli.gitconfigs import unholdable

    try:
        found = unholdable([str(workspace)])
    except OSError:
        return None
    if not found:
        return None
    lines = [f"{key} (in {where or 'git config'}) runs {value!r}, and {what} {folder}"
             for key, value, where, what, folder in found]
    return Check("git settings", True, "a setting of your git lists a folder the sandbox cannot "
                 "keep read-only: sandboxed work here that writes or runs commands is refused at "
                 "its start (a folder it made there would run at your next git command). Change "
                 "the setting to name a folder below the top, or give such work a definition "
                 "whose sandbox.writable leaves that folder out", lines, warning=True)


def _model_shells(settings: Settings) -> Check:
    """Whether a shell a model chose (`spawn` with cli sh through `mcp serve`
    or `zapcli call`) runs in the sandbox, as the owner's config says."""
    from zapcli.paths import state_dir
    from zapcli.sandbox import bwrap

    choice = settings.model_shell_sandbox
    where = settings.where.get("model_shell_sandbox", "the default")
    said = f"model_shell_sandbox: {choice} ({where})"
    if choice == "off":
        return Check("model shells", True, f"a shell a model starts (cli sh through mcp serve or "
                     f"zapcli call) runs WITHOUT the sandbox: {said}", warning=True)
    if bwrap.cached(state_dir()).ok:
        return Check("model shells", True, "a shell a model starts (cli sh through mcp serve or "
                     f"zapcli call) runs in the sandbox, network off: {said}")
    if choice == "on":
        return Check("model shells", False, f"{said}, but this machine has no sandbox: a model's "
                     "shell spawn is refused (see the sandbox check)")
    return Check("model shells", True, f"{said}, but this machine has no sandbox: a model's shell "
                 "runs without one, and its spawn says so (see the sandbox check)", warning=True)


def _definitions(catalog: Any) -> Check:
    """How many definitions load, naming the workspace's and your own (built-in
    and plugin ones are counted only), and which are invalid (spawn refuses those)."""
    diags = [d.one_line() for d in catalog.diagnostics]
    invalid = sorted({e.name for e in catalog.entries if e.definition is None})
    detail = f"{len(catalog.names())} definitions load"
    for layer, whose in (("workspace", "this workspace's"), ("system", "yours")):
        named = [e.name for e in catalog.effective() if e.layer == layer and e.definition is not None]
        if named:
            detail += f"; {whose}: {', '.join(named)}"
    if invalid:
        detail = (f"{len(invalid)} invalid, not loaded (spawn --agent refuses them): "
                  f"{', '.join(invalid)}; {len(catalog.names())} load")
    elif diags:
        detail += f"; {len(diags)} problem(s) below"
    return Check("definitions", not diags, detail, diags)


def _backend_lines(settings: Settings) -> list[tuple[str, bool]]:
    """Each backend with a program to check (the agent CLIs, a plugin's, the
    wrappers config.yaml defines): its line and whether it was found."""
    from zapcli.backends import registry

    configured = registry.configured(settings)
    checks: list[Any] = [b.doctor for b in registry.every().values()]
    for name, spec in configured.items():
        try:
            registry.get(name)
        except (KeyError, registry.Unusable):  # a wrapper: checked as the CLI it speaks for
            backend = registry.by_format(spec.get("format"))
            if backend is not None and hasattr(backend, "doctor_line"):
                checks.append(lambda _c, b=backend, n=name, s=spec: b.doctor_line(n, s))
    from concurrent.futures import ThreadPoolExecutor

    with ThreadPoolExecutor(max_workers=max(1, len(checks))) as pool:
        lines = list(pool.map(lambda check: check(configured), checks))
    return [line for line in lines if line is not None]


def _backends(settings: Settings) -> Check:
    """Each agent CLI backend (docs/explanation/rules.md#agent-clis) with its version against the range it
    was tested with, or what to install; plugins that cannot be used."""
    from zapcli.backends import registry

    lines = _backend_lines(settings)
    broken = registry.problems()
    found = sum(1 for _, ok in lines if ok)
    stale = sum(1 for line, _ in lines if "not the versions zapcli was tested with" in line)
    detail = f"{found} of {len(lines)} agent CLIs found"
    if stale:
        detail += f"; {stale} not of a tested version"
    if broken:
        detail += f"; {len(broken)} plugin(s) cannot be used"
    return Check("backends", True, detail, [line for line, _ in lines] + broken,
                 warning=found < len(lines) or bool(stale or broken))


def _executors() -> Check:
    """The executors (docs/explanation/rules.md#remote-execution, docs/explanation/rules.md#plugins): built-in and plugins; a plugin that
    cannot be used is a warning."""
    from zapcli import executors

    names = executors.names()
    broken = executors.problems()
    lines = list(broken)
    if "ray" in names:
        from zapcli.executors.ray_api import ray_installed

        version = ray_installed()
        lines.append(f"ray: Ray {version} is installed here" if version else
                     "ray: Ray is not installed here — enough to spawn on a cluster that has it "
                     "(RAY_ADDRESS); to start a cluster from this machine: pip install 'zapcli[ray]'")
    return Check("executors", True, ", ".join(names), lines, warning=bool(broken))


def _cluster(settings: Settings) -> Check | None:
    """The Ray cluster, when one is configured (`executor: ray`, `ray.address`
    or RAY_ADDRESS): it answers, its nodes, and zapcli's pool runs on it
    (`zapcli.executors.ray.doctor`). None otherwise."""
    import os

    ray = settings.sections.get("ray") or {}
    if settings.sections.get("executor") != "ray" and not ray.get("address") \
            and not os.environ.get("RAY_ADDRESS"):
        return None
    from zapcli.executors.ray import doctor

    line, problems = doctor(ray)
    return Check("ray cluster", not problems, line, problems)


def _mcp(workspace: Path) -> Check:
    from zapcli.capabilities.mcpconfig import load_servers

    servers, diags = load_servers(workspace)
    broken = {d["name"] for d in diags if d.get("scope") == "server"} - set(servers)
    started = 0
    if servers:  # really start each one (briefly): a configured server may not run
        from zapcli.capabilities.mcp_gateway import McpGateway

        gateway = McpGateway(tuple(servers), servers, workspace, start_timeout=10.0)
        try:
            diags = [*diags, *gateway.start()]
            started = sum(1 for st in gateway.status.values() if st == "running")
        finally:
            gateway.close()
    return Check("mcp servers", not diags,
                 f"{len(servers) + len(broken)} configured, {started} started",
                 [d["message"] for d in diags])  # each message names its server or file
