"""Run untrusted Python programs (model-written corrections, their unit tests) and report how each ended.

Every program is treated as hostile. Each one gets its own session/process group, a fresh temporary working
directory (deleted afterwards), a scrubbed environment (no API keys or tokens), rlimits (CPU, address space, file
size, open files, core), a wall-clock timeout after which the *whole* group is SIGKILLed, and stdout/stderr read
incrementally: only the last ``capture_bytes`` of each are kept and a program that writes more than
``max_output_bytes`` in all is killed and fails. ``passed`` means exit status 0 within the time limit.

Behind it, one job per private module: ``_isolation.py`` (the layers and what a program sees), ``_limits.py``
(rlimits, cgroups, uids, clean-up) and ``_workers.py`` (the pre-started sandboxes of ``run_pairs``); the programs
that run inside are in ``inside/`` (see ``critic_tasks.sandbox``).

``run_pairs`` runs a ``Pair``: an untrusted program wired to a trusted one through two pipes, each in a sandbox of
its own; the code checks use it so that the verdict is never decided inside the program under test. Every layer
also gets inside/boot.py's seccomp filter (no namespaces, mounts, io_uring, bpf, ptrace, ...; see there).
"""

from __future__ import annotations

import concurrent.futures
import dataclasses
import inspect
import os
import queue
import selectors
import signal
import subprocess
import sys
import tempfile
import time
import weakref
from typing import Protocol, Sequence

from critic_tasks.core.errors import ConfigError
from critic_tasks.core.settings import SETTINGS, read_flag, read_raw, read_setting
from critic_tasks.hookspecs import plugin_manager
from critic_tasks.sandbox._isolation import (
    _UNSHARE,
    ALLOW_UNISOLATED_ENV,
    LAYERS,
    PRIVATE_ENV,
    WEAKER,
    _announce,
    _blocking_folder,
    _boot,
    _bwrap_prefix,
    _memfd,
    _say_once,
    _unprivileged_can_run,
    _view_in_tmp,
    detect_isolation,
    interpreter_path,
    sandbox_env,
)
from critic_tasks.sandbox._limits import (
    _NAMES,
    SANDBOX_UID,
    WORKDIR_PREFIX,
    Limits,
    _cgroup_bases,
    _clean,
    _exited,
    _kill,
    _Running,
    _sweep_stale_workdirs,
    _UidLease,
)
from critic_tasks.sandbox._workers import _close_workers, _Worker

EXECUTOR_ENV = "CRITIC_EXECUTOR"  # the executor ``get_executor()`` builds when no name is given


@dataclasses.dataclass
class Program:
    source: str
    timeout_s: float = 4.0
    stdin: str = ""


@dataclasses.dataclass
class ExecResult:
    status: str  # "passed" | "failed" | "timeout" | "error"
    returncode: int | None
    stdout: str
    stderr: str
    duration_s: float

    @property
    def passed(self) -> bool:
        return self.status == "passed"


@dataclasses.dataclass
class Pair:
    """An untrusted program wired to a trusted one: each reads the other's stdout on its stdin. Each runs in a sandbox
    of its own (own work dir, uid, cgroup, namespaces), so the untrusted side can send the trusted one only bytes.
    The trusted side's exit decides; its source goes on its command line, never into a file anyone else can reach."""

    untrusted: str
    trusted: str
    timeout_s: float = 4.0


@dataclasses.dataclass
class PairResult:
    trusted: ExecResult    # the verdict: its status, its stderr (tracebacks of the tests)
    untrusted: ExecResult  # what the untrusted side left on stderr, for the record only; never read as a verdict


class Executor(Protocol):
    """What ``critic_executor`` hooks return: ``run`` keeps the order of ``programs`` and never raises per program.
    ``run_pairs`` (optional; code checks need it) does the same for wired pairs."""

    def run(self, programs: Sequence[Program]) -> list[ExecResult]: ...


class SandboxExecutor:
    """Runs programs in parallel (a thread pool of subprocess launches), each in the sandbox described above."""

    def __init__(self, max_workers: int | None = None, memory_mb: int = 1024, max_processes: int = 64,
                 max_file_mb: int = 64, max_open_files: int = 256, capture_bytes: int = 64 << 10,
                 max_output_bytes: int = 8 << 20, python: str | None = None, isolation: str | None = None,
                 use_cgroup: bool = True, allow_unisolated: bool | None = None, max_disk_mb: int = 128,
                 hide: Sequence[str] = (), reuse_sandboxes: bool = True):
        # absolute, without ``..`` and through real folders: an interpreter started as ``../.venv/bin/python``, or
        # from a venv reached by a symlink, reports a path through folders the sandbox does not show, which bwrap
        # cannot exec (``interpreter_path``)
        self.python = interpreter_path(python or sys.executable)
        # bytes a program may write in all (its work dir and /tmp: one sized tmpfs under bwrap); ``hide``: more
        # folders the sandbox must never show (output folders), on top of ``private_paths()``, with the folders the
        # environment names, read here once: the layers below read no setting
        self.max_disk_mb, self.hide = max_disk_mb, (*hide, *named_folders())
        # twice the cores: part of a program's wall time is spent waiting (kernel set-up/teardown, blocked programs)
        self.max_workers = max_workers or 2 * (os.cpu_count() or 1)
        self.memory_mb, self.max_processes, self.max_file_mb = memory_mb, max_processes, max_file_mb
        self.max_open_files, self.capture_bytes, self.max_output_bytes = max_open_files, capture_bytes, max_output_bytes
        detected = detect_isolation(self.python)
        if isolation not in (None, *LAYERS) or (isolation and LAYERS.index(isolation) < LAYERS.index(detected)):
            raise ConfigError(f"isolation {isolation!r} unavailable here; "
                             f"choose one of {LAYERS[LAYERS.index(detected):]}")
        self.isolation = isolation or detected
        by_setting = allow_unisolated is None
        if by_setting:
            allow_unisolated = read_flag(ALLOW_UNISOLATED_ENV)
        if self.isolation != "bwrap" and not allow_unisolated:
            why = ("bubblewrap (bwrap) is not installed or cannot run here" if detected != "bwrap"
                   else f"isolation={self.isolation!r} was asked for")
            raise ConfigError(f"refusing to run model-written code: {why}, and the {self.isolation!r} layer "
                              f"{WEAKER[self.isolation]}. Install bubblewrap, or set {ALLOW_UNISOLATED_ENV}=1 to "
                              "run it anyway")
        # As root, every layer runs programs as unprivileged uids (a pair leased per slot, ``_UidLease``; + 1 for a
        # pair's trusted side); where such a uid cannot run the interpreter, nothing runs: root without capabilities still reads
        # /etc/shadow, and on the weaker layers root writes site-packages, reads /proc/<harness>/environ and kills us.
        self.run_as = SANDBOX_UID if _unprivileged_can_run(self.python, self.isolation) else None
        if os.geteuid() == 0 and self.run_as is None:
            blocked = _blocking_folder(self.python)
            where = f" ({blocked} is closed to other users)" if blocked else ""
            raise ConfigError(
                f"refusing to run model-written code as root: uid {SANDBOX_UID} cannot run {self.python} on the "
                f"{self.isolation!r} layer{where}. Install bubblewrap (it re-binds the interpreter for that uid), use "
                "an interpreter other users can read (e.g. a venv made from /usr/bin/python3 outside /root), or run "
                "as a non-root user")
        _announce(self.isolation, by_setting)
        _sweep_stale_workdirs()
        self.cgroups = dict(_cgroup_bases()) if use_cgroup else {}
        self.limits = Limits(memory_mb, max_processes, max_file_mb, max_open_files, self.cgroups,
                             nproc=self.run_as is not None)
        self.cgroup = self.cgroups.get("pids")  # where programs get pids.max (None: not here)
        if "memory" not in self.cgroups:
            _say_once("no-memory-cgroup", "critic_tasks sandbox: no writable cgroup memory controller here, so "
                      "memory_mb caps each process's address space (RLIMIT_AS) but not a program's whole tree: N "
                      "forked processes may hold up to N x %d MB", self.memory_mb)
        self._slots: queue.SimpleQueue[int] = queue.SimpleQueue()  # one pair of uids per running program or pair
        for slot in range(self.max_workers):
            self._slots.put(slot)
        # pairs under bwrap run in pre-started sandboxes, one fresh process per item (``_Worker``, inside/zygote.py). As
        # root the zygote runs as another uid than its items; not root, as theirs (an item can signal it, which
        # ends that item only: the worker is replaced)
        self.reuse_sandboxes = reuse_sandboxes and self.isolation == "bwrap"
        if self.reuse_sandboxes and _view_in_tmp(self.python) is None:
            # the zygote empties the sandbox's /tmp between items but the view's own entries there (an interpreter
            # under /tmp, bound read-only): an interpreter whose prefix is /tmp itself leaves nothing to empty. Same
            # isolation, two sandboxes per item (slower)
            self.reuse_sandboxes = False
            _say_once("tmp-python", "critic_tasks sandbox: the interpreter's prefix is /tmp itself, so code pairs "
                      "start two sandboxes per item instead of reusing pre-started ones (same isolation, slower)")
        self._workers: queue.SimpleQueue = queue.SimpleQueue()  # idle workers, each (number, _Worker or None)
        self._live: dict[int, _Worker] = {}
        for number in range(self.max_workers):
            self._workers.put((number, None))
        self._uids = _UidLease()
        weakref.finalize(self, _release, self._live, self._uids)

    def run(self, programs: Sequence[Program]) -> list[ExecResult]:
        if not programs:
            return []
        with concurrent.futures.ThreadPoolExecutor(min(self.max_workers, len(programs))) as pool:
            return list(pool.map(self._run_safely, programs))

    def run_pairs(self, pairs: Sequence[Pair]) -> list[PairResult]:
        """Each ``Pair`` (see there), in parallel like ``run``; the order is kept and nothing raises per pair."""
        if not pairs:
            return []
        with concurrent.futures.ThreadPoolExecutor(min(self.max_workers, len(pairs))) as pool:
            return list(pool.map(self._run_pair_safely, pairs))

    def _run_safely(self, program: Program) -> ExecResult:
        start, slot = time.monotonic(), self._slots.get()  # the slot picks the uid when we drop root
        try:
            return self._run_one(program, start, slot)
        except Exception as err:  # a harness-side failure: report it, never raise out of run()
            return _harness_error(err, start)
        finally:
            self._slots.put(slot)

    def _run_pair_safely(self, pair: Pair) -> PairResult:
        if self.reuse_sandboxes:
            return self._run_pair_reused(pair)
        start, slot = time.monotonic(), self._slots.get()
        try:
            return self._run_pair(pair, start, slot)
        except Exception as err:
            return PairResult(_harness_error(err, start), _harness_error(err, start))
        finally:
            self._slots.put(slot)

    def _run_pair_reused(self, pair: Pair) -> PairResult:
        number, worker = self._workers.get()
        start = time.monotonic()
        try:
            if worker is None or not worker.alive():  # first use, or its sandbox ended (a program signalled it)
                if worker is not None:
                    worker.close()
                worker = self._live[number] = _Worker(self, number)
                start = time.monotonic()  # the item's time starts when its sandboxes are there, as for a fresh one
            ends, why = worker.run(pair, start)
            result = PairResult(*(self._result(code, "", err, why, start) for code, err in ends))
            left = worker.leftover()
            if left is not None:  # the next item would inherit it: end this worker, the next gets a fresh one
                _say_once("dirty-worker", "critic_tasks sandbox: an item left something behind its processes "
                          "(%s); its pre-started sandboxes were replaced", left)
                worker.close()
                worker = None
                self._live.pop(number, None)
            return result
        except Exception as err:  # the worker is in an unknown state: end it, the next item gets a fresh one
            if worker is not None:
                worker.close()
            worker = None
            self._live.pop(number, None)
            return PairResult(_harness_error(err, start), _harness_error(err, start))
        finally:
            self._workers.put((number, worker))

    def close(self) -> None:
        """End the pre-started sandboxes (they also end with this executor, or this process)."""
        _close_workers(self._live)

    def _uid(self, slot: int, trusted: bool = False) -> int | None:
        return None if self.run_as is None else self._uids.uid(slot) + int(trusted)

    def _command(self, workdir: str, uid: int | None, inline: str | None = None, main_fd: int | None = None
                 ) -> list[str]:
        # -S then site-packages appended by hand (boot.py): the same path without running .pth files (an editable
        # install's finder alone costs ~20 ms per start); no user site; the env is ours, so PYTHONHASHSEED applies
        cmd = [self.python, "-S", "-B", "-c", _boot(self.python, inline)]
        if self.isolation == "bwrap":
            return _bwrap_prefix(self.python, workdir, uid, self.max_disk_mb << 20, main_fd, self.hide) + cmd
        if self.isolation == "unshare-net":  # unshare needs root: it switches to the slot uid itself, after unsharing
            drop = ["--setgid", str(uid), "--setuid", str(uid)] if uid is not None else []
            return _UNSHARE[:-1] + drop + ["--"] + cmd
        return cmd

    def _start(self, uid: int | None, timeout_s: float, stdin, stdout, source: str | None = None,
               inline: str | None = None) -> _Running:
        """One sandboxed interpreter running ``source`` (as main.py) or ``inline`` (on its command line)."""
        name = f"{WORKDIR_PREFIX}{os.getpid()}-{next(_NAMES)}"
        running = _Running(None, None, [])  # type: ignore[arg-type]
        main_fd = None
        try:
            if self.isolation == "bwrap":  # the work dir is made in the sandbox's sized /tmp; main.py copied in
                workdir = os.path.join("/tmp", name)
                if source is not None:
                    main_fd = _memfd(source)  # close-on-exec: only pass_fds hands it on
            else:
                workdir = running.workdir = tempfile.mkdtemp(prefix=f"{name}-")
                if source is not None:
                    with open(os.path.join(workdir, "main.py"), "w", encoding="utf-8") as f:
                        f.write(source)
                if uid is not None:
                    os.chown(workdir, uid, uid)
                    if source is not None:
                        os.chown(os.path.join(workdir, "main.py"), uid, uid)
                    os.chmod(workdir, 0o711)
            running.cgroups = self.limits.make_cgroups()
            setuid = uid if self.isolation == "rlimits" else None  # bwrap/unshare change uid themselves
            cmd, preexec = self.limits.launch(self._command(workdir, uid, inline, main_fd),
                                              self.limits.rlimits(timeout_s), running.cgroups, setuid)
            running.proc = subprocess.Popen(cmd, cwd=running.workdir or "/", env=sandbox_env(self.python, workdir),
                                            stdin=stdin, stdout=stdout, stderr=subprocess.PIPE, start_new_session=True,
                                            close_fds=True, preexec_fn=preexec,
                                            pass_fds=() if main_fd is None else (main_fd,))
        except BaseException:
            _clean(running)
            raise
        finally:
            if main_fd is not None:
                os.close(main_fd)
        return running

    def _result(self, returncode: int | None, out: str, err: str, why: str | None, start: float) -> ExecResult:
        cpu_killed = returncode in (-signal.SIGXCPU, 128 + signal.SIGXCPU)  # bwrap reports 128+signal
        status = why or ("passed" if returncode == 0 else "timeout" if cpu_killed else "failed")
        if why == "overflow":
            status, err = "failed", err + f"\n[sandbox] killed: more than {self.max_output_bytes} bytes of output"
        return ExecResult(status, returncode, out, err, time.monotonic() - start)

    def _run_one(self, program: Program, start: float, slot: int) -> ExecResult:
        with tempfile.TemporaryFile() as stdin:  # a file, so a program that never reads cannot block us
            stdin.write(program.stdin.encode())
            stdin.seek(0)
            running = self._start(self._uid(slot), program.timeout_s, stdin, subprocess.PIPE, source=program.source)
        try:
            (out, err), why = self._collect([running], [running.proc.stdout, running.proc.stderr],
                                            start + program.timeout_s)
        finally:
            returncode = _clean(running)
        return self._result(returncode, out, err, why, start)

    def _run_pair(self, pair: Pair, start: float, slot: int) -> PairResult:
        # two pipes between the sides, nothing else shared: the untrusted side gets a uid, work dir, cgroup and
        # (bwrap, unshare) PID namespace of its own, so it cannot signal, trace or read the trusted side
        to_untrusted, to_trusted = os.pipe(), os.pipe()
        started: list[_Running] = []
        try:
            started.append(self._start(self._uid(slot, trusted=True), pair.timeout_s, to_trusted[0], to_untrusted[1],
                                       inline=pair.trusted))
            started.append(self._start(self._uid(slot), pair.timeout_s, to_untrusted[0], to_trusted[1],
                                       source=pair.untrusted))
        except BaseException:
            for running in started:
                _clean(running)
            raise
        finally:
            for fd in (*to_untrusted, *to_trusted):
                os.close(fd)
        trusted, untrusted = started
        try:
            (t_err, u_err), why = self._collect(started, [trusted.proc.stderr, untrusted.proc.stderr],
                                                start + pair.timeout_s)
        finally:
            t_code, u_code = _clean(trusted), _clean(untrusted)
        return PairResult(self._result(t_code, "", t_err, why, start), self._result(u_code, "", u_err, why, start))

    def _collect(self, running: list[_Running], pipes: list, deadline: float) -> tuple[list[str], str | None]:
        """Read ``pipes`` until EOF, the deadline, or too much output in all; ``running[0]`` is the process whose
        end ends the run (the rest are killed then). Returns (the text of each pipe, why-stopped)."""
        main = running[0].proc
        bufs = {pipe: bytearray() for pipe in pipes}
        total, why, exited = 0, None, False
        with selectors.DefaultSelector() as sel:
            for pipe in bufs:
                os.set_blocking(pipe.fileno(), False)
                sel.register(pipe, selectors.EVENT_READ)
            while sel.get_map() and why is None:
                now = time.monotonic()
                if now >= deadline:
                    why = None if exited else "timeout"
                    break
                if not exited and _exited(main.pid):
                    # main process is done: kill what it left behind (they may hold our pipes), drain briefly
                    exited, deadline = True, min(deadline, now + 0.5)
                    for r in running:
                        _kill(r.proc, r.cgroups)
                for key, _ in sel.select(min(deadline - now, 0.1)):
                    chunk = os.read(key.fd, 1 << 16)
                    if not chunk:
                        sel.unregister(key.fileobj)
                        continue
                    buf = bufs[key.fileobj]
                    buf += chunk
                    if len(buf) > 2 * self.capture_bytes:  # keep the tail (tracebacks, final answers)
                        del buf[: -self.capture_bytes]
                    total += len(chunk)
                    if total > self.max_output_bytes:
                        why = "overflow"
                        break
        if why is None and not exited:  # pipes closed early (e.g. os.close(1)): still bound by the deadline
            try:
                main.wait(timeout=max(0.0, deadline - time.monotonic()))
            except subprocess.TimeoutExpired:
                why = "timeout"
        for pipe in bufs:
            pipe.close()
        return [bytes(b[-self.capture_bytes:]).decode("utf-8", "replace") for b in bufs.values()], why


def named_folders() -> tuple[str, ...]:
    """The folders the environment names (data, caches, toolkit, outputs: ``isolation.PRIVATE_ENV``), which no
    program may read: ours through the settings table, the libraries' (HF_HOME, ...) as set."""
    values = (read_raw(name) if name in SETTINGS else os.environ.get(name) for name in PRIVATE_ENV)
    return tuple(value for value in values if value)


def _release(live: dict, lease: _UidLease) -> None:
    """An executor's end: its pre-started sandboxes first, then its uids (no program of ours runs as them now)."""
    _close_workers(live)
    lease.close()


def _harness_error(err: Exception, start: float) -> ExecResult:
    return ExecResult("error", None, "", f"[sandbox] {type(err).__name__}: {err}", time.monotonic() - start)


# ----------------------------------------------------------------------------- the built-in and the plugins


def _option_names() -> list[str]:
    return [p for p in inspect.signature(SandboxExecutor).parameters]


def builtin_executor(name: str, options: dict) -> Executor | None:
    """The built-in executor, ``sandbox``, with ``options`` (None for any other name)."""
    if name != "sandbox":
        return None
    unknown = sorted(set(options) - set(_option_names()))
    if unknown:
        raise ConfigError(f"unknown sandbox executor option(s) {unknown}; available options: {_option_names()}")
    return SandboxExecutor(**options)


def get_executor(name: str | None = None, **options) -> Executor:
    """The executor called ``name``: a plugin's (the ``critic_executor`` hook, asked first, so a plugin may shadow
    the built-in), else the built-in ``sandbox``; without a name, the one ``CRITIC_EXECUTOR`` names (default
    ``sandbox``): the one place that setting is read, so the preflight check, the lm-eval filter, OpenCompass's
    evaluator and the CLI run the same executor."""
    name = name or read_setting(EXECUTOR_ENV)
    pm = plugin_manager()
    executor = pm.hook.critic_executor(name=name, options=options)
    if executor is None:
        executor = builtin_executor(name, options)
    if executor is None:
        plugins = sorted(n for n, _ in pm.list_name_plugin())
        raise ConfigError(f"no code executor named {name!r} (CRITIC_EXECUTOR); built-in: 'sandbox' (options: {_option_names()}); "
                         f"installed plugins: {plugins}")
    return executor
