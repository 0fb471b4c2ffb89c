"""One renderer per verb: its human lines and its JSON document side by side,
from the verb's result object. The CLI prints them; the subagent tool, `zapcli
call` and the MCP server give the same text and document to a model.

Imports `zapcli.ops` and `zapcli.lifecycle` result types; never typer or rich.
"""
