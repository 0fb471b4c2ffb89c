"""The file `.yarnrc.yml`'s `yarnPath` names, read as YAML is read
(adversary round 4, on `zapcli.control._yarn_paths`; closed: the file is
read with a YAML parser now).

`of_root` holds the file a workspace's `.yarnrc.yml` names as `yarnPath`,
since every `yarn` in the folder runs it with node. It finds the key by
`line.startswith("yarnPath:")`; yarn reads the file as YAML (js-yaml), for
which each of these names the same file:

- a byte order mark before the first key (an editor on Windows; js-yaml
  and PyYAML drop it);
- `yarnPath : …` (a space before the colon);
- `"yarnPath": …` (a quoted key: YAML written from JSON);
- `{yarnPath: …}` (a flow mapping).

The repository's `.yarnrc.yml` is held, but the file it names is not: a
sandboxed `sh` subagent rewrites `.yarn/releases/yarn-4.1.0.cjs`, and the
person's next `yarn` in the folder runs it — node, as the person, outside
every sandbox.

The outside effect: the file node writes in `outside` when it runs the file
yarnPath names (what the `yarn` launcher does), after agent work.
"""

from __future__ import annotations

import shutil
import subprocess

import pytest
import yaml

from tests.conftest import wait_until
from tests.redteam.actors import Actor
from tests.sandbox.conftest import needs_bwrap

pytestmark = [needs_bwrap, pytest.mark.skipif(shutil.which("node") is None, reason="needs node")]

PATH = ".yarn/releases/yarn-4.1.0.cjs"
RCS = {
    "plain": f"yarnPath: {PATH}\n",  # held: what the parser reads (the test's control)
    "bom": f"\ufeffyarnPath: {PATH}\nnodeLinker: node-modules\n",
    "space-before-colon": f"yarnPath : {PATH}\n",
    "quoted-key": f'"yarnPath": "{PATH}"\n',
    "flow-mapping": f"{{yarnPath: {PATH}, nodeLinker: node-modules}}\n",
}


@pytest.mark.parametrize("rc", list(RCS))
def test_the_yarn_a_yarnrc_names_in_other_yaml_cannot_be_rewritten(zap, outside, rc):
    actor = Actor.root(zap)
    w = actor.work
    (w / PATH).parent.mkdir(parents=True)
    (w / PATH).write_text("// the team's yarn\n")
    (w / ".yarnrc.yml").write_text(RCS[rc], encoding="utf-8")
    assert yaml.safe_load((w / ".yarnrc.yml").read_text(encoding="utf-8"))["yarnPath"] == PATH
    pwned = outside / f"yarn-{rc}"
    payload = f"require('fs').writeFileSync('{pwned}', 'ran as the person')"
    sid = actor.spawn("--cli", "sh", "--sandbox", "--",
                      f"echo \"{payload}\" > {PATH}; echo planted; sleep 30")
    wait_until(lambda: "planted" in actor("output", sid).out, 30)
    actor("kill", sid)
    actor.wait(sid)
    # the person's next `yarn` in the folder: the launcher runs yarnPath with node
    subprocess.run(["node", str(w / PATH)], cwd=w, capture_output=True, timeout=30)
    assert not pwned.exists(), "the person's next yarn ran what sandboxed work wrote"
