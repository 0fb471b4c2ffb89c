"""What a built-in agent's runner imports (#32: a runner waiting on the model
holds every module it loaded): the `openai` SDK, but none of the SDK's
optional transports zapcli never uses, and not the definitions' YAML side. Counted through Python's own import
report (PYTHONPROFILEIMPORTTIME, written to the runner's stderr, the
subagent's `.err` file), never time or memory; the megabytes each cost are in
tests/bench/bench_fanout.py (`rss_agent_runner_median_mb`)."""

from __future__ import annotations

import subprocess
import sys

from tests.runner.test_runner_imports import _brought_in, _imported

# aiohttp: the SDK's optional async transport (Ray's dashboard installs it), ~8 MB with
# its dependencies. The report names `aiohttp` itself for the refused attempt (a
# failed import is reported too), so what is checked is that nothing of it loaded.
NEVER_FOR_AGENT = {"aiohttp.client", "aiohttp.connector", "yarl", "multidict", "aiohappyeyeballs",
                   "aiosignal", "frozenlist",
                   # asyncio's event loop: the SDK imports asyncio for its async client only
                   # (its __init__ deferred, zapcli.providers.sdk); the loop is synchronous
                   "asyncio.base_events", "asyncio.events",
                   # its definition is frozen in its spawn record: read back by
                   # zapcli.definitions.model, never the YAML layers, loader or switches' store
                   "yaml", "zapcli.definitions.layers", "zapcli.definitions.schema",
                   "zapcli.definitions.store", "zapcli.definitions.yamlload"}


def test_a_built_in_agent_runner_loads_the_sdk_but_nothing_it_never_uses(zap, model):
    srv = model([{"turns": [{"text": "done."}]}])
    proc = zap("spawn", "say done", env={"PYTHONPROFILEIMPORTTIME": "1"})
    sid = proc.out.strip()
    assert sid.startswith("sa_"), proc.err
    assert zap.wait_status(sid, timeout=60) == "completed"
    assert len(srv.requests) == 1  # it really asked the model, through the SDK
    err = (zap.home / "subagents" / f"{sid}.err").read_text(errors="replace")
    modules = _imported(err)
    assert "openai._client" in modules and "zapcli.runner.main" in modules, err[-2000:]
    loaded = sorted(m for m in modules if any(m == n or m.startswith(n + ".") for n in NEVER_FOR_AGENT))
    assert not loaded, f"the agent's runner imported {loaded}:\n" + _brought_in(err, loaded)
    assert (zap.home / "subagents" / f"{sid}.out").read_text().strip() == "done."


def test_what_the_sdk_import_refuses_stays_importable_afterwards():
    """The refusal lasts for the SDK's import only: the SDK works, its aiohttp
    client says what the SDK says without the extra, and a later import of
    aiohttp in the same process succeeds (where it is installed)."""
    code = (
        "import sys, importlib.util\n"
        "from zapcli.providers import sdk\n"
        "openai = sdk.load()\n"
        "assert sdk.load() is openai and hasattr(openai, 'OpenAI')\n"
        "assert 'aiohttp' not in sys.modules, sorted(m for m in sys.modules if 'aiohttp' in m)\n"
        "try:\n"
        "    openai.DefaultAioHttpClient()\n"
        "except RuntimeError as e:\n"
        "    assert 'aiohttp' in str(e), e\n"
        "else:\n"
        "    raise AssertionError('the aiohttp client was built')\n"
        "if importlib.util.find_spec('aiohttp') is not None:\n"
        "    import aiohttp\n"
        "    assert aiohttp.ClientSession\n"
        "print('ok')\n")
    proc = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=60)
    assert proc.returncode == 0 and proc.stdout.strip() == "ok", proc.stderr
