"""`make demo`: the main job end to end, offline, no API key.

Part 1 runs the real `zapcli` CLI as a user would (each step is printed as the
shell command it is): `sh` subagents in parallel over this repository's own
files, poll, list, kill, wait, replay. Part 2 starts the bundled scripted
OpenAI-compatible server on 127.0.0.1 and runs a parent `zapcli run` whose
model spawns four built-in-agent subagents; they really glob, grep, read and
search this repository through their tools (one uses the workspace definition
`.zapcli/subagents/doc-reviewer.yml`, with knowledge sources and private memory), the parent collects their results and
reports, and one subagent's trail is replayed. Part 3 runs Claude Code (when
installed: on PATH or the copy `make test` pins) as a backend subagent against
the scripted Anthropic server, and says how to get it otherwise. Part 4 makes a small git
repository and two `--worktree` subagents edit it at once, each committing on
its own branch (`zapcli/<id>`), with an `--on-finish` command; one's diff is
shown and both are merged into main, then gc removes their trees. Part 5 writes
the timeline of everything it ran to a self-contained page of its own name in
the temp folder, kept after the demo, and says where it is. State and config
go to a fresh temporary ZAPCLI_HOME / ZAPCLI_CONFIG_HOME, so the demo never
touches your own subagents and your config cannot change it; first it trusts
this checkout there (`zapcli trust`), as a user would, so its workspace
definition is used. At the end nothing
it started is left running, and its folders are removed — unless
ZAPCLI_DEMO_KEEP=1 (`make demo KEEP=1`), which keeps them and prints a command
that works from any shell to look around.
"""

from __future__ import annotations

import json
import os
import re
import shlex
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path

from zapcli.selfexec import python_m

REPO = Path(__file__).resolve().parents[1]

JOBS = {
    "lines per module": "find zapcli -name '*.py' | sort | xargs wc -l | sort -n | tail -6",
    "compile check": "python3 -m compileall -q zapcli && echo 'all modules compile'",
    "TODO markers": "grep -rn 'TODO\\|FIXME' zapcli | wc -l | xargs echo 'TODO/FIXME markers in zapcli/:'",
}

CHILD_TASKS = {
    "modules": "List the Python modules of the supervisor package (zapcli/supervisor).",
    "tests": "Find which test files exercise the kill command.",
    "readme": "Read the first lines of README.md and say what zapcli is.",
    "docs": "Check that the kill command is documented for users.",
}
AGENTS = {"modules": "explorer", "tests": "explorer", "readme": "explorer", "docs": "doc-reviewer"}

# The parent's own definition (in the demo's config folder): a subagent holds at most what
# its spawner holds, so the parent holds what its four children do — explorer's read, glob,
# grep and doc-reviewer's knowledge search and private memory — and nothing more.
SURVEYOR = """name: surveyor
description: Splits a survey of this repository across subagents and sums up what they found.
tools: [read, glob, grep]
knowledge:
  - {name: readme, path: README.md}
  - {name: docs, path: "docs/**/*.md"}
  - {name: manual, path: "zapcli/cli/share/man/man1/*.1"}
memory: private
prompt: Survey the repository with parallel subagents, then report what they found.
"""

SCRIPT = [
    {"match": "Survey this repository", "turns": [
        {"text": "I'll split the survey across four subagents.",
         "tool_calls": [{"name": "subagent", "arguments": {"action": "spawn", "agent": AGENTS[key],
                                                           "task": task}} for key, task in CHILD_TASKS.items()],
         "usage": {"prompt_tokens": 900, "completion_tokens": 80}},
        {"tool_calls": [{"name": "subagent", "arguments": {"action": "wait", "timeout": 60}}],
         "usage": {"prompt_tokens": 1400, "completion_tokens": 20}},
        {"text": "Survey done: the supervisor package holds the process code, kill is covered by "
                 "the end-to-end tests, and the README describes zapcli as parallel LLM subagents "
                 "running as background processes.",
         "usage": {"prompt_tokens": 2600, "completion_tokens": 60}}]},
    {"match": CHILD_TASKS["modules"], "turns": [
        {"tool_calls": [{"name": "glob", "arguments": {"pattern": "zapcli/supervisor/*.py"}}],
         "usage": {"prompt_tokens": 300, "completion_tokens": 15}},
        {"text": "The supervisor package has the modules listed by glob above: launch, liveness, "
                 "kill and capture.", "usage": {"prompt_tokens": 420, "completion_tokens": 25}}]},
    {"match": CHILD_TASKS["tests"], "turns": [
        {"tool_calls": [{"name": "grep", "arguments": {"pattern": "def test_.*kill", "path": "tests"}}],
         "usage": {"prompt_tokens": 300, "completion_tokens": 15}},
        {"text": "The kill command is exercised by the test functions grep found above.",
         "usage": {"prompt_tokens": 600, "completion_tokens": 18}}]},
    {"match": CHILD_TASKS["readme"], "turns": [
        {"tool_calls": [{"name": "read", "arguments": {"path": "README.md", "limit": 4}}],
         "usage": {"prompt_tokens": 300, "completion_tokens": 12}},
        {"text": "zapcli runs parallel LLM subagents as ordinary background OS processes.",
         "usage": {"prompt_tokens": 380, "completion_tokens": 16}}]},
    {"match": CHILD_TASKS["docs"], "turns": [
        {"tool_calls": [{"name": "kb_search", "arguments": {"query": "zapcli kill"}}],
         "usage": {"prompt_tokens": 500, "completion_tokens": 14}},
        {"text": "kill is documented: see the README tour and the man page hits found by kb_search above.",
         "usage": {"prompt_tokens": 900, "completion_tokens": 22}}]},
]


def shown(argv: list[str]) -> str:
    """A command as a user would type it: `zapcli …`, not this Python's path."""
    from zapcli.selfexec import is_zapcli

    if n := is_zapcli(argv):
        argv = ["zapcli", *argv[n:]]
    return " ".join(shlex.quote(a) for a in argv)


def sh(argv: list[str], env: dict[str, str], capture: bool = False) -> str:
    print(f"\n$ {shown(argv)}", flush=True)
    proc = subprocess.run(argv, env=env, cwd=REPO, text=True, stdout=subprocess.PIPE if capture else None)
    if capture:
        print(proc.stdout.strip(), flush=True)
        return proc.stdout.strip()
    return ""


def part_sh(zap: list[str], env: dict[str, str]) -> None:
    print("# 1. spawn sh subagents in parallel over this repository, plus one slow one")
    ids = {t: sh(zap + ["spawn", "--cli", "sh", "--timeout", "60", "--", c], env, capture=True)
           for t, c in JOBS.items()}
    slow = sh(zap + ["spawn", "--cli", "sh", "--", "echo 'scanning forever…'; sleep 600"], env, capture=True)
    print("\n# poll returns as soon as every named subagent has finished (at most 5 s + --wait-secs)")
    sh(zap + ["poll", *ids.values(), "--wait-secs", "10"], env)
    print("\n# the slow one is still running: list shows the session, kill ends its whole tree")
    sh(zap + ["list"], env)
    print("\n# a session is one terminal (the demo's is ZAPCLI_SESSION=demo): a new terminal's "
          "list is empty, and says where the rest are")
    print("\n$ ZAPCLI_SESSION=another-terminal zapcli list", flush=True)
    subprocess.run(zap + ["list"], env={**env, "ZAPCLI_SESSION": "another-terminal"}, cwd=REPO)
    sh(zap + ["kill", slow, "--grace", "1"], env)
    sh(zap + ["wait", *ids.values()], env)
    sh(zap + ["replay", ids["lines per module"]], env)


def part_agent(zap: list[str], env: dict[str, str], home: str) -> str | None:
    print("\n# 2. the built-in agent, offline: a scripted OpenAI-compatible server on 127.0.0.1")
    script = Path(home) / "demo-script.json"
    script.write_text(json.dumps(SCRIPT), encoding="utf-8")
    server = subprocess.Popen(python_m("zapcli.testing.scripted_server", "--script", str(script)),
                              stdout=subprocess.PIPE, text=True)
    try:
        assert server.stdout is not None
        url = server.stdout.readline().split()[-1]
        agent_env = {**env, "OPENAI_BASE_URL": url, "ZAPCLI_MODEL": "scripted-demo",
                     "OPENAI_API_KEY": "sk-demo-not-a-real-key"}
        print(f"# model endpoint: {url} (OPENAI_BASE_URL), model scripted-demo (ZAPCLI_MODEL)")
        own = Path(env["ZAPCLI_CONFIG_HOME"]) / "subagents" / "surveyor.yml"
        own.parent.mkdir(parents=True, exist_ok=True)
        own.write_text(SURVEYOR, encoding="utf-8")
        print(f"# the parent's definition, {own}: what its four children hold, no more")
        run = subprocess.run(zap + ["run", "--agent", "surveyor",
                                    "Survey this repository with parallel subagents."],
                             env=agent_env, cwd=REPO, text=True, capture_output=True)
        print("\n$ zapcli run --agent surveyor 'Survey this repository with parallel subagents.'")
        print(run.stderr.rstrip())
        print(run.stdout.rstrip())
        found = re.search(r"\[run (run_\d{8}_[0-9a-f]{8})", run.stderr)
        children = json.loads(subprocess.run(zap + ["list", "--all", "--json"], env=agent_env, cwd=REPO,
                                              text=True, capture_output=True).stdout)["subagents"]
        reviewer = [c for c in children if c["agent"] == "doc-reviewer"]
        if reviewer:
            sh(zap + ["replay", reviewer[0]["id"]], agent_env)
            sh(zap + ["usage", "--all"], agent_env)
    finally:
        server.terminate()
        server.wait(timeout=10)
    return found.group(1) if found else None


def part_timeline(zap: list[str], env: dict[str, str], run_id: str | None) -> None:
    """Last: the timeline of everything the demo ran, kept after the demo's
    folders are gone (it is self-contained: open it from anywhere, offline)."""
    print("\n# 6. the fleet as a picture: a timeline of this demo's subagents (and traces, ATIF)")
    fd, name = tempfile.mkstemp(prefix="zapcli-timeline-demo-", suffix=".html")  # a name of its own
    os.close(fd)
    page = Path(name)
    sessions = ["--session", "demo"] + (["--session", run_id] if run_id else [])
    sh(zap + ["timeline", *sessions, "--html", str(page)], env)
    if run_id:
        print(f"# the same as Chrome trace events for ui.perfetto.dev: zapcli timeline --session {run_id} "
              "--format perfetto -o fleet.json\n# as an ATIF trajectory: zapcli export "
              f"{run_id} --format atif; to a collector: OTEL_EXPORTER_OTLP_ENDPOINT=... zapcli trace export {run_id}")
    print(f"\n# the timeline of this demo is at {page} — open it in a browser (file://{page}); "
          f"it is kept after the demo: rm {shlex.quote(str(page))} when done")


CLAUDE_SCRIPT = [{"match": "Count the Python modules", "turns": [
    {"reasoning": "A shell one-liner answers this.", "text": "Counting them.",
     "tool_calls": [{"name": "Bash", "arguments": {
         "command": "find zapcli -name '*.py' | wc -l", "description": "count modules"}}]},
    {"text": "zapcli has the number of Python modules the shell printed above."}]}]


def find_claude() -> str | None:
    """Claude Code on PATH, or the pinned copy `make test` installs."""
    import shutil

    found = shutil.which("claude")
    cached = REPO / ".cache" / "agent-clis" / "node_modules" / ".bin" / "claude"
    return found or (str(cached) if cached.exists() else None)


def part_backend(zap: list[str], env: dict[str, str], home: str) -> None:
    print("\n# 3. another agent CLI as the backend: Claude Code, supervised like any subagent")
    claude = find_claude()
    if claude is None:
        print("# Claude Code is not installed, so this part is skipped. Get it with\n"
              "#   npm install -g @anthropic-ai/claude-code   (or `make agent-clis` here)\n"
              "# then: zapcli spawn --cli claude 'task'  (also codex, gemini, opencode, qwen, pi)")
        return
    script = Path(home) / "claude-script.json"
    script.write_text(json.dumps(CLAUDE_SCRIPT), encoding="utf-8")
    server = subprocess.Popen(python_m("zapcli.testing.scripted_server", "--protocol", "anthropic",
                                       "--script", str(script)),
                              stdout=subprocess.PIPE, text=True)
    try:
        assert server.stdout is not None
        url = server.stdout.readline().split()[-1]
        cli_env = {**env, "ANTHROPIC_BASE_URL": url, "ANTHROPIC_API_KEY": "sk-ant-demo-not-real",
                   "PATH": f"{Path(claude).parent}{os.pathsep}{env.get('PATH', '')}"}
        print(f"# {claude}, endpoint {url} (ANTHROPIC_BASE_URL): a scripted Anthropic server")
        sid = sh(zap + ["spawn", "--cli", "claude", "--approval", "full", "--",
                        "Count the Python modules of zapcli."], cli_env, capture=True)
        sh(zap + ["wait", sid, "--timeout", "120"], cli_env)
        sh(zap + ["poll", sid, "--no-wait"], cli_env)
        sh(zap + ["replay", sid], cli_env)
    finally:
        server.terminate()
        server.wait(timeout=10)
EDITS = {
    "docs": "printf '# Usage\\n\\nRun make.\\n' > USAGE.md && git add USAGE.md && "
            "git -c user.email=demo@zapcli -c user.name=demo commit -qm 'add USAGE.md'",
    "code": "sed -i 's/return a + b/return b + a/' calc.py && git -c user.email=demo@zapcli "
            "-c user.name=demo commit -qam 'calc: commute'",
}


def part_worktrees(zap: list[str], env: dict[str, str], home: str) -> None:
    print("\n# 4. parallel coding: two subagents edit one repository, each in its own git worktree")
    repo = Path(home) / "demo-repo"
    repo.mkdir()
    git = ["git", "-c", "user.email=demo@zapcli", "-c", "user.name=demo"]
    subprocess.run([*git, "init", "-q", "-b", "main"], cwd=repo, check=True)
    (repo / "calc.py").write_text("def add(a, b):\n    return a + b\n", encoding="utf-8")
    subprocess.run([*git, "add", "calc.py"], cwd=repo, check=True)
    subprocess.run([*git, "commit", "-q", "-m", "calc"], cwd=repo, check=True)
    log = Path(home) / "finished.log"
    hook = f'echo "$ZAPCLI_ID $ZAPCLI_STATUS" >> {shlex.quote(str(log))}'
    ids = [sh(zap + ["spawn", "--cli", "sh", "--worktree", "--on-finish", hook, "--cwd", str(repo),
                     "--", cmd], env, capture=True) for cmd in EDITS.values()]
    sh(zap + ["wait", *ids], env)
    sh(zap + ["poll", "--no-wait", ids[0]], env)
    sh(zap + ["worktree", "list"], env)
    print(f"\n# each subagent committed on its own branch; main is untouched ({repo})")
    for argv in (["git", "branch", "--list"], ["git", "log", "--oneline", "--all", "--graph"]):
        print(f"\n$ {' '.join(argv)}", flush=True)
        subprocess.run(argv, cwd=repo, check=False)
    print("\n# look at one's work, then merge both into main (the second one after main moved)")
    sh(zap + ["diff", "--stat", ids[1]], env)
    for sid in ids:
        sh(zap + ["merge", sid], env)
    print("\n$ git log --oneline --graph", flush=True)
    subprocess.run(["git", "log", "--oneline", "--graph"], cwd=repo, check=False)
    sh(zap + ["gc"], env)  # merged: their trees and branches go
    end = time.monotonic() + 10  # the hooks run detached, right after each ended
    while time.monotonic() < end and len(_lines(log)) < len(ids):
        time.sleep(0.05)
    print("\n# --on-finish ran once for each:\n" + "\n".join(_lines(log)))


def part_team(zap: list[str], env: dict[str, str]) -> None:
    print("\n# 5. a team on one task board: workers claim, work and mark done; one holding a task is "
          "killed, and its task goes back to the board for another")
    for text in ("lint calc.py", "type-check calc.py", "write the changelog"):
        sh(zap + ["board", "add", text], env, capture=True)
    sh(zap + ["board", "add", "--after", "t1", "--after", "t2", "tag the release"], env, capture=True)
    me = shlex.join(zap)
    stuck = sh(zap + ["spawn", "--cli", "sh", "--", f"{me} board claim && sleep 600"], env, capture=True)

    def held() -> bool:
        board = subprocess.run(zap + ["board", "list", "--json"], env=env, text=True,
                               capture_output=True).stdout
        return f'"holder": "{stuck}"' in board

    _until(held, 30)
    sh(zap + ["kill", stuck, "--grace", "1"], env)
    sh(zap + ["board", "show", "t1"], env)  # back to open, with a note naming who held it
    loop = (f'while t=$({me} board claim --wait 5); do echo "$ZAPCLI_SUBAGENT_ID works on $t"; '
            f'{me} board done "$t" --result "done by $ZAPCLI_SUBAGENT_ID"; done')
    workers = [sh(zap + ["spawn", "--cli", "sh", "--", loop], env, capture=True) for _ in range(2)]
    sh(zap + ["wait", *workers], env)
    sh(zap + ["board", "list"], env)


def _until(cond: Callable[[], bool], timeout: float) -> None:
    end = time.monotonic() + timeout
    while not cond() and time.monotonic() < end:
        time.sleep(0.1)


def _lines(path: Path) -> list[str]:
    return path.read_text(encoding="utf-8").splitlines() if path.exists() else []


def stop_leftovers(zap: list[str], env: dict[str, str]) -> list[str]:
    """Kill whatever subagent of the demo's state folder still runs (every
    session), then end any process still carrying that ZAPCLI_HOME (there
    should be none); returns a line per process that had to be ended so."""
    import psutil

    listed = subprocess.run(zap + ["list", "--all", "--json", "--limit", "0"], env=env, cwd=REPO,
                            text=True, capture_output=True)
    try:
        views = json.loads(listed.stdout)["subagents"]
    except (ValueError, KeyError):
        views = []
    running = [v["id"] for v in views if v.get("terminal") is False]
    if running:
        subprocess.run(zap + ["kill", "--grace", "1", *running], env=env, cwd=REPO,
                       capture_output=True)
    ended = []
    for proc in psutil.process_iter(["pid", "cmdline"]):
        try:
            if proc.pid != os.getpid() and proc.environ().get("ZAPCLI_HOME") == env["ZAPCLI_HOME"]:
                proc.kill()
                ended.append(f"{proc.pid} {' '.join(proc.info['cmdline'] or [])[:80]}")
        except (psutil.Error, OSError):
            continue
    return ended


def look_around_hint(home: str) -> str:
    """A command that lists the demo's subagents from any shell: the zapcli
    next to this Python (the venv's), by its full path."""
    script = Path(sys.executable).parent / "zapcli"
    command = shlex.quote(str(script)) if script.exists() else f"{shlex.quote(sys.executable)} -m zapcli"
    return f"ZAPCLI_HOME={shlex.quote(home)} {command} list --all"


def main() -> int:
    import shutil

    home = tempfile.mkdtemp(prefix="zapcli-demo-")
    keep = os.environ.get("ZAPCLI_DEMO_KEEP", "") not in ("", "0")
    env = {**os.environ, "ZAPCLI_HOME": home, "ZAPCLI_CONFIG_HOME": os.path.join(home, "config"),
           "ZAPCLI_SESSION": "demo"}
    for key in ("ZAPCLI_MODEL", "OPENAI_BASE_URL", "OPENAI_API_KEY", "ANTHROPIC_BASE_URL",
                "ANTHROPIC_API_KEY"):
        env.pop(key, None)
    zap = python_m("zapcli")
    print(f"# zapcli demo — state in {home} (ZAPCLI_HOME), session 'demo'")
    try:
        print("\n# 0. trust this checkout's own zapcli files (its doc-reviewer definition), as you "
              "would once;\n#    recorded in the demo's own config folder (ZAPCLI_CONFIG_HOME), "
              "not yours")
        sh(zap + ["trust", str(REPO)], env)
        part_sh(zap, env)
        run_id = part_agent(zap, env, home)
        part_backend(zap, env, home)
        part_worktrees(zap, env, home)
        part_team(zap, env)
        part_timeline(zap, env, run_id)
    finally:
        for line in stop_leftovers(zap, env):
            print(f"# warning: ended a process the demo left running: {line}")
        folders = [home, f"{home}-worktrees"]  # zapcli.worktrees.root(): beside the state folder
        if keep:
            print(f"\n# done. Kept {' and '.join(f for f in folders if os.path.isdir(f))}; "
                  f"look around:\n#   {look_around_hint(home)}\n# remove them when done: "
                  f"rm -rf {' '.join(shlex.quote(f) for f in folders)}")
        else:
            for folder in folders:
                shutil.rmtree(folder, ignore_errors=True)
            print(f"\n# done. Nothing is left running and the demo's folders ({home}, its "
                  "worktrees) were removed.\n# To keep them and look around: make demo KEEP=1")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
