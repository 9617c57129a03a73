"""Run untrusted Python programs (model-written corrections, their unit tests) and report how each ended.

Every program is treated as hostile. Each one gets its own session/process group, a fresh temporary working
directory (deleted afterwards), a scrubbed environment (no API keys or tokens), rlimits (CPU, address space, file
size, open files, core), a wall-clock timeout after which the *whole* group is SIGKILLed, and stdout/stderr read
incrementally: only the last ``capture_bytes`` of each are kept and a program that writes more than
``max_output_bytes`` in all is killed and fails. ``passed`` means exit status 0 within the time limit.

Isolation is layered by what works on this machine (detected once, cached; see ``SandboxExecutor.isolation``). Only
``bwrap`` keeps every promise; a weaker layer refuses to run anything unless the caller opts in
(``CRITIC_ALLOW_UNISOLATED=1`` or ``allow_unisolated=True``), and the layer in use is logged once:

* ``bwrap``       -- bubblewrap: new user/pid/net/ipc/uts namespaces, read-only ``/``, private ``/tmp``, the
  caller's ``$HOME`` hidden, only the work dir writable, no capabilities; a PID namespace, so nothing escapes.
* ``unshare-net`` -- ``unshare`` (root only): new net/pid/mount/ipc/uts namespaces and a private ``/proc``, so no
  network and no signals or ``/proc/<pid>/environ`` outside; the filesystem stays writable unless uids drop (below).
* ``rlimits``     -- plain subprocess with rlimits only. No network isolation.

Never as root: when we are root, each worker slot runs its programs as uids of its own (``SANDBOX_UID + 2 * slot``,
``+ 1`` for a pair's trusted side): no writing our files, no signalling us or the programs running beside it, and
RLIMIT_NPROC binds. Under bwrap this is ``setpriv`` inside the sandbox (bwrap keeps only CAP_SETUID/CAP_SETGID for
it, and no user namespace, whose uid map would keep the program root outside): without it a program would run as
root without capabilities, still able to read root-owned files such as ``/etc/shadow``. Where that uid cannot run
the interpreter (a pyenv under a 0700 ``/root`` on a layer that cannot re-bind it), the executor refuses to start,
in one line naming the closed folder. Every layer also gets boot.py's seccomp filter (no namespaces, mounts,
io_uring, bpf, ptrace, ...; see there).

``run_pairs`` runs a ``Pair``: an untrusted program wired to a trusted one through two pipes, each in a sandbox of
its own; the code checks use it so that the verdict is never decided inside the program under test.

On top of any layer, where a cgroup ``pids`` controller is writable (v1 ``/sys/fs/cgroup/pids`` or a v2 tree that
delegates ``pids``), each program runs in its own child cgroup with ``pids.max`` (RLIMIT_NPROC does not bind root);
whatever it leaves behind there is killed before the cgroup is removed. Without such a controller, no cgroup.

Launch chain: ``sh`` (moves itself into the cgroup) -> ``prlimit`` (sets the rlimits) -> ``bwrap``/``unshare`` ->
``python``. Doing this in wrappers rather than ``preexec_fn`` lets Popen vfork instead of fork, which in a big harness
process (torch loaded) saves ~10 ms per program, held under the GIL; ``preexec_fn`` is the fallback (no ``prlimit``,
or a uid to drop).
"""

from __future__ import annotations

import atexit
import concurrent.futures
import dataclasses
import functools
import glob
import itertools
import json
import logging
import math
import os
import queue
import resource
import selectors
import shutil
import signal
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Protocol, Sequence

from critic_tasks.core.errors import ConfigError
from critic_tasks.hookspecs import hookimpl

LAYERS = ("bwrap", "unshare-net", "rlimits")
ALLOW_UNISOLATED_ENV = "CRITIC_ALLOW_UNISOLATED"  # as HF_ALLOW_CODE_EVAL: an explicit opt-in to weaker isolation
# What a layer weaker than bwrap cannot promise (private /tmp and read-only everything else but the work dir; own
# PID and mount namespaces with a fresh /proc; no capabilities; no network; no Unix sockets outside the work dir).
WEAKER = {
    "unshare-net": "keeps the network out but not the file system, /proc or the harness's namespaces",
    "rlimits": "has no network, file-system or process isolation at all",
}
log = logging.getLogger("critic_tasks")
SANDBOX_UID = 64000  # + worker slot; an unused uid range (no passwd entry needed)


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


# ----------------------------------------------------------------------------- detection (once per process)


_ANNOUNCED: set[str] = set()


def _announce(layer: str, opted_in: bool) -> None:
    """The layer in use, logged once per process (and recorded with every check outcome)."""
    if layer not in _ANNOUNCED:
        _ANNOUNCED.add(layer)
        if layer == "bwrap":
            log.info("critic_tasks sandbox: isolation layer 'bwrap'")
        else:
            log.warning("critic_tasks sandbox: isolation layer %r (%s); allowed by %s", layer, WEAKER[layer],
                        "the caller" if not os.environ.get(ALLOW_UNISOLATED_ENV) else ALLOW_UNISOLATED_ENV)


def _works(cmd: list[str], **kw) -> bool:
    try:
        return subprocess.run(cmd, capture_output=True, timeout=30, stdin=subprocess.DEVNULL, **kw).returncode == 0
    except (OSError, subprocess.SubprocessError):
        return False


def _interpreter_roots(python: str) -> list[str]:
    """Where the interpreter and its packages live (a venv's prefix and its base installation alike)."""
    roots = {sys.prefix, sys.base_prefix, os.path.dirname(os.path.dirname(os.path.abspath(python))),
             os.path.dirname(os.path.dirname(os.path.realpath(python))), *_site_dirs(python)}
    return sorted({os.path.realpath(r) for r in roots if r})


def _bwrap_prefix(python: str, workdir: str, uid: int | None = None) -> list[str]:
    """bwrap's arguments, up to the program. ``uid``: we are root and the program runs as that uid (setpriv)."""
    if uid is None:  # a user namespace of its own; no nested ones (seccomp refuses them too: boot.py)
        namespaces = ["--unshare-all", "--unshare-user", *_disable_userns()]
        namespaces += ["--cap-drop", "ALL"] if os.geteuid() == 0 else []
    else:  # no user namespace: setpriv's uid must be a real one; CAP_SETUID/SETGID go when the uid changes
        namespaces = ["--unshare-ipc", "--unshare-pid", "--unshare-net", "--unshare-uts", "--unshare-cgroup-try",
                      "--cap-drop", "ALL", "--cap-add", "CAP_SETUID", "--cap-add", "CAP_SETGID"]
    args = ["bwrap", *namespaces, "--die-with-parent", "--new-session", "--ro-bind", "/", "/", "--dev", "/dev",
            "--proc", "/proc", "--perms", "1777", "--tmpfs", "/tmp", "--tmpfs", "/run"]
    hidden = ["/tmp", "/run"]
    home = os.path.realpath(os.path.expanduser("~"))
    if home != "/" and os.path.isdir(home):  # hide tokens kept on disk (~/.cache/huggingface, ~/.netrc, ...)
        args += ["--tmpfs", home]
        hidden.append(home)
    # ... but keep an interpreter installed in a hidden place (a venv under the temp dir, as CI systems have it, or
    # under $HOME), read-only: without this the probe fails and the sandbox would fall back to a weaker layer.
    made: set[str] = set()
    for root in _interpreter_roots(python):
        hider = next((h for h in hidden if root == h or root.startswith(h + os.sep)), None)
        if hider is None:
            continue
        # the folders bwrap makes on the way are 0700: open them up, so an unprivileged uid reaches the interpreter
        parent = os.path.dirname(root)
        steps = []
        while parent.startswith(hider + os.sep) and parent not in made:
            steps.append(parent)
            parent = os.path.dirname(parent)
        for step in reversed(steps):
            args += ["--perms", "0755", "--dir", step]
            made.add(step)
        if os.stat(root).st_mode & 0o001:
            args += ["--ro-bind", root, root]
        else:  # a 0700 root (a venv made in a mkdtemp folder): a bind keeps its mode, so bind what is inside it
            args += ["--perms", "0755", "--dir", root]
            for entry in sorted(os.listdir(root)):
                args += ["--ro-bind", os.path.join(root, entry), os.path.join(root, entry)]
            made.add(root)
    if home in hidden:
        args += ["--remount-ro", home]
    args += ["--bind", workdir, workdir, "--chdir", workdir, "--"]
    if uid is not None:
        args += ["setpriv", f"--reuid={uid}", f"--regid={uid}", "--clear-groups", "--"]
    return args


@functools.lru_cache(maxsize=1)
def _disable_userns() -> tuple[str, ...]:
    """bwrap >= 0.8's ``--disable-userns`` (no user namespace inside the sandbox), where this bwrap has it."""
    try:
        usage = subprocess.run(["bwrap", "--help"], capture_output=True, text=True, timeout=30).stdout
    except (OSError, subprocess.SubprocessError):
        return ()
    return ("--disable-userns",) if "--disable-userns" in usage else ()


_UNSHARE = ["unshare", "--net", "--pid", "--mount-proc", "--ipc", "--uts", "--fork", "--kill-child", "--"]


@functools.lru_cache(maxsize=None)
def detect_isolation(python: str = sys.executable) -> str:
    """The strongest layer that can run ``python -c pass`` here."""
    probe = [python, "-c", "pass"]
    with tempfile.TemporaryDirectory(prefix="critic-sbx-") as wd:
        if shutil.which("bwrap") and _works(_bwrap_prefix(python, wd) + probe, cwd=wd):
            return "bwrap"
    if shutil.which("unshare") and _works(_UNSHARE + probe):
        return "unshare-net"
    return "rlimits"


BOOT = (Path(__file__).parent / "boot.py").read_text(encoding="utf-8")


RUN_MAIN = 'runpy.run_path("main.py", run_name="__main__")'


def _boot(python: str, inline: str | None = None) -> str:
    """boot.py with the interpreter's site-packages filled in; with ``inline``, that source runs instead of main.py."""
    boot = _boot_for(python)
    if inline is None:
        return boot
    return boot.replace(RUN_MAIN, f"exec(compile({inline!r}, 'main.py', 'exec'), {{'__name__': '__main__'}})", 1)


@functools.lru_cache(maxsize=None)
def _boot_for(python: str) -> str:
    boot = BOOT.replace("sys.path.extend(SITE_DIRS)", f"sys.path.extend({list(_site_dirs(python))!r})", 1)
    assert RUN_MAIN in boot
    return boot


@functools.lru_cache(maxsize=None)
def _site_dirs(python: str) -> tuple[str, ...]:
    """The directories ``site`` adds to ``python``'s path (site-packages), found once."""
    code = "import json, sys; print(json.dumps(sys.path))"
    try:
        paths = [json.loads(subprocess.run([python, *flags, "-c", code], capture_output=True, text=True, timeout=30,
                                           stdin=subprocess.DEVNULL).stdout) for flags in (["-s"], ["-S", "-s"])]
    except (OSError, ValueError, subprocess.SubprocessError):
        return ()
    return tuple(p for p in paths[0] if p not in paths[1] and os.path.isdir(p))


@functools.lru_cache(maxsize=None)
def _unprivileged_can_run(python: str, isolation: str) -> bool:
    """Are we root, and can ``SANDBOX_UID`` run the interpreter in this layer (under bwrap: through setpriv)?"""
    uid = SANDBOX_UID
    if os.geteuid() != 0:
        return False
    if isolation != "bwrap":
        return _works([python, "-c", "pass"], user=uid, group=uid, extra_groups=[], cwd="/")
    if not shutil.which("setpriv"):
        return False
    with tempfile.TemporaryDirectory(prefix="critic-sbx-") as wd:
        os.chown(wd, uid, uid)
        os.chmod(wd, 0o711)
        probe = [python, "-c", "import os, sys; sys.exit(os.getuid() != %d)" % uid]
        return _works(_bwrap_prefix(python, wd, uid) + probe, cwd=wd)


@functools.lru_cache(maxsize=1)
def _cgroup_base() -> str | None:
    """A per-process parent cgroup whose children get ``pids.max``; None when no pids controller is writable."""
    try:
        mounts = [line.split()[:4] for line in open("/proc/self/mounts")]
        own = dict(line.rstrip("\n").split(":", 2)[1:] for line in open("/proc/self/cgroup"))
    except OSError:
        return None
    parents = [mnt + own.get("pids", "/") for _, mnt, fs, opts in mounts
               if fs == "cgroup" and "pids" in opts.split(",")]
    parents += [mnt + own.get("", "/") for _, mnt, fs, _ in mounts if fs == "cgroup2"]
    for parent in parents:
        for stale in glob.glob(os.path.join(parent, "critic-tasks-*")):  # left by a crashed run
            if not os.path.exists(f"/proc/{stale.rsplit('-', 1)[-1]}"):
                _remove_cgroup(stale)
        base = os.path.join(parent, f"critic-tasks-{os.getpid()}")
        try:
            os.makedirs(base, exist_ok=True)
            if os.path.exists(os.path.join(base, "cgroup.subtree_control")):  # v2: delegate pids to children
                _write(os.path.join(base, "cgroup.subtree_control"), "+pids")
            probe = os.path.join(base, "probe")
            os.mkdir(probe)
            ok = os.path.exists(os.path.join(probe, "pids.max"))
            os.rmdir(probe)
            if ok:
                atexit.register(_remove_cgroup, base)
                return base
            os.rmdir(base)
        except OSError:
            try:
                os.rmdir(base)
            except OSError:
                pass
    return None


def _write(path: str, text: str) -> None:
    with open(path, "w") as f:
        f.write(text)


def _members(path: str) -> list[int]:
    """Processes in cgroup ``path`` other than us (never SIGKILL ourselves, whatever happened)."""
    try:
        return [int(p) for p in open(os.path.join(path, "cgroup.procs")).read().split() if int(p) != os.getpid()]
    except OSError:
        return []


def _remove_cgroup(path: str) -> None:
    """SIGKILL everything in ``path`` (and its children) until it can be removed; pids.max bounds the loop."""
    for sub in sorted(glob.glob(os.path.join(path, "*", "")), reverse=True):
        _remove_cgroup(sub.rstrip("/"))
    for attempt in range(100):
        for pid in _members(path):
            try:
                os.kill(pid, signal.SIGKILL)
            except OSError:
                pass
        try:
            os.rmdir(path)
            return
        except FileNotFoundError:
            return
        except OSError:  # busy until the last member is gone
            time.sleep(min(0.001 * (attempt + 1), 0.02))


# ----------------------------------------------------------------------------- the executor


_RLIMITS = {"cpu": resource.RLIMIT_CPU, "core": resource.RLIMIT_CORE, "as": resource.RLIMIT_AS,
            "fsize": resource.RLIMIT_FSIZE, "nofile": resource.RLIMIT_NOFILE, "nproc": resource.RLIMIT_NPROC}


@functools.lru_cache(maxsize=1)
def _prlimit() -> str | None:
    """util-linux ``prlimit``, if it works (see "Launch chain" above)."""
    tool = shutil.which("prlimit")
    return tool if tool and _works([tool, "--core=0:0", "--", "true"]) else None


def _limit_child(limits: list[tuple[str, int, int]], cgroup_procs: bytes | None, uid: int | None) -> None:
    """preexec_fn: runs in the forked child before exec; only async-signal-friendly calls, no Python locks."""
    if cgroup_procs:
        fd = os.open(cgroup_procs, os.O_WRONLY)
        os.write(fd, b"0")  # "0" = the writing process itself
        os.close(fd)
    for name, soft, hard in limits:
        resource.setrlimit(_RLIMITS[name], (soft, hard))
    if uid is not None:
        os.setgroups([])
        os.setgid(uid)
        os.setuid(uid)


def _blocking_folder(python: str) -> str | None:
    """The first folder on the interpreter's path, or its real path, that other users cannot enter (a venv under a
    0700 temp dir; a pyenv under a 0700 /root)."""
    for target in (os.path.abspath(python), os.path.realpath(python)):
        path = "/"
        for part in target.split(os.sep)[1:-1]:
            path = os.path.join(path, part)
            try:
                if not os.stat(path).st_mode & 0o001:
                    return path
            except OSError:
                return path
    return None


WORKDIR_PREFIX = "critic-sbx-"


def _sweep_stale_workdirs() -> None:
    """Work dirs of a harness that was killed mid-run (``critic-sbx-<pid>-*`` whose pid is gone)."""
    for path in glob.glob(os.path.join(tempfile.gettempdir(), f"{WORKDIR_PREFIX}*-*")):
        owner = os.path.basename(path)[len(WORKDIR_PREFIX):].split("-", 1)[0]
        if owner.isdigit() and not os.path.exists(f"/proc/{owner}"):
            shutil.rmtree(path, ignore_errors=True)


@dataclasses.dataclass
class _Running:
    """One launched sandboxed process and what must be cleaned up after it."""

    proc: subprocess.Popen
    workdir: str
    cgroup: str | None


class SandboxExecutor:
    """Runs programs in parallel (a thread pool of subprocess launches), each in the sandbox described above."""

    def __init__(self, max_workers: int | None = None, memory_mb: int = 1024, max_processes: int = 64,
                 max_file_mb: int = 64, max_open_files: int = 256, capture_bytes: int = 64 << 10,
                 max_output_bytes: int = 8 << 20, python: str | None = None, isolation: str | None = None,
                 use_cgroup: bool = True, allow_unisolated: bool | None = None):
        self.python = python or sys.executable
        # twice the cores: part of a program's wall time is spent waiting (kernel set-up/teardown, blocked programs)
        self.max_workers = max_workers or 2 * (os.cpu_count() or 1)
        self.memory_mb, self.max_processes, self.max_file_mb = memory_mb, max_processes, max_file_mb
        self.max_open_files, self.capture_bytes, self.max_output_bytes = max_open_files, capture_bytes, max_output_bytes
        detected = detect_isolation(self.python)
        if isolation not in (None, *LAYERS) or (isolation and LAYERS.index(isolation) < LAYERS.index(detected)):
            raise ConfigError(f"isolation {isolation!r} unavailable here; "
                             f"choose one of {LAYERS[LAYERS.index(detected):]}")
        self.isolation = isolation or detected
        if allow_unisolated is None:
            allow_unisolated = os.environ.get(ALLOW_UNISOLATED_ENV, "").strip().lower() in ("1", "true", "yes")
        if self.isolation != "bwrap" and not allow_unisolated:
            why = ("bubblewrap (bwrap) is not installed or cannot run here" if detected != "bwrap"
                   else f"isolation={self.isolation!r} was asked for")
            raise ConfigError(f"refusing to run model-written code: {why}, and the {self.isolation!r} layer "
                              f"{WEAKER[self.isolation]}. Install bubblewrap, or set {ALLOW_UNISOLATED_ENV}=1 to "
                              "run it anyway")
        # As root, every layer runs programs as unprivileged uids (SANDBOX_UID + 2 * slot, + 1 for a pair's trusted
        # side); where such a uid cannot run the interpreter, nothing runs: root without capabilities still reads
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
        _announce(self.isolation, allow_unisolated)
        _sweep_stale_workdirs()
        self.cgroup = _cgroup_base() if use_cgroup else None
        self._ids = itertools.count()
        self._slots: queue.SimpleQueue[int] = queue.SimpleQueue()  # one pair of uids per running program or pair
        for slot in range(self.max_workers):
            self._slots.put(slot)

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
        start, slot = time.monotonic(), self._slots.get()
        try:
            return self._run_pair(pair, start, slot)
        except Exception as err:
            return PairResult(_harness_error(err, start), _harness_error(err, start))
        finally:
            self._slots.put(slot)

    def _uid(self, slot: int, trusted: bool = False) -> int | None:
        return None if self.run_as is None else self.run_as + 2 * slot + int(trusted)

    def _command(self, workdir: str, uid: int | None, inline: str | None = None) -> list[str]:
        # -S then site-packages appended by hand (boot.py): the same path without running .pth files (an editable
        # install's finder alone costs ~20 ms per start); no user site; the env is ours, so PYTHONHASHSEED applies
        cmd = [self.python, "-S", "-B", "-c", _boot(self.python, inline)]
        if self.isolation == "bwrap":
            return _bwrap_prefix(self.python, workdir, uid) + cmd
        if self.isolation == "unshare-net":  # unshare needs root: it switches to the slot uid itself, after unsharing
            drop = ["--setgid", str(uid), "--setuid", str(uid)] if uid is not None else []
            return _UNSHARE[:-1] + drop + ["--"] + cmd
        return cmd

    def _env(self, workdir: str) -> dict[str, str]:
        # Built from scratch: nothing of ours (OPENAI_API_KEY, HF_TOKEN, CRITIC_JUDGE_API_KEY, ...) is inherited.
        return {"PATH": f"{os.path.dirname(self.python)}:/usr/local/bin:/usr/bin:/bin", "LANG": "C.UTF-8",
                "LC_ALL": "C.UTF-8", "HOME": workdir, "TMPDIR": workdir, "PYTHONHASHSEED": "0",
                "PYTHONDONTWRITEBYTECODE": "1", "PYTHONIOENCODING": "utf-8", "OMP_NUM_THREADS": "1",
                "OPENBLAS_NUM_THREADS": "1", "MKL_NUM_THREADS": "1", "MPLBACKEND": "Agg"}

    def _limits(self, timeout_s: float) -> list[tuple[str, int, int]]:
        cpu = math.ceil(timeout_s) + 1  # SIGXCPU catches multi-threaded burners that outrun the wall clock
        limits = [("cpu", cpu, cpu + 1), ("core", 0, 0), ("as", self.memory_mb << 20, self.memory_mb << 20),
                  ("fsize", self.max_file_mb << 20, self.max_file_mb << 20),
                  ("nofile", self.max_open_files, self.max_open_files)]
        if self.run_as is not None:  # counted per uid, and each running program has its own
            limits.append(("nproc", self.max_processes, self.max_processes))
        return limits

    def _launch(self, cmd: list[str], uid: int | None, cgroup: str | None, timeout_s: float):
        """The command line and preexec_fn (None when wrappers do it all; see the module docstring)."""
        limits = self._limits(timeout_s)
        procs = os.path.join(cgroup, "cgroup.procs") if cgroup else None
        setuid = uid if self.isolation == "rlimits" else None  # bwrap/unshare change uid themselves
        if not _prlimit() or setuid is not None:
            return cmd, functools.partial(_limit_child, limits, procs and os.fsencode(procs), setuid)
        cmd = [_prlimit(), *(f"--{name}={soft}:{hard}" for name, soft, hard in limits), "--", *cmd]
        if procs:  # "0": the writing process itself, which then execs the rest of the chain
            cmd = ["/bin/sh", "-c", 'echo 0 > "$0" && exec "$@"', procs, *cmd]
        return cmd, None

    def _start(self, uid: int | None, timeout_s: float, stdin, stdout, source: str | None = None,
               inline: str | None = None) -> _Running:
        """One sandboxed interpreter running ``source`` (written to main.py) or ``inline`` (on its command line)."""
        workdir = tempfile.mkdtemp(prefix=f"{WORKDIR_PREFIX}{os.getpid()}-")
        running = _Running(None, workdir, None)  # type: ignore[arg-type]
        try:
            if source is not None:
                with open(os.path.join(workdir, "main.py"), "w", encoding="utf-8") as f:
                    f.write(source)
            if uid is not None:
                os.chown(workdir, uid, uid)
                if source is not None:
                    os.chown(os.path.join(workdir, "main.py"), uid, uid)
                os.chmod(workdir, 0o711)  # bwrap enters it as root without capabilities, before setpriv
            if self.cgroup:
                running.cgroup = os.path.join(self.cgroup, f"{os.getpid()}-{next(self._ids)}")
                os.mkdir(running.cgroup)
                _write(os.path.join(running.cgroup, "pids.max"), str(self.max_processes))
            cmd, preexec = self._launch(self._command(workdir, uid, inline), uid, running.cgroup, timeout_s)
            running.proc = subprocess.Popen(cmd, cwd=workdir, env=self._env(workdir), stdin=stdin, stdout=stdout,
                                            stderr=subprocess.PIPE, start_new_session=True, close_fds=True,
                                            preexec_fn=preexec)
        except BaseException:
            self._clean(running)
            raise
        return running

    @staticmethod
    def _clean(running: _Running) -> int | None:
        """Kill what is left, reap, remove the cgroup and the work dir; the return code (None: unkillable)."""
        returncode = None
        try:
            if running.proc is not None:
                _kill(running.proc, running.cgroup)
                try:
                    returncode = running.proc.wait(timeout=5)
                except subprocess.TimeoutExpired:  # unkillable (D state): leave it, report what we have
                    pass
        finally:
            if running.cgroup:
                _remove_cgroup(running.cgroup)
            shutil.rmtree(running.workdir, ignore_errors=True)
        return returncode

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
            returncode = self._clean(running)
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
                self._clean(running)
            raise
        finally:
            for fd in (*to_untrusted, *to_trusted):
                os.close(fd)
        trusted, untrusted = started
        try:
            (t_err, u_err), why = self._collect(started, [trusted.proc.stderr, untrusted.proc.stderr],
                                                start + pair.timeout_s)
        finally:
            t_code, u_code = self._clean(trusted), self._clean(untrusted)
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
                        _kill(r.proc, r.cgroup)
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


def _harness_error(err: Exception, start: float) -> ExecResult:
    return ExecResult("error", None, "", f"[sandbox] {type(err).__name__}: {err}", time.monotonic() - start)


def _exited(pid: int) -> bool:
    """True once ``pid`` has exited, without reaping it (so its pid, our pgid, cannot be reused yet)."""
    try:
        return os.waitid(os.P_PID, pid, os.WEXITED | os.WNOHANG | os.WNOWAIT) is not None
    except ChildProcessError:
        return True


def _kill(proc: subprocess.Popen, cgroup: str | None) -> None:
    """SIGKILL the child's process group (it leads its own session: pgid == pid) and all else in its cgroup."""
    for kill, pid in [(os.killpg, proc.pid)] + [(os.kill, p) for p in (_members(cgroup) if cgroup else [])]:
        try:
            kill(pid, signal.SIGKILL)
        except OSError:
            pass


# ----------------------------------------------------------------------------- plugin entry points


def _option_names() -> list[str]:
    import inspect

    return [p for p in inspect.signature(SandboxExecutor).parameters]


@hookimpl
def critic_executor(name: str, options: dict):
    if name != "sandbox":
        return None
    unknown = sorted(set(options) - set(_option_names()))
    if unknown:
        raise ConfigError(f"unknown sandbox executor option(s) {unknown}; available options: {_option_names()}")
    return SandboxExecutor(**options)


def get_executor(name: str = "sandbox", **options) -> Executor:
    """The executor called ``name`` from the plugin manager (built-in ``sandbox``, or one from the entry point)."""
    from critic_tasks.plugins import plugin_manager

    pm = plugin_manager()
    executor = pm.hook.critic_executor(name=name, options=options)
    if executor is None:
        plugins = sorted(n for n, _ in pm.list_name_plugin())
        raise ConfigError(f"no code executor named {name!r} (CRITIC_EXECUTOR); built-in: 'sandbox' (options: {_option_names()}); "
                         f"installed plugins: {plugins}")
    return executor
