"""`output --json`: the captured bytes as text, with what was written and kept."""

from __future__ import annotations

from typing import Any

from zapcli.render.docschema import stamp


def doc(sid: str, stderr: bool, data: bytes, written: int | None) -> dict[str, Any]:
    total = written or len(data)
    return stamp("output", {"id": sid, "stream": "stderr" if stderr else "stdout", "bytes": len(data),
            "written_bytes": total, "truncated": total > len(data),
            "text": data.decode("utf-8", "replace")})
