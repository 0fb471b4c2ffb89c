"""The script format every scripted protocol server shares: rules, turns, and
the per-conversation cursor. Imports only the standard library (PyYAML lazily).

A script is a list of rules. Each rule has an optional `match` (a substring of
the conversation's first user message or of its system prompt; no `match`
matches everything), a list of `turns`, and optional `loop: true` (start over
when the turns run out; otherwise the conversation gets a closing text turn,
and a request opening it again — the same task run again — an HTTP 409).
A conversation is identified by its system prompt and first user message; it
takes the first rule that matches and advances one turn per request. A rule
with `match_any` instead (Chat Completions) takes any request one of whose
user messages holds that text, as a conversation of its own: a fork, whose
request repeats its parent's conversation before its own task.

Turn keys (all optional; each protocol renders them in its own wire format):
  text: str                  assistant text, streamed in small pieces
  reasoning: str             reasoning / thinking
  reasoning_field: str       Chat Completions only: "reasoning_content"
                               (default), "reasoning" or "think_tags"
  tool_calls: [{name, arguments, id?}]   arguments: an object (sent as JSON)
                               or a string (sent verbatim, e.g. invalid JSON)
  usage: {prompt_tokens, completion_tokens, cached_tokens?, reasoning_tokens?,
          cache_write_tokens?, thoughts_tokens?} | null  (in each protocol's shape)
                               absent = estimated from sizes; null = not sent
  finish_reason: str         default "tool_calls" when calls, else "stop"
  http_error: {status, times=1, message?, code?, type?, retry_after_ms=10,
               retry_after?, headers?, body?, until?}  answer with this HTTP
                               error `times` times (or until the epoch `until`,
                               whichever comes first: a limit that resets),
                               then serve the next turn (429: a
                               rate limit; 529, or type overloaded_error: an
                               overloaded server; retry_after: seconds, sent as
                               Retry-After; headers: more response headers, as
                               given; body: the error body verbatim, in place
                               of the protocol's own shape — a provider's
                               usage-limit answer)
  error_200: {message, type?, code?}   an error inside an HTTP 200 (for a
                               streaming protocol: an error event mid-stream)
  raw: [str | object, ...]   streamed verbatim: strings as-is, objects as
                               `data: <json>\\n\\n`
  close: "clean" | "abort"   how a raw stream ends ("abort": cut it short)
  delay_s: float             sleep before answering
  hold: str                  answer only once the test calls
                               `srv.release(<that name>)` (or the server
                               stops): a call that stays open exactly as long
                               as the test needs it, not a guessed delay_s
  generate_s: float          a streamed answer's first event at once, the rest
                               this many seconds later (a model generating;
                               anthropic: message_start says the call began)

Strings may hold placeholders `{name}` filled from `variables` when the turn is
answered (after its hold: a test can set one while the call waits).
"""

from __future__ import annotations

import json
import threading
import time
from collections.abc import Iterable
from pathlib import Path
from typing import Any

_RULE_KEYS = {"match", "match_any", "turns", "loop"}
TURN_KEYS = {"text", "reasoning", "reasoning_field", "tool_calls", "usage", "finish_reason",
             "http_error", "error_200", "raw", "close", "delay_s",
             "generate_s", "hold"}
EXHAUSTED_TEXT = "[scripted server: this conversation has no more turns]"


class ScriptError(ValueError):
    """The script is malformed; the message names the rule and turn."""


def load_script(path: str | Path) -> list[dict[str, Any]]:
    """Read a script from a JSON or YAML file (a list of rules, or {rules: [...]})."""
    text = Path(path).read_text(encoding="utf-8")
    if str(path).endswith((".yml", ".yaml")):
        import yaml

        data = yaml.safe_load(text)
    else:
        data = json.loads(text)
    return validate_script(data)


def validate_script(data: Any) -> list[dict[str, Any]]:
    """Return the rules of `data`; raise ScriptError naming what is wrong."""
    if isinstance(data, dict) and "rules" in data:
        data = data["rules"]
    if not isinstance(data, list):
        raise ScriptError("a script is a list of rules")
    for i, rule in enumerate(data):
        if not isinstance(rule, dict) or not isinstance(rule.get("turns"), list):
            raise ScriptError(f"rule {i}: expected a mapping with a `turns` list")
        if unknown := set(rule) - _RULE_KEYS:
            raise ScriptError(f"rule {i}: unknown key(s) {sorted(unknown)}")
        for j, turn in enumerate(rule["turns"]):
            _validate_turn(turn, f"rule {i} turn {j}")
    return data


def _validate_turn(turn: Any, where: str) -> None:
    if not isinstance(turn, dict):
        raise ScriptError(f"{where}: expected a mapping")
    if unknown := set(turn) - TURN_KEYS:
        raise ScriptError(f"{where}: unknown key(s) {sorted(unknown)}; valid: {sorted(TURN_KEYS)}")
    err = turn.get("http_error")
    if err is not None and not (isinstance(err, dict) and int(err.get("times", 1)) >= 1):
        raise ScriptError(f"{where}: http_error needs {{status, times >= 1}}")
    e200 = turn.get("error_200")
    if e200 is not None and not (isinstance(e200, dict) and isinstance(e200.get("message"), str)):
        raise ScriptError(f"{where}: error_200 needs {{message, type?, code?}}, got {e200!r}")
    if "close" in turn and (turn["close"] not in ("clean", "abort") or "raw" not in turn):
        raise ScriptError(f"{where}: close is \"clean\" or \"abort\" and goes with `raw` (got "
                          f"{turn['close']!r}); to cut a stream short, give `raw` lines without "
                          "a final chunk and close: \"abort\"")
    if "hold" in turn and not (isinstance(turn["hold"], str) and turn["hold"]):
        raise ScriptError(f"{where}: hold is a name (the test's `srv.release(name)` answers it), "
                          f"got {turn['hold']!r}")
    raw = turn.get("raw")
    if raw is not None and not (isinstance(raw, list) and all(isinstance(x, (str, dict)) for x in raw)):
        raise ScriptError(f"{where}: raw is a list of SSE strings (sent verbatim, each ending in "
                          "\\n\\n) or chunk objects")


def text_of(content: Any) -> str:
    """The text of a message content: a string, or a list of parts with `text`."""
    if isinstance(content, str):
        return content
    if isinstance(content, list):
        return "".join(p.get("text", "") for p in content if isinstance(p, dict)
                       and isinstance(p.get("text", ""), str))
    return ""


def pieces(text: str, size: int = 12) -> Iterable[str]:
    """`text` in chunks of `size` characters, as a model streams it."""
    return (text[i:i + size] for i in range(0, len(text), size))


def estimate_tokens(obj: Any) -> int:
    """A size-based token estimate (4 characters a token), at least 1."""
    return max(1, len(obj if isinstance(obj, str) else json.dumps(obj)) // 4)


class Conversations:
    """Which turn each conversation is at. Thread-safe."""

    def __init__(self, rules: list[dict[str, Any]], variables: dict[str, str] | None = None):
        self.rules = rules
        self.variables: dict[str, str] = dict(variables or {})
        self._lock = threading.Lock()
        self._convs: dict[tuple[str, str, str], dict[str, Any]] = {}
        self._holds: dict[str, threading.Event] = {}
        self._stopped = False

    def _hold(self, name: str) -> threading.Event:
        with self._lock:
            event = self._holds.setdefault(name, threading.Event())
            if self._stopped:
                event.set()
            return event

    def release(self, name: str | None = None) -> None:
        """Let the turns held under `name` answer (every hold, and any later
        one, when `name` is None: the server is stopping)."""
        if name is not None:
            self._hold(name).set()
            return
        with self._lock:
            self._stopped = True
            holds = list(self._holds.values())
        for event in holds:
            event.set()

    def pause(self, turn: dict[str, Any]) -> None:
        """Before a turn is answered: its hold, then its delay_s."""
        if name := turn.get("hold"):
            self._hold(name).wait()
        time.sleep(float(turn.get("delay_s") or 0))

    def fill(self, value: Any) -> Any:
        """Replace `{name}` placeholders in every string inside `value`."""
        if isinstance(value, str):
            for name, sub in self.variables.items():
                value = value.replace("{" + name + "}", str(sub))
            return value
        if isinstance(value, list):
            return [self.fill(v) for v in value]
        if isinstance(value, dict):
            return {k: self.fill(v) for k, v in value.items()}
        return value

    def next_turn(self, system: str, user: str, thread: str = "",
                  users: Iterable[str] = (), opening: bool = False) -> tuple[dict[str, Any] | None, str]:
        """The turn to serve for this conversation, or (None, why) when no rule matches.

        `thread`: an id the client gives its conversation, where its protocol
        has one (it keeps two conversations with the same opening apart; it
        never takes part in `match`). A served turn carries `_id` (unique per
        conversation and turn), for ids of calls and messages. `users`: every
        user message of the request, for `match_any` rules. `opening`: the
        request holds nothing the model said yet (its protocol knows): one
        that opens a conversation whose turns were all played — the same
        task run again — is answered with an HTTP 409 error turn saying so
        (a run must not look completed on a script that was not played),
        where one that goes on past its turns gets the closing text."""
        users = list(users)
        forked = next((i for i, r in enumerate(self.rules) if r.get("match_any")
                       and any(r["match_any"] in u for u in users)), None)
        if forked is not None:
            thread = f"{thread}\0match_any {forked}"
        with self._lock:
            conv = self._convs.get((system, user, thread))
            if conv is None:
                for idx, rule in enumerate(self.rules):
                    m = rule.get("match")
                    if "match_any" in rule and idx != forked:
                        continue
                    if idx == forked or m is None or m in user or m in system:
                        conv = {"rule": idx, "turn": 0, "failed": 0, "n": len(self._convs)}
                        break
                else:
                    return None, f"scripted server: no rule matches the user message {user[:80]!r}"
                self._convs[(system, user, thread)] = conv
            elif opening and self._played(conv):
                return self._replayed(conv), ""
            return self._advance(conv), ""

    def _played(self, conv: dict[str, Any]) -> bool:
        rule = self.rules[conv["rule"]]
        return bool(rule["turns"]) and not rule.get("loop") and conv["turn"] >= len(rule["turns"])

    def _replayed(self, conv: dict[str, Any]) -> dict[str, Any]:
        n = len(self.rules[conv["rule"]]["turns"])
        return {"http_error": {"status": 409, "code": "script_played", "message": (
            f"scripted server: this conversation already played all {n} turn(s) of rule "
            f"{conv['rule'] + 1} (the same task run again): restart the server to play the "
            'script again, or give the rule "loop": true')}, "_id": f"{conv['n']}_replayed"}

    def _advance(self, conv: dict[str, Any]) -> dict[str, Any]:
        turns = self.rules[conv["rule"]]["turns"]
        while True:
            if conv["turn"] >= len(turns):
                if not self.rules[conv["rule"]].get("loop") or not turns:
                    return {"text": EXHAUSTED_TEXT, "_id": f"{conv['n']}_end"}
                conv["turn"] = 0
            turn = turns[conv["turn"]]
            err = turn.get("http_error")
            over = err is not None and err.get("until") is not None and time.time() >= err["until"]
            if err is not None and conv["failed"] < int(err.get("times", 1)) and not over:
                conv["failed"] += 1
                return turn
            conv["turn"] += 1
            conv["failed"] = 0
            if err is None:  # ids count the turns served (a looping rule's never repeat)
                conv["served"] = conv.get("served", 0) + 1
                return dict(turn, _id=f"{conv['n']}_{conv['served']}")
