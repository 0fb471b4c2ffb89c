"""The typer application: every command, its options and its help.

Imports typer and `zapcli.cli.commands`. Each command body is one line that
hands its parameters to the matching `commands.<name>.execute`, which the
fast path (`zapcli.cli.fastpath`) calls too; `zapcli.cli.argspec` is generated
from the signatures below (`python -m zapcli.cli.gen argspec`).
"""

from __future__ import annotations

from typing import Optional

import typer

from zapcli import __version__
from zapcli.cli.options import JSON, backends_help, executors_help, hide_type_labels

app = typer.Typer(
    name="zapcli", no_args_is_help=True, add_completion=False,
    rich_markup_mode="rich", context_settings={"help_option_names": ["-h", "--help"]},
    help="Parallel LLM subagents as ordinary background processes.\n\n"
         "[bold]zapcli spawn[/] starts one and returns its id at once; [bold]poll[/], [bold]wait[/], "
         "[bold]list[/], [bold]kill[/], [bold]output[/] and [bold]replay[/] work on it from any later "
         "command, even after a restart.\n\nExample: id=$(zapcli spawn --cli sh -- 'make test'); zapcli wait \"$id\"",
)


hide_type_labels()


def _run(name: str, params: dict) -> None:
    from importlib import import_module

    module = name + "_" if name == "continue" else name  # a Python keyword
    raise typer.Exit(import_module(f"zapcli.cli.commands.{module}").execute(**params))


def _version(value: bool) -> None:
    if value:
        typer.echo(f"zapcli {__version__}")
        raise typer.Exit(0)


@app.callback()
def main(version: bool = typer.Option(False, "--version", callback=_version, is_eager=True,
                                      help="Print the version and exit.")) -> None:
    """zapcli."""


@app.command()
def spawn(
    task: str = typer.Argument(..., help="What to do. '-' reads it from stdin (UTF-8, up to 1 MB).", metavar="TASK"),
    cli: Optional[str] = typer.Option(None, "--cli", help=backends_help(), metavar="NAME"),
    agent: Optional[str] = typer.Option(None, "--agent", help="Subagent definition to use (its cli: may pick the backend).", metavar="NAME"),
    model: Optional[str] = typer.Option(None, "--model", help="Model for this subagent.", metavar="MODEL"),
    timeout: Optional[float] = typer.Option(None, "--timeout", help="Deadline in seconds (default 300, config timeout_s).", metavar="SECS"),
    approval: Optional[str] = typer.Option(None, "--approval", help="confirm | workspace | auto-edit | full.", metavar="MODE"),
    cwd: Optional[str] = typer.Option(None, "--cwd", help="Directory to run in (default: here).", metavar="DIR"),
    after: Optional[list[str]] = typer.Option(None, "--after", help="Start only after this subagent completed (repeatable).", metavar="ID"),
    max_tokens: Optional[int] = typer.Option(None, "--max-tokens", help="Token budget (input + output); it stops before a model call that would pass it. Also what the subagents its work spawns are allotted from (for --cli sh only that, as --max-cost: a shell fan-out's tree budget).", metavar="N"),
    max_cost: Optional[float] = typer.Option(None, "--max-cost", help="Budget in US dollars (the backend's reported cost, else the model's price: genai-prices or prices: in config.yaml; an unpriced model is refused).", metavar="USD"),
    unattended: bool = typer.Option(False, "--unattended", help="Deny at once whatever would ask for approval.", metavar=""),
    worktree: bool = typer.Option(False, "--worktree", help="Work in a new git worktree on branch zapcli/<id>, from the current HEAD.", metavar=""),
    on_finish: Optional[str] = typer.Option(None, "--on-finish", help="Shell command run once when it ends (ZAPCLI_ID, ZAPCLI_STATUS, ZAPCLI_EXIT_CODE, ZAPCLI_TRAIL set); config on_finish.", metavar="CMD"),
    on_event: Optional[list[str]] = typer.Option(None, "--on-event", help="Shell command run once each time EVENT happens: needs_input, started, stalled, rate_limited, usage_limited, finished (ZAPCLI_EVENT, ZAPCLI_DETAIL, ZAPCLI_REQUEST set too); EVENT= turns off that hook of your config.yaml (repeatable).", metavar="EVENT=CMD"),
    output_schema: Optional[str] = typer.Option(None, "--output-schema", help="JSON Schema the final report must satisfy: a file, or the schema inline ('{...}'); poll --json: structured.", metavar="FILE"),
    executor: Optional[str] = typer.Option(None, "--executor", help=executors_help(), metavar="NAME"),
    attempts: Optional[int] = typer.Option(None, "--attempts", help="Start N attempts at the task, each in its own worktree (zapcli attempts compares them, zapcli pick keeps one).", metavar="N"),
    attempt_cli: Optional[list[str]] = typer.Option(None, "--attempt-cli", help="Backends for the attempts, used in turn: claude,codex (implies --attempts).", metavar="LIST"),
    attempt_model: Optional[list[str]] = typer.Option(None, "--attempt-model", help="Models for the attempts, used in turn (implies --attempts).", metavar="LIST"),
    sandbox: bool = typer.Option(False, "--sandbox", help="Run its commands (an agent CLI: the whole CLI) in the OS sandbox, or refuse to start (the default of the built-in agent and the agent CLIs where this machine can; sh: only with this flag). While it runs, other tools' settings your project lacks (.npmrc, .envrc, .claude/, ...) show at its top as empty placeholders the sandbox holds read-only; they go when it ends.", metavar=""),
    no_sandbox: bool = typer.Option(False, "--no-sandbox", help="Run its commands (an agent CLI: the whole CLI) without the sandbox.", metavar=""),
    trust: bool = typer.Option(False, "--trust", help="Trust this folder's own zapcli files (.zapcli/config.yaml, mcp.json, definitions, skills) as they are now, recorded as `zapcli trust` does, before using them.", metavar=""),
    resume_after_limit: bool = typer.Option(False, "--resume-after-limit", help="An agent CLI stopped by its account's usage limit is continued (zapcli continue) once the limit resets, within its tree's budget; without it nothing resumes by itself.", metavar=""),
    json: bool = JSON,
) -> None:
    """Start a subagent in the background and print its id at once.

    On a terminal the id comes with a short summary; in a pipe or $(...) only
    the id is printed, so [bold]id=$(zapcli spawn --cli sh -- 'make test')[/] works.
    With --attempts, one id a line.
    """
    _run("spawn", locals())


@app.command()
def poll(
    ids: list[str] = typer.Argument(..., help="Subagent ids.", metavar="IDS"),
    wait_secs: Optional[int] = typer.Option(None, "--wait-secs", help="Wait up to 5 s plus this many seconds (0-30, default 0; not with --no-wait).", metavar="N"),
    no_wait: bool = typer.Option(False, "--no-wait", help="Check once and return.", metavar=""),
    json: bool = JSON,
) -> None:
    """Wait briefly for subagents, then show their status and folded output."""
    _run("poll", locals())


@app.command()
def wait(
    ids: Optional[list[str]] = typer.Argument(None, help="Subagent ids (none: those of this session still running or queued, not ones already ended).", metavar="IDS"),
    timeout: Optional[float] = typer.Option(None, "--timeout", help="Give up after this many seconds (exit 4).", metavar="SECS"),
    any: bool = typer.Option(False, "--any", help="Return when any one has ended.", metavar=""),
    json: bool = JSON,
) -> None:
    """Block until subagents end. Exit 0: all completed; 3: one ended otherwise; 4: timed out.

    Without ids it waits for this session's subagents still running or queued,
    as a shell's `wait` does: one that already ended (even one that failed) is
    not counted. A script that must know how each check ended collects the ids
    spawn prints and names them: ids="$ids $(zapcli spawn ...)"; zapcli wait $ids.
    """
    _run("wait", locals())


@app.command("list")
def list_(
    all: bool = typer.Option(False, "--all", help="Every session, not just this one.", metavar=""),
    status: Optional[list[str]] = typer.Option(None, "--status", help="Only this status (running, completed, ...); repeat it for any of several (--status failed --status timeout).", metavar="STATUS"),
    limit: Optional[int] = typer.Option(None, "--limit", help="Show the newest N (default 20; 0: all).", metavar="N"),
    long: bool = typer.Option(False, "--long", "-l", help="Four lines per subagent instead of the table.", metavar=""),
    watch: bool = typer.Option(False, "--watch", "-w", help="A live table on the terminal until Ctrl-C.", metavar=""),
    json: bool = JSON,
) -> None:
    """List this session's subagents, newest first, as a compact table."""
    _run("list", locals())


@app.command()
def top(
    all: bool = typer.Option(False, "--all", help="Every session, not just this one (s switches).", metavar=""),
    tree: bool = typer.Option(False, "--tree", help="Start in the tree: who spawned whom (t switches).", metavar=""),
    filter: Optional[str] = typer.Option(None, "--filter", help="Start filtered, as / does: s:running a:explorer c:claude e:ray, words of the task.", metavar="TEXT"),
) -> None:
    """The live fleet on the terminal: needs-input first, approve/deny in place, peek, attach and send, kill, rm.

    Keys: a approve, d deny (with a reason), x kill, r rm, space mark (batch),
    enter attach (follow the output, send a message), / filter, t tree,
    b board, s this session / every session, n next that needs you, q quit.
    Needs the tui extra: pip install 'zapcli\\[tui]'.
    """
    _run("top", locals())


@app.command()
def kill(
    ids: Optional[list[str]] = typer.Argument(None, help="Subagent ids; a `zapcli run`'s id (run_...) stops that run and its subagents (SIGTERM: it ends cancelled, exit 143).", metavar="IDS"),
    grace: Optional[float] = typer.Option(None, "--grace", help="Seconds between SIGTERM and SIGKILL, 0 to 3600 (default 3).", metavar="SECS"),
    all: bool = typer.Option(False, "--all", help="Every running and queued subagent of this session.", metavar=""),
    json: bool = JSON,
) -> None:
    """Stop subagents: SIGTERM to the whole process tree, SIGKILL after the grace period."""
    _run("kill", locals())


@app.command()
def rm(
    ids: list[str] = typer.Argument(..., help="Ids of finished subagents.", metavar="IDS"),
    json: bool = JSON,
) -> None:
    """Remove finished subagents: their trails, output and markers, and each one's worktree (running ones are refused; one whose worktree holds unmerged work too)."""
    _run("rm", locals())


@app.command()
def clean(
    all: bool = typer.Option(False, "--all", help="Every session, not just this one.", metavar=""),
    status: Optional[list[str]] = typer.Option(None, "--status", help="Only those that ended so (failed, cancelled, ...); repeat it for any of several.", metavar="STATUS"),
    json: bool = JSON,
) -> None:
    """Remove every finished subagent of this session, with its worktree (one whose worktree holds unmerged work is kept)."""
    _run("clean", locals())


@app.command()
def output(
    id: str = typer.Argument(..., help="Subagent id.", metavar="ID"),
    stderr: bool = typer.Option(False, "--stderr", help="Show captured stderr instead of stdout.", metavar=""),
    follow: bool = typer.Option(False, "--follow", "-f", help="Keep streaming until the subagent ends.", metavar=""),
    raw: bool = typer.Option(False, "--raw", help="Exact bytes (control sequences are not escaped).", metavar=""),
    json: bool = JSON,
) -> None:
    """Print the whole captured output, unfolded.

    Each stream keeps up to 1 MB. Past that it keeps its first and its last
    512 KB, cut at line ends, with one line between saying how many bytes
    were left out there; a note on stderr says OUTPUT TRUNCATED."""
    _run("output", locals())


@app.command()
def replay(
    id: str = typer.Argument(..., help="Subagent id, or a `zapcli run`'s (run_…): its own conversation.", metavar="ID"),
    raw: bool = typer.Option(False, "--raw", help="Print the JSONL records themselves.", metavar=""),
    since: Optional[int] = typer.Option(None, "--since", help="Only records after this seq.", metavar="SEQ"),
    json: bool = JSON,
) -> None:
    """Show everything a subagent (or a `zapcli run`) did, from its trail.

    Each record on one line; a shell command (--cli sh), whose work no record
    holds, ends with its output and stderr folded as poll folds them, and its
    spawn line says the sandbox it ran in (sandbox=on|auto|off).
    """
    _run("replay", locals())


@app.command()
def run(
    task: Optional[str] = typer.Argument(None, help="What to do (foreground agent).", metavar="TASK"),
    subagent: bool = typer.Option(False, "--subagent", help="Child form used by spawn (internal).", metavar="", hidden=True),
    id: Optional[str] = typer.Option(None, "--id", help="Subagent id for --subagent.", metavar="ID", hidden=True),
    agent: Optional[str] = typer.Option(None, "--agent", help="Definition to use.", metavar="NAME"),
    model: Optional[str] = typer.Option(None, "--model", help="Model to use.", metavar="MODEL"),
    max_tokens: Optional[int] = typer.Option(None, "--max-tokens", help="Token budget (input + output) of the run and every subagent it starts: each is allotted a share, returned when it ends.", metavar="N"),
    max_cost: Optional[float] = typer.Option(None, "--max-cost", help="The same budget in US dollars (an unpriced model is refused).", metavar="USD"),
    max_subagents: Optional[int] = typer.Option(None, "--max-subagents", help="Subagents the run starts in all (default 32, config max_subagents; 0: no limit).", metavar="N"),
    approval: Optional[str] = typer.Option(None, "--approval", help="confirm | workspace | auto-edit | full.", metavar="MODE"),
    unattended: bool = typer.Option(False, "--unattended", help="Deny whatever would ask.", metavar=""),
    timeout: Optional[float] = typer.Option(None, "--timeout", help="Deadline in seconds (default: config timeout_s, 300).", metavar="SECS"),
    sandbox: bool = typer.Option(False, "--sandbox", help="Run its commands in the OS sandbox, or refuse to start (default: where this machine can).", metavar=""),
    no_sandbox: bool = typer.Option(False, "--no-sandbox", help="Run its commands without the sandbox.", metavar=""),
    trust: bool = typer.Option(False, "--trust", help="Trust this folder's own zapcli files (.zapcli/config.yaml, mcp.json, definitions, skills) as they are now, recorded as `zapcli trust` does, before using them.", metavar=""),
    json: bool = JSON,
) -> None:
    """Run the built-in agent in the foreground, with the subagent tool.

    Results land back: if the model answers while subagents it started still
    work, the run waits and hands each result to the model as it arrives, and
    the model goes on, until every result has reached it (--max-subagents
    bounds how many there are). Only --timeout, the budget (--max-tokens,
    --max-cost), its turn limit or you end it earlier: its subagents are
    stopped, and results the model never saw are listed as undelivered.
    Ctrl-C, SIGTERM or SIGHUP stop it at once: no model call, tool or spawn
    starts after them; exit 130, 143 or 129.
    """
    _run("run", locals())


@app.command("continue")
def continue_(
    id: str = typer.Argument(..., help="A finished subagent's id.", metavar="ID"),
    text: str = typer.Argument(..., help="What to do next. '-' reads it from stdin.", metavar="TEXT"),
    model: Optional[str] = typer.Option(None, "--model", help="Model for the new subagent (default: the old one's).", metavar="MODEL"),
    timeout: Optional[float] = typer.Option(None, "--timeout", help="Deadline in seconds (default 300, config timeout_s).", metavar="SECS"),
    on_finish: Optional[str] = typer.Option(None, "--on-finish", help="Shell command run once when it ends (default: the old one's).", metavar="CMD"),
    json: bool = JSON,
) -> None:
    """Continue a finished subagent as a new one that has its whole conversation (and worktree).

    The new subagent's first model request holds the old conversation, then TEXT;
    its id is printed at once, as with spawn.
    """
    _run("continue", locals())


@app.command()
def gc(
    dry_run: bool = typer.Option(False, "--dry-run", help="Say what would be removed; remove nothing.", metavar=""),
    json: bool = JSON,
) -> None:
    """Apply retention now: trim big trails, keep at most max_kept subagents, remove clean finished worktrees.

    Retention runs only while no subagent is running or queued; with one, gc skips it and says so.
    """
    _run("gc", locals())


@app.command()
def session(json: bool = JSON) -> None:
    """Print the current session (ZAPCLI_SESSION, else named after the process session; --json says which)."""
    _run("session", locals())


@app.command()
def send(
    id: str = typer.Argument(..., help="Subagent id.", metavar="ID"),
    text: str = typer.Argument(..., help="Message for the model, delivered before its next call.", metavar="TEXT"),
    json: bool = JSON,
) -> None:
    """Steer a running subagent: TEXT reaches its model before its next call, if it makes one.

    A subagent that ends without another model call never reads it: wait,
    poll and list then say it was not delivered, and zapcli continue ID TEXT
    carries its work on.
    """
    _run("send", locals())


@app.command()
def approve(
    id: str = typer.Argument(..., help="Subagent id.", metavar="ID"),
    req: Optional[str] = typer.Argument(None, help="Request id (default: the pending one).", metavar="REQ"),
    json: bool = JSON,
) -> None:
    """Approve a subagent's pending request; it resumes within 500 ms."""
    _run("approve", locals())


@app.command()
def deny(
    id: str = typer.Argument(..., help="Subagent id.", metavar="ID"),
    req: Optional[str] = typer.Argument(None, help="Request id (default: the pending one).", metavar="REQ"),
    reason: Optional[str] = typer.Option(None, "--reason", help="Told to the model.", metavar="TEXT"),
    json: bool = JSON,
) -> None:
    """Deny a subagent's pending request; the model is told why."""
    _run("deny", locals())


@app.command()
def usage(
    run: Optional[str] = typer.Argument(None, help="A `zapcli run`'s id: its figures and its subagents' (its session's). Default: this session.", metavar="RUN"),
    all: bool = typer.Option(False, "--all", help="Every session, not just this one.", metavar=""),
    json: bool = JSON,
) -> None:
    """Token totals per subagent and per session, subagents included in their parent's."""
    _run("usage", locals())


@app.command()
def doctor(
    trust: bool = typer.Option(False, "--trust", help="Trust this folder's own zapcli files as they are now (as `zapcli trust` does) before checking them; untrusted, their MCP servers are not started.", metavar=""),
    model: Optional[str] = typer.Option(None, "--model", help="Check this model (as spawn --model would reach it); unreachable, doctor fails. Without it a configured model is checked, and none is a note (only the built-in agent needs one).", metavar="MODEL"),
    json: bool = JSON,
) -> None:
    """Check config, state folder, definitions, MCP servers and model reachability.

    Exit 0 when nothing failed. No model configured is a note, not a failure:
    shell commands and the agent CLIs run without one."""
    _run("doctor", locals())


@app.command()
def call(
    document: Optional[str] = typer.Argument(None, help="One call of the tool-schema tool as JSON, e.g. '{\"action\": \"list\"}'; '-' or nothing reads it from stdin.", metavar="JSON"),
    json: bool = typer.Option(False, "--json", help="Print the result's JSON document instead of its text.", metavar=""),
) -> None:
    """Execute one `tool-schema` call and print exactly the text a model would get.

    Exit codes as the matching command's: 0 done, 1 failed, 2 bad call; wait adds 3 and 4.
    A shell the call spawns (cli sh) is a model's: in the sandbox, no key in its
    environment (config model_shell_sandbox).
    """
    _run("call", locals())


@app.command("tool-schema")
def tool_schema(
    format: str = typer.Option("openai", "--format", help="The framework's shape: openai (Chat Completions function tool, strict), responses (Responses API function tool), anthropic (Messages API tool), mcp (an MCP Tool).", metavar="FORMAT"),
    json: bool = typer.Option(True, "--json", help="Always JSON.", metavar="", hidden=True),
) -> None:
    """Print the `subagent` tool's definition, to register zapcli in another agent framework.

    Its calls' arguments go to `zapcli call` as they are (one JSON object).
    """
    _run("tool_schema", locals())


@app.command()
def export(
    id: str = typer.Argument(..., help="Subagent (or run) id: it and every subagent started from it.", metavar="ID"),
    format: str = typer.Option("atif", "--format", help="atif: an ATIF v1.7 trajectory, subagents embedded.", metavar="FORMAT"),
    output: Optional[str] = typer.Option(None, "--output", "-o", help="Write to FILE (default: stdout).", metavar="FILE"),
    json: bool = JSON,
) -> None:
    """Write a subagent's tree as an ATIF trajectory (the trail stays the source of truth)."""
    _run("export", locals())


@app.command()
def timeline(
    id: Optional[str] = typer.Argument(None, help="Subagent (or run) id: it and every subagent started from it.", metavar="ID"),
    session: Optional[list[str]] = typer.Option(None, "--session", help="Every subagent of session S instead (repeatable).", metavar="S"),
    html: Optional[str] = typer.Option(None, "--html", help="Write a self-contained page to FILE.", metavar="FILE"),
    format: Optional[str] = typer.Option(None, "--format", help="perfetto: Chrome trace-event JSON for ui.perfetto.dev; html: the page (with -o FILE), as --html.", metavar="FORMAT"),
    output: Optional[str] = typer.Option(None, "--output", "-o", help="File for --format (perfetto: default stdout; html: needed).", metavar="FILE"),
    json: bool = typer.Option(False, "--json", help="Say what was written (file, format, subagents) as one JSON document.", metavar=""),
) -> None:
    """Draw a tree's timeline: queued, running, awaiting approval, ended; model and tool calls as bars.

    Example: zapcli timeline --session "$(zapcli session)" --html fleet.html
    """
    _run("timeline", locals())


@app.command()
def man(
    path: bool = typer.Option(False, "--path", help="Print the man page's file instead of showing it.", metavar=""),
    install: bool = typer.Option(False, "--install", help="Copy it to ~/.local/share/man/man1, where `man zapcli` finds it.", metavar=""),
    json: bool = JSON,
) -> None:
    """Show zapcli's man page (every command and option, exit codes, files, environment)."""
    _run("man", locals())


@app.command("help")
def help_(
    command: Optional[list[str]] = typer.Argument(None, help="The command, and its sub-command, to show help for.", metavar="COMMAND"),
) -> None:
    """Show the help of zapcli or of one of its commands (as `--help` does).

    Example: zapcli help worktree list
    """
    _run("help", locals())


# `trust` and `untrust`, and the command groups (worktree, agents, mcp, trace, completion),
# live beside this module.
import zapcli.cli.tree_commands  # noqa: E402, F401
import zapcli.cli.trust_commands  # noqa: E402, F401
from zapcli.cli.groups import agents_app, completion_app, mcp_app, trace_app, worktree_app  # noqa: E402

app.add_typer(worktree_app, name="worktree")
app.add_typer(agents_app, name="agents")
app.add_typer(mcp_app, name="mcp")
app.add_typer(trace_app, name="trace")
app.add_typer(completion_app, name="completion")
from zapcli.cli.board_group import board_app  # noqa: E402

app.add_typer(board_app, name="board")
