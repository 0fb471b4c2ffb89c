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
"""

from __future__ import annotations

import sys
import threading

TYPE_CHECKING = False
if TYPE_CHECKING:
    from types import ModuleType

UNUSED = ("aiohttp",)  # optional transports of the SDK zapcli never uses
_lock = threading.Lock()


def load() -> ModuleType:
    """The `openai` module, imported (once) without the transports in UNUSED.
    Raises ImportError as `import openai` would."""
    mod = sys.modules.get("openai")
    if mod is not None and getattr(mod, "OpenAI", None) is not None:
        return mod  # imported already, in full
    with _lock:
        refused = [name for name in UNUSED if name not in sys.modules]
        for name in refused:
            sys.modules[name] = None  # type: ignore[assignment]  # `import` raises ImportError
        try:
            import openai
        finally:
            for name in refused:
                if name in sys.modules and sys.modules[name] is None:
                    del sys.modules[name]
    return openai
