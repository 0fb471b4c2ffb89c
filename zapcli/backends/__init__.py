"""What a subagent runs, on the child side of `zapcli run --subagent`.

Imports `zapcli.trail`, `zapcli.supervisor`, `zapcli.ops` (queue drain at
exit) and, for the built-in agent only, `zapcli.agent`, `zapcli.providers`,
`zapcli.tools`.
"""
