"""How the `openai` SDK is imported: `load()`, the one place, for the model
client and the runner's prefetch. Imports only the standard library; `openai`
inside `load()`.

The SDK's optional aiohttp transport (`openai.DefaultAioHttpClient`, the
`aiohttp` extra) is refused while the SDK imports: zapcli talks to the model
through the SDK's default synchronous httpx client and never uses it, but when
aiohttp happens to be installed (Ray's dashboard brings it) `import openai`
loads it and its dependencies, ~8-11 MB of every built-in agent's runner, held
while it waits on the model. The SDK is written for its absence (its own
`except ImportError` fallback, as on an install without the extra), and the
refusal lasts only for the import: anything imported later in the process
that wants aiohttp gets it. (A first import of aiohttp by another thread in
those moments would be refused too; no zapcli process makes one.)

The SDK's catalogue packages (DEFERRED: `openai.types`, whose `__init__`
imports every type of every API, `openai.types.responses`, the Responses
API's, the chat and shared catalogues, and `openai.lib`, whose `__init__`
imports the structured-output parsing helpers and their chat types) are
imported with their `__init__` deferred: a module the SDK or zapcli imports
from them (`openai.types.chat.…`) is imported as always, a name their
`__init__` only re-exports imports the one module it comes from, and any
other name asked of the package runs its real `__init__` then, in full. The
Chat Completions loop never asks one: a built-in agent's runner imports
~380 modules of the SDK and its dependencies instead of ~840 (~0.2 s of CPU
and ~10 MB less). `asyncio` is deferred alike when nothing imported it
before: the SDK imports it at the top of modules that use it only in its
async client, and its `__init__` imports ~30 modules (~2 MB a runner holds;
the first name a later async caller asks of it runs it whole). Should the
SDK's import fail with the deferral, it is imported again without it.
"""

from __future__ import annotations

import sys
import threading

TYPE_CHECKING = False
if TYPE_CHECKING:
    from types import ModuleType

UNUSED = ("aiohttp",)  # optional transports of the SDK zapcli never uses
DEFERRED = frozenset({"openai.types", "openai.types.responses", "openai.types.chat",
                      "openai.types.shared", "openai.types.shared_params", "openai.lib",
                      "asyncio"})  # packages whose __init__ waits
_lock = threading.Lock()


def load() -> ModuleType:
    """The `openai` module, imported (once) without the transports in UNUSED
    and with the packages in DEFERRED deferred. Raises ImportError as
    `import openai` would."""
    mod = sys.modules.get("openai")
    if mod is not None and getattr(mod, "OpenAI", None) is not None:
        return mod  # imported already, in full
    with _lock:
        refused = [name for name in UNUSED if name not in sys.modules]
        for name in refused:
            sys.modules[name] = None  # type: ignore[assignment]  # `import` raises ImportError
        try:
            mod = _import(DEFERRED)
            if getattr(mod, "OpenAI", None) is None:
                raise ImportError("the SDK is not whole")
            return mod
        except Exception:  # noqa: BLE001 - whatever the deferral broke: as the SDK is written
            for name in [n for n in sys.modules if n == "openai" or n.startswith("openai.")]:
                del sys.modules[name]
            return _import(frozenset())
        finally:
            for name in refused:
                if name in sys.modules and sys.modules[name] is None:
                    del sys.modules[name]


def _import(deferred: frozenset[str]) -> ModuleType:
    from zapcli.providers.deferred import Finder

    finder = Finder(deferred)
    sys.meta_path.insert(0, finder)
    try:
        import openai
    finally:
        sys.meta_path.remove(finder)
    return openai
