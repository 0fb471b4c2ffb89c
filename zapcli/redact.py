"""Secret redaction (docs/explanation/rules.md#the-trail): values of secret-looking environment variables
become `***` in trail records and captured output. Imports nothing of zapcli.

A value is secret when its variable's name contains KEY, TOKEN, SECRET,
PASSWORD or HEADERS (an exporter's headers, OTEL_EXPORTER_OTLP_HEADERS,
carry its credentials) and the value is at least 8 characters long; of a
headers variable (`name=value,...`) each header's value is one too.
"""

from __future__ import annotations

import os
from collections.abc import Iterable, Mapping

MARKERS = ("KEY", "TOKEN", "SECRET", "PASSWORD", "HEADERS")
MIN_LEN = 8
MASK = b"***"


def secret_values(environ: Mapping[str, str] | None = None) -> list[bytes]:
    """UTF-8 encoded secret values, longest first (so a longer secret that
    contains a shorter one is masked whole)."""
    env = os.environ if environ is None else environ
    found = {
        value.encode("utf-8", "surrogateescape")
        for name, value in env.items()
        if len(value) >= MIN_LEN and is_secret_name(name)
    }
    found |= {part.encode("utf-8", "surrogateescape") for name, value in env.items()
              if name.upper().endswith("HEADERS") for part in header_values(value) if len(part) >= MIN_LEN}
    return sorted(found, key=len, reverse=True)


def header_values(value: str) -> list[str]:
    """The values of a W3C-baggage-style header list (`k1=v1,k2=v2`, as
    OTEL_EXPORTER_OTLP_HEADERS holds), as written and percent-decoded."""
    from urllib.parse import unquote

    out = []
    for item in value.split(","):
        _, eq, raw = item.partition("=")
        raw = raw.strip()
        if eq and raw:
            out += [raw, unquote(raw)]
            scheme, _, token = unquote(raw).partition(" ")  # "Bearer <token>": the token alone too
            if token.strip() and scheme.isalpha():
                out.append(token.strip())
    return out


def is_secret_name(name: str) -> bool:
    return any(m in name.upper() for m in MARKERS)


def split_secrets(env: Mapping[str, str]) -> tuple[dict[str, str], dict[str, str]]:
    """(the environment without secret-named variables, those variables):
    what a runner may start with in its environment block, and what it is
    handed another way (a /proc/<pid>/environ any same-user tool can read
    must never hold them)."""
    public: dict[str, str] = {}
    secret: dict[str, str] = {}
    for name, value in env.items():
        (secret if is_secret_name(name) else public)[name] = value
    return public, secret


SECRETS_FD_VAR = "ZAPCLI_SECRETS_FD"


def restore_secrets() -> None:
    """The runner's side of `split_secrets`: read the variables from the fd
    named by ZAPCLI_SECRETS_FD (an anonymous memory file its launcher wrote),
    close it and put them into os.environ — the process's own copy, which
    /proc/<pid>/environ (the block it was started with) never shows."""
    fd_text = os.environ.pop(SECRETS_FD_VAR, None)
    if not fd_text or not fd_text.isdigit():
        return
    import json

    fd = int(fd_text)
    try:
        chunks = []
        while True:
            chunk = os.read(fd, 1 << 16)
            if not chunk:
                break
            chunks.append(chunk)
        secrets = json.loads(b"".join(chunks) or b"{}")
    except (OSError, ValueError):
        return
    finally:
        try:
            os.close(fd)
        except OSError:
            pass
    if isinstance(secrets, dict):
        os.environ.update({str(k): str(v) for k, v in secrets.items()})


def secrets_fd(secret: Mapping[str, str]) -> int:
    """An fd holding `secret` as JSON, positioned at its start, for a child
    to inherit (`restore_secrets` reads it): an anonymous memory file where
    the platform has one, else an unlinked 0600 temp file."""
    import json

    data = json.dumps(dict(secret)).encode("utf-8", "surrogateescape")
    if hasattr(os, "memfd_create"):
        fd = os.memfd_create("zapcli-secrets", os.MFD_CLOEXEC)
    else:  # pragma: no cover - not Linux
        import tempfile

        fd = os.dup(tempfile.TemporaryFile().fileno())
    os.write(fd, data)
    os.lseek(fd, 0, os.SEEK_SET)
    return fd


def handoff(env: Mapping[str, str]) -> tuple[dict[str, str], tuple[int, ...]]:
    """(the environment for a child zapcli process, the fds it must inherit):
    the secret-named variables of `env` are not in the returned environment
    (the child's /proc/<pid>/environ) but in an inherited memory file it
    names in ZAPCLI_SECRETS_FD, which `restore_secrets` reads. Pass the fds
    as Popen's `pass_fds` (or make them inheritable for an exec) and close
    them after (`close_handoff`)."""
    public, secret = split_secrets(env)
    if not secret:
        return public, ()
    fd = secrets_fd(secret)
    public[SECRETS_FD_VAR] = str(fd)
    return public, (fd,)


def close_handoff(fds: Iterable[int]) -> None:
    """Close `handoff`'s fds in the launcher once the child has them."""
    for fd in fds:
        try:
            os.close(fd)
        except OSError:
            pass


def mask(data: bytes, secrets: Iterable[bytes]) -> bytes:
    """Replace every occurrence of every secret in `data` with `***`."""
    for secret in secrets:
        if secret in data:
            data = data.replace(secret, MASK)
    return data


def mask_text(text: str, secrets: Iterable[bytes]) -> str:
    """`mask` for text (a tool result on its way to the model)."""
    data = text.encode("utf-8", "surrogateescape")
    masked = mask(data, secrets)
    return text if masked is data else masked.decode("utf-8", "surrogateescape")


class StreamRedactor:
    """Masks secrets in a byte stream fed in arbitrary chunks.

    A secret split across two chunks is still masked: only a chunk's tail
    that is the start of some secret is held back until the next chunk (or
    `finish`) — `tick1 1\n` is never held for a 21-byte key — and the caller
    releases even that after a short idle time (`pending`, `finish`).
    """

    def __init__(self, secrets: list[bytes]):
        self._secrets = secrets
        self._hold = max((len(s) for s in secrets), default=0) - 1
        self._pending = b""

    @property
    def pending(self) -> bool:
        return bool(self._pending)

    def _risky_tail(self, data: bytes) -> int:
        """Length of the longest tail of `data` that begins some secret."""
        for k in range(min(self._hold, len(data)), 0, -1):
            tail = data[-k:]
            if any(s.startswith(tail) for s in self._secrets):
                return k
        return 0

    def feed(self, chunk: bytes) -> bytes:
        """Return the bytes that are safe to write now."""
        if not self._secrets:
            return chunk
        data = mask(self._pending + chunk, self._secrets)
        keep = self._risky_tail(data)
        self._pending = data[len(data) - keep:] if keep else b""
        return data[: len(data) - keep]

    def finish(self) -> bytes:
        """Return whatever is still held back (already masked)."""
        out, self._pending = self._pending, b""
        return out


# A task may contain a secret the user typed (e.g. `curl -H "Authorization: $TOKEN"`
# expanded by their shell). The trail must not hold it, yet the child must run
# the task exactly. So the stored task names the variable instead (a reference,
# U+E000 NAME U+E001), and the spawn record lists the names it made; the
# child, which inherits the same environment, puts back the values of those
# names only; displays show ***. The two private-use characters a caller typed
# themselves are stored escaped (`\ue000=o\ue001`, `\ue000=c\ue001`: no variable
# name holds "="), so no text anyone else wrote can become a reference.
_OPEN, _CLOSE = "\ue000", "\ue001"  # private-use code points: never in real text
_ESCAPE = {ord(_OPEN): f"{_OPEN}=o{_CLOSE}", ord(_CLOSE): f"{_OPEN}=c{_CLOSE}"}
_LITERAL = {"=o": _OPEN, "=c": _CLOSE}


def secret_names(environ: Mapping[str, str] | None = None) -> list[tuple[str, str]]:
    """(name, value) of secret variables, longest value first."""
    env = os.environ if environ is None else environ
    pairs = [(n, v) for n, v in env.items()
             if len(v) >= MIN_LEN and is_secret_name(n) and _OPEN not in n and _CLOSE not in n]
    return sorted(pairs, key=lambda p: len(p[1]), reverse=True)


def marked(text: str, environ: Mapping[str, str] | None = None) -> tuple[str, list[str]]:
    """(the stored form of `text`, the names of the references it made):
    the reference characters already in `text` escaped, then each secret
    value replaced by a reference to its variable."""
    text = text.translate(_ESCAPE) if (_OPEN in text or _CLOSE in text) else text
    names: list[str] = []
    for name, value in secret_names(environ):
        value = value.translate(_ESCAPE)
        if value in text:
            text = text.replace(value, f"{_OPEN}{name}{_CLOSE}")
            names.append(name)
    return text, names


def mark(text: str, environ: Mapping[str, str] | None = None) -> str:
    """`marked` without the names (a stored form nobody expands again)."""
    return marked(text, environ)[0]


class MissingSecret(Exception):
    """A marked task names a variable this environment lacks."""


class UnrecordedSecret(Exception):
    """A stored task holds a reference its spawn did not make (a trail from
    before references were recorded, or one changed by hand)."""


def _parts(text: str) -> list[tuple[str, bool]]:
    """`text` as (piece, is the inside of a marker) in order."""
    out: list[tuple[str, bool]] = []
    rest = text
    while _OPEN in rest:
        head, _, tail = rest.partition(_OPEN)
        inner, sep, after = tail.partition(_CLOSE)
        if not sep:  # an opening character with no end: text (only a hand-edited trail has one)
            break
        out += [(head, False), (inner, True)]
        rest = after
    return out + [(rest, False)]


def unmark(text: str, environ: Mapping[str, str] | None = None,
           names: Iterable[str] | None = ()) -> str:
    """The task as its spawner gave it (the child side): the references
    `names` (the ones its spawn recorded) get their values back, escaped
    characters become themselves. Raises MissingSecret naming a recorded
    variable this environment lacks, UnrecordedSecret for any other
    reference — never its value."""
    if _OPEN not in text:
        return text
    env = os.environ if environ is None else environ
    allowed = set(names or ())
    out = []
    for piece, inner in _parts(text):
        if not inner:
            out.append(piece)
        elif piece in _LITERAL:
            out.append(_LITERAL[piece])
        elif piece not in allowed:
            raise UnrecordedSecret(piece)
        elif piece not in env:
            raise MissingSecret(piece)
        else:
            out.append(env[piece])
    return "".join(out)


def display(text: str) -> str:
    """The stored form for people and logs: every reference shown as ***,
    escaped characters as themselves."""
    if _OPEN not in text:
        return text
    return "".join(piece if not inner else _LITERAL.get(piece, "***")
                   for piece, inner in _parts(text))
