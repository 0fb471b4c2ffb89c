"""The real tools the telemetry tests check against, as `make test-tools`
installs them: Arize Phoenix (an OTLP/HTTP trace receiver that answers
queries), Harbor's ATIF validator, Debian's chromium. Each test that needs
one skips, naming the make target, when it is missing."""

from __future__ import annotations

import json
import os
import shutil
import signal
import socket
import subprocess
import sys
import urllib.request
from pathlib import Path

import pytest

from tests.conftest import REPO, wait_until

TOOLS = REPO / ".venv" / "tools"
PHOENIX = TOOLS / "phoenix" / "bin" / "phoenix"
HARBOR = TOOLS / "harbor"


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


class Phoenix:
    """`phoenix serve` on 127.0.0.1, its database in `folder`; stopped by pid."""

    def __init__(self, folder: Path):
        if not PHOENIX.exists():
            pytest.skip("Arize Phoenix is not installed: make test-tools")
        self.port, self.grpc_port = free_port(), free_port()
        env = {**os.environ, "PHOENIX_WORKING_DIR": str(folder), "PHOENIX_HOST": "127.0.0.1",
               "PHOENIX_PORT": str(self.port), "PHOENIX_GRPC_PORT": str(self.grpc_port),
               "PHOENIX_TELEMETRY_ENABLED": "false"}
        for key in [k for k in env if k.startswith("OTEL_")]:
            del env[key]
        self.log = folder / "phoenix.log"
        self.proc = subprocess.Popen([str(PHOENIX), "serve"], env=env, stdin=subprocess.DEVNULL,
                                     stdout=self.log.open("wb"), stderr=subprocess.STDOUT,
                                     start_new_session=True)
        self.url = f"http://127.0.0.1:{self.port}"
        self.grpc_url = f"http://127.0.0.1:{self.grpc_port}"  # OTLP over gRPC (it takes no OTLP/HTTP JSON)

    def ready(self, timeout: float = 240) -> Phoenix:
        def up() -> bool:
            if self.proc.poll() is not None:
                raise AssertionError(f"phoenix exited {self.proc.returncode}: {self.log.read_text()[-2000:]}")
            try:
                with urllib.request.urlopen(f"{self.url}/healthz", timeout=2) as r:
                    return r.status == 200
            except OSError:
                return False
        wait_until(up, timeout, 0.5)
        return self

    def every_span(self) -> list[dict]:
        """Every span of every project (spans whose resource names no
        project land in Phoenix's `default`)."""
        with urllib.request.urlopen(f"{self.url}/v1/projects?limit=1000", timeout=10) as r:
            names = [p["name"] for p in json.loads(r.read())["data"]]
        return [s for name in names for s in self.spans(name)]

    def spans(self, project: str) -> list[dict]:
        """Every span Phoenix stored for `project`, through its REST API."""
        out: list[dict] = []
        cursor = ""
        while True:
            url = f"{self.url}/v1/projects/{project}/spans?limit=500" + (f"&cursor={cursor}" if cursor else "")
            try:
                with urllib.request.urlopen(url, timeout=10) as r:
                    page = json.loads(r.read())
            except OSError:  # the project appears with its first span
                return out
            out += page.get("data") or []
            cursor = page.get("next_cursor") or ""
            if not cursor:
                return out

    def stop(self) -> None:
        try:
            os.killpg(self.proc.pid, signal.SIGTERM)
            self.proc.wait(20)
        except (ProcessLookupError, subprocess.TimeoutExpired):
            try:
                os.killpg(self.proc.pid, signal.SIGKILL)
            except ProcessLookupError:
                pass
        self.proc.wait()


class OtlpCapture:
    """An OTLP/HTTP traces endpoint on 127.0.0.1 that keeps what it receives,
    decoded with the official OpenTelemetry protobuf definitions (what
    Phoenix does not keep: span links), and each request's headers."""

    def __init__(self) -> None:
        import threading
        from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

        from opentelemetry.proto.collector.trace.v1.trace_service_pb2 import (
            ExportTraceServiceRequest,
            ExportTraceServiceResponse,
        )

        self.spans: list = []  # opentelemetry.proto.trace.v1.Span messages
        self.headers: list[dict[str, str]] = []
        capture = self

        class Handler(BaseHTTPRequestHandler):
            def do_POST(self) -> None:  # noqa: N802 - the stdlib's name
                body = self.rfile.read(int(self.headers.get("content-length") or 0))
                capture.headers.append(dict(self.headers))
                req = ExportTraceServiceRequest()
                req.ParseFromString(body)
                for resource in req.resource_spans:
                    for scope in resource.scope_spans:
                        capture.spans.extend(scope.spans)
                answer = ExportTraceServiceResponse().SerializeToString()
                self.send_response(200)
                self.send_header("content-type", "application/x-protobuf")
                self.send_header("content-length", str(len(answer)))
                self.end_headers()
                self.wfile.write(answer)

            def log_message(self, *args: object) -> None:
                pass

        self.server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.url = f"http://127.0.0.1:{self.server.server_address[1]}"
        threading.Thread(target=self.server.serve_forever, daemon=True).start()

    def close(self) -> None:
        self.server.shutdown()
        self.server.server_close()


def harbor_validate(path: Path) -> subprocess.CompletedProcess:
    """Harbor's published ATIF validator (its own CLI) on one file."""
    if not (HARBOR / "harbor" / "utils" / "trajectory_validator.py").exists():
        pytest.skip("Harbor's ATIF validator is not installed: make test-tools")
    env = {**os.environ, "PYTHONPATH": str(HARBOR)}
    return subprocess.run([sys.executable, "-m", "harbor.utils.trajectory_validator", str(path)],
                          env=env, capture_output=True, text=True, timeout=120)


def chromium() -> str:
    found = shutil.which("chromium") or shutil.which("chromium-browser")
    if not found:
        pytest.skip("chromium is not installed: make test-tools (apt-get install chromium)")
    return found


def browse(page: Path, profile: Path, *extra: str, timeout: float = 120) -> subprocess.CompletedProcess:
    """Headless chromium on a local page, with a fresh profile and nothing
    that talks to the network by itself; every other request would go to a
    proxy on 127.0.0.1 that the caller counts."""
    argv = [chromium(), "--headless", "--no-sandbox", "--disable-gpu", "--no-first-run",
            "--disable-background-networking", "--disable-component-update", "--disable-sync",
            f"--user-data-dir={profile}", *extra, page.as_uri()]
    return subprocess.run(argv, capture_output=True, text=True, timeout=timeout)
