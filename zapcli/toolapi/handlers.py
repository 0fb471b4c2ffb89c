"""What answers each action: the same op and renderer as the CLI command.

Imports `zapcli.ops`, `zapcli.render`, `zapcli.lifecycle`, lazily per action.
Each handler takes the checked arguments (absent = None) and the `Env`, and
returns a `Reply` whose text is the renderer's lines (`plain`) and whose
document is the renderer's `doc` — what `zapcli <command> --json` prints.
"""

from __future__ import annotations

from zapcli.errors import EXIT_WAIT_TIMEOUT, UsageError, ZapcliError
from zapcli.render.common import plain

TYPE_CHECKING = False  # `typing` costs ~5 ms of start-up; annotations only need it for mypy
if TYPE_CHECKING:
    from typing import Any

    from zapcli.toolapi.env import Env, Reply

TEXT_MAX = 24 * 1024  # what one tool result shows at most (bytes of UTF-8)


def _reply(lines: Any, doc: Any, env: Env, exit_code: int = 0, code: str = "") -> Reply:
    from zapcli.toolapi.env import Reply

    return Reply(bound(plain(lines, env.surface)), doc, exit_code, code=code)


def bound(text: str, limit: int = TEXT_MAX, hint: str = "") -> str:
    """`text`, or its head and tail with a line saying how much was left out."""
    raw = text.encode("utf-8", "surrogatepass")
    if len(raw) <= limit:
        return text
    half = limit // 2
    head = raw[:half].decode("utf-8", "ignore")
    tail = raw[-half:].decode("utf-8", "ignore")
    folded = len(raw) - len(head.encode("utf-8", "surrogatepass")) - len(tail.encode("utf-8", "surrogatepass"))
    return f"{head}\n… {folded} bytes folded{hint} …\n{tail}"


NO_SHELL = ("cli `sh` runs a shell command, and this agent's definition does not grant `bash`; "
            "spawn a `zapcli` subagent instead")


def spawn(a: dict[str, Any], env: Env) -> Reply:
    from zapcli.ops.spawn import SpawnRequest
    from zapcli.ops.spawn import spawn as do_spawn
    from zapcli.render import spawn as render

    cli = a["cli"] or None  # None: the definition's `cli:`, else zapcli
    if cli == "sh" and not env.shell_allowed:
        raise ZapcliError(NO_SHELL)
    approval, unattended, max_tokens = a["approval"], bool(a["unattended"]), a["max_tokens"]
    shell = cli == "sh"  # the approval fields belong to the agent backend only
    if env.surface == "run":  # children inherit the parent's mode, never looser
        approval = None if shell else env.approval
        unattended = False if shell else env.unattended
    else:  # a model's spawn from outside: the person's own mode and workspace are its ceiling
        from zapcli.ops.delegate import within_the_user

        within_the_user(env.settings(), None if shell else approval, a["cwd"],
                        str(env.workspace()), env.confirm)
    schema = None
    if a["output_schema"] is not None:  # inline only: a tool caller names no file of ours
        from zapcli.outputschema import inline_schema

        schema = inline_schema(a["output_schema"])
    req = SpawnRequest(  # a tree's budget allots its share (`ops.tree`)
        task=a["task"] or "", cli=cli, agent=a["agent"], model=a["model"], timeout_s=a["timeout"],
        default_model=env.default_model if env.surface == "run" else None,
        approval=approval, cwd=a["cwd"] or env.cwd, after=tuple(a["after"] or ()),
        max_tokens=max_tokens, unattended=unattended, worktree=bool(a["worktree"]),
        output_schema=schema, relay=None if shell or unattended else env.relay,
        max_cost=a.get("max_cost"), traceparent=env.traceparent,
        parent=env.parent, run=env.run, siblings=env.siblings,
        batch=f"{env.parent}:{env.batch}" if env.parent and env.siblings > 1 else None,
        sandbox=env.sandbox if env.surface == "run" else None,
        fork=_fork_of(env) if a.get("fork") else None,
        model_shell=env.shell_env,  # a shell it starts is a model's: scrubbed, sandboxed
        spawner=env.spawner, ask_widening=env.ask_widening or env.confirm)
    if a.get("fork"):
        req = _keeps_its_definition(req, a["agent"], env)
    if a["attempts"] is not None or a["attempt_cli"] or a["attempt_model"]:
        if env.party is not None:
            env.party.arrive()  # each attempt is its own tree: nothing of the message's to share
        return _attempts(req, a, env)
    res = do_spawn(req, ready=None if env.party is None else env.party.ready,
                   turn=None if env.party is None else env.party.turn)
    env.started_one(res.id)
    return _reply(render.tool_lines(res), render.doc(res), env)


def _keeps_its_definition(req: Any, agent: str | None, env: Env) -> Any:
    """A fork is the run itself going on in another direction: it keeps the
    run's frozen definition and grant (never one a model names)."""
    from zapcli.plain import replace

    own = env.spawner or {}
    name = own.get("agent")
    if agent and agent != name:
        raise UsageError(f"a fork keeps this run's own definition ({name}); leave `agent` out to "
                         f"fork, or spawn {agent} without fork")
    kept = {k: own[k] for k in ("agent", "model", "definition", "grant", "diagnostics", "provider",
                                "inbox", "genai_provider", "team") if k in own}
    if req.cli not in (None, "zapcli"):
        return req  # an agent CLI cannot start from zapcli's conversation: the fork says so
    return replace(req, agent=name, cli="zapcli", inherit=kept)


def _fork_of(env: Env) -> dict[str, Any]:
    """The conversation a fork starts from: the run's whose `subagent` tool this is."""
    if env.surface != "run" or env.conversation is None:
        raise UsageError("fork starts a subagent from a `zapcli run`'s conversation: only the "
                         "subagent tool of `zapcli run` has one to give")
    return env.conversation()


def _attempts(req: Any, a: dict[str, Any], env: Env) -> Reply:
    from zapcli.ops.attempts import spawn_attempts
    from zapcli.render import attempts as render

    if a["attempt_cli"] and "sh" in a["attempt_cli"] and not env.shell_allowed:
        raise ZapcliError("cli `sh` runs a shell command, and this agent's definition does not "
                          "grant `bash`; attempt with agent backends instead")
    results = spawn_attempts(req, a["attempts"], a["attempt_cli"], a["attempt_model"])
    for res in results:
        env.started_one(res.id)
    return _reply(render.spawned_tool_lines(results), render.spawned_doc(results), env)


class _Decide(Exception):  # noqa: N818 - a signal, not an error
    """Stops a poll/wait: a subagent awaits a decision this caller must make."""


class _Capped(Exception):  # noqa: N818 - a signal, not an error
    """Stops a poll/wait at the surface's cap (`Env.cap_s`): the call answers
    "still running" before its client gives up on it."""


def _ticker(env: Env) -> Any:
    def tick(views: list[Any], elapsed: float) -> None:
        env.tick(views, elapsed)
        if env.stop_on_approval and any(v.pending_approval for v in views):
            raise _Decide()
        if env.cap_s is not None and elapsed >= env.cap_s:
            raise _Capped()
    return tick


def poll(a: dict[str, Any], env: Env) -> Reply:
    from zapcli.ops.poll import poll as do_poll
    from zapcli.render import poll as render

    wait_secs = a["wait_secs"]  # its range is checked by the op, as for the CLI
    ids, tick = env.ids(a["ids"]), _ticker(env)
    try:
        res = do_poll(ids, env.settings(), wait_secs=wait_secs or None, no_wait=bool(a["no_wait"]),
                      on_tick=lambda es, t: tick([e.view for e in es if e.view], t),
                      stop_on_approval=env.stop_on_approval)
    except (_Decide, _Capped):  # show the request now: waiting longer would only wait for
        res = do_poll(ids, env.settings(), no_wait=True)  # the deadline; or the call's cap
    env.seen(e.id for e in res.entries if e.view and e.view.terminal)
    missing = any(e.view is None for e in res.entries)  # each id answers; the code says one failed
    return _reply(render.lines(res), render.doc(res), env, 1 if missing else 0,
                  "not_found" if missing else "")


def wait(a: dict[str, Any], env: Env) -> Reply:
    """The wait, then every awaited subagent as `poll` shows it (output
    included), so the model needs no second call."""
    import time

    from zapcli.ops.poll import poll as do_poll
    from zapcli.ops.poll import wait as do_wait
    from zapcli.render import poll as render_poll
    from zapcli.render import wait as render

    if a["ids"] == []:  # given, and empty: nothing, as in the Python API (left out: the session's)
        from zapcli.ops.poll import WaitResult

        return _reply([("dim", render.EMPTY)], render.doc(WaitResult([], False, 0.0)), env)
    ids = env.ids(a["ids"]) if a["ids"] else env.outstanding()
    stopped: dict[str, Any] = {}  # why it stopped before they ended, for its document
    began = time.monotonic()
    try:
        res = do_wait(ids, env.settings(), timeout_s=a["timeout"], any_=bool(a["any"]),
                      on_tick=_ticker(env))
        head = render.lines(res)[:1] if res.timed_out else []
    except _Decide:
        res, stopped = None, {"stopped_for_approval": True}
        head = [("magenta", "[SubAgent] waiting stopped: an approval request needs your decision "
                            "(approve or deny), then wait again")]
    except _Capped:  # an ordinary answer, never an error: the model calls wait again
        res, stopped = None, {"still_running": True, "cap_s": env.cap_s}
        head = [("yellow", render.capped(env.cap_s or 0, a["timeout"]))]
    if res is not None and not res.views:  # nothing to wait for
        return _reply(render.lines(res), render.doc(res), env)
    final = do_poll(ids, env.settings(), no_wait=True)
    # the look after the wait: "waited" is the wait's time (to its cap or a
    # decision too), not the look's
    final.waited_s = res.waited_s if res is not None else time.monotonic() - began
    if res is not None and res.removed:  # gone since: the end the wait counted it by
        ended = {v.id: v for v in res.views}
        for e in final.entries:
            if e.id in res.removed and e.view is None:
                e.view, e.error = ended[e.id], None
    env.seen(e.id for e in final.entries if e.view and e.view.terminal)
    subagents = [render_poll.entry_doc(e) for e in final.entries]
    if res is None:
        from zapcli.render.docschema import stamp

        doc = stamp("wait", {"timed_out": False, **stopped, "waited_s": round(final.waited_s, 3),
                             "exit_code": EXIT_WAIT_TIMEOUT,
                             "subagents": subagents})  # stopped before they ended
        return _reply(head + [("", "")] + render_poll.lines(final), doc, env, EXIT_WAIT_TIMEOUT)
    doc = {**render.doc(res), "subagents": subagents}
    return _reply(head + ([("", "")] if head else []) + render_poll.lines(final), doc, env,
                  res.exit_code)


def list_(a: dict[str, Any], env: Env) -> Reply:
    from zapcli.ops.listing import list_subagents
    from zapcli.render import listing as render

    res = list_subagents(env.settings(), all_sessions=bool(a["all"]), status=a["status"])
    lines = render.lines(res)
    if res.in_other_sessions and env.surface != "run":  # a run reaches only its own
        lines.append(("dim", render.elsewhere(res.session, res.in_other_sessions, res.named)))
    return _reply(lines, render.doc(res), env)


def kill(a: dict[str, Any], env: Env) -> Reply:
    from zapcli.ops.kill import kill as do_kill
    from zapcli.render import kill as render

    ids = env.ids(a["ids"]) if a["ids"] or not a["all"] else []
    entries = do_kill(ids, env.settings(), grace_s=a["grace"], all_=bool(a["all"]))
    failed = any(e.failed for e in entries)
    missing = any(e.outcome == "does not exist" for e in entries)
    return _reply(render.lines(entries), render.doc(entries), env, 1 if failed else 0,
                  "not_found" if missing else "")


def output(a: dict[str, Any], env: Env) -> Reply:
    from zapcli.lifecycle.observe import observe
    from zapcli.ops.output import chunks
    from zapcli.render import output as render
    from zapcli.render.common import cut_note
    from zapcli.render.text import escape_controls
    from zapcli.trail import store

    sid, stderr = env.one(a["id"]), bool(a["stderr"])
    data = b"".join(chunks(sid, stderr=stderr))
    view = observe(sid)
    doc = render.doc(sid, stderr, data, view.stderr_written if stderr else view.stdout_written)
    path = store.path_for(sid, ".err" if stderr else ".out")
    text = bound(escape_controls(doc["text"]), hint=f"; the whole output is in {path}")
    note = cut_note(doc["written_bytes"], doc["bytes"]) if doc["truncated"] else None
    if note:
        text = f"{note}\n{text}"
    from zapcli.toolapi.env import Reply

    doc["text"] = bound(doc["text"])
    return Reply(text or "(no output)", doc)


def replay(a: dict[str, Any], env: Env) -> Reply:
    from zapcli.ops.replay import replay as do_replay
    from zapcli.render import replay as render

    res = do_replay(env.one(a["id"]), since=a["since"])
    reply = _reply(render.lines(res), render.doc(res), env)
    last = max((r.get("seq", 0) for r in res.entries if isinstance(r, dict)), default=0)
    reply.text = bound(plain(render.lines(res), env.surface),
                       hint=f"; since=SEQ shows the records after SEQ (last seq {last})")
    return reply


def send(a: dict[str, Any], env: Env) -> Reply:
    from zapcli.ops.steer import send as do_send
    from zapcli.render import messages as render

    res = do_send(env.one(a["id"]), a["text"] or "")
    return _reply(render.sent_lines(res), render.sent_doc(res), env)


def approve(a: dict[str, Any], env: Env, *, approve: bool = True) -> Reply:
    from zapcli.ops.steer import decide
    from zapcli.render import messages as render

    res = decide(env.one(a["id"]), a["req"], approve, a.get("reason"))
    return _reply(render.decided_lines(res), render.decided_doc(res), env)


def deny(a: dict[str, Any], env: Env) -> Reply:
    return approve(a, env, approve=False)


def agents(a: dict[str, Any], env: Env) -> Reply:
    from zapcli.ops.agents import list_agents, show_agent
    from zapcli.render import agents as render

    ws = env.workspace()
    if a["name"]:
        shown = show_agent(a["name"], ws)
        return _reply(render.show_lines(shown), render.show_doc(shown), env)
    res = list_agents(ws)
    return _reply(render.list_lines(res), render.list_doc(res), env)


def usage(a: dict[str, Any], env: Env) -> Reply:
    from zapcli.ops.usage import usage as do_usage
    from zapcli.render import usage as render

    parents = do_usage(all_sessions=bool(a["all"]))
    return _reply(render.lines(parents), render.doc(parents), env)


def agents_save(a: dict[str, Any], env: Env) -> Reply:
    from zapcli.definitions.manage import save_agent_text
    from zapcli.ops.delegate import save_within_spawner
    from zapcli.render import agents as render

    save_within_spawner({"yaml": a["yaml"] or ""}, env.spawner, env.ask_widening or env.confirm)
    res = save_agent_text(a["yaml"] or "", a["scope"] or "workspace", env.workspace())
    return _reply(render.saved_lines(res), render.as_doc(res), env)


def agents_delete(a: dict[str, Any], env: Env) -> Reply:
    from zapcli.definitions.manage import delete_agent
    from zapcli.render import agents as render

    res = delete_agent(a["name"], env.workspace(), scope=a["scope"])
    return _reply(render.deleted_lines(res), render.as_doc(res), env)


def diff(a: dict[str, Any], env: Env) -> Reply:
    from zapcli.ops.diff import diff as do_diff
    from zapcli.render import diff as render

    res = do_diff(env.one(a["id"]), stat=bool(a["stat"]), name_only=bool(a["name_only"]))
    reply = _reply(render.lines(res), render.doc(res), env)
    reply.text = bound(reply.text, hint="; stat or name_only shows less")
    return reply


def attempts(a: dict[str, Any], env: Env) -> Reply:
    from zapcli.ops.attempts import Check, compare, siblings_of
    from zapcli.render import attempts as render

    sid = env.one(a["id"])
    env.ids(siblings_of(sid))  # inside zapcli run: every sibling must be the run's own
    # a check a model chose runs as its shell spawns do: sandboxed as the run's own shell (its
    # --sandbox), else as the user's config says; keyless but for the definition's `env`
    sandbox = (env.sandbox if env.surface == "run" else None) or env.settings().model_shell_sandbox
    how = None if a["check"] is None else Check(a["check"], sandbox, tuple(env.shell_env))
    res = compare(sid, check=how)
    return _reply(render.lines(res), render.doc(res), env)


def _approved(what: str, env: Env) -> None:
    """A merge changes the person's checkout: it is approved like a
    configuration change (once what would refuse it anyway was said: the
    ops' `ready`), in every mode but `full`. Inside `zapcli run` the
    run's approver asked already (`zapcli.approvals`, kind merge); elsewhere
    the caller's client asks its user (`env.confirm`: an MCP elicitation),
    or, with nobody to ask, the call is refused saying how to allow it."""
    if env.surface == "run":
        return
    mode = env.settings().approval
    if mode == "full":
        return
    if env.confirm is None:
        raise ZapcliError(f"{what} changes your checkout, so a person approves it ({mode} mode) "
                          "and nobody here can be asked; run `zapcli merge ID` (or `zapcli pick "
                          "ID`) yourself, or allow it for this caller with approval: full "
                          "(ZAPCLI_APPROVAL=full)", code="needs_approval")
    ok, why = env.confirm(what)
    if not ok:
        raise ZapcliError(f"{what}: not approved ({why}); nothing was merged", code="denied")


def _control_question(sid: str, env: Env) -> Any:
    """Whether a merge may change control files: only the person says so —
    through the MCP client's question naming the files; with nobody to ask
    (`call`, a run's model, a client without elicitation) never: the refusal
    says what the person runs to allow it."""
    if env.confirm is None:
        return False
    confirm = env.confirm

    def ask(files: list[str]) -> bool:
        from zapcli.render.text import escape_controls

        shown = ", ".join(escape_controls(f) for f in files[:40])
        ok, _why = confirm(f"merge {sid}: it changes control files (files other programs read "
                           f"as configuration that runs commands): {shown}")
        return ok

    return ask


def merge(a: dict[str, Any], env: Env) -> Reply:
    from zapcli.ops.merge import merge as do_merge
    from zapcli.ops.merge import ready
    from zapcli.render import merge as render

    sid = ready(env.one(a["id"]), squash=bool(a["squash"]), rebase=bool(a["rebase"]))
    _approved(f"merge {sid} into the checkout it was spawned from"
              + (" (squash)" if a["squash"] else " (rebase)" if a["rebase"] else ""), env)
    res = do_merge(sid, squash=bool(a["squash"]), rebase=bool(a["rebase"]),
                   allow_control=_control_question(sid, env))
    return _reply(render.lines(res), render.doc(res), env)


def pick(a: dict[str, Any], env: Env) -> Reply:
    from zapcli.ops.attempts import siblings_of
    from zapcli.ops.pick import pick as do_pick
    from zapcli.ops.pick import ready
    from zapcli.render import attempts as render

    sid = env.one(a["id"])
    env.ids(siblings_of(sid))
    sid = ready(sid, squash=bool(a["squash"]), rebase=bool(a["rebase"]), force=bool(a["force"]))
    _approved(f"pick {sid}: merge it into the checkout it was spawned from and remove the other "
              "attempts' trees", env)
    res = do_pick(sid, env.settings(), squash=bool(a["squash"]), rebase=bool(a["rebase"]),
                  allow_control=_control_question(sid, env), force=bool(a["force"]))
    return _reply(render.pick_lines(res), render.pick_doc(res), env)


HANDLERS = {"spawn": spawn, "poll": poll, "wait": wait, "list": list_, "kill": kill,
            "output": output, "replay": replay, "send": send, "approve": approve, "deny": deny,
            "agents": agents, "usage": usage, "agents_save": agents_save,
            "agents_delete": agents_delete, "diff": diff, "attempts": attempts, "merge": merge,
            "pick": pick}
