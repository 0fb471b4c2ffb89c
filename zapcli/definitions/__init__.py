"""Subagent definitions (docs/explanation/rules.md#definition-format–8.3): YAML loading, validation, layers, management.
May import zapcli.paths, zapcli.errors, zapcli.tools.registry (names); used by ops and capabilities.

Public API: `discover(workspace) -> Catalog`, `resolve(name, workspace) -> Definition`,
`parse_definition(text, file)`, `Definition`, `Diagnostic`, `effective_model(...)`;
management functions live in `zapcli.definitions.manage`.

The names load on first use (PEP 562): a process that only reads a frozen
definition back (a built-in agent's runner: `zapcli.definitions.model`) never
loads the YAML loader, the layers or the switches' SQLite store.
"""

from zapcli import lazy

TYPE_CHECKING = False
if TYPE_CHECKING:
    from zapcli.definitions.layers import DEFAULT_AGENT, Catalog, Entry, discover, resolve
    from zapcli.definitions.model import Definition, Diagnostic, KnowledgeSource
    from zapcli.definitions.schema import parse_definition
    from zapcli.definitions.store import Switches, effective_model, model_origin
    from zapcli.definitions.toolnames import GRANTABLE, canonical_tool

_HOME = {
    "layers": ("DEFAULT_AGENT", "Catalog", "Entry", "discover", "resolve"),
    "model": ("Definition", "Diagnostic", "KnowledgeSource"),
    "schema": ("parse_definition",),
    "store": ("Switches", "effective_model", "model_origin"),
    "toolnames": ("GRANTABLE", "canonical_tool"),
}
_WHERE = {name: module for module, names in _HOME.items() for name in names}

__all__ = [
    "DEFAULT_AGENT", "GRANTABLE", "Catalog", "Definition", "Diagnostic", "Entry",
    "KnowledgeSource", "Switches", "canonical_tool", "discover", "effective_model",
    "model_origin", "parse_definition", "resolve",
]


__getattr__ = lazy.names(__name__, _WHERE, globals())  # each public name from its module on first use


def __dir__() -> list[str]:
    return sorted({*globals(), *__all__})
