"""The `openai` SDK imported with its catalogue packages deferred
(`zapcli.providers.sdk`, `zapcli.providers.deferred`): the Chat Completions
client works as with the SDK imported whole, the packages left waiting say
what they say when imported whole, a name a package's `__init__` only
re-exports imports its one module (any other `__init__` runs whole at its
first name), and a deferral that would break the SDK
falls back to importing it as it is written. Each check runs in a fresh
interpreter (the SDK is imported once per process)."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

from zapcli.testing import ScriptedServer

REPO = Path(__file__).resolve().parents[2]

CHAT = """
import json, sys
from zapcli.providers import sdk
from zapcli.providers.openai_chat import ChatClient
from zapcli.agent.types import ToolSpec
{before}
client = ChatClient("scripted", base_url=sys.argv[1], api_key="k", max_retries=0)
turns = [client.complete([{{"role": "user", "content": "hi"}}],
                         [ToolSpec("read", "Read.", {{"type": "object", "properties": {{}}}}).to_openai()],
                         lambda kind, fields: None) for _ in range(2)]
print(json.dumps({{"turns": [[t.text, [c.name for c in t.tool_calls]] for t in turns],
                   "graders": "openai.types.graders" in sys.modules,
                   "modules": sum(1 for n in sys.modules if n.startswith("openai"))}}))
"""


def _chat(srv: ScriptedServer, before: str = "") -> dict:
    proc = subprocess.run([sys.executable, "-c", CHAT.format(before=before), srv.base_url],
                          capture_output=True, text=True, timeout=120)
    assert proc.returncode == 0, proc.stderr
    return json.loads(proc.stdout)


def _script() -> list:
    return [{"turns": [{"text": "first"}, {"tool_calls": [{"name": "read", "arguments": {}}]}]}]


def test_the_chat_client_answers_alike_with_the_catalogue_deferred_or_whole():
    with ScriptedServer(_script()) as srv:
        deferred = _chat(srv)
    with ScriptedServer(_script()) as srv:
        whole = _chat(srv, before="import openai  # whole, as the SDK is written")
    assert deferred["turns"] == whole["turns"] == [["first", []], ["", ["read"]]]
    assert not deferred["graders"] and whole["graders"]  # the loop never needed the catalogue
    assert deferred["modules"] < whole["modules"] * 0.75, (deferred, whole)


def test_a_deferred_package_says_what_it_says_imported_whole():
    probe = """
import json, sys
{load}
import openai.types as t, openai.types.responses as r, openai.types.chat as c, openai.lib as lib
from openai.types import ChatModel, Completion
from openai.types.chat import ChatCompletionChunk, ChatCompletionToolParam
from openai.lib import type_to_response_format_param as to_format
chunk, param = ChatCompletionChunk, ChatCompletionToolParam  # asked before the whole __init__ ran
print(json.dumps({{"types": sorted(dir(t)), "responses": sorted(dir(r)), "chat": sorted(dir(c)),
                   "lib": sorted(dir(lib)),
                   "names": [repr(ChatModel), Completion.__module__, chunk.__module__,
                             param.__module__, to_format.__module__, c.ChatCompletionChunk is chunk],
                   "response": r.Response.__module__}}))
"""
    seen = []
    for load in ("from zapcli.providers import sdk; sdk.load()", "import openai"):
        proc = subprocess.run([sys.executable, "-c", probe.format(load=load)],
                              capture_output=True, text=True, timeout=120)
        assert proc.returncode == 0, proc.stderr
        seen.append(json.loads(proc.stdout))
    assert seen[0] == seen[1]
    assert "Completion" in seen[0]["types"] and "Response" in seen[0]["responses"]
    assert "ChatCompletionChunk" in seen[0]["chat"] and seen[0]["names"][-1] is True
    assert "type_to_response_format_param" in seen[0]["lib"]


ASYNC = """
import json, sys
from zapcli.providers import sdk
openai = sdk.load()
waiting = "asyncio.base_events" not in sys.modules  # what the sync client never needed
import asyncio


async def ask():
    client = openai.AsyncOpenAI(api_key="k", base_url=sys.argv[1], max_retries=0)
    done = await client.chat.completions.create(
        model="scripted", messages=[{"role": "user", "content": "hi"}])
    await client.close()
    return done.choices[0].message.content, await asyncio.to_thread(lambda: "thread")


print(json.dumps([waiting, asyncio.run(ask()), asyncio.get_event_loop_policy().__class__.__name__]))
"""


def test_asyncio_deferred_by_the_sdk_import_is_whole_for_the_first_async_caller():
    """`asyncio` waits through the SDK's import (its sync client never asks
    it anything), then works in full: the SDK's own async client answers
    inside `asyncio.run`, as with asyncio imported first."""
    seen = []
    for first in ("", "import asyncio  # imported before the SDK: as it is written\n"):
        with ScriptedServer([{"turns": [{"text": "async answer"}]}]) as srv:
            proc = subprocess.run([sys.executable, "-c", first + ASYNC, srv.base_url],
                                  capture_output=True, text=True, timeout=120)
        assert proc.returncode == 0, proc.stderr
        seen.append(json.loads(proc.stdout))
    assert seen[0][0] is True and seen[1][0] is False
    assert seen[0][1:] == seen[1][1:] == [["async answer", "thread"], "_UnixDefaultEventLoopPolicy"]

PACKAGE = {"a.py": "A = 'a'\n", "b.py": "B = 'b'\n", "c.py": "C = 'c'\n"}


def _package(tmp_path, init: str) -> None:
    pkg = tmp_path / "pkg"
    pkg.mkdir()
    (pkg / "__init__.py").write_text(init)
    for name, text in PACKAGE.items():
        (pkg / name).write_text(text)


ASK = """
import json, sys
from zapcli.providers.deferred import Finder
finder = Finder(frozenset({"pkg"}))
sys.meta_path.insert(0, finder)
import pkg
sys.meta_path.remove(finder)
from pkg import B
ran = sorted(m for m in sys.modules if m.startswith("pkg."))
print(json.dumps([B, ran, getattr(pkg, "X", None), sorted(n for n in dir(pkg) if not n.startswith("_"))]))
"""


def _ask(tmp_path) -> list:
    """[B, the package's modules run for it, X, dir()] of `from pkg import B`, pkg deferred."""
    proc = subprocess.run([sys.executable, "-c", ASK], cwd=tmp_path, capture_output=True,
                          text=True, timeout=60, env={"PYTHONPATH": f"{tmp_path}:{REPO}"})
    assert proc.returncode == 0, proc.stderr
    return json.loads(proc.stdout)


def test_a_name_its_init_only_re_exports_imports_that_module_alone(tmp_path):
    _package(tmp_path, '"""A catalogue."""\nfrom __future__ import annotations\n\n'
                       "from .a import A as A\nfrom .b import B as B\nfrom .c import C\n")
    name, ran, x, names = _ask(tmp_path)
    assert (name, ran, x) == ("b", ["pkg.b"], None)  # neither a nor c ran for B
    assert names == ["A", "B", "C", "a", "annotations", "b", "c"]  # dir(): the whole package, as written


def test_an_init_that_does_more_than_re_export_runs_whole_at_the_first_name(tmp_path):
    _package(tmp_path, "from .a import A as A\nfrom .b import B as B\nX = 'x'\nfrom .c import C\n")
    name, ran, x, _ = _ask(tmp_path)
    assert (name, ran, x) == ("b", ["pkg.a", "pkg.b", "pkg.c"], "x")


def test_a_deferral_that_would_leave_the_sdk_broken_falls_back_to_the_whole_sdk():
    with ScriptedServer(_script()) as srv:
        # the top package itself deferred: `import openai` returns a module without OpenAI
        out = _chat(srv, before="sdk.DEFERRED = frozenset({'openai', 'openai.types'})")
    assert out["turns"] == [["first", []], ["", ["read"]]] and out["graders"]
