"""What bounds a sandboxed program and what is freed after it: rlimits, cgroups, uids, its work dir.

* **rlimits** (CPU, address space, file size, open files, core; processes where the program has a uid of its own),
  set by ``prlimit`` in the launch chain, or in ``preexec_fn`` where there is no ``prlimit`` or a uid to drop.
* **cgroups**: where a ``pids`` or ``memory`` controller is writable (v1 hierarchies or a v2 tree that delegates
  them), each program runs in a child cgroup of its own with ``pids.max`` (RLIMIT_NPROC does not bind root) and a
  memory cap on its whole tree (RLIMIT_AS binds each process alone); whatever it leaves there is killed before the
  cgroup is removed.
* **uids**: as root, programs run as pairs of sandbox uids leased to one executor at a time on this host
  (``_UidLease``).
* **the end of a program** (``_clean``): its process group and its cgroups' members killed, the cgroups and the work
  dir removed, what it parked in Unix sockets collected.

Launch chain (``Limits.launch``): ``sh`` (moves itself into the cgroups) -> ``prlimit`` (sets the rlimits) -> the
layer's wrapper (isolation.py) -> ``python``. Doing this in wrappers rather than ``preexec_fn`` lets Popen vfork
instead of fork, which in a big harness process (torch loaded) saves ~10 ms per program, held under the GIL.
"""

from __future__ import annotations

import atexit
import dataclasses
import errno
import fcntl
import functools
import glob
import itertools
import logging
import math
import os
import resource
import shutil
import signal
import socket
import struct
import subprocess
import tempfile
import threading
import time
from typing import Sequence

from critic_tasks.core.errors import ConfigError
from critic_tasks.sandbox.inside.tree import TREE_FLAGS, empty_folder

log = logging.getLogger("critic_tasks")
# Sandbox uids: an unused range (no passwd entry needed), below nobody (65534) and within the 65,536 uids a user
# namespace usually maps. SANDBOX_UID itself only runs the probes; programs run as pairs above it, each pair leased
# to one executor on this host at a time (``_UidLease``)
SANDBOX_UID = 64000
SANDBOX_UID_END = 65520
UID_LOCK_NAME = "critic-tasks-sandbox-uids.lock"


def _works(cmd: list[str], **kw) -> bool:
    try:
        return subprocess.run(cmd, capture_output=True, timeout=30, stdin=subprocess.DEVNULL, **kw).returncode == 0
    except (OSError, subprocess.SubprocessError):
        return False


# ----------------------------------------------------------------------------- rlimits and the launch chain


_RLIMITS = {"cpu": resource.RLIMIT_CPU, "core": resource.RLIMIT_CORE, "as": resource.RLIMIT_AS,
            "fsize": resource.RLIMIT_FSIZE, "nofile": resource.RLIMIT_NOFILE, "nproc": resource.RLIMIT_NPROC}


@functools.lru_cache(maxsize=1)
def _prlimit() -> str | None:
    """util-linux ``prlimit``, if it works (see "Launch chain" above)."""
    tool = shutil.which("prlimit")
    return tool if tool and _works([tool, "--core=0:0", "--", "true"]) else None


def _limit_child(limits: list[tuple[str, int, int]], cgroup_procs: Sequence[bytes], uid: int | None) -> None:
    """preexec_fn: runs in the forked child before exec; only async-signal-friendly calls, no Python locks."""
    for procs in cgroup_procs:
        fd = os.open(procs, os.O_WRONLY)
        os.write(fd, b"0")  # "0" = the writing process itself
        os.close(fd)
    for name, soft, hard in limits:
        resource.setrlimit(_RLIMITS[name], (soft, hard))
    if uid is not None:
        os.setgroups([])
        os.setgid(uid)
        os.setuid(uid)


@dataclasses.dataclass(frozen=True)
class Limits:
    """An executor's caps on each program: its rlimits, and a cgroup per controller in ``cgroups`` (controller ->
    parent cgroup, ``_cgroup_bases``). ``nproc``: the program has a uid of its own, so RLIMIT_NPROC counts its
    processes alone."""

    memory_mb: int
    max_processes: int
    max_file_mb: int
    max_open_files: int
    cgroups: dict[str, str]
    nproc: bool

    def rlimits(self, timeout_s: float) -> list[tuple[str, int, int]]:
        cpu = math.ceil(timeout_s) + 1  # SIGXCPU catches multi-threaded burners that outrun the wall clock
        limits = [("cpu", cpu, cpu + 1), ("core", 0, 0), ("as", self.memory_mb << 20, self.memory_mb << 20),
                  ("fsize", self.max_file_mb << 20, self.max_file_mb << 20),
                  ("nofile", self.max_open_files, self.max_open_files)]
        if self.nproc:  # counted per uid, and each running program has its own
            limits.append(("nproc", self.max_processes, self.max_processes))
        return limits

    @staticmethod
    def launch(cmd: list[str], limits: list[tuple[str, int, int]], cgroups: list[str], setuid: int | None):
        """The command line and preexec_fn (None when wrappers do it all; see the launch chain above).
        ``setuid``: a uid the child drops to itself (the rlimits layer; bwrap and unshare change it themselves)."""
        procs = [os.path.join(c, "cgroup.procs") for c in cgroups]
        if not _prlimit() or setuid is not None:
            return cmd, functools.partial(_limit_child, limits, [os.fsencode(p) for p in procs], setuid)
        cmd = [_prlimit(), *(f"--{name}={soft}:{hard}" for name, soft, hard in limits), "--", *cmd]
        if procs:  # "0": the writing process itself, which then execs the rest of the chain
            script = " && ".join(f'echo 0 > "${i}"' for i in range(len(procs)))
            cmd = ["/bin/sh", "-c", f'{script} && shift {len(procs) - 1} && exec "$@"', *procs, *cmd]
        return cmd, None

    def make_cgroups(self) -> list[str]:
        """A fresh child cgroup per controller, its cap written: pids.max, and the memory of the whole tree."""
        made: list[str] = []
        name = f"{os.getpid()}-{next(_NAMES)}"
        try:
            for base in self.cgroups.values():
                path = os.path.join(base, name)
                if path in made:  # v2: one tree for both controllers
                    continue
                os.mkdir(path)
                made.append(path)
            for controller, base in self.cgroups.items():
                path = os.path.join(base, name)
                if controller == "pids":
                    _write(os.path.join(path, "pids.max"), str(self.max_processes))
                elif os.path.exists(os.path.join(path, "memory.max")):  # v2; no swap to spill into
                    _write(os.path.join(path, "memory.max"), str(self.memory_mb << 20))
                    if os.path.exists(os.path.join(path, "memory.swap.max")):
                        _write(os.path.join(path, "memory.swap.max"), "0")
                else:  # v1: memory, then memory + swap (which must not be below it)
                    _write(os.path.join(path, "memory.limit_in_bytes"), str(self.memory_mb << 20))
                    if os.path.exists(os.path.join(path, "memory.memsw.limit_in_bytes")):
                        _write(os.path.join(path, "memory.memsw.limit_in_bytes"), str(self.memory_mb << 20))
        except BaseException:
            for path in made:
                _remove_cgroup(path)
            raise
        return made


# ----------------------------------------------------------------------------- cgroups


# the file that caps a program tree, per controller and cgroup version
CGROUP_LIMIT_FILES = {"pids": ("pids.max",), "memory": ("memory.limit_in_bytes", "memory.max")}


@functools.lru_cache(maxsize=1)
def _cgroup_bases() -> dict[str, str]:
    """Controller ("pids", "memory") -> a per-process parent cgroup whose children get that controller's cap, for
    each controller writable here (cgroup v1 hierarchies, or a v2 tree that delegates it); empty when none is."""
    try:
        mounts = [line.split()[:4] for line in open("/proc/self/mounts")]
        own = dict(line.rstrip("\n").split(":", 2)[1:] for line in open("/proc/self/cgroup"))
    except OSError:
        return {}
    bases: dict[str, str] = {}
    for controller in CGROUP_LIMIT_FILES:
        parents = [mnt + path for _, mnt, fs, opts in mounts if fs == "cgroup" and controller in opts.split(",")
                   for key, path in own.items() if controller in key.split(",")]
        parents += [mnt + own.get("", "/") for _, mnt, fs, _ in mounts if fs == "cgroup2"]
        for parent in parents:
            base = _cgroup_base_in(parent, controller, in_use=set(bases.values()))
            if base:
                bases[controller] = base
                break
    return bases


def _cgroup_base_in(parent: str, controller: str, in_use: set[str]) -> str | None:
    """``parent/critic-tasks-<pid>`` when children made in it get ``controller``'s limit file, else None
    (``in_use``: bases another controller already has, as v2 shares one tree: never removed here)."""
    for stale in glob.glob(os.path.join(parent, "critic-tasks-*")):  # left by a crashed run
        if not os.path.exists(f"/proc/{stale.rsplit('-', 1)[-1]}"):
            _remove_cgroup(stale)
    base = os.path.join(parent, f"critic-tasks-{os.getpid()}")
    try:
        os.makedirs(base, exist_ok=True)
        if os.path.exists(os.path.join(base, "cgroup.subtree_control")):  # v2: delegate it to children
            _write(os.path.join(base, "cgroup.subtree_control"), f"+{controller}")
        probe = os.path.join(base, f"probe-{controller}")
        os.mkdir(probe)
        ok = any(os.path.exists(os.path.join(probe, name)) for name in CGROUP_LIMIT_FILES[controller])
        os.rmdir(probe)
        if ok:
            if base not in in_use:
                atexit.register(_remove_cgroup, base)
            return base
    except OSError:
        pass
    if base not in in_use:
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
    if not os.path.isdir(path):
        return
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


def _pinned_bytes(cgroups: Sequence[str]) -> int | None:
    """Memory a cgroup holds that reclaim cannot free (all but the page cache of files: anonymous memory, tmpfs and
    memfd pages, kernel memory), from its memory controller's files (v1 or v2); None without one."""
    for cgroup in cgroups:
        for usage_file in ("memory.usage_in_bytes", "memory.current"):
            try:
                with open(os.path.join(cgroup, usage_file)) as f:
                    usage = int(f.read())
                with open(os.path.join(cgroup, "memory.stat")) as f:
                    stat = dict(line.split() for line in f)
            except (OSError, ValueError):
                continue
            return usage - int(stat.get("active_file", 0)) - int(stat.get("inactive_file", 0))
    return None


# ----------------------------------------------------------------------------- uids


def _uid_lock_path() -> str:
    """The one lock file every harness process on this host leases its uids through (root's /run, else the temp
    dir)."""
    folder = "/run" if os.path.isdir("/run") and os.access("/run", os.W_OK) else tempfile.gettempdir()
    return os.path.join(folder, UID_LOCK_NAME)


class _UidLease:
    """Pairs of sandbox uids held by one executor, never by two executors at once on this host, of this process or
    another (two harness runs sharing uids could signal, trace or read each other's programs and share their
    RLIMIT_NPROC). Pair k (uids ``SANDBOX_UID + 2k`` and ``+ 1``) is ours while our open file description holds a
    lock on byte k of one lock file (an OFD lock: per open file, so two executors of one process exclude each other
    too); closing the file, at the executor's end or the process's (a crash included), frees them all. Pairs are
    leased on first use, one per slot."""

    def __init__(self):
        self._fd: int | None = None
        self._pairs: dict[int, int] = {}
        self._lock = threading.Lock()

    def uid(self, slot: int) -> int:
        with self._lock:
            if slot not in self._pairs:
                self._pairs[slot] = self._take()
            return self._pairs[slot]

    def _take(self) -> int:
        path = _uid_lock_path()
        if self._fd is None:
            self._fd = os.open(path, os.O_RDWR | os.O_CREAT | os.O_NOFOLLOW | os.O_CLOEXEC, 0o600)
            if os.fstat(self._fd).st_uid != os.geteuid():  # another user's file could fake leases (or hold them all)
                os.close(self._fd)
                self._fd = None
                raise ConfigError(f"{path} belongs to another user; remove it to run sandboxed programs")
        held = set(self._pairs.values())
        for pair in range(1, (SANDBOX_UID_END - SANDBOX_UID) // 2):
            uid = SANDBOX_UID + 2 * pair
            if uid in held:  # a lock we hold does not conflict with itself
                continue
            try:  # struct flock: type, whence, start, length, pid (0 for an OFD lock)
                fcntl.fcntl(self._fd, fcntl.F_OFD_SETLK, struct.pack("hhqqi4x", fcntl.F_WRLCK, os.SEEK_SET, pair, 1, 0))
            except OSError as err:
                if err.errno in (errno.EAGAIN, errno.EACCES):  # another executor's
                    continue
                raise
            return uid
        raise ConfigError(f"no free sandbox uid in {SANDBOX_UID + 2}-{SANDBOX_UID_END - 1}: other executors on this "
                          f"host hold them all ({path}); run fewer at once or with fewer max_workers")

    def close(self) -> None:
        with self._lock:
            if self._fd is not None:
                os.close(self._fd)
            self._fd, self._pairs = None, {}


# ----------------------------------------------------------------------------- the end of a program


WORKDIR_PREFIX = "critic-sbx-"
_NAMES = itertools.count()  # cgroup and work dir names, unique in this process (executors come and go)


def _sweep_stale_workdirs() -> None:
    """Work dirs of a harness that was killed mid-run (``critic-sbx-<pid>-*`` whose pid is gone)."""
    for path in glob.glob(os.path.join(tempfile.gettempdir(), f"{WORKDIR_PREFIX}*-*")):
        owner = os.path.basename(path)[len(WORKDIR_PREFIX):].split("-", 1)[0]
        if owner.isdigit() and not os.path.exists(f"/proc/{owner}"):
            remove_tree(path)


def remove_tree(path: str) -> None:
    """Remove ``path`` and all in it at any depth (``tree.empty_folder``: iteratively, no symlink followed, closed
    folders opened up); never raises: ``shutil.rmtree`` recurses (a 3,000-deep tree raises RecursionError) and such
    a tree's paths exceed PATH_MAX."""
    try:
        fd = os.open(path, TREE_FLAGS)
    except FileNotFoundError:
        return
    except OSError:  # a file or a symlink, not a folder
        try:
            os.unlink(path)
        except OSError:
            pass
        return
    try:
        empty_folder(fd)
    except OSError as err:
        log.warning("critic_tasks sandbox: could not remove %s: %s", path, err)
    try:
        os.rmdir(path)
    except OSError:
        pass


@dataclasses.dataclass
class _Running:
    """One launched sandboxed process and what must be cleaned up after it."""

    proc: subprocess.Popen
    workdir: str | None  # on the host (the weaker layers); bwrap's lives in the sandbox's own /tmp
    cgroups: list[str]


def _clean(running: _Running) -> int | None:
    """Kill what is left, reap, remove the cgroups and the work dir, and free what its processes parked in Unix
    sockets; the return code (None: unkillable)."""
    returncode = None
    try:
        if running.proc is not None:
            _kill(running.proc, running.cgroups)
            try:
                returncode = running.proc.wait(timeout=5)
            except subprocess.TimeoutExpired:  # unkillable (D state): leave it, report what we have
                pass
    finally:
        for cgroup in running.cgroups:
            _remove_cgroup(cgroup)
        if running.workdir:
            remove_tree(running.workdir)
        _collect_unix_garbage()
    return returncode


def _kill(proc: subprocess.Popen, cgroups: Sequence[str]) -> None:
    """SIGKILL the child's process group (it leads its own session: pgid == pid) and all else in its cgroups."""
    members = [p for cgroup in cgroups for p in _members(cgroup)]
    for kill, pid in [(os.killpg, proc.pid)] + [(os.kill, p) for p in members]:
        try:
            kill(pid, signal.SIGKILL)
        except OSError:
            pass


def _exited(pid: int) -> bool:
    """True once ``pid`` has exited, without reaping it (so its pid, our pgid, cannot be reused yet)."""
    try:
        return os.waitid(os.P_PID, pid, os.WEXITED | os.WNOHANG | os.WNOWAIT) is not None
    except ChildProcessError:
        return True


def _collect_unix_garbage() -> None:
    """Start the kernel's collector of in-flight Unix sockets (the release of one does, while any descriptor is in
    flight): a program that sent a socket to itself over itself (SCM_RIGHTS) leaves a cycle that holds its memfds
    and files, and their memory and disk, after every process of it is gone, until the next collection."""
    for end in socket.socketpair():
        end.close()
