"""The pre-started sandboxes of ``run_pairs`` under bwrap as root: each worker keeps a tester sandbox and a
candidate sandbox running (zygote.py) and forks a fresh process per item in each (the item's own uid, pipes, source
and work dir); everything of the previous item is killed and emptied, then measured back to empty, else the worker
is replaced (``_Worker.leftover``). The sandboxes are the same as a fresh program's (isolation.py's view, limits.py's
cgroup and uid); only the zygote's own CPU limit is left off (each item's process sets its own).
"""

from __future__ import annotations

import functools
import itertools
import os
import queue
import select
import signal
import socket
import subprocess
import threading
import time
from pathlib import Path
from typing import Sequence

from critic_tasks.sandbox._isolation import _boot, _bwrap_prefix, _memfd, _view_in_tmp, sandbox_env
from critic_tasks.sandbox._limits import WORKDIR_PREFIX, _clean, _pinned_bytes, _Running

# The line that ends a program's shared prefix: the text before it is the same for many programs (a code check's
# wire and side, programs.py), so each pre-started sandbox compiles it once (zygote.py); the caller's own code, never
# a model's. Elsewhere it is a comment.
SHARED_PREFIX_END = "# -- critic sandbox: the lines above are the same in every program of this kind --\n"

# tree.py in front: the zygote empties its /tmp with the walk remove_tree uses (it cannot import the package)
ZYGOTE = "\n".join((Path(__file__).parent / "inside" / name).read_text(encoding="utf-8") for name in ("tree.py", "zygote.py"))
ZYGOTE_REPLY_S = 10.0  # a zygote that does not answer a control line in this long is ended (and replaced)
ZYGOTE_BOOT_S = 60.0  # a zygote that has not booted (interpreter, filter, imports) in this long is ended
# memory a worker's cgroup may hold after an item beyond its empty state (the larger of this and memory_mb / 32):
# the zygote's own heap and kernel caches move by a few MB; parked memfds and files by what the cap allows
PINNED_SLACK_MB = 16


class _Spawner:
    """Starts the workers' sandboxes from one thread that lives as long as the process: bwrap's
    ``--die-with-parent`` fires when the *thread* that started it ends, and a pool thread ends after each batch."""

    def __init__(self):
        self._jobs: queue.SimpleQueue = queue.SimpleQueue()
        threading.Thread(target=self._loop, daemon=True, name="critic-sandbox-spawner").start()

    def _loop(self):
        while True:
            job, done = self._jobs.get()
            try:
                done.put((job(), None))
            except BaseException as err:
                done.put((None, err))

    def call(self, job):
        done: queue.SimpleQueue = queue.SimpleQueue()
        self._jobs.put((job, done))
        value, err = done.get()
        if err is not None:
            raise err
        return value


_SPAWNER: _Spawner | None = None
_SPAWNER_LOCK = threading.Lock()


def _spawner() -> _Spawner:
    global _SPAWNER
    with _SPAWNER_LOCK:
        if _SPAWNER is None:
            _SPAWNER = _Spawner()
        return _SPAWNER


class _Side:
    """One pre-started sandbox (zygote.py) of a worker: its process and the control socket to it."""

    def __init__(self, running: _Running, control: socket.socket):
        self.running, self.control = running, control
        control.setblocking(False)

    def send(self, line: str, fds: Sequence[int] = ()) -> None:
        socket.send_fds(self.control, [line.encode()], list(fds)) if fds else self.control.send(line.encode())

    def read_reply(self) -> str | None:
        """One reply if one is waiting, else None; EOFError when the zygote is gone."""
        try:
            message = self.control.recv(4096)
        except BlockingIOError:
            return None
        if not message:
            raise EOFError("the sandbox ended")
        return message.decode()

    def close(self) -> None:
        self.control.close()
        _clean(self.running)
        if self.running.proc is not None and self.running.proc.stderr:
            self.running.proc.stderr.close()


class _Worker:
    """A tester sandbox and a candidate sandbox, each a zygote that forks one fresh process per item; used by one
    thread at a time. Each item gets pipes of its own: the two channel pipes, a stderr pipe per side, its source in
    a memfd (see zygote.py for what is reset between items)."""

    def __init__(self, ex, number: int):
        """``ex``: the SandboxExecutor whose settings (interpreter, limits, hidden folders, uids) the worker takes."""
        self.ex, self.items = ex, itertools.count()
        # a uid range apart from ``run``'s slots
        uid = None if ex.run_as is None else ex._uids.uid(ex.max_workers + number)
        self.sides: list[_Side] = []
        self.dirty: str | None = None  # what the last item left behind that outlives its processes
        try:
            self.tester = _start_zygote(ex, "tester", None if uid is None else uid + 1)
            self.sides.append(self.tester)
            self.candidate = _start_zygote(ex, "candidate", uid)
            self.sides.append(self.candidate)
            until = time.monotonic() + ZYGOTE_BOOT_S
            for side in self.sides:
                self._await(side, ("ready",), until, {})
            # the empty state: each sandbox's memory with its zygote booted and no item run yet
            self.empty_bytes = {side: _pinned_bytes(side.running.cgroups) for side in self.sides}
        except BaseException:
            self.close()
            raise

    def alive(self) -> bool:
        return all(side.running.proc.poll() is None for side in self.sides)

    def close(self) -> None:
        for side in self.sides:
            side.close()
        self.sides = []

    def _await(self, side: _Side, wants: tuple[str, ...], until: float, statuses: dict) -> str:
        """Wait for a reply starting with one of ``wants`` from ``side`` and return it, noting "exit" reports on the
        way."""
        while True:
            line = side.read_reply()
            if line is None:
                if time.monotonic() > until:
                    raise TimeoutError(f"the sandbox did not answer {wants[0]!r}")
                select.select([side.control], [], [], 0.05)
                continue
            if line.startswith("exit "):
                statuses[side] = int(line.split()[1])
            elif line.split(" ", 1)[0] in wants:
                return line

    def leftover(self) -> str | None:
        """Why this worker cannot run the next item (None: it is back to its empty state): what its sandboxes
        reported after the reset (bytes in /tmp, sockets in flight), or memory its cgroups still hold beyond the
        empty state (memory no process holds: a memfd in flight, an unlinked file kept open)."""
        if self.dirty:
            return self.dirty
        slack = max(PINNED_SLACK_MB << 20, (self.ex.memory_mb << 20) // 32)
        for side in self.sides:
            pinned = _pinned_bytes(side.running.cgroups)
            if pinned is not None and self.empty_bytes[side] is not None and pinned > self.empty_bytes[side] + slack:
                return f"memory={pinned - self.empty_bytes[side]}"
        return None

    def run(self, pair, start: float) -> tuple[list[tuple[int, str]], str | None]:
        """One ``Pair`` (executor.py): each side's (return code, stderr), tester first, and why the item stopped
        early (None, "timeout", "overflow")."""
        ex, deadline = self.ex, start + pair.timeout_s
        workdir = f"/tmp/{WORKDIR_PREFIX}{os.getpid()}-{next(self.items)}"
        statuses: dict[_Side, int] = {}
        to_candidate, to_tester = os.pipe(), os.pipe()
        errs = {self.tester: os.pipe(), self.candidate: os.pipe()}
        sources = {self.tester: _memfd(pair.trusted), self.candidate: _memfd(pair.untrusted)}
        theirs = {self.tester: (to_tester[0], to_candidate[1]), self.candidate: (to_candidate[0], to_tester[1])}
        shared = {self.tester: _shared_length(pair.trusted), self.candidate: _shared_length(pair.untrusted)}
        try:
            for side in self.sides:
                side.send(f"go {pair.timeout_s!r} {workdir} {shared[side]}",
                          [*theirs[side], errs[side][1], sources[side]])
        finally:  # the children hold them now; the candidate's end closes the tester's channel, as ever
            for fd in (*to_candidate, *to_tester, *sources.values(), *(w for _, w in errs.values())):
                os.close(fd)
        pipes = {errs[side][0]: side for side in self.sides}
        bufs = {side: bytearray() for side in self.sides}
        try:
            for side in self.sides:
                self._await(side, ("started",), time.monotonic() + ZYGOTE_REPLY_S, statuses)
            candidate_gone = False
            total, why, open_pipes = 0, None, set(pipes)
            while self.tester not in statuses and why is None:
                now = time.monotonic()
                if now >= deadline:
                    why = "timeout"
                    break
                controls = [self.tester.control] + ([] if candidate_gone else [self.candidate.control])
                ready = select.select([*controls, *open_pipes], [], [], min(deadline - now, 0.5))[0]
                for side in self.sides:
                    if side.control in ready and not (side is self.candidate and candidate_gone):
                        try:
                            line = side.read_reply()
                            while line is not None:
                                if line.startswith("exit "):
                                    statuses[side] = int(line.split()[1])
                                line = side.read_reply()
                        except EOFError:
                            if side is self.tester:
                                raise
                            candidate_gone = True  # see below: its item's process ended with it
                for fd in ready:
                    if fd in open_pipes:
                        got = self._read(fd, bufs[pipes[fd]])
                        total += got
                        if not got:
                            open_pipes.discard(fd)
                if total > ex.max_output_bytes:
                    why = "overflow"
            # the tests' processes first, then every process of the candidate; the next item starts from a clean
            # state (zygote.py); then what both left on their stderr (nothing holds those pipes any more)
            until = time.monotonic() + ZYGOTE_REPLY_S
            for side in self.sides:
                try:
                    side.send("end")
                    reply = self._await(side, ("clean", "dirty"), until, statuses)
                    if reply != "clean":
                        self.dirty = reply
                except (EOFError, OSError):
                    if side is self.tester:
                        raise
                    # the candidate ended its own sandbox (it may signal its zygote: same uid); that ends its
                    # item's process too, the tester's verdict stands, and the next item gets a fresh worker
                    _clean(side.running)
            for fd in open_pipes:
                while self._read(fd, bufs[pipes[fd]], block=True):
                    pass
        finally:
            for fd in pipes:
                os.close(fd)
        ends = []
        for side in self.sides:
            err = bytes(bufs[side][-ex.capture_bytes:]).decode("utf-8", "replace")
            status = statuses.get(side)
            ends.append((-signal.SIGKILL if status is None else os.waitstatus_to_exitcode(status), err))
        return ends, why

    def _read(self, fd: int, buf: bytearray, block: bool = False) -> int:
        if block and not select.select([fd], [], [], ZYGOTE_REPLY_S)[0]:
            return 0
        chunk = os.read(fd, 1 << 16)
        buf += chunk
        if len(buf) > 2 * self.ex.capture_bytes:  # keep the tail (tracebacks)
            del buf[: -self.ex.capture_bytes]
        return len(chunk)


def _shared_length(source: str) -> int:
    """The length in bytes of ``source``'s shared prefix (up to and including the first SHARED_PREFIX_END line), which
    a zygote compiles once (zygote.py); 0 where it has none."""
    end = source.find(SHARED_PREFIX_END)
    if end < 0 or (end and source[end - 1] != "\n"):
        return 0
    return len(source[:end + len(SHARED_PREFIX_END)].encode("utf-8"))


def _start_zygote(ex, kind: str, uid: int | None) -> _Side:
    """One pre-started sandbox of ``ex`` (a SandboxExecutor): zygote.py behind boot.py, its items run as ``uid``."""
    ours, theirs = socket.socketpair(socket.AF_UNIX, socket.SOCK_SEQPACKET)
    program = (ZYGOTE.replace("socket(fileno=CTL)", f"socket(fileno={theirs.fileno()})", 1)
               .replace("_KIND = KIND  #", f"_KIND = {kind!r}  #", 1).replace("_UID = UID  #", f"_UID = {uid!r}  #", 1)
               .replace("_KEEP = KEEP  #", f"_KEEP = {_view_in_tmp(ex.python)!r}  #", 1)
               .replace("_SHARED_END = SHARED_END  #", f"_SHARED_END = {SHARED_PREFIX_END.encode()!r}  #", 1))
    running = _Running(None, None, [])  # type: ignore[arg-type]
    try:
        running.cgroups = ex.limits.make_cgroups()
        cmd = [ex.python, "-S", "-B", "-c", _boot(ex.python, program)]
        cmd = _bwrap_prefix(ex.python, "/tmp", uid, ex.max_disk_mb << 20, None, ex.hide, setpriv=False) + cmd
        # no CPU limit on the zygote itself: each item's process sets its own (zygote.py)
        limits = [limit for limit in ex.limits.rlimits(1.0) if limit[0] != "cpu"]
        cmd, preexec = ex.limits.launch(cmd, limits, running.cgroups, None)  # bwrap changes the uid itself
        running.proc = _spawner().call(functools.partial(
            subprocess.Popen, cmd, cwd="/", env=sandbox_env(ex.python, "/tmp"), stdin=subprocess.DEVNULL,
            stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, start_new_session=True, close_fds=True,
            preexec_fn=preexec, pass_fds=(theirs.fileno(),)))
    except BaseException:
        _clean(running)
        ours.close()
        raise
    finally:
        theirs.close()
    return _Side(running, ours)


def _close_workers(live: dict) -> None:
    for number in list(live):
        worker = live.pop(number, None)
        if worker is not None:
            worker.close()
