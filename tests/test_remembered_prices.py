"""A runner prices its calls from what an earlier one learnt of the price
library (`zapcli.remembered_prices`): the same dollars as the library, the
library never loaded — real processes, the real genai-prices database."""

from __future__ import annotations

import json
import subprocess
import sys

import pytest

PLAIN = ["gpt-4o-mini", "openai/gpt-4o", "claude-3-5-haiku-latest", "gpt-4.1-nano",
         "no-such-model-anywhere"]
TIERED = ["claude-sonnet-4-5", "gemini-2.5-pro"]  # the rate changes past 200k tokens
MODELS = PLAIN + TIERED
USAGES = [(1000, 100, 0, 0), (250_000, 9_000, 120_000, 0), (40_000, 2_000, 0, 30_000),
          (7, 3, 2, 1)]

PRICE_ALL = f"""
import json, sys
from zapcli import prices
out = {{m: [prices.cost(m, *u) for u in {USAGES!r}] for m in {MODELS!r}}}
print(json.dumps({{"costs": out, "library": "genai_prices" in sys.modules}}))
"""


def _run(home, code: str = PRICE_ALL) -> dict:
    env = {"PATH": "/usr/bin:/bin", "ZAPCLI_HOME": str(home), "HOME": str(home)}
    done = subprocess.run([sys.executable, "-c", code], env=env, capture_output=True, text=True,
                          timeout=120, check=True)
    return json.loads(done.stdout)


@pytest.fixture
def home(tmp_path):
    path = tmp_path / "state"
    path.mkdir()
    return path


def test_a_later_runner_prices_as_the_library_did_without_loading_it(home):
    first = _run(home)
    assert first["library"]
    kept = json.loads((home / "prices.json").read_text())["models"]
    assert kept["no-such-model-anywhere"] is None
    assert kept["gpt-4o-mini"]["input"] > 0
    second = _run(home)
    assert second["costs"] == first["costs"]  # both rounded to 1e-10 dollars
    # a price with tiers is never remembered: the library is loaded for it each time
    assert not set(TIERED) & set(kept)
    assert second["library"]
    plain = _run(home, PRICE_ALL.replace(repr(MODELS), repr(PLAIN)))
    assert not plain["library"], "every model remembered: the library stays unloaded"
    assert plain["costs"] == {m: first["costs"][m] for m in PLAIN}


def test_a_spoilt_or_foreign_file_is_a_miss_and_is_made_again(home):
    (home / "prices.json").write_text("{not json")
    assert _run(home)["library"]
    data = json.loads((home / "prices.json").read_text())
    data["models"]["gpt-4o-mini"] = {"input": 1000.0, "output": 1000.0}
    data["database"] = "another copy of the library"
    (home / "prices.json").write_text(json.dumps(data))
    again = _run(home)
    assert again["library"]  # the file named another database: asked again, priced right
    assert again["costs"]["gpt-4o-mini"][0] < 0.01


def _imported(err: str) -> set[str]:
    """The modules a process imported, from what PYTHONPROFILEIMPORTTIME
    made it print on stderr (a runner's: its `.err` file)."""
    return {line.split("|")[2].strip() for line in err.splitlines()
            if line.startswith("import time:") and line.count("|") == 2}


def test_a_runner_whose_model_an_earlier_one_priced_never_imports_the_library(zap, model):
    """The runner loads the price library ahead of its first call (its
    prefetch) only for a model no earlier runner priced: the second of two
    built-in agents of one model never imports `genai_prices` at all — its
    own imports, as Python itself reports them."""
    model([{"turns": [{"text": "done."}]}])
    seen = []
    for n in range(2):
        sid = zap("spawn", f"price me {n}", env={"PYTHONPROFILEIMPORTTIME": "1"}, check=True).out.strip()
        assert zap.wait_status(sid, timeout=60) == "completed"
        seen.append(_imported((zap.home / "subagents" / f"{sid}.err").read_text()))
    assert "openai" in seen[0] and "openai" in seen[1]  # the report holds the runner's imports
    library = [{m for m in mods if m.split(".")[0] == "genai_prices"} for mods in seen]
    assert "genai_prices.data" in library[0]  # the first runner asks the library: model unknown
    assert json.loads((zap.home / "prices.json").read_text())["models"] == {"scripted": None}
    assert not library[1]
