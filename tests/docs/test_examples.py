"""Every code example in the documentation runs as written (#31 item 6).

Each page's examples run in a reader's environment: an empty home (zapcli's
state and config folders the platform defaults under it), an empty working
folder, this checkout's zapcli and python first on PATH (then the agent CLIs
`make test` installs, for blocks marked `needs:`), and — as a reader has
one configured — a model: a scripted Chat Completions server on 127.0.0.1
that answers every conversation with a short report (`OPENAI_BASE_URL`,
`ZAPCLI_MODEL`). What a block is and how it runs: tests/docs/blocks.py.
Nothing a page started outlives its test.
"""

from __future__ import annotations

import json
import os
import shlex
import signal
import subprocess
import sys
from pathlib import Path

import psutil
import pytest

from tests.docs.blocks import DATA, KNOWN, ROOT, SHELLS, Block, blocks, pages
from zapcli.testing import ScriptedServer

BIN = Path(sys.executable).parent
AGENT_CLIS = ROOT / ".cache" / "agent-clis" / "node_modules" / ".bin"
PAGES = pages()
REPORT = "Done: the scripted model answers every task with this report."
MARK = "@@zapcli-doc-block"


def _env(home: Path, site: Path, model: ScriptedServer) -> dict[str, str]:
    """A reader's environment. What `pip install` installs goes to the page's
    own `site` folder (on PYTHONPATH, its scripts on PATH) instead of the
    environment the tests run in — the same as installing beside zapcli,
    without changing it for every other test; zapcli, a plugin's one
    dependency, is there already."""
    keep = ("LANG", "SSL_CERT_FILE", "SSL_CERT_DIR", "REQUESTS_CA_BUNDLE")
    env = {k: v for k, v in os.environ.items() if k in keep or k.startswith("PIP_")}
    path = [str(site / "bin"), str(BIN), "/usr/local/bin", "/usr/bin", "/bin"]
    env.update(HOME=str(home), PATH=":".join(path), TERM="dumb", LANG=env.get("LANG") or "C.UTF-8",
               OPENAI_BASE_URL=model.base_url, OPENAI_API_KEY="sk-docs-offline-0123456789",
               ZAPCLI_MODEL="scripted", PYTHONDONTWRITEBYTECODE="1",
               PIP_TARGET=str(site), PIP_NO_DEPS="1", PYTHONPATH=str(site))
    return env


def _which(program: str) -> bool:
    import shutil

    return shutil.which(program, path=f"{AGENT_CLIS}:/usr/local/bin:/usr/bin:/bin") is not None


def _script(session: list[Block], env: dict[str, str], scratch: Path) -> tuple[str, list[str]]:
    """The bash program of a page's session, and the blocks skipped for a
    missing program."""
    parts = ["set -e -o pipefail"]
    skipped = []
    for n, b in enumerate(session):
        needs = b.directives.get("needs")
        if needs and not all(_which(p) for p in needs.split()):
            skipped.append(f"{b.where}: needs {needs}")
            continue
        parts.append(f"printf '\\n{MARK} {n}@@\\n'")
        if needs:  # the agent CLIs `make test` installs: on PATH for the blocks that need them
            parts.append(f'__zapcli_path=$PATH; PATH="{AGENT_CLIS}:$PATH"')
        if b.title:
            path = b.title.replace("~/", "$HOME/", 1)
            parts.append(f'mkdir -p "$(dirname "{path}")" && cat > "{path}" <<\'ZAPCLI_DOC_EOF\'\n'
                         f"{b.text}ZAPCLI_DOC_EOF")
            continue
        if b.lang == "python":
            program = scratch / f"block-{n}.py"
            program.write_text(b.text, encoding="utf-8")
            body = f"python {shlex.quote(str(program))}"
        else:
            body = b.text.rstrip("\n")
        expected = b.directives.get("exit")
        if expected is None:
            parts.append(body)
        else:
            parts += ["set +e", body, "__rc=$?", "set -e",
                      f'[ "$__rc" = {int(expected)} ] || {{ echo "exit $__rc, expected {expected}"; exit 97; }}']
        if needs:
            parts.append('PATH=$__zapcli_path')
    parts.append(f"printf '\\n{MARK} done@@\\n'")
    return "\n".join(parts) + "\n", skipped


def _end_everything(home: Path, proc: subprocess.Popen) -> None:
    """The session's process group, and whatever it started in sessions of
    its own (subagents, servers): all carry the page's HOME."""
    try:
        os.killpg(proc.pid, signal.SIGKILL)
    except ProcessLookupError:
        pass
    for p in psutil.process_iter(["environ"]):
        try:
            if (p.info["environ"] or {}).get("HOME") == str(home):
                p.kill()
        except (psutil.Error, AttributeError):
            continue


def _run_session(page: Path, session: list[Block], tmp: Path, model: ScriptedServer) -> str:
    home, work, scratch, site = tmp / "home", tmp / "work", tmp / "scratch", tmp / "site"
    for folder in (home, work, scratch, site):
        folder.mkdir()
    env = _env(home, site, model)
    program, skipped = _script(session, env, scratch)
    log = scratch / "session.log"  # a file, not a pipe: what a page left running may hold a pipe open
    with log.open("wb") as sink:
        proc = subprocess.Popen(["bash", "--noprofile", "--norc", "-c", program], cwd=work, env=env,
                                stdin=subprocess.DEVNULL, stdout=sink, stderr=subprocess.STDOUT,
                                start_new_session=True)
        try:
            proc.wait(timeout=300)
        except subprocess.TimeoutExpired:
            pass
        finally:
            _end_everything(home, proc)
            proc.wait(timeout=30)
    out = log.read_bytes()
    text = out.decode("utf-8", "replace")
    if f"{MARK} done@@" not in text:
        marks = [line for line in text.split("\n") if line.startswith(MARK)]
        n = int(marks[-1].split()[1].rstrip("@")) if marks else 0
        failed = session[n]
        since = text[text.rfind(MARK):]
        raise AssertionError(f"the example at {failed.where} failed (exit {proc.returncode}):\n"
                             f"{failed.text}\n--- what it printed ---\n{since[-4000:]}")
    for note in skipped:
        print(f"skipped {note}")
    return text


def _check(b: Block, tmp: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """A data block, read by what reads it."""
    kind = b.directives.get("check") or {"yaml": "config", "yml": "config", "json": "json",
                                         "toml": "toml", "jsonl": "jsonl"}[b.lang]
    where = f"{b.where} ({kind})"
    if kind == "json":
        json.loads(b.text)
    elif kind == "jsonl":
        for line in b.text.strip().split("\n"):
            json.loads(line)
    elif kind == "toml":
        import tomllib

        tomllib.loads(b.text)
    elif kind == "config":
        from zapcli.backends.sections import OWNERS
        from zapcli.config import load_settings

        folder = tmp / f"config-{b.line}"
        folder.mkdir()
        (folder / "config.yaml").write_text(b.text, encoding="utf-8")
        monkeypatch.setenv("ZAPCLI_CONFIG_HOME", str(folder))
        for key in [k for k in os.environ if k.startswith("ZAPCLI_") and k != "ZAPCLI_CONFIG_HOME"]:
            monkeypatch.delenv(key)
        load_settings(owners=OWNERS)  # raises ConfigError naming every problem
    elif kind == "definition":
        import yaml

        from zapcli.definitions.schema import parse_definition

        text = b.text
        data = yaml.safe_load(text)
        if "name" not in data:  # a fragment: inside a minimal definition
            text = "name: example\ndescription: An example.\n" + text
        definition, diagnostics = parse_definition(text, where)
        assert definition is not None and not diagnostics, (where, [str(d) for d in diagnostics])
    elif kind == "mcp":
        from zapcli.capabilities.mcpconfig import read_file

        path = tmp / f"mcp-{b.line}.json"
        path.write_text(b.text, encoding="utf-8")
        servers, problems = read_file(path)
        assert servers and not problems, (where, problems)
    elif kind == "script":
        from zapcli.testing import load_script

        path = tmp / f"script-{b.line}.json"
        path.write_text(b.text, encoding="utf-8")
        assert load_script(path), where
    elif kind == "ray-cluster":
        import jsonschema
        import ray
        import yaml

        schema = json.loads((Path(ray.__file__).parent / "autoscaler" / "ray-schema.json").read_text())
        jsonschema.validate(yaml.safe_load(b.text), schema)
    else:
        raise AssertionError(f"{where}: unknown check kind {kind!r}")


def _trail_types(tmp: Path) -> set[str]:
    seen: set[str] = set()
    for trail in tmp.rglob("subagents/*.jsonl"):
        for line in trail.read_text(encoding="utf-8", errors="replace").splitlines():
            try:
                seen.add(json.loads(line)["type"])
            except (ValueError, KeyError, TypeError):
                continue
    return seen


@pytest.fixture(scope="module")
def model():
    with ScriptedServer([{"turns": [{"text": REPORT}], "loop": True}]) as srv:
        yield srv


@pytest.mark.timeout(400)
@pytest.mark.parametrize("page", PAGES, ids=lambda p: str(p.relative_to(ROOT)))
def test_the_examples_of_a_page_run_as_written(page: Path, tmp_path: Path, model: ScriptedServer,
                                               monkeypatch: pytest.MonkeyPatch) -> None:
    found = blocks(page)
    unknown = [f"{b.where}: ```{b.lang}" for b in found if b.lang not in KNOWN and not b.not_run]
    assert not unknown, f"say what these are (a known language, or <!-- not-run: why -->): {unknown}"
    bare = [b.where for b in found if "not-run" in b.directives and not b.not_run.strip()]
    assert not bare, f"not-run needs a reason: {bare}"
    live = [b for b in found if not b.not_run]
    for b in live:
        if b.lang in DATA and (b.title is None or "check" in b.directives):
            _check(b, tmp_path, monkeypatch)
    session = [b for b in live if b.lang in SHELLS or b.lang == "python" or b.title]
    if session:
        _run_session(page, session, tmp_path, model)
    documented = (ROOT / "docs" / "reference" / "trail.md").read_text(encoding="utf-8")
    missing = sorted(t for t in _trail_types(tmp_path) if f"`{t}`" not in documented)
    assert not missing, f"record types these examples wrote that docs/reference/trail.md lacks: {missing}"


def test_the_examples_that_do_not_run_say_why() -> None:
    """The few blocks that cannot run here (a real key, a cluster of
    machines), listed: each has its reason."""
    held = [(b.where, b.not_run) for page in PAGES for b in blocks(page) if b.not_run]
    for where, why in held:
        print(f"not run: {where}: {why}")
    assert all(why for _, why in held)
    total = sum(len(blocks(page)) for page in PAGES)
    assert len(held) * 5 <= total, f"{len(held)} of {total} examples are not run: too many"
