"""The placeholders' records (`zapcli.sandbox.placeholders`): what each
sandbox start made, kept in a folder of zapcli's state so that a
placeholder a killed runner left is still removed, by the next sandbox that
starts or by `zapcli gc`. Imports the standard library and this room.

One JSON file per start that made placeholders, `{"paths": [...], "stamps":
{path: [inode, ctime_ns]}}` (stamps: of the files, once written), written
before they are made (a crash right after leaves them sweepable) and again
once they are. A `Book` reads them whole (a few small files), settles path
by path under each one's exclusive lock, and writes them back once.

A record written before its placeholders are made says `"making": true`
until the start rewrites it: another sandbox's `Book` (a sweep at its own
start, its release) may find those paths still missing and settle them,
but never writes such a record back — had it, a start that made its
placeholders meanwhile would have lost their record, and with it their
removal (seen: `opencode.json` left in the tree an `attempts --check` ran
in, while the other attempt's check started). A making record whose writer
is gone (its pid, in the file's name, no longer runs) or that is older
than `MAKING_S` is an ordinary one.
"""

from __future__ import annotations

import json
import os
import stat
import time

from zapcli.sandbox.neutral import unchanged

MAKING_S = 600.0  # a start takes milliseconds (its locks wait at most seconds): older is stale


def same(st: os.stat_result, other: os.stat_result) -> bool:
    return (st.st_dev, st.st_ino) == (other.st_dev, other.st_ino)


class Book:
    """The records in the folder `records`, read whole; `settled` paths
    are dropped from them by `save`."""

    def __init__(self, records: str, own: str = ""):
        self.records = records
        self.files: dict[str, list[str]] = {}
        self.stamps: dict[str, dict[str, list[int]]] = {}
        self.making: set[str] = set()  # records another start is still making: never written back
        try:
            names = os.listdir(records)
        except OSError:
            names = []
        for name in names:
            if name.endswith(".json"):
                try:
                    with open(os.path.join(records, name), encoding="utf-8") as fh:
                        data = json.load(fh)
                    paths, stamps = data.get("paths"), data.get("stamps") or {}
                    if data.get("making") is True and os.path.join(records, name) != own \
                            and _making(records, name):
                        self.making.add(name)
                except (OSError, ValueError, AttributeError):
                    continue
                if isinstance(paths, list):
                    self.files[name] = [p for p in paths if isinstance(p, str)]
                if isinstance(stamps, dict):
                    self.stamps[name] = {p: s for p, s in stamps.items()
                                         if isinstance(s, list) and len(s) == 2}
        self.settled: set[str] = set()

    def recorded(self, path: str) -> bool:
        return any(path in paths for paths in self.files.values())

    def stamps_of(self, path: str) -> list[list[int]]:
        return [s[path] for s in self.stamps.values() if path in s]

    def still_made(self, path: str, st: os.stat_result, fd: int) -> bool:
        """Whether the folder or file `st` (open as `fd`) is a recorded
        placeholder as it was made: an empty folder, or a file unchanged."""
        if not self.recorded(path):
            return False
        if stat.S_ISDIR(st.st_mode):
            return not os.listdir(fd)
        return stat.S_ISREG(st.st_mode) and unchanged(path, st, fd, self.stamps_of(path))

    def settle(self, path: str, fd: int) -> None:
        """With the path's exclusive lock held: remove it when it is a
        recorded placeholder as made and still at `path`; forget it when it
        holds something of the user's now or is gone."""
        if not self.recorded(path):
            return
        try:
            here, held = os.lstat(path), os.fstat(fd)
        except OSError:
            self.settled.add(path)
            return
        if not same(here, held):
            return  # another one is there now: decided on when that one is held
        try:
            if not self.still_made(path, held, fd):
                self.settled.add(path)  # it holds something now: it is the user's
                return
            os.rmdir(path) if stat.S_ISDIR(held.st_mode) else os.unlink(path)
        except OSError:
            return
        self.settled.add(path)

    def save(self) -> None:
        for name, paths in self.files.items():
            if name in self.making:
                continue  # its start rewrites it once its placeholders are made
            left = [p for p in paths if p not in self.settled]
            if left == paths:
                continue
            target = os.path.join(self.records, name)
            try:
                if left:
                    stamps = self.stamps.get(name, {})
                    write(target, left, {p: s for p, s in stamps.items() if p in left})
                else:
                    os.unlink(target)
            except OSError:
                continue


def _making(records: str, name: str) -> bool:
    """Whether the start that wrote the making record `name` may still be
    making its placeholders: its process runs and the record is recent."""
    try:
        pid = int(name.split(".", 1)[0])
        if time.time() - os.stat(os.path.join(records, name)).st_mtime > MAKING_S:
            return False
        os.kill(pid, 0)
    except (ProcessLookupError, ValueError):
        return False  # its process is gone, or it is no record a start wrote
    except OSError:
        return True  # another user's process (EPERM), or the record went meanwhile
    return True


def write(target: str, paths: list[str], stamps: dict[str, list[int]] | None = None,
          making: bool = False) -> None:
    tmp = f"{target}.{os.getpid()}.{os.urandom(3).hex()}.tmp"
    with open(tmp, "w", encoding="utf-8") as fh:
        json.dump({"paths": paths, **({"stamps": stamps} if stamps else {}),
                   **({"making": True} if making else {})}, fh)
    os.replace(tmp, target)


def start(records: str, paths: list[str]) -> str:
    """Record the placeholders about to be made, before they are (a crash
    right after leaves them sweepable); the record's file. Best effort: one
    that cannot be recorded is still made (the protection comes first)."""
    if not records or not paths:
        return ""
    target = os.path.join(records, f"{os.getpid()}.{os.urandom(6).hex()}.json")
    try:
        os.makedirs(records, mode=0o700, exist_ok=True)
        write(target, paths, making=True)
    except OSError:
        return ""
    return target


