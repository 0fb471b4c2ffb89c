"""zapcli as a tool for a model: ONE declaration of the actions, their
parameters and what answers them (docs/explanation/rules.md#tool-surfaces).

`spec` declares every action and parameter; `schema` generates the JSON
schemas (the `subagent` tool of `zapcli tool-schema` and `zapcli run`, one
schema per MCP tool); `dispatch` checks a call's arguments, runs the action
through `handlers` (ops -> renderers) and returns a `Reply`: the text a model
reads (`render.common.plain`, bounded) and the JSON document. `zapcli call`,
the `subagent` tool inside `zapcli run` and `zapcli mcp serve` all go through
`dispatch`, so they cannot drift apart.

Imports `zapcli.ops`, `zapcli.render`, `zapcli.lifecycle`; never typer, rich
or mcp (the CLI's `call` is on the fast path).
"""
