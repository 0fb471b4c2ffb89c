"""`zapcli output`: the whole captured output, unfolded (or followed)."""

from __future__ import annotations

import codecs
from collections.abc import Callable

from zapcli.cli.output import emit_bytes, emit_json, escape_controls
from zapcli.cli.settings import for_observers
from zapcli.ops.output import chunks

TYPE_CHECKING = False
if TYPE_CHECKING:
    from zapcli.config import Settings


def execute(id: str, stderr: bool = False, follow: bool = False, raw: bool = False,
            json: bool = False) -> int:
    from zapcli.trail.store import resolve

    id = resolve(id)  # the 8-hex tail stands for the id
    settings = _once(for_observers)  # read (and warned about) only if a queued one needs a slot
    if json:
        data = b"".join(chunks(id, stderr=stderr, follow=follow, settings=settings))
        from zapcli.lifecycle.observe import observe
        from zapcli.render import output as render

        view = observe(id)
        emit_json(render.doc(id, stderr, data, view.stderr_written if stderr else view.stdout_written))
        return 0
    decoder = codecs.getincrementaldecoder("utf-8")("replace")
    for chunk in chunks(id, stderr=stderr, follow=follow, settings=settings):
        if raw:
            emit_bytes(chunk)
        else:  # never let captured escape sequences reach the terminal
            emit_bytes(escape_controls(decoder.decode(chunk)).encode("utf-8"))
    if not raw:
        emit_bytes(escape_controls(decoder.decode(b"", final=True)).encode("utf-8"))
    _note_truncation(id, stderr)
    return 0


def _once(fn: Callable[[], Settings]) -> Callable[[], Settings]:
    got: list[Settings] = []

    def first() -> Settings:
        if not got:
            got.append(fn())
        return got[0]
    return first


def _note_truncation(sid: str, stderr: bool) -> None:
    import sys

    from zapcli.lifecycle.observe import observe
    from zapcli.ops.fold import kept_ends
    from zapcli.render.common import cut_note
    from zapcli.trail import store

    view = observe(sid)
    written = view.stderr_written if stderr else view.stdout_written
    path = store.path_for(sid, ".err" if stderr else ".out")
    try:
        kept = path.stat().st_size
    except OSError:
        kept = 0
    note = cut_note(written, kept, bool(written and written > kept and kept_ends(path)))
    if note:
        sys.stderr.write(f"zapcli: note: {note}\n")
