"""A Ray node's runner never takes Python from its subagent's folder.

`ray.env` may forward the caller's PYTHONPATH to the node. An empty entry
(what `export PYTHONPATH=$PYTHONPATH:/x` makes of an unset one) or a
relative one names the folder the runner starts in — the subagent's — and
`-P` keeps neither off the module path: a `sitecustomize.py` a sandboxed
subagent wrote there would run in the next runner started in that folder,
unsandboxed, with the forwarded keys (the class of
`tests/redteam/test_module_path.py`, on the node). The same for a node
whose own environment has such an entry (its operator's `export
PYTHONPATH=$PYTHONPATH:/x` before `ray start`): the agent's runners inherit
it. The assertion is the outside effect: a file a planted module writes
when it is imported.
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.conftest import Zap, trail_records
from tests.ray import cluster
from tests.ray.conftest import extra_node
from tests.ray.helpers import remote

pytest.importorskip("ray", reason="Ray is not installed: pip install -e '.[dev,ray]'")
pytestmark = [pytest.mark.xdist_group("ray"), pytest.mark.timeout(240)]

PLANTED = ("sitecustomize", "threading", "json", "subprocess", "signal", "orjson", "psutil")
NODE_RESOURCE = "zapcli_pythonpath"


@pytest.fixture
def odd_node(ray_shared, tmp_path: Path) -> Iterator[tuple[cluster.ClusterInfo, Path]]:
    """The cluster, alone, with a third node started with `PYTHONPATH=<lib>:`
    (an empty entry); only work asking for `zapcli_pythonpath` lands there.
    Yields the cluster and `lib`; the node is stopped after, by pid."""
    lib = tmp_path / "lib"
    lib.mkdir()
    with extra_node(ray_shared, "pythonpath", NODE_RESOURCE, {"PYTHONPATH": f"{lib}:"}) as (info, _home):
        yield info, lib


def test_an_empty_pythonpath_entry_brings_no_folders_python_into_the_node_runner(
        zap: Zap, odd_node, tmp_path: Path) -> None:
    """Both routes: the node's own PYTHONPATH ends in `:` (the first
    subagent), and the caller forwards its own, which begins with one (the
    second, `ray.env`); each work gets the PYTHONPATH it was given, as it was."""
    info, lib = odd_node
    outside = tmp_path / "outside"
    outside.mkdir()
    repo = zap.cwd / "repo"
    repo.mkdir()
    for name in PLANTED:
        (repo / f"{name}.py").write_text(f"open({str(outside / name)!r}, 'w').write('imported')\n")
    (repo / "zapcli").mkdir()
    (repo / "zapcli" / "__init__.py").write_text(f"open({str(outside / 'zapcli')!r}, 'w').write('x')\n")
    nodes, callers = f"{lib}:", f":{lib}"  # an empty entry: the working folder
    ids = []
    for forward in ([], ["PYTHONPATH"]):
        zap = remote(zap, info, ray={"resources": {NODE_RESOURCE: 1}, "env": forward})
        res = zap("spawn", "--cli", "sh", "--cwd", str(repo), "--", 'printf "%s" "$PYTHONPATH"',
                  env={"PYTHONPATH": callers})
        assert res.returncode == 0, res.err
        ids.append(res.out.strip())
    done = zap("wait", *ids, "--timeout", "120")
    assert sorted(p.name for p in outside.iterdir()) == [], done.out + done.err
    for sid in ids:
        ends = [r.get("status") for r in trail_records(zap.trail(sid)) if r.get("type") == "status"]
        assert ends[-1:] == ["completed"], (ends, zap("replay", sid).out[-2000:])
    assert [zap("output", sid).out for sid in ids] == [nodes, callers]
