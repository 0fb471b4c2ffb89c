"""One renderer per verb: its human lines and its JSON document side by side,
from the verb's result object. The CLI prints them; the subagent tool, `zapcli
call` and the MCP server give the same text and document to a model.

Imports the result types of `zapcli.results` and `zapcli.lifecycle`, never
`zapcli.ops` (a verb's result reaches it as an object); never typer or rich.
"""
