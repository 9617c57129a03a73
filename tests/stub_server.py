"""An OpenAI-compatible stub server for fault injection (stdlib http.server in a thread), shared by the tests of
the openai backend (test_judge_openai.py) and of the revision pipeline (test_revision.py).

The stub decides per request what to do via ``behave(n, prompt)``, where n is the arrival index: ``("ok", text)``,
``("status", code, headers)``, ``("sleep", seconds, text)`` (slow, then ok), ``("drop",)`` (close the connection
without answering), ``("garbage",)`` (200 with a non-JSON body), ``("hang",)`` (block until released).
"""

from __future__ import annotations

import inspect
import json
import socket
import threading
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer


def default_text(prompt: str) -> str:
    return f"The critique is fine. Score: {len(prompt) % 9 + 1}"


class StubServer:
    def __init__(self, behave=lambda n, prompt: ("ok", default_text(prompt)), port: int = 0):
        self.behave = behave
        self.wants_body = len(inspect.signature(behave).parameters) >= 3
        self.log: list[tuple[float, str, str]] = []  # (arrival time, prompt, action kind)
        self.answered: list[str] = []  # prompts that got a successful reply
        self.headers: list[dict] = []
        self.bodies: list[dict] = []
        self.in_flight = self.max_in_flight = 0
        self.reply_fields: dict = {}  # extra top-level fields of every reply (``model``, ``system_fingerprint``)
        self.hang = threading.Event()
        self.got_request = threading.Condition()
        self._lock = threading.Lock()
        stub = self

        class Handler(BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"  # keep-alive, like real servers: the client reuses connections

            def log_message(self, *args):  # keep test output clean
                pass

            def do_GET(self):
                self._send(200, {"object": "list", "data": [{"id": "stub"}]})

            def do_POST(self):
                body = json.loads(self.rfile.read(int(self.headers["Content-Length"])))
                prompt = body["messages"][-1]["content"]  # the user part (after a system message, if any)
                with stub._lock:
                    n = len(stub.log)
                    # a behave(n, prompt, body) also sees the request (its seed, say)
                    action = stub.behave(n, prompt, body) if stub.wants_body else stub.behave(n, prompt)
                    stub.log.append((time.monotonic(), prompt, action[0]))
                    stub.headers.append({k.lower(): v for k, v in self.headers.items()})
                    stub.bodies.append(body)
                    stub.in_flight += 1
                    stub.max_in_flight = max(stub.max_in_flight, stub.in_flight)
                with stub.got_request:
                    stub.got_request.notify_all()
                try:
                    self._act(action, prompt)
                finally:
                    with stub._lock:
                        stub.in_flight -= 1

            def _act(self, action, prompt):
                kind = action[0]
                if kind == "hang":
                    stub.hang.wait()
                    self.close_connection = True
                elif kind == "drop":
                    self.close_connection = True
                    self.connection.shutdown(socket.SHUT_RDWR)
                elif kind == "status":
                    self._send(action[1], {"error": {"message": f"stub says {action[1]}"}}, action[2])
                elif kind == "garbage":
                    self._send(200, None, raw=b"<html>bad gateway</html>")
                else:
                    if kind == "sleep":
                        time.sleep(action[1])
                    text = action[-1]
                    reply = {"choices": [{"index": 0, "message": {"role": "assistant", "content": text}}],
                             **stub.reply_fields}
                    if self._send(200, reply):
                        with stub._lock:
                            stub.answered.append(prompt)

            def _send(self, code, payload, headers=None, raw=None):
                data = raw if raw is not None else json.dumps(payload).encode()
                try:
                    self.send_response(code)
                    for key, value in (headers or {}).items():
                        self.send_header(key, value)
                    self.send_header("Content-Type", "application/json")
                    self.send_header("Content-Length", str(len(data)))
                    self.end_headers()
                    self.wfile.write(data)
                    self.wfile.flush()
                    return True
                except OSError:  # the client gave up (timeout) and closed the socket
                    self.close_connection = True
                    return False

        class Server(ThreadingHTTPServer):
            daemon_threads = True
            allow_reuse_address = True

            def handle_error(self, request, client_address):
                pass  # broken pipes from clients that timed out are expected here

        self.server = Server(("127.0.0.1", port), Handler)
        self.port = self.server.server_address[1]
        self.base_url = f"http://127.0.0.1:{self.port}/v1"
        self._thread = threading.Thread(target=self.server.serve_forever, kwargs={"poll_interval": 0.05}, daemon=True)
        self._thread.start()

    def prompts(self) -> list[str]:
        return [prompt for _, prompt, _ in self.log]

    def wait_for_requests(self, count: int, timeout: float = 30) -> bool:
        with self.got_request:
            return self.got_request.wait_for(lambda: len(self.log) >= count, timeout)

    def release(self):
        self.hang.set()

    def stop(self):
        """Die like a killed server: stop accepting (connections are refused) and release hung handlers."""
        self.release()
        self.server.shutdown()
        self.server.server_close()

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.stop()
