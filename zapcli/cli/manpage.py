"""The man page `man/zapcli.1` (roff), rendered from the command table plus
fixed sections: TEAMS, FILES, ENVIRONMENT, EXIT STATUS. Imports nothing of zapcli."""

from __future__ import annotations

from typing import Any


def _esc(text: str) -> str:
    # rich markup out: [bold]...[/], and an escaped bracket (\[tui]) as itself
    text = text.replace("[bold]", "").replace("[/]", "").replace("\\[", "[")
    text = text.replace("\\", "\\\\")
    return "\n".join(("\\&" + ln) if ln.startswith((".", "'")) else ln for ln in text.split("\n"))


# docs/explanation/rules.md#fleets-traces-teams: what the board, messages and fork promise
TEAMS = [
    ".SH TEAMS",
    "Each session (a \\fBzapcli run\\fR, or your terminal) has a task board in zapcli.db. A claim is "
    "one transaction: concurrent claimers get each task once; \\fBclaim\\fR takes the next open task "
    "whose \\fB\\-\\-after\\fR tasks are done, and exits 3 when there is none. A subagent that holds "
    "a task and ends without \\fBdone\\fR gives it back, with a note naming it and how it ended; "
    "a quiet holder that is alive keeps it. A claim carries a fencing number (\\fBclaim "
    "\\-\\-json\\fR); \\fBdone\\fR or \\fBrelease\\fR with \\fB\\-\\-fence\\fR N "
    "under a number that is no longer the task's current claim is refused. A subagent that ended "
    "(or was found lost) is refused every board and message call, by whatever of it still runs.",
    ".PP", "\\fBboard add \\-\\-label\\fR L gives a task only to subagents whose definition "
    "serves L (\\fBboard: {labels: [L]}\\fR), \\fB\\-\\-needs\\fR TOOL only to those whose "
    "definition grants that tool; you can claim any task.",
    ".PP", "A definition with \\fBteam: true\\fR gives its agent the \\fBboard\\fR and \\fBmessage\\fR "
    "tools (an agent CLI through zapcli's team MCP server in its private config), limited to its "
    "own session. A message to a sibling (by id or name; \\fBzapcli send\\fR from a subagent's "
    "commands too) reaches the built-in agent before its next model call, an agent CLI with the "
    "answer of its next team tool call; other sessions are unreachable.",
    ".PP", "Inside \\fBzapcli run\\fR, the subagent tool's \\fBfork: true\\fR starts a built-in subagent "
    "from the run's conversation so far (the same system prompt and messages), then its task. A "
    "subagent that ends with subagents of its own still running names them; the run takes them over.",
]


# what every page ends with: exit codes, environment, files
TAIL = [
    ".SH EXIT STATUS",
    ".TP", "0", "Done.", ".TP", "1", "The operation failed; stderr says why and what to do. Also "
    "when the subagent named cannot take it (\\fBsend\\fR to or \\fBcontinue\\fR a shell command, "
    "\\fBdiff\\fR of one without a worktree). "
    "\\fBpoll\\fR, \\fBkill\\fR and \\fBrm\\fR: also when any id given does not exist (the others are "
    "still answered on stdout; an unknown id is said on stderr, as by every command, and with "
    "\\fB--json\\fR also in its place in the document). "
    "\\fBrun\\fR: also when its deadline or budget ended it (the results its model never saw are "
    "listed as undelivered).",
    ".TP", "2", "Usage error, in what was typed (bad option, empty task or message, "
    "out-of-range value).",
    ".TP", "3", "\\fBwait\\fR: an awaited subagent ended other than completed.",
    ".TP", "4", "\\fBwait\\fR: the wait itself stopped before they ended: its timeout; as a tool, "
    "an approval request the caller must decide, or (MCP) its cap of 40 s a call.",
    ".TP", "129", "\\fBrun\\fR: its terminal closed (SIGHUP); it stopped as for Ctrl-C.",
    ".TP", "130", "Interrupted (Ctrl-C): spawned subagents keep running; \\fBrun\\fR says "
    "\\fBzapcli: interrupted\\fR once, makes no model call and starts no tool or subagent after "
    "it, and stops its own subagents, naming them.",
    ".TP", "143", "\\fBrun\\fR: terminated by SIGTERM; it stops as for Ctrl-C.",
    ".SH ENVIRONMENT",
    ".TP", "ZAPCLI_HOME", "State folder (trails, output, database). Default $XDG_STATE_HOME/zapcli "
    "(~/.local/state/zapcli). A relative path is taken from the current directory.",
    ".TP", "ZAPCLI_CONFIG_HOME", "Config folder. Default $XDG_CONFIG_HOME/zapcli (~/.config/zapcli).",
    ".TP", "ZAPCLI_SESSION", "Session owning new subagents. Default: the caller's process session "
    "(getsid plus its leader's start time). Set it in scripts and agent harnesses.",
    ".TP", "ZAPCLI_MODEL, OPENAI_BASE_URL, OPENAI_API_KEY", "Model access for the built-in agent.",
    ".TP", "ZAPCLI_TIMEOUT_S, ZAPCLI_MAX_CONCURRENT, ZAPCLI_MAX_KEPT, ZAPCLI_STALL_S, ZAPCLI_KILL_GRACE_S, "
    "ZAPCLI_APPROVAL, ZAPCLI_MAX_SUBAGENTS, ZAPCLI_SCRATCH_SIZE",
    "Override the matching config.yaml keys (model, providers and writable_roots have no variable).",
    ".TP", "ZAPCLI_SEARCH_URL", "WebSearch provider: a URL template with {query} returning SearXNG-style JSON.",
    ".TP", "NO_COLOR", "Disable colour.",
    ".SH FILES",
    ".TP", "$ZAPCLI_HOME/subagents/ID.jsonl", "The trail: append-only JSONL record of everything the subagent did.",
    ".TP", "$ZAPCLI_HOME/subagents/ID.out, ID.err", "Captured stdout and stderr, each capped at 1 MB: "
    "past that, its first and last 512 KB, cut at line ends, with one line between saying how many "
    "bytes were left out.",
    ".TP", "$ZAPCLI_HOME/subagents/ID.tmp/", "Its scratch folder (TMPDIR, package caches), removed "
    "when it ends; in the sandbox a tmpfs of at most scratch_size (default 1 GiB).",
    ".TP", "$ZAPCLI_HOME/subagents/ID.env",
    "A queued subagent's spawner's environment (mode 0600), deleted when it starts or is cancelled.",
    ".TP", "$ZAPCLI_HOME/removed/ID.json", "The end a subagent had when \\fBrm\\fR, \\fBclean\\fR or "
    "\\fBgc\\fR removed it (mode 0600, kept a week): \\fBwait\\fR counts it by that end.",
    ".TP", "$ZAPCLI_HOME/zapcli.db", "Machine-local definition switches, model overrides and the token ledger.",
    ".TP", "$ZAPCLI_CONFIG_HOME/config.yaml, WORKSPACE/.zapcli/config.yaml", "Settings; the workspace "
    "file cannot loosen approval or add writable roots outside the workspace.",
    ".TP", "$ZAPCLI_CONFIG_HOME/subagents/, WORKSPACE/.zapcli/subagents/",
    "Subagent definitions (YAML): the system and workspace scopes.",
    ".TP", "$ZAPCLI_CONFIG_HOME/mcp.json, WORKSPACE/.zapcli/mcp.json", "MCP servers (the workspace wins by name).",
    ".TP", "WORKSPACE/.zapcli/skills/, .claude/skills/, .agents/skills/", "Skills (folders with SKILL.md); "
    "also under $ZAPCLI_CONFIG_HOME/skills and ~/.claude/skills, ~/.agents/skills.",
    ".TP", "WORKSPACE/.zapcli/agent-memory/NAME/, WORKSPACE/.zapcli/memory/", "Private and shared memory.",
    ".TP", "$ZAPCLI_CONFIG_HOME/trust/", "Workspace trust (\\fBzapcli trust\\fR): the sha256 of each "
    "trusted file; until trusted, a workspace's config.yaml, mcp.json, definitions and skills have no effect.",
    ".PP", "WORKSPACE is the git top-level of the current directory, or the directory itself outside git.",
    ".SH SEE ALSO", "The documentation site: tutorial, how-to guides, reference and explanation "
    "(docs/ in the zapcli repository; \\fBpip install zapcli[docs]\\fR, then \\fBmkdocs serve\\fR).", "",
]


def render(spec: dict[str, Any]) -> str:
    out = [".\\\" GENERATED by `make man` from zapcli/cli/app.py; do not edit.",
           '.TH ZAPCLI 1 "" "zapcli" "User Commands"',
           ".SH NAME", "zapcli \\- parallel LLM subagents as background processes",
           ".SH SYNOPSIS", ".B zapcli", "\\fICOMMAND\\fR [\\fIOPTIONS\\fR] [\\fIARGS\\fR]",
           ".SH DESCRIPTION",
           "zapcli starts subagents as ordinary background processes. \\fBspawn\\fR returns an id at "
           "once; \\fBpoll\\fR, \\fBwait\\fR, \\fBlist\\fR, \\fBkill\\fR, \\fBoutput\\fR and \\fBreplay\\fR "
           "work on it from any later command, even after a restart, because everything lives in "
           "per-subagent JSONL trails on disk. Every command that answers with data accepts "
           "\\fB\\-\\-json\\fR (all but \\fBtop\\fR, \\fBhelp\\fR, \\fBmcp serve\\fR and the "
           "completion scripts' \\fBcompletion show\\fR, \\fBbash\\fR, \\fBzsh\\fR, \\fBfish\\fR).",
           ".SH OPTIONS",
           ".TP", "\\fB\\-\\-version\\fR", "Print the version and exit.",
           ".TP", "\\fB\\-h\\fR, \\fB\\-\\-help\\fR", "Show help (also after any command) and exit.",
           ".SH COMMANDS"]
    for cmd, v in spec.items():
        metas = v.get("arg_meta", {})
        args = " ".join(("{}" if a[3] else "[{}]").format(
            f"\\fI{(metas.get(a[0]) or a[0].upper()).strip('{}')}\\fR" + ("..." if a[2] == -1 else ""))
            for a in v["args"])
        out += [".TP", f"\\fBzapcli {cmd}\\fR [\\fIOPTIONS\\fR] {args}".rstrip(), _esc(v.get("help", ""))]
        for a in v["args"]:
            if v.get("arg_help", {}).get(a[0]):
                name = (metas.get(a[0]) or a[0].upper()).strip("{}")
                out += [".RS", ".TP", f"\\fI{name}\\fR", _esc(v["arg_help"][a[0]]), ".RE"]
        by_dest: dict[str, list[str]] = {}
        for opt, (dest, _kind, _multiple) in v["options"].items():
            by_dest.setdefault(dest, []).append(opt)
        for opts in sorted(by_dest.values(), key=lambda o: o[0]):
            dest, kind, _multiple = v["options"][opts[0]]
            given = next((v.get("option_meta", {})[o] for o in opts if v.get("option_meta", {}).get(o)), None)
            meta = "" if kind == "flag" else f" \\fI{given or kind.upper()}\\fR"
            names = ", ".join(f"\\fB{_esc(o)}\\fR" for o in sorted(opts, key=len, reverse=True))
            help_ = next((v.get("option_help", {})[o] for o in opts if o in v.get("option_help", {})), "")
            default = v.get("defaults", {}).get(dest)
            if kind != "flag" and default not in (None, "", [], ()) and "default" not in help_:
                help_ += f" [default: {default}]"
            out += [".RS", ".TP", f"{names}{meta}", _esc(help_), ".RE"]
    out += [*TEAMS, *TAIL]
    return "\n".join(out)
