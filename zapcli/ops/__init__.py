"""What each command does. Functions return result objects and never print.

Imports `zapcli.lifecycle`, `zapcli.trail`, `zapcli.executors`, `zapcli.config`,
`zapcli.paths` and the parent side of `zapcli.backends`; never typer/rich,
never the agent, providers, openai, mcp or ray (start-up speed).
"""
