"""The agent host: the one place that builds an agent — definition, grant,
model client, tools, approvals, limits — for `zapcli run` in the foreground
and for a subagent's runner alike. Each caller keeps only its sink (where
records go) and its way of asking (a terminal, or the trail).

Imports `zapcli.agent`, `zapcli.providers`, `zapcli.tools`,
`zapcli.capabilities`, `zapcli.definitions`; never the trail, processes or
the CLI.
"""
