"""Where the suite's CPU goes, test by test (issue 32: "the slowest tests
looked at one by one"; not run by make test).

Usage (as root: it makes cgroups):

    SUITE_CPU_DIR=/tmp/suite-cpu PYTEST_ADDOPTS="-p tests.bench.suite_cpu" make test
    .venv/bin/python tests/bench/suite_cpu.py /tmp/suite-cpu

As a pytest plugin it puts each xdist worker in a cgroup of its own
(cgroup v1 `cpuacct`, else v2) and writes, per test, the CPU its worker's
cgroup used while the test ran: every process the test started stays in that
cgroup, detached runners, agent CLIs and Ray's processes included, so the
figure is the test's whole cost, not the worker's own. A process a test
leaves running is charged to the next test of that worker. As a script it
prints the totals: by folder, by file, the heaviest tests, and how much the
tests over 5 s of CPU hold.
"""

from __future__ import annotations

import os
import sys
import time
from collections import Counter
from pathlib import Path
from typing import Any

import pytest

V1 = Path("/sys/fs/cgroup/cpuacct")
V2 = Path("/sys/fs/cgroup")

_group: Path | None = None
_out: Any = None


def _make(name: str) -> Path:
    if V1.is_dir():
        group = V1 / name
        group.mkdir(exist_ok=True)
        return group
    group = V2 / name
    group.mkdir(exist_ok=True)
    return group


def _usage_s(group: Path) -> float:
    if (group / "cpuacct.usage").exists():
        return int((group / "cpuacct.usage").read_text()) / 1e9
    for line in (group / "cpu.stat").read_text().splitlines():
        if line.startswith("usage_usec "):
            return int(line.split()[1]) / 1e6
    return 0.0


def pytest_configure(config: Any) -> None:
    global _group, _out
    folder = os.environ.get("SUITE_CPU_DIR")
    worker = getattr(config, "workerinput", {}).get("workerid", "main")
    if not folder or (worker == "main" and config.getoption("numprocesses", None)):
        return  # the xdist controller runs no test
    _group = _make(f"zapcli-suite-{worker}-{os.getpid()}")
    (_group / "cgroup.procs").write_text(str(os.getpid()))
    Path(folder).mkdir(parents=True, exist_ok=True)
    _out = open(Path(folder) / f"{worker}.tsv", "a", buffering=1)  # noqa: SIM115 - the session's


def pytest_unconfigure(config: Any) -> None:
    """Leave the cgroup and remove it (what is still running in it keeps it)."""
    if _group is None:
        return
    try:
        (_group.parent / "cgroup.procs").write_text(str(os.getpid()))
        _group.rmdir()
    except OSError:
        pass


@pytest.hookimpl(hookwrapper=True)
def pytest_runtest_protocol(item: Any, nextitem: Any) -> Any:
    if _group is None:
        yield
        return
    before, t0 = _usage_s(_group), time.monotonic()
    yield
    _out.write(f"{item.nodeid}\t{_usage_s(_group) - before:.3f}\t{time.monotonic() - t0:.3f}\n")


def report(folder: Path, top: int = 20) -> None:
    rows = []
    for path in sorted(folder.glob("*.tsv")):
        for line in path.read_text().splitlines():
            nodeid, cpu, wall = line.split("\t")
            rows.append((nodeid, float(cpu), float(wall)))
    total = sum(r[1] for r in rows)
    print(f"{len(rows)} tests, {total:.0f} s of CPU")
    heavy = [r for r in rows if r[1] >= 5]
    print(f"tests over 5 s of CPU: {len(heavy)}, {sum(r[1] for r in heavy):.0f} s "
          f"({100 * sum(r[1] for r in heavy) / max(total, 1e-9):.0f} %)")
    for what, key in (("folder", lambda n: n.split("/")[1] if n.count("/") > 1 else n.split("::")[0]),
                      ("file", lambda n: n.split("::")[0])):
        cpu: Counter[str] = Counter()
        count: Counter[str] = Counter()
        for nodeid, c, _ in rows:
            cpu[key(nodeid)] += c
            count[key(nodeid)] += 1
        print(f"\nby {what}:")
        for name, c in cpu.most_common(top):
            print(f"{c:8.1f} s {count[name]:5d}  {name}")
    print("\nheaviest tests (CPU s, wall s):")
    for nodeid, c, w in sorted(rows, key=lambda r: -r[1])[:top]:
        print(f"{c:8.1f} {w:8.1f}  {nodeid}")


if __name__ == "__main__":
    if len(sys.argv) != 2:
        raise SystemExit(__doc__)
    report(Path(sys.argv[1]))
