"""Capabilities (docs/explanation/rules.md#undeclared-means-unreachable–8.5): definition → Grant, capability tools, prompt assembly.
May import zapcli.definitions, zapcli.paths; zapcli.agent.types and `mcp` only in open_tools.

Public API: `build_grant(definition, workspace, available_tools=None) -> Grant`,
`Grant.to_dict()/from_dict()`, `open_tools(grant, approver=None) -> CapabilityTools`,
`assemble_prompt(definition, grant) -> str`.
"""

from zapcli.capabilities.grant import CapabilityTools, Grant, build_grant, open_tools
from zapcli.capabilities.prompt import FRAMEWORK, assemble_prompt

__all__ = ["FRAMEWORK", "CapabilityTools", "Grant", "assemble_prompt", "build_grant", "open_tools"]
