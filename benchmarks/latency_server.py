"""A latency-bound OpenAI-compatible server: what a hosted API looks like to a client (fixed latency, many slots).

    python benchmarks/latency_server.py --port 8000 --latency 0.5 --slots 64 [--reply auto]

Every request to ``/v1/chat/completions`` or ``/v1/completions`` is answered after ``--latency`` seconds of service,
with ``--slots`` requests in service at once; more wait in a queue (an ``asyncio.Semaphore``) and their wait is on
top of the latency. No model runs: the reply is computed from the prompt, so a caller can plan what it gets back
(``reply_for``). ``GET /v1/models`` lists one model. ``GET /stats`` reports what was served (count, most requests
in flight and in service at once, service-time sums and the first/last service instants on the system-wide
monotonic clock, so a benchmark can compute the share of capacity it used); ``POST /stats/reset`` zeroes them.

Plain stdlib ``asyncio`` streams with HTTP/1.1 keep-alive (``Connection: close`` honoured; chunked request bodies
read), so hundreds of concurrent connections cost little CPU. ``--port 0`` picks a free port; either way the
server prints one ready line, ``latency_server ready http://127.0.0.1:PORT/v1 ...``, when it accepts connections.
``start_server`` (below) runs it as a subprocess and waits for that line.

Replies (``--reply``):

* ``judge``: a grader prompt (``Score: x`` in it, our judge prompts) gets ``... Score: N``; a prompt asking for a
  bracketed rating (``[[rating]]``, ``[[x]]``) gets ``Rating: [[N]]``; a pairwise prompt (``[[A]]`` and ``[[B]]``)
  gets ``[[A]]``, ``[[B]]`` or ``[[C]]``. N (1-10) and the verdict come from a hash of the prompt.
* ``reviser``: the text planned inside the prompt between ``<<<planned-reply>>>`` and ``<<</planned-reply>>>``
  (the last such block) when there is one; else the prompt's last fenced code block, re-fenced; else a hash-derived
  ``The answer is N.``
* ``echo``: the prompt itself.
* ``auto`` (default): ``judge`` when the prompt looks like a judge prompt (checked first, since a judge prompt quotes
  the critique a revision acted on), else ``reviser``.
"""

from __future__ import annotations

import argparse
import asyncio
import hashlib
import json
import re
import select
import subprocess
import sys
import time
from urllib.parse import urlsplit

PLAN_OPEN, PLAN_CLOSE = "<<<planned-reply>>>", "<<</planned-reply>>>"
REPLIES = ("auto", "judge", "reviser", "echo")
_PLANNED = re.compile(re.escape(PLAN_OPEN) + r"\n?(.*?)\n?" + re.escape(PLAN_CLOSE), re.S)
_FENCED = re.compile(r"```[\w+-]*\n(.*?)```", re.S)
_GRADER = re.compile(r"\bScore:\s*(?:x|\[?\d)", re.I)
_RATING = re.compile(r"\[\[\s*(?:rating|x|score|\d+)\s*\]\]", re.I)
_STATUS = {200: "OK", 400: "Bad Request", 404: "Not Found", 405: "Method Not Allowed", 500: "Internal Server Error"}


def plan(text: str) -> str:
    """Wrap ``text`` so that a ``reviser`` (or ``auto``) server replies with exactly it."""
    return f"{PLAN_OPEN}\n{text}\n{PLAN_CLOSE}"


def _number(prompt: str, low: int = 1, high: int = 10) -> int:
    digest = hashlib.sha256(prompt.encode("utf-8", "replace")).digest()
    return low + int.from_bytes(digest[:8], "big") % (high - low + 1)


def judge_reply(prompt: str) -> str | None:
    """A judge's reply to ``prompt``, or None when it is no judge prompt we know."""
    if "[[A]]" in prompt and "[[B]]" in prompt:
        return f"Both responses were weighed.\n[[{'ABC'[_number(prompt, 0, 2)]}]]"
    if _RATING.search(prompt):
        return f"The response was assessed.\nRating: [[{_number(prompt)}]]"
    if _GRADER.search(prompt):
        return f"Compared with the reference, the output was assessed.\nScore: {_number(prompt)}"
    return None


def reviser_reply(prompt: str) -> str:
    planned = _PLANNED.findall(prompt)
    if planned:
        return planned[-1]
    code = _FENCED.findall(prompt)
    if code:
        return f"Revised:\n```python\n{code[-1].rstrip()}\n```"
    return f"The answer is {_number(prompt, 0, 999)}."


def reply_for(prompt: str, mode: str = "auto") -> str:
    if mode == "echo":
        return prompt
    if mode in ("auto", "judge"):
        judged = judge_reply(prompt)
        if judged is not None or mode == "judge":
            return judged if judged is not None else f"Score: {_number(prompt)}"
    return reviser_reply(prompt)


class Stats:
    def __init__(self):
        self.reset()

    def reset(self):
        self.served = self.in_flight = self.in_service = self.max_in_flight = self.max_in_service = 0
        self.service_s = self.wait_s = 0.0
        self.first_start = self.last_end = None

    def as_dict(self, slots: int, latency: float) -> dict:
        return {"served": self.served, "in_flight": self.in_flight, "in_service": self.in_service,
                "max_in_flight": self.max_in_flight, "max_in_service": self.max_in_service,
                "service_s": self.service_s, "wait_s": self.wait_s, "first_start": self.first_start,
                "last_end": self.last_end, "slots": slots, "latency": latency,
                "capacity_per_s": slots / latency if latency > 0 else None}


class LatencyServer:
    def __init__(self, latency: float, slots: int, reply: str = "auto", model: str = "latency-model"):
        self.latency, self.slots, self.reply, self.model = latency, slots, reply, model
        self.stats = Stats()
        self._slots: asyncio.Semaphore | None = None

    async def _serve_one(self, prompts: list[str]) -> list[str]:
        """Queue for a slot, hold it ``latency`` seconds, then answer: the only place time passes."""
        st = self.stats
        st.in_flight += 1
        st.max_in_flight = max(st.max_in_flight, st.in_flight)
        queued = time.monotonic()
        try:
            async with self._slots:
                start = time.monotonic()
                st.wait_s += start - queued
                st.in_service += 1
                st.max_in_service = max(st.max_in_service, st.in_service)
                if st.first_start is None:
                    st.first_start = start
                try:
                    await asyncio.sleep(self.latency)
                finally:
                    st.in_service -= 1
                end = time.monotonic()
                st.served += 1
                st.service_s += end - start
                st.last_end = end
        finally:
            st.in_flight -= 1
        return [reply_for(p, self.reply) for p in prompts]

    async def route(self, method: str, path: str, body: bytes) -> tuple[int, dict]:
        if path in ("/v1/models", "/models") and method == "GET":
            return 200, {"object": "list", "data": [{"id": self.model, "object": "model", "owned_by": "latency_server"}]}
        if path == "/stats":
            if method == "GET":
                return 200, self.stats.as_dict(self.slots, self.latency)
            return 405, {"error": {"message": "GET /stats"}}
        if path == "/stats/reset":
            self.stats.reset()
            return 200, self.stats.as_dict(self.slots, self.latency)
        if path == "/health":
            return 200, {"status": "ok"}
        chat = path in ("/v1/chat/completions", "/chat/completions")
        if not chat and path not in ("/v1/completions", "/completions"):
            return 404, {"error": {"message": f"no route {path}"}}
        if method != "POST":
            return 405, {"error": {"message": f"{path} takes POST"}}
        try:
            request = json.loads(body or b"{}")
            if request.get("stream"):
                return 400, {"error": {"message": "stream=true is not supported by latency_server"}}
            if chat:
                prompts = ["\n".join(part for m in request["messages"] for part in _content(m.get("content")))]
            else:
                raw = request["prompt"]
                prompts = [raw] if isinstance(raw, str) else [str(p) for p in raw]
        except (ValueError, KeyError, TypeError, AttributeError) as err:
            return 400, {"error": {"message": f"bad request: {type(err).__name__}: {err}"}}
        replies = await self._serve_one(prompts)
        model, created = request.get("model") or self.model, int(time.time())
        usage = {"prompt_tokens": sum(len(p.split()) for p in prompts),
                 "completion_tokens": sum(len(r.split()) for r in replies)}
        usage["total_tokens"] = usage["prompt_tokens"] + usage["completion_tokens"]
        if chat:
            choices = [{"index": 0, "message": {"role": "assistant", "content": replies[0]}, "finish_reason": "stop",
                        "logprobs": None}]
            return 200, {"id": f"chatcmpl-{self.stats.served}", "object": "chat.completion", "created": created,
                         "model": model, "choices": choices, "usage": usage}
        choices = [{"index": i, "text": r, "finish_reason": "stop", "logprobs": None} for i, r in enumerate(replies)]
        return 200, {"id": f"cmpl-{self.stats.served}", "object": "text_completion", "created": created,
                     "model": model, "choices": choices, "usage": usage}

    async def handle(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter):
        try:
            while True:
                request_line = await reader.readline()
                if not request_line.strip():
                    break
                method, target, version = request_line.decode("latin-1").split(None, 2)
                headers = {}
                while True:
                    line = await reader.readline()
                    if line in (b"\r\n", b"\n", b""):
                        break
                    name, _, value = line.decode("latin-1").partition(":")
                    headers[name.strip().lower()] = value.strip()
                body = await _read_body(reader, headers)
                version = version.strip().upper()
                connection = headers.get("connection", "").lower()
                keep_alive = connection != "close" if version == "HTTP/1.1" else connection == "keep-alive"
                try:
                    status, payload = await self.route(method.upper(), urlsplit(target).path, body)
                except Exception as err:  # a bug here must not take the server down mid-benchmark
                    status, payload = 500, {"error": {"message": f"{type(err).__name__}: {err}"}}
                data = json.dumps(payload).encode()
                head = (f"HTTP/1.1 {status} {_STATUS.get(status, 'Error')}\r\nContent-Type: application/json\r\n"
                        f"Content-Length: {len(data)}\r\nConnection: {'keep-alive' if keep_alive else 'close'}\r\n\r\n")
                writer.write(head.encode("latin-1") + data)
                await writer.drain()
                if not keep_alive:
                    break
        except (ConnectionError, asyncio.IncompleteReadError, ValueError):
            pass
        finally:
            writer.close()
            try:
                await writer.wait_closed()
            except (ConnectionError, OSError):
                pass

    async def serve(self, host: str, port: int, ready=None):
        self._slots = asyncio.Semaphore(self.slots)
        server = await asyncio.start_server(self.handle, host, port, backlog=4096, limit=2**24)
        bound = server.sockets[0].getsockname()[1]
        if ready:
            ready(bound)
        async with server:
            await server.serve_forever()


def _content(content) -> list[str]:
    if isinstance(content, str):
        return [content]
    if isinstance(content, list):  # [{"type": "text", "text": ...}, ...]
        return [part.get("text", "") for part in content if isinstance(part, dict)]
    return [] if content is None else [str(content)]


async def _read_body(reader: asyncio.StreamReader, headers: dict) -> bytes:
    if "chunked" in headers.get("transfer-encoding", "").lower():
        chunks = []
        while True:
            size = int((await reader.readline()).split(b";")[0].strip() or b"0", 16)
            if size == 0:
                while (await reader.readline()) not in (b"\r\n", b"\n", b""):
                    pass  # trailers
                return b"".join(chunks)
            chunks.append(await reader.readexactly(size))
            await reader.readline()
    length = int(headers.get("content-length") or 0)
    return await reader.readexactly(length) if length else b""


# ---- for benchmarks and tests: run it as a subprocess ---------------------------------------------------------


def start_server(latency: float, slots: int, reply: str = "auto", timeout: float = 30.0):
    """Start this server as a subprocess on a free port; returns ``(process, base_url)`` once it is ready."""
    cmd = [sys.executable, __file__, "--port", "0", "--latency", str(latency), "--slots", str(slots),
           "--reply", reply]
    proc = subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True)
    ready, _, _ = select.select([proc.stdout], [], [], timeout)
    line = proc.stdout.readline() if ready else ""  # the ready line (or EOF if it died)
    match = re.search(r"ready (http://\S+)", line)
    if not match:
        proc.kill()
        proc.wait()
        raise RuntimeError(f"latency_server did not start in {timeout} s: {line!r} (exit {proc.poll()})")
    return proc, match.group(1)


def fetch_stats(base_url: str, reset: bool = False) -> dict:
    import urllib.request

    root = base_url.rsplit("/v1", 1)[0]
    req = urllib.request.Request(f"{root}/stats/reset" if reset else f"{root}/stats", method="POST" if reset else "GET")
    with urllib.request.urlopen(req, timeout=10) as resp:
        return json.loads(resp.read())


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--host", default="127.0.0.1")
    ap.add_argument("--port", type=int, default=8000, help="0: a free port (printed in the ready line)")
    ap.add_argument("--latency", type=float, default=0.5, help="seconds of service per request")
    ap.add_argument("--slots", type=int, default=64, help="requests served at once; more wait in a queue")
    ap.add_argument("--reply", choices=REPLIES, default="auto")
    ap.add_argument("--model", default="latency-model", help="the model id /v1/models lists")
    args = ap.parse_args()
    if args.slots < 1 or args.latency < 0:
        ap.error("--slots must be >= 1 and --latency >= 0")
    server = LatencyServer(args.latency, args.slots, args.reply, args.model)

    def ready(port):
        print(f"latency_server ready http://{args.host}:{port}/v1 latency={args.latency}s slots={args.slots} "
              f"reply={args.reply}", flush=True)

    try:
        asyncio.run(server.serve(args.host, args.port, ready))
    except KeyboardInterrupt:
        pass


if __name__ == "__main__":
    main()
