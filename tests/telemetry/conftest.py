"""The telemetry tests' one Arize Phoenix (`tests/telemetry/receivers.py`):
started once for the tests that read spans back from it (test_fleet,
test_cli_traces, one xdist group: one worker, one start), not once per
module — its start-up is ~15 s of a worker's time, most of it CPU."""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from tests.telemetry import receivers

GROUP = "telemetry-phoenix"  # the xdist group of the modules that use `phoenix_server`


@pytest.fixture(scope="session")
def phoenix_server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[receivers.Phoenix | None]:
    """The session's Phoenix, or None where it is not installed (`make test-tools`)."""
    if not receivers.PHOENIX.exists():
        yield None
        return
    p = receivers.Phoenix(tmp_path_factory.mktemp("phoenix")).ready()
    try:
        yield p
    finally:
        p.stop()
