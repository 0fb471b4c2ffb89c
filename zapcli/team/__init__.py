"""Agents that work together (docs/explanation/rules.md#fleets-traces-teams): a task board per session and
messages between the subagents of one session.

The room: `board` (the durable board in `<state>/zapcli.db`, atomic claims),
`who` (whose call it is: a subagent, a run, or the session's person),
`holders` (a claimer that ended without `done` releases its task, found with
the observer that finds `lost`), `messages` (to a sibling, by id or name,
never outside the session), `text` (what people and models read) and
`tools` (the `board` and `message` tools, for the built-in agent and for an
agent CLI through zapcli's team MCP server). It imports the kernel,
`zapcli.trail`, `zapcli.lifecycle` and `zapcli.executors` (through lifecycle);
never a verb (`ops`), a renderer, the CLI, a backend or a model.
"""
