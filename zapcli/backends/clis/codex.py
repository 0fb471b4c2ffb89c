"""The Codex CLI (0.169) as a backend: how `codex exec --json` is started
(docs/explanation/rules.md#agent-clis). Imports only the standard library, `zapcli.backends.clis.base`,
`zapcli.sandbox.execonly` (its launcher's declaration) and, for the events,
`zapcli.backends.clis.codex_events`.

Launch. `codex exec --json --skip-git-repo-check [--trust] [--model M]
[--output-schema FILE] -` (or `codex exec resume ... THREAD_ID -`): the task
always arrives on stdin (`-`; the runner closes the pipe after the last byte),
never on argv. Without `--skip-git-repo-check` codex refuses a folder that is
not a git repository. `--trust` (trust the project, recorded in the private
home) only in a tree zapcli created (`--worktree`, C25); elsewhere the
folder stays as trusted as the private home says: not at all. Trusted, it
would read the tree's own `.codex/config.toml` (a repository commits one:
its sandbox, approvals, commands' environment), which its sandbox shows
empty (`folder_config`).

Private config home. `CODEX_HOME` = the request's config home, holding the
`config.toml` written here (codex also keeps its sessions, sqlite state and
logs there; `codex exec resume` needs the same home):
- a model provider `zapcli` whose `base_url` is `OPENAI_BASE_URL` (codex 0.169
  ignores that variable itself), `env_key = "OPENAI_API_KEY"` (the key stays
  in the environment, never in the file), `wire_api = "responses"`;
- `approval_policy = "never"` (exec never prompts: what would ask is denied)
  and `sandbox_mode` from the approval mode: full → danger-full-access,
  workspace/auto-edit → workspace-write, confirm or unattended → read-only.
  In the config, not as `--sandbox`, because `exec resume` has no such flag;
- `[analytics] enabled = false`, `[features] plugins = false` (offline they
  wait on the network), `unbounded_connection_retries = false` (else an
  unreachable endpoint is retried forever: "Reconnecting... waiting for
  network"; without it codex gives up after 5 retries, ~25 s),
  `shell_snapshot = false` (a snapshot file in CODEX_HOME holds every
  exported variable, the API key included), `[shell_environment_policy]
  exclude` of KEY/TOKEN/SECRET/PASSWORD names (codex 0.169 otherwise hands
  OPENAI_API_KEY to every command the model runs),
  `developer_instructions` = the definition's prompt (codex appends it to its
  own instructions as a developer message);
- each MCP server as `[mcp_servers.NAME]` with `required = true` (codex waits
  for it before the first request; otherwise a server slower than codex's
  first request never reaches the model in a one-turn exec) and its tools'
  approval: full → every tool approved, workspace → the `allow` list, other
  modes → none (exec denies them); zapcli's team server (trusted) → every tool. Secret-named env values go through the
  environment (`env_vars`), not the file.

Helper links. codex (0.169) puts `codex-linux-sandbox` and `apply_patch`
links to itself in a folder under `CODEX_HOME/tmp/arg0-linux/` and on its
PATH; with bubblewrap installed its sandboxed shell runs `bwrap ...
codex-linux-sandbox ...`, found through that PATH entry. It refuses to make
the folder when CODEX_HOME lies under the temporary folder (TMPDIR, else
/tmp), and every sandboxed command then fails "bwrap: execvp
codex-linux-sandbox: No such file or directory". So when the private home is
under the temporary folder it is given (the runner's TMPDIR is the
subagent's scratch folder, beside the home, so only a home under /tmp
without one), codex gets `TMPDIR=<home>/tmp` instead (`_own_tmp`), private
as well.

Sandbox (docs/explanation/rules.md#sandbox). zapcli's own sandbox does not wrap an agent CLI; codex
has one of its own, so a definition's `sandbox:` maps onto it in
workspace-write (`network_access`, extra `writable_roots`, /tmp no longer
writable: only its own temp folder, the subagent's scratch); what it does not
enforce (its pid namespace; everything under full) is a `sandbox`
diagnostic at every start.

Launcher. `codex` on PATH is the npm package's node script, which starts the
native agent of the platform package (`@openai/codex-linux-x64/vendor/
<triple>/bin/codex`) with its own stdio, `CODEX_MANAGED_PACKAGE_ROOT` and
`CODEX_MANAGED_BY_NPM=1` (the launcher says bun, pnpm or vite+ when they own
the install; codex uses it for its update hint). In zapcli's sandbox that
agent — the process holding the stream zapcli reads, and the API key — runs
itself, from an execute-only copy beside links to its `codex-resources/`,
`codex-path/` and manifest (`launcher`, `zapcli.sandbox.execonly`): no
command it runs can reopen its fds or read its environment.

Tools. codex has no per-tool allow list. When the definition declares
`tools`: no bash → `features.shell_tool = false`; neither write nor edit →
sandbox read-only (apply_patch is still offered, and refused); no WebSearch →
`web_search = "disabled"`; WebFetch → network inside workspace-write; goals
and codex's own sub-agents are switched off. What cannot be withheld is a
diagnostic.
"""

from __future__ import annotations

import json
import re
from collections.abc import Mapping
from typing import Any

from zapcli.backends.clis.backend import CliBackend
from zapcli.backends.clis.base import CliLaunch, CliRequest, EventParser, McpServer
from zapcli.redact import MARKERS, is_secret_name
from zapcli.sandbox.execonly import Launcher

DEFAULT_BASE_URL = "https://api.openai.com/v1"
SCHEMA_FILE = "output-schema.json"
SECRET_GLOBS = [f"*{m}*" for m in MARKERS]  # codex's shell_environment_policy excludes these
_SERVER_NAME = re.compile(r"^[A-Za-z0-9_-]+$")


def toml_str(value: str) -> str:
    """`value` as a TOML basic string (JSON escapes are TOML escapes, except DEL)."""
    return json.dumps(value, ensure_ascii=False).replace("\x7f", "\\u007f")


def toml_value(value: Any) -> str:
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, (int, float)):
        return str(value)
    if isinstance(value, (list, tuple)):
        return "[" + ", ".join(toml_value(v) for v in value) + "]"
    return toml_str(str(value))


def sandbox_mode(req: CliRequest) -> str:
    if req.approval == "full":
        return "danger-full-access"
    if req.unattended or req.approval == "confirm":
        return "read-only"
    return "workspace-write"


def sandbox_keys(req: CliRequest, mode: str) -> dict[str, Any]:
    """The definition's `sandbox:` (docs/explanation/rules.md#sandbox) in codex's own sandbox: in
    workspace-write, `network_access` and extra `writable_roots` (relative
    to the workspace); read-only and danger-full-access take neither."""
    spec = req.sandbox
    if spec is None or mode != "workspace-write":
        return {}
    import os

    # /tmp is writable in codex's workspace-write unless excluded; zapcli's own
    # temp folder for it (TMPDIR: the subagent's scratch) stays writable
    keys: dict[str, Any] = {"sandbox_workspace_write.network_access": bool(spec.get("network")),
                            "sandbox_workspace_write.exclude_slash_tmp": True}
    roots = [os.path.join(req.workspace, str(p)) for p in spec.get("writable") or ()]
    if roots:
        keys["sandbox_workspace_write.writable_roots"] = roots
    return keys


def sandbox_text(req: CliRequest, mode: str) -> str:
    """What codex's own sandbox enforces in `mode`, and what it does not."""
    if mode == "danger-full-access":
        return ("codex runs its commands unsandboxed under --approval full "
                "(danger-full-access): nothing of zapcli's sandbox is enforced")
    if mode == "read-only":
        enforced = "no writes and no network"
    else:
        keys = sandbox_keys(req, mode)
        net = keys.get("sandbox_workspace_write.network_access",
                       bool(req.tools and "WebFetch" in req.tools))
        roots = ", ".join(["the workspace", *keys.get("sandbox_workspace_write.writable_roots",
                                                      [])])
        tmp = "its temp folder" if keys else "/tmp and its temp folder"
        enforced = f"writes only under {roots} and {tmp}, network {'on' if net else 'off'}"
    return (f"codex's own sandbox ({mode}) enforces: {enforced}; not enforced: a pid "
            "namespace of its own (other processes stay visible)")


def _diag(name: str, message: str) -> dict[str, str]:
    return {"dimension": "tools", "name": name, "message": message}


def tool_settings(req: CliRequest, sandbox: str) -> tuple[dict[str, Any], str, list[dict[str, str]]]:
    """(top-level config keys, sandbox mode, diagnostics) for the declared tools."""
    if req.tools is None:
        return {}, sandbox, []
    granted = {t.lower() for t in req.tools}
    keys: dict[str, Any] = {"features.goals": False, "agents.enabled": False}
    diags: list[dict[str, str]] = []
    if "bash" not in granted:
        keys["features.shell_tool"] = False
    if not granted & {"write", "edit"} and sandbox != "read-only":
        sandbox = "read-only"
        diags.append(_diag("write", "codex: write/edit not granted, so its sandbox is "
                           "read-only; its apply_patch tool is still offered and is refused"))
    if "websearch" not in granted:
        keys["web_search"] = "disabled"
    if "webfetch" in granted:
        keys["sandbox_workspace_write.network_access"] = True
        diags.append(_diag("WebFetch", "codex has no web fetch tool: it fetches through its "
                           "shell, with network allowed in its sandbox"))
    for name in sorted({"read", "glob", "grep"} - granted):
        if "bash" in granted:
            diags.append(_diag(name, f"codex cannot withhold {name}: its shell reads any file "
                               "the sandbox can read"))
    if "bash" not in granted and granted & {"read", "glob", "grep"}:
        diags.append(_diag("read", "codex reads files only through its shell, which is not "
                           "granted: read/glob/grep have no codex tool"))
    if "todo" not in granted:
        diags.append(_diag("todo", "codex's plan tool (update_plan) cannot be switched off"))
    diags.append(_diag("request_user_input", "codex always offers request_user_input and "
                       "view_image; in exec mode nobody answers a question"))
    return keys, sandbox, diags


def _mcp_section(srv: McpServer, req: CliRequest, env: dict[str, str]) -> list[str]:
    head = f"mcp_servers.{srv.name}"
    lines = [f"[{head}]", f"command = {toml_str(srv.command)}",
             f"args = {toml_value(list(srv.args))}", "required = true",
             "startup_timeout_sec = 60"]
    if srv.cwd:
        lines.append(f"cwd = {toml_str(srv.cwd)}")
    plain = {k: v for k, v in srv.env.items() if not is_secret_name(k)}
    secret = sorted(k for k in srv.env if is_secret_name(k))
    if plain:
        lines.append("env = { " + ", ".join(f"{toml_str(k)} = {toml_str(v)}"
                                            for k, v in plain.items()) + " }")
    if secret:
        lines.append(f"env_vars = {toml_value(secret)}")
        env.update({k: srv.env[k] for k in secret})
    if req.approval == "full" or srv.trusted:  # zapcli's team server: approved in every mode
        lines.append('default_tools_approval_mode = "approve"')
    elif req.approval == "workspace" and not req.unattended:
        for tool in srv.allow:
            lines += ["", f"[{head}.tools.{toml_str(tool)}]", 'approval_mode = "approve"']
    return lines + [""]


def config_toml(req: CliRequest, env: dict[str, str]) -> tuple[str, list[dict[str, str]]]:
    """The private config.toml for `req`, and the diagnostics it implies.
    Adds to `env` what MCP servers must get through the environment."""
    keys, sandbox, diags = tool_settings(req, sandbox_mode(req))
    keys.update(sandbox_keys(req, sandbox))
    base_url = req.env.get("OPENAI_BASE_URL") or DEFAULT_BASE_URL
    top = {"model_provider": "zapcli", "approval_policy": "never", "sandbox_mode": sandbox,
           "check_for_update_on_startup": False}
    if req.prompt:
        top["developer_instructions"] = req.prompt
    tables: dict[str, dict[str, Any]] = {
        "model_providers.zapcli": {"name": "zapcli", "base_url": base_url,
                                   "env_key": "OPENAI_API_KEY", "wire_api": "responses"},
        "analytics": {"enabled": False},
        "features": {"plugins": False, "unbounded_connection_retries": False,
                     "shell_snapshot": False,
                     },
        "shell_environment_policy": {"exclude": SECRET_GLOBS}}
    for dotted, value in keys.items():
        table, _, key = dotted.rpartition(".")
        if table:
            tables.setdefault(table, {})[key] = value
        else:
            top[key] = value
    lines = [f"{k} = {toml_value(v)}" for k, v in top.items()] + [""]
    for table, values in tables.items():
        lines += [f"[{table}]", *(f"{k} = {toml_value(v)}" for k, v in values.items()), ""]
    for srv in req.mcp_servers:
        if not _SERVER_NAME.match(srv.name):
            diags.append({"dimension": "mcp", "name": srv.name, "message": "codex accepts MCP "
                          "server names of letters, digits, - and _ only: not passed"})
            continue
        lines += _mcp_section(srv, req, env)
    return "\n".join(lines), diags


class CodexBackend(CliBackend):
    name = "codex"
    summary = "the Codex CLI, codex exec"
    binary = "codex"
    event_format = "codex-json"
    genai_provider = "openai"
    install_hint = "npm install -g @openai/codex"
    tested = ("0.169.0", "0.170")
    key_env = ("OPENAI_API_KEY", "CODEX_API_KEY")
    endpoint_env = ("OPENAI_BASE_URL", "https://api.openai.com/v1")
    nests = True
    control_files = (".codex",)  # the project's config.toml: MCP servers, profiles, hooks
    # a tree's (trusted: `--trust`) would set its sandbox, approvals and commands' environment
    folder_config = (".codex",)
    # its thread index stores each rollout's absolute path: a copy would resume
    # (and append to) the OLD home's rollout; without it codex finds the copy's
    resume_drop = ("state_*.sqlite*",)
    # its npm launcher (node) starts the native agent with its own stdio: in zapcli's sandbox
    # that agent runs itself, from an execute-only copy (zapcli.sandbox.execonly)
    launcher = Launcher(
        package="@openai/codex", script="bin/codex.js", entry="bin/codex",
        beside=("codex-package.json", "codex-resources", "codex-path", "bin/codex-code-mode-host"),
        platforms={"x86_64": ("@openai/codex-linux-x64", "x86_64-unknown-linux-musl"),
                   "aarch64": ("@openai/codex-linux-arm64", "aarch64-unknown-linux-musl")},
        env={"CODEX_MANAGED_PACKAGE_ROOT": "{package}", "CODEX_MANAGED_BY_NPM": "1"},
        unset=("CODEX_MANAGED_BY_BUN", "CODEX_MANAGED_BY_PNPM", "CODEX_MANAGED_BY_VITE_PLUS"))

    def join_trace(self, req: CliRequest, launch: CliLaunch) -> list[str]:
        """It reads TRACEPARENT; its exporter is an `[otel]` section of config.toml."""
        from zapcli.backends.clis import otel

        section, said = otel.codex_section(launch.env)
        launch.files["config.toml"] = launch.files.get("config.toml", "") + section
        return said

    def launch(self, req: CliRequest, command: list[str]) -> CliLaunch:
        env = dict(req.env)
        env["CODEX_HOME"] = str(req.config_home)
        _own_tmp(req, env)
        config, diags = config_toml(req, env)
        files = {"config.toml": config}
        argv = [*command, "exec"] + (["resume"] if req.resume else [])
        argv += ["--json", "--skip-git-repo-check"]
        if req.own_tree:  # a tree zapcli made of the user's repository: trusted (C25)
            argv.append("--trust")
        if req.model:
            argv += ["--model", req.model]
        if req.output_schema is not None:
            files[SCHEMA_FILE] = json.dumps(req.output_schema)
            argv += ["--output-schema", str(req.config_home / SCHEMA_FILE)]
        argv += [req.resume, "-"] if req.resume else ["-"]
        return CliLaunch(argv=argv, env=env, stdin=req.task.encode("utf-8"), files=files,
                         diagnostics=list(diags))

    def sandbox_diagnostics(self, req: CliRequest) -> list[dict[str, Any]]:
        mode = tool_settings(req, sandbox_mode(req))[1]
        return [{"dimension": "sandbox", "name": "codex", "message": sandbox_text(req, mode)}]

    def refusal(self, model: str | None, env: Mapping[str, str], cwd: str,
                own_program: bool) -> str | None:
        if own_program and not env.get("OPENAI_API_KEY"):  # our provider's env_key
            return ("codex reads its API key from OPENAI_API_KEY, which is not set: set it "
                    "(any value for a local server that checks none), then spawn again")
        return None

    def parser(self, req: CliRequest | None = None) -> EventParser:
        from zapcli.backends.clis.codex_events import CodexParser

        return CodexParser(model=req.model if req else None,
                           already=req.resume_usage if req else None)


def _own_tmp(req: CliRequest, env: dict[str, str]) -> None:
    """A home under the temp folder (a ZAPCLI_HOME in /tmp): codex then
    refuses to make its helper links there, and with a system bubblewrap its
    sandbox cannot start a single command (openai/codex #17367). Its temp
    folder becomes `<home>/tmp`, which does not hold the home."""
    import os

    tmp = os.path.realpath(env.get("TMPDIR") or "/tmp")
    home = os.path.realpath(req.config_home)
    if os.path.commonpath([home, tmp]) == tmp:
        own = os.path.join(home, "tmp")
        os.makedirs(own, mode=0o700, exist_ok=True)
        env["TMPDIR"] = own
