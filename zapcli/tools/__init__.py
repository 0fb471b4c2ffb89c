"""Built-in tools the model may be granted (docs/explanation/rules.md#built-in-tools): bash and its jobs, files, search, web, todo.
Imports: stdlib, psutil, zapcli.agent.types. Start at `zapcli.tools.registry`.

Each tool has `spec` (a ToolSpec) and `run(args, ctx) -> ToolResult`, and never
raises: failures are `ok=False` results that tell the model what to do next.
"""
