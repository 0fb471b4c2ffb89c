"""The runner: `zapcli run --subagent --id ID`, the process an executor starts
for one subagent. It claims the subagent, writes `start`, runs its backend,
guards the deadline, and ends it through the trail whatever happens.

Imports `zapcli.trail`, `zapcli.supervisor`, `zapcli.lifecycle` (queue drain
and retention at exit) and `zapcli.backends`; never `zapcli.ops` or `zapcli.cli`. Importing it
first imports pathlib as a runner needs it (`zapcli.lean`).
"""

from zapcli import lean

lean.pathlib_alone()  # before the runner's modules import pathlib (`zapcli.lean`)
