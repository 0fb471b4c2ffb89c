"""docs/explanation/rules.md#approvals's one approval decision, used by the parent agent and subagents alike.
Imports: stdlib, `zapcli.control` (the one list of control files) and
`zapcli.approvaltext` (what a decision shows a person).

`decide()` is pure (it reads the filesystem only to resolve symlinks) and
answers allow / ask / deny before a tool runs. Tool kinds:

| kind      | tools                                   | confirm | workspace        | auto-edit | full  |
|-----------|-----------------------------------------|---------|------------------|-----------|-------|
| read-only | read glob grep todo task_output task_stop WebFetch WebSearch use_skill kb_search memory_read memory_search mcp_search mcp_describe subagent subagents_list board message | allow | allow | allow | allow |
| edit      | write edit                              | ask     | allow inside a root, else ask | allow | allow |
| memory    | memory_write (its folder is bound)      | ask     | allow            | allow     | allow |
| exec      | bash                                    | ask     | ask              | ask       | allow |
| mcp       | mcp_call                                | ask     | allow if allowlisted, else ask | same as workspace | allow |
| config    | subagents_save subagents_delete, subagent merge/pick (parent only) | ask | ask | ask | allow |
| unknown   | anything else                           | ask     | ask              | ask       | allow |

Choices made where the spec is silent:
- WebFetch/WebSearch only read (the network), so they never ask.
- task_stop only stops a job the model itself started (an approved bash).
- `subagent` (parent only) never asks: every child carries its own approval mode.
- `board` and `message` (`team: true`) never ask: like `todo`, they change only
  zapcli's own state of the session (its task board, a sibling's inbox).
- In `confirm` mode even allowlisted MCP calls ask ("every ... MCP call asks").
- `workspace` mode resolves the target path (`~`, `..`, symlinks, including
  dangling ones and symlinked parent folders) before checking the roots, and
  treats a control file inside a root — `.git/`, `.zapcli/`, an agent CLI's
  settings, `.envrc`, … (`zapcli.control`, in a subfolder too) — as outside:
  a hook or an `mcp.json` written there would run code or widen grants later.
  The write tools then open exactly the path decided on (`zapcli.beneath`).
- zapcli's own state, config and trees folders (`control_roots`; not the
  subagent's own tree its workspace lies in), and control files
  inside a root, ask in `auto-edit` mode too: an edit there could record a
  forged approval in a trail or loosen the config for every run. So do the
  dotfiles and dot-folders of the person's home outside the roots
  (`~/.bashrc`, `~/.gitconfig`, `~/.ssh/`, `~/.config/`): programs outside
  the sandbox run what they say; and a control file of any other folder
  outside the roots (another repository's `.git/config`, its `.zapcli/`). A root that is or contains the home is
  refused at spawn (`home_refusal`).
- A write or edit without a usable string `path` is denied (nothing to check).
- `unattended=True` turns every ask into a deny whose reason tells the model
  what to do instead.
"""

from __future__ import annotations

import os

from zapcli import control as control_list
from zapcli.approvaltext import describe
from zapcli.plain import frozen, plain

TYPE_CHECKING = False  # `typing` costs ~5 ms of start-up; annotations only need it for mypy
if TYPE_CHECKING:
    from typing import Any, Literal

    Action = Literal["allow", "ask", "deny"]

MODES = ("confirm", "workspace", "auto-edit", "full")
READ_ONLY = frozenset({
    "read", "glob", "grep", "todo", "task_output", "task_stop", "webfetch", "websearch",
    "use_skill", "kb_search", "memory_read", "memory_search", "mcp_search", "mcp_describe",
    "subagent", "subagents_list", "board", "message"})
EDIT = frozenset({"write", "edit"})
MEMORY = frozenset({"memory_write"})
EXEC = frozenset({"bash"})
MCP = frozenset({"mcp_call"})
CONFIG = frozenset({"subagents_save", "subagents_delete",  # the parent's definition tools
                    "merge", "pick"})  # the `subagent` tool's merge and pick: they change the checkout

@frozen
class Decision:
    action: Action
    summary: str  # the whole call for a person (`zapcli.approvaltext`): "bash: rm -rf build"
    reason: str  # why; for a deny, written for the model
    unasked: bool = False  # a deny only because nobody can be asked (unattended): a person could allow it


def _resolve(path: str, cwd: str) -> str:
    """Where a write to `path` really lands: `~`, `..` and symlinks resolved."""
    return os.path.realpath(os.path.join(cwd, os.path.expanduser(path)))


def _under(path: str, root: str) -> bool:
    try:
        return os.path.commonpath([path, root]) == root
    except ValueError:  # different drives
        return False


def summarize(tool: str, args: dict[str, Any], *, workspace: str, cwd: str) -> str:
    """What a person approves: the whole call (`zapcli.approvaltext.describe`)."""
    return describe(tool, args, workspace=workspace, cwd=cwd)


def _guarded(real: str, roots: list[str], names: tuple[str, ...]) -> str | None:
    """Why `real` (a resolved path) is a control file of a root, or None."""
    for root in roots:
        if _under(real, root):
            guarded = control_list.match(os.path.relpath(real, root),
                                         control_list.of_root(root, names, roots),
                                         anywhere=True)
            if guarded:
                return (f"{real} is the control file {guarded} (another program runs what it "
                        "says), which only a person may change")
            named = control_list.named_above(real, root)  # a nested repository's hooks folder
            if named:
                return (f"{real} is in {named}, which the config of the repository it lies in "
                        "runs (its hooks folder, an included file, a program): only a person "
                        "may change it")
    return None


def _edit_target(args: dict[str, Any], cwd: str, roots: list[str],
                 names: tuple[str, ...]) -> tuple[bool, str]:
    """(inside a writable root and no control file, explanation)."""
    real = _resolve(args["path"], cwd)
    guarded = _guarded(real, roots, names)
    if guarded:
        return False, guarded
    root = next((r for r in roots if _under(real, r)), None)
    if root is not None:
        return True, f"{real} is inside {root}"
    return False, f"{real} is outside the workspace and the writable roots"


def _deny_unattended(summary: str, why: str) -> str:
    return (f"this needs a person's approval ({why}), but the run is unattended, so "
            "nobody can give it. Do not retry the call. Reach the goal another way with "
            "what this mode allows, or finish and say in your report that a person must "
            f"approve: {summary}")


def _control_target(args: dict[str, Any], cwd: str, roots: list[str],
                    control_roots: tuple[str, ...], names: tuple[str, ...],
                    code: tuple[str, ...] = (), shown: tuple[str, ...] = ()) -> str | None:
    """Why a write would change what agents may do, or None: zapcli's own state
    (trails, where approvals are recorded), config and trees folders (but
    `shown`: the run's own tree, see `decide`), a folder
    zapcli or the person's programs take code from (`code`), and a control
    file inside a writable root (hooks, definitions, mcp.json, .envrc)."""
    path = args.get("path")
    if not isinstance(path, str) or not path.strip() or "\x00" in path:
        return None
    real = _resolve(path, cwd)
    mine = any(s and _under(real, os.path.realpath(s)) for s in shown)
    for control in control_roots if not mine else ():
        if control and _under(real, os.path.realpath(control)):
            return f"{real} is inside zapcli's own folder {control}, which only a person may change"
    for place in code:
        if place and _under(real, os.path.realpath(place)):
            return (f"{real} is in {place}, where zapcli or a program you run takes code from "
                    "(its Python environment, module path, PATH or LD_LIBRARY_PATH); only a "
                    "person may change it")
    # outside the writable roots (auto-edit writes anywhere): ~/.bashrc, ~/.gitconfig, ~/.ssh,
    # ~/.config are read as configuration by programs outside the sandbox
    outside = not any(_under(real, r) for r in roots)
    for home in homes() if outside else ():
        first = os.path.relpath(real, home).split(os.sep)[0] if _under(real, home) else ""
        if first.startswith(".") and first != "..":
            return (f"{real} is your home's {first}, which programs outside the sandbox read "
                    "as configuration; only a person may change it")
    # and any other folder's control files: another repository's .git/config, a .zapcli/
    # that a `trusted:` folder covers; a git folder by what it is (a bare repository, a
    # --separate-git-dir one); what the home's dotfiles lead to (stow's ~/dotfiles/bashrc)
    guarded = control_list.match(real.lstrip(os.sep), names, anywhere=True) if outside else None
    if guarded:
        return (f"{real} is the control file {guarded} of the folder it lies in (another "
                "program runs what it says), which only a person may change")
    git_dir = _git_dir_above(real)  # in a writable root too: the one a `sub/.git` file names
    if git_dir:
        return (f"{real} is inside the git folder {git_dir} (git runs what its config and hooks "
                "say), which only a person may change")
    for link, target in _dotfile_targets() if outside else ():
        if _under(real, target):
            return (f"{real} is where your {link} leads, which programs outside the sandbox "
                    "read as configuration; only a person may change it")
    return _guarded(real, roots, names)


def _git_dir_above(path: str) -> str | None:
    """The git folder `path` lies in, known by what it holds (`HEAD`,
    `objects/`, `refs/`) whatever its name: a bare repository, a
    `--separate-git-dir` one."""
    folder = os.path.dirname(path)
    while True:
        if os.path.isfile(os.path.join(folder, "HEAD")) and \
                os.path.isdir(os.path.join(folder, "objects")) and \
                os.path.isdir(os.path.join(folder, "refs")):
            return folder
        parent = os.path.dirname(folder)
        if parent == folder:
            return None
        folder = parent


def _dotfile_targets() -> list[tuple[str, str]]:
    """(the link, where it leads) for each dotfile of the home and each entry
    of its `~/.config` that is a symbolic link (GNU stow, chezmoi's symlink
    mode, a dotfiles repository): writing the target is writing the dotfile."""
    out = []
    for home in homes():
        for folder, dot in ((home, True), (os.path.join(home, ".config"), False)):
            try:
                entries = list(os.scandir(folder))
            except OSError:
                continue
            for entry in entries:
                if (entry.name.startswith(".") or not dot) and entry.is_symlink():
                    shown = os.path.join("~" if dot else "~/.config", entry.name)
                    out.append((shown, os.path.realpath(entry.path)))
    return out


def decide(mode: str, tool: str, args: dict[str, Any], *, workspace: str, cwd: str,
           writable_roots: tuple[str, ...], unattended: bool,
           mcp_allowlisted: bool = False, control_roots: tuple[str, ...] = (),
           control: tuple[str, ...] | None = None, code: tuple[str, ...] = (),
           shown: tuple[str, ...] = ()) -> Decision:
    """Whether `tool(args)` runs now ("allow"), waits for a person ("ask") or not
    at all ("deny"). Raises ValueError for a mode not in MODES (config checks it).

    `control_roots` are zapcli's own state, config and trees folders (but
    `shown`, the subagent's tree its workspace lies in,
    `zapcli.paths.own_tree`: another subagent's tree is not this one's to
    write, and `zapcli merge` would take what it wrote there as that one's
    work): an edit there
    (or in a control file of a root: `control`, the one list, None for the
    names no backend owns) asks in every mode but `full`, auto-edit
    included, since it could forge an approval or widen a grant; so does one
    in `code`, the folders zapcli's own processes and the person's programs
    take code from (`zapcli.paths.own_code`): it would run outside the sandbox."""
    if mode not in MODES:
        raise ValueError(f"unknown approval mode {mode!r}; use one of {', '.join(MODES)}")
    args = args if isinstance(args, dict) else {}
    key = tool.lower()
    summary = summarize(tool, args, workspace=workspace, cwd=cwd)

    def verdict(action: Action, reason: str) -> Decision:
        if action == "ask" and unattended:
            return Decision("deny", summary, _deny_unattended(summary, reason), unasked=True)
        return Decision(action, summary, reason)

    if key in READ_ONLY:
        return verdict("allow", f"{tool} only reads")
    if mode == "full":
        return verdict("allow", "full mode: nothing asks")
    if key in EDIT:
        if mode == "confirm":
            return verdict("ask", "confirm mode asks before every edit")
        roots = [os.path.realpath(r) for r in (workspace, *writable_roots) if r]
        names = control_list.names() if control is None else control
        why = _control_target(args, cwd, roots, control_roots, names, code, shown)
        if why:
            return verdict("ask", why)
        if mode == "auto-edit":
            return verdict("allow", "auto-edit mode: edits run")
        path = args.get("path")
        if not isinstance(path, str) or not path.strip() or "\x00" in path:
            return Decision("deny", summary, f"{tool} needs a string `path` naming the file; "
                            "fix the arguments and call it again")
        inside, why = _edit_target(args, cwd, roots, names)
        if inside:
            return verdict("allow", f"workspace mode: {why}")
        return verdict("ask", why)
    if key in MEMORY:
        if mode == "confirm":
            return verdict("ask", "confirm mode asks before every write")
        return verdict("allow", f"{tool} writes only its own memory folder")
    if key in EXEC:
        return verdict("ask", f"{mode} mode asks before running commands")
    if key in ("merge", "pick"):
        return verdict("ask", "a merge changes the person's checkout; a person approves it")
    if key in CONFIG:
        return verdict("ask", "a definition decides what agents may do; a person approves "
                              "saving or deleting one")
    if key in MCP:
        if mode != "confirm" and mcp_allowlisted:
            return verdict("allow", "the MCP tool is on its server's approval allowlist")
        if mode == "confirm":
            return verdict("ask", "confirm mode asks before every MCP call")
        return verdict("ask", "this MCP tool is not on its server's approval allowlist")
    return verdict("ask", f"{tool} is not a known read-only tool")


def write_ceiling(mode: str, workspace: str, writable_roots: tuple[str, ...]
                  ) -> tuple[tuple[str, ...] | None, bool]:
    """Where a command the agent runs may write at most, for the sandbox
    (docs/explanation/rules.md#sandbox), as this mode lets edits run without
    asking: (the roots, or None for anywhere; whether the control files inside them stay read-only).
    `confirm` and `workspace` stop at the workspace and `writable_roots`;
    `auto-edit` lets edits run anywhere, but not in a control file (`zapcli.control`);
    `full` anywhere. A definition's `sandbox.writable` never goes past this."""
    if mode not in MODES:
        raise ValueError(f"unknown approval mode {mode!r}; use one of {', '.join(MODES)}")
    if mode == "full":
        return None, False
    if mode == "auto-edit":
        return None, True
    return tuple(r for r in (workspace, *writable_roots) if r), True


def homes() -> tuple[str, ...]:
    """The person's home folder: $HOME and the account's, resolved."""
    found = [os.environ.get("HOME", "")]
    try:
        import pwd

        found.append(pwd.getpwuid(os.getuid()).pw_dir)
    except (KeyError, ImportError):
        pass
    return tuple(dict.fromkeys(os.path.realpath(h) for h in found if h and os.path.isabs(h)))


def home_refusal(mode: str, workspace: str, writable_roots: tuple[str, ...]) -> str | None:
    """Why an agent must not work with this workspace (None: it may). A
    writable root that is the person's home folder or contains it (`~`, `/home`,
    `/`) would let edits and sandboxed commands change what programs outside
    run as configuration: `~/.bashrc`, `~/.profile`, `~/.gitconfig`,
    `~/.ssh/`, `~/.config/`. Only `full` mode, which writes anywhere, lets it."""
    if mode == "full":
        return None
    for root in (workspace, *writable_roots):
        real = os.path.realpath(os.path.expanduser(root)) if root else ""
        for home in homes() if real else ():
            if home == real or home.startswith(real.rstrip("/") + "/"):
                what = "is your home folder" if home == real else f"contains your home folder {home}"
                where = "the workspace" if root == workspace else "the writable root"
                return (f"{where} {real} {what}: an agent could change your shell's start-up "
                        "files and programs' settings there (~/.bashrc, ~/.gitconfig, ~/.ssh, "
                        "~/.config), which run outside the sandbox. Start it in a project folder "
                        "(cd ~/myproject, or --cwd), or approve everything with --approval full")
    return None


# Tools whose approval is decided elsewhere: a `subagent` carries its own
# mode (but a shell `subagent` spawn is a bash command), and an `mcp_call` is
# decided by the MCP gateway at call time, with its allowlist flag.
DECIDED_ELSEWHERE = frozenset({"subagent", "mcp_call"})


def _names(value: Any) -> list[str]:
    """A list argument a model may give as a list or as "a,b" text."""
    items = [value] if isinstance(value, str) else value if isinstance(value, list) else []
    return [n.strip() for item in items if isinstance(item, str) for n in item.split(",")]


@plain
class Policy:
    """`decide` bound to one run's settings: the `check` half of the approver
    interface both approvers share (the child's trail-backed Gate and the
    terminal's); each adds its own `ask`."""

    mode: str
    workspace: str
    cwd: str
    writable_roots: tuple[str, ...]
    unattended: bool
    control_roots: tuple[str, ...] = ()  # zapcli's state, config, trees folders (see decide)
    control: tuple[str, ...] | None = None  # the one list of control files (see decide)
    code: tuple[str, ...] = ()  # where zapcli's own code comes from (see decide)
    shown: tuple[str, ...] = ()  # the run's own tree among zapcli's (see decide)

    def check(self, tool: str, args: dict[str, Any], *,
              allowlisted: bool | None = None) -> Decision:
        """allow / ask / deny for `tool(args)`, from the policy alone."""
        action = args.get("action") if tool == "subagent" else None
        if action == "spawn" and (args.get("cli") == "sh" or "sh" in _names(args.get("attempt_cli"))):
            tool, args = "bash", {"command": str(args.get("task") or "")}  # a shell command is bash
        elif action == "attempts" and args.get("check"):
            tool, args = "bash", {"command": str(args["check"])}  # run in each attempt's tree
        elif action in ("merge", "pick"):
            tool, args = str(action), {"id": args.get("id"), "squash": args.get("squash"),
                                       "rebase": args.get("rebase")}
        elif tool == "mcp_call" and allowlisted is not None:
            return decide(self.mode, "mcp_call", args, workspace=self.workspace, cwd=self.cwd,
                          writable_roots=self.writable_roots, unattended=self.unattended,
                          mcp_allowlisted=allowlisted)
        elif tool in DECIDED_ELSEWHERE:
            return Decision("allow", summarize(tool, args, workspace=self.workspace, cwd=self.cwd),
                            f"{tool} is decided when it runs")
        return decide(self.mode, tool, args, workspace=self.workspace, cwd=self.cwd,
                      writable_roots=self.writable_roots, unattended=self.unattended,
                      control_roots=self.control_roots, control=self.control, code=self.code,
                      shown=self.shown)
