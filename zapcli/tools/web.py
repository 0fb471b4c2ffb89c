"""The `WebFetch` and `WebSearch` tools: HTTP GET with urllib, HTML as Markdown text.
Imports: stdlib, zapcli.agent.types, zapcli.tools._base; zapcli.tools.htmltext
(bs4, markdownify) when a page is HTML.

WebSearch exists only with a provider: a callable `(query, max_results) ->
list[{title, url, snippet}]`, or a URL template with `{query}` answering JSON
`{"results": [{title, url, content|snippet|description}]}` (SearXNG's format).
"""

from __future__ import annotations

import json
import re
import urllib.error
import urllib.parse
import urllib.request
from collections.abc import Callable, Mapping, Sequence
from typing import Any

from zapcli.agent.types import ToolContext, ToolResult, ToolSpec
from zapcli.tools._base import BaseTool, ToolError, capped_timeout, fold, ok, schema

MAX_BYTES = 512 * 1024
MAX_TEXT = 100_000
TIMEOUT_S = 30.0
USER_AGENT = "zapcli (+https://github.com/zapcli)"
SearchProvider = Callable[[str, int], Sequence[Mapping[str, Any]]]


class _NoOddRedirects(urllib.request.HTTPRedirectHandler):
    """Follow redirects only to http(s): never to ftp: or file: URLs."""

    def redirect_request(self, req, fp, code, msg, headers, newurl):  # type: ignore[no-untyped-def]
        if urllib.parse.urlsplit(newurl).scheme.lower() not in ("http", "https"):
            raise ToolError(f"the server redirected to {newurl}, which is not http(s); "
                            "not followed")
        return super().redirect_request(req, fp, code, msg, headers, newurl)


_OPENER = urllib.request.build_opener(_NoOddRedirects)


def http_get(url: str, timeout_s: float, max_bytes: int = MAX_BYTES,
             accept: str = "*/*") -> tuple[int, str, bytes, bool, str]:
    """GET `url`; (status, content type, body up to max_bytes, truncated, final url).
    Raises ToolError with an actionable message."""
    parts = urllib.parse.urlsplit(url.strip())
    if parts.scheme.lower() not in ("http", "https") or not parts.netloc:
        raise ToolError(f"{url!r} is not an http(s) URL; give a full URL such as "
                        "https://example.com/page")
    req = urllib.request.Request(url.strip(), headers={"User-Agent": USER_AGENT,
                                                       "Accept": accept})
    try:
        with _OPENER.open(req, timeout=timeout_s) as resp:
            body = resp.read(max_bytes + 1)
            ctype = resp.headers.get("Content-Type", "")
            return resp.status, ctype, body[:max_bytes], len(body) > max_bytes, resp.url
    except urllib.error.HTTPError as e:
        snippet = e.read(2000).decode("utf-8", errors="replace").strip()
        snippet = re.sub(r"\s+", " ", _html_to_text(snippet) if "<" in snippet else snippet)
        raise ToolError(f"HTTP {e.code} {e.reason} from {url}" +
                        (f": {snippet[:300]}" if snippet else "")) from None
    except urllib.error.URLError as e:
        raise ToolError(f"could not fetch {url}: {e.reason}; check the URL, or the site may "
                        "be down") from None
    except TimeoutError:
        raise ToolError(f"fetching {url} timed out after {timeout_s:.0f}s") from None


def _html_to_text(markup: str, base_url: str | None = None) -> str:
    """HTML as Markdown text (`zapcli.tools.htmltext`: links and tables kept)."""
    from zapcli.tools.htmltext import to_text

    return to_text(markup, base_url)


def _charset(ctype: str) -> str:
    m = re.search(r"charset=([\w.:-]+)", ctype, re.I)
    return m.group(1) if m else "utf-8"


class WebFetchTool(BaseTool):
    spec = ToolSpec(
        name="WebFetch",
        description=(
            "Fetch a web page or file over http(s) with GET and return it as text: HTML is "
            "converted to Markdown (links made absolute, tables kept), other text types are "
            "returned as is. At most "
            f"{MAX_BYTES // 1024} KB are downloaded and {MAX_TEXT:,} characters returned "
            "(the answer says when it was truncated). No JavaScript runs, no cookies, no "
            "login. Binary content (images, archives) is refused."),
        parameters=schema({
            "url": {"type": "string", "description": "Full http:// or https:// URL."},
        }, ["url"]),
    )

    def __init__(self, timeout_s: float = TIMEOUT_S):
        self.timeout_s = timeout_s

    def _run(self, args: dict[str, Any], ctx: ToolContext) -> ToolResult:
        url = args["url"]
        timeout, _ = capped_timeout(ctx, self.timeout_s)
        status, ctype, body, truncated, final = http_get(url, timeout)
        mime = ctype.split(";")[0].strip().lower()
        textual = (not mime or mime.startswith("text/") or "json" in mime or "xml" in mime
                   or "javascript" in mime or mime in ("application/x-yaml", "application/yaml"))
        if not textual:
            raise ToolError(f"{final} is {mime} ({len(body):,} bytes), not text; WebFetch "
                            "only returns text")
        try:
            text = body.decode(_charset(ctype), errors="replace")
        except LookupError:
            text = body.decode("utf-8", errors="replace")
        if "html" in mime or (not mime and "<html" in text[:2000].lower()):
            text = _html_to_text(text, final)
        head = f"{final} (HTTP {status}, {mime or 'unknown type'}, {len(body):,} bytes"
        head += f", truncated at {MAX_BYTES // 1024} KB)" if truncated else ")"
        notes = ""
        if len(text) > MAX_TEXT:
            text = fold(text, MAX_TEXT)
            notes = f"\n[text truncated to {MAX_TEXT:,} characters; the middle was folded]"
        return ok(f"{head}\n\n{text}{notes}")


class WebSearchTool(BaseTool):
    spec = ToolSpec(
        name="WebSearch",
        description=(
            "Search the web and return the top results as title, URL and snippet. Use "
            "WebFetch on a result's URL to read the page. Keep queries short and specific."),
        parameters=schema({
            "query": {"type": "string", "description": "Search terms."},
            "max_results": {"type": "integer", "minimum": 1,
                            "description": "How many results, at most 20. Default 8."},
        }, ["query"]),
    )

    def __init__(self, provider: SearchProvider | str, timeout_s: float = TIMEOUT_S):
        if isinstance(provider, str):
            if "{query}" not in provider:
                raise ValueError("a WebSearch provider URL needs a {query} placeholder")
        elif not callable(provider):
            raise TypeError("WebSearch needs a provider: a callable or a URL template")
        self.provider = provider
        self.timeout_s = timeout_s

    def _search_url(self, query: str, n: int, timeout: float) -> Sequence[Mapping[str, Any]]:
        assert isinstance(self.provider, str)
        url = self.provider.replace("{query}", urllib.parse.quote_plus(query))
        _, _, body, _, _ = http_get(url, timeout, accept="application/json")
        try:
            data = json.loads(body.decode("utf-8", errors="replace"))
        except ValueError:
            raise ToolError("the search provider did not answer JSON; the search is "
                            "unavailable, use WebFetch on a known URL instead") from None
        results = data.get("results") if isinstance(data, dict) else data
        return [r for r in results or [] if isinstance(r, dict)][:n]

    def _run(self, args: dict[str, Any], ctx: ToolContext) -> ToolResult:
        query = args["query"].strip()
        if not query:
            raise ToolError("`query` is empty")
        n = min(args.get("max_results", 8), 20)
        timeout, _ = capped_timeout(ctx, self.timeout_s)
        if isinstance(self.provider, str):
            results = self._search_url(query, n, timeout)
        else:
            try:
                results = list(self.provider(query, n))[:n]
            except ToolError:
                raise
            except Exception as e:
                raise ToolError(f"the search provider failed: {e}") from None
        if not results:
            return ok(f"no results for {query!r}")
        lines = []
        for i, r in enumerate(results, start=1):
            snippet = str(r.get("snippet") or r.get("content") or r.get("description") or "")
            snippet = re.sub(r"\s+", " ", snippet).strip()[:400]
            lines.append(f"{i}. {r.get('title') or '(no title)'}\n   {r.get('url', '')}"
                         + (f"\n   {snippet}" if snippet else ""))
        return ok("\n".join(lines))
