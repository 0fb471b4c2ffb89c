"""What each command does. Functions return result objects and never print.

Imports `zapcli.trail`, `zapcli.supervisor`, `zapcli.config`, `zapcli.paths`;
never typer/rich, never the agent, providers, openai or mcp (start-up speed).
"""
