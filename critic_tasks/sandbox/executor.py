"""Run untrusted Python programs (model-written corrections, their unit tests) and report how each ended.

Every program is treated as hostile. Each one gets its own session/process group, a fresh temporary working
directory (deleted afterwards), a scrubbed environment (no API keys or tokens), rlimits (CPU, address space, file
size, open files, core), a wall-clock timeout after which the *whole* group is SIGKILLed, and stdout/stderr read
incrementally: only the last ``capture_bytes`` of each are kept and a program that writes more than
``max_output_bytes`` in all is killed and fails. ``passed`` means exit status 0 within the time limit.

Isolation is layered by what works on this machine (detected once, cached; see ``SandboxExecutor.isolation``). Only
``bwrap`` keeps every promise; a weaker layer refuses to run anything unless the caller opts in
(``CRITIC_ALLOW_UNISOLATED=1`` or ``allow_unisolated=True``), and the layer in use is logged once:

* ``bwrap``       -- bubblewrap: new user/pid/net/ipc/uts namespaces, no capabilities, and an empty root that shows
  only what the interpreter needs, read-only (``/usr``, a few files of ``/etc``, the interpreter's prefix, stdlib and
  site-packages; ``_filesystem_view``): no data, outputs, working tree or home. Its ``/tmp``, which holds the work
  dir, is a tmpfs of ``max_disk_mb``; a PID namespace, so nothing escapes.
* ``unshare-net`` -- ``unshare`` (root only): new net/pid/mount/ipc/uts namespaces and a private ``/proc``, so no
  network and no signals or ``/proc/<pid>/environ`` outside; the filesystem stays writable unless uids drop (below).
* ``rlimits``     -- plain subprocess with rlimits only. No network isolation.

Never as root: when we are root, each worker slot runs its programs as uids of its own (a pair leased for it,
``+ 1`` for a pair's trusted side; no other executor on the host, in this process or another, holds it meanwhile:
``_UidLease``): no writing our files, no signalling us or the programs running beside it, and RLIMIT_NPROC binds.
Under bwrap this is ``setpriv`` inside the sandbox (bwrap keeps only CAP_SETUID/CAP_SETGID for it, and no user
namespace, whose uid map would keep the program root outside): without it a program would run as root without
capabilities, still able to read root-owned files such as ``/etc/shadow``. Where that uid cannot run
the interpreter (a pyenv under a 0700 ``/root`` on a layer that cannot re-bind it), the executor refuses to start,
in one line naming the closed folder. Every layer also gets boot.py's seccomp filter (no namespaces, mounts,
io_uring, bpf, ptrace, ...; see there).

``run_pairs`` runs a ``Pair``: an untrusted program wired to a trusted one through two pipes, each in a sandbox of
its own; the code checks use it so that the verdict is never decided inside the program under test. Under bwrap as
root, each worker keeps its two sandboxes running and forks a fresh process per item in each (``_Worker``,
zygote.py: the item's own uid, pipes, source and work dir; everything of the previous item killed and emptied,
then measured back to empty, else the worker is replaced: ``_Worker.leftover``).

On top of any layer, where a cgroup ``pids`` or ``memory`` controller is writable (v1 hierarchies or a v2 tree that
delegates them), each program runs in its own child cgroup with ``pids.max`` (RLIMIT_NPROC does not bind root) and
a memory cap of ``memory_mb`` on its whole tree (RLIMIT_AS binds each process alone); whatever it leaves behind
there is killed before the cgroup is removed. Without a memory controller, one warning says what that means.

Launch chain: ``sh`` (moves itself into the cgroup) -> ``prlimit`` (sets the rlimits) -> ``bwrap``/``unshare`` ->
``python``. Doing this in wrappers rather than ``preexec_fn`` lets Popen vfork instead of fork, which in a big harness
process (torch loaded) saves ~10 ms per program, held under the GIL; ``preexec_fn`` is the fallback (no ``prlimit``,
or a uid to drop).
"""

from __future__ import annotations

import atexit
import concurrent.futures
import dataclasses
import errno
import fcntl
import functools
import glob
import itertools
import json
import logging
import math
import os
import queue
import resource
import select
import selectors
import shutil
import signal
import socket
import struct
import subprocess
import sys
import tempfile
import threading
import time
import weakref
from pathlib import Path
from typing import Protocol, Sequence

from critic_tasks.core.errors import ConfigError
from critic_tasks.core.run_state import per_run
from critic_tasks.hookspecs import hookimpl
from critic_tasks.sandbox.tree import TREE_FLAGS, empty_folder

LAYERS = ("bwrap", "unshare-net", "rlimits")
ALLOW_UNISOLATED_ENV = "CRITIC_ALLOW_UNISOLATED"  # as HF_ALLOW_CODE_EVAL: an explicit opt-in to weaker isolation
# What a layer weaker than bwrap cannot promise (private /tmp and read-only everything else but the work dir; own
# PID and mount namespaces with a fresh /proc; no capabilities; no network; no Unix sockets outside the work dir).
WEAKER = {
    "unshare-net": "keeps the network out but not the file system: a program reads every file other users may (the "
                   "data, earlier outputs, the working tree, a .env), and its work dir has no byte cap, only a per-file one",
    "rlimits": "has no network, file-system or process isolation at all: a program reads every file other users may "
               "(the data, earlier outputs, the working tree, a .env), and its work dir has no byte cap, only a "
               "per-file one",
}
log = logging.getLogger("critic_tasks")
# Sandbox uids: an unused range (no passwd entry needed), below nobody (65534) and within the 65,536 uids a user
# namespace usually maps. SANDBOX_UID itself only runs the probes; programs run as pairs above it, each pair leased
# to one executor on this host at a time (``_UidLease``)
SANDBOX_UID = 64000
SANDBOX_UID_END = 65520
UID_LOCK_NAME = "critic-tasks-sandbox-uids.lock"


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


# ----------------------------------------------------------------------------- detection (once per process; said once per run)


_ANNOUNCED: set[str] = per_run(set())  # the detection is the process's; saying what it found is each run's


def _say_once(key: str, message: str, *args) -> None:
    """A warning logged once per run (what a missing safeguard means here)."""
    if key not in _ANNOUNCED:
        _ANNOUNCED.add(key)
        log.warning(message, *args)


def _announce(layer: str, opted_in: bool) -> None:
    """The layer in use, logged once per run (and recorded with every check outcome)."""
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


@functools.lru_cache(maxsize=None)
def _interpreter(python: str) -> tuple[tuple[str, ...], tuple[str, ...], tuple[str, ...]]:
    """(its prefix and base prefix, the site-packages ``site`` adds to its path, its stdlib folders), asked once."""
    code = "import json, sys; print(json.dumps([sys.prefix, sys.base_prefix, sys.path]))"
    try:
        (prefix, base, path), (_, _, bare) = [
            json.loads(subprocess.run([python, *flags, "-c", code], capture_output=True, text=True, timeout=30,
                                      stdin=subprocess.DEVNULL).stdout) for flags in (["-s"], ["-S", "-s"])]
    except (OSError, ValueError, subprocess.SubprocessError):
        return (), (), ()
    return ((prefix, base), tuple(p for p in path if p not in bare and os.path.isdir(p)),
            tuple(p for p in bare if p and os.path.isdir(p)))


def _site_dirs(python: str) -> tuple[str, ...]:
    """The directories ``site`` adds to ``python``'s path (site-packages), found once."""
    return _interpreter(python)[1]


def _interpreter_roots(python: str) -> list[str]:
    """What the interpreter needs on disk, real paths: its prefix (a venv: the venv, never the checkout it sits
    in), its base installation (stdlib, shared libraries) and its site-packages."""
    prefixes, sites, _ = _interpreter(python)
    roots = {os.path.realpath(r) for r in (*prefixes, *sites, os.path.dirname(os.path.dirname(python)),
                                           os.path.dirname(os.path.dirname(os.path.realpath(python)))) if r}
    return sorted(roots - {"/"})


def _inside(path: str, folder: str) -> bool:
    return path == folder or path.startswith(folder.rstrip(os.sep) + os.sep)


# The system folders the interpreter and its libraries load from (merged-/usr symlinks stay symlinks) and the few
# files of /etc the dynamic loader and the stdlib read. Nothing else of the host exists in the sandbox: no /home,
# /root, /var, /srv, /opt, /mnt, /media, /run, no working tree, data or output folder, no model cache.
SYSTEM_DIRS = ("/usr", "/bin", "/sbin", "/lib", "/lib32", "/lib64", "/libx32")
ETC_ENTRIES = ("ld.so.cache", "ld.so.conf", "ld.so.conf.d", "alternatives", "localtime", "passwd", "group",
               "nsswitch.conf", "hosts", "mime.types")
# Folders a run names in its environment: covered even where they lie inside a folder the sandbox shows.
PRIVATE_ENV = ("CRITICBENCH_DATA_DIR", "CRITIQUELLM_DATA_DIR", "METACRITIQUE_DATA_DIR", "CRITICBENCH_TOOLKIT_DIR",
               "HF_HOME", "HF_HUB_CACHE", "HUGGINGFACE_HUB_CACHE", "HF_DATASETS_CACHE", "TRANSFORMERS_CACHE",
               "HF_TOKEN_PATH", "XDG_CACHE_HOME", "XDG_CONFIG_HOME", "CRITIC_REQUEST_CACHE", "CRITIC_RESCUE_DIR")


def private_paths(extra: Sequence[str] = ()) -> list[str]:
    """What a program must never read, even where it lies inside a folder the sandbox shows (a checkout under
    /usr/local/src, our package installed into site-packages with its bundled data, a cache inside the venv): our
    package, its checkout (an editable install), the working directory, $HOME, the data, cache and toolkit folders
    the environment names, and ``extra`` (the executor's ``hide``: output folders)."""
    package = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
    checkout = os.path.dirname(package)
    try:
        cwd = os.getcwd()
    except OSError:  # removed under us: nothing there to read
        cwd = ""
    paths = [package, cwd, os.path.expanduser("~"), *extra]
    paths += [checkout] if any(os.path.exists(os.path.join(checkout, m)) for m in ("pyproject.toml", ".git")) else []
    paths += [os.environ[name] for name in PRIVATE_ENV if os.environ.get(name)]
    return sorted({os.path.realpath(p) for p in paths if p and os.path.exists(p)} - {"/"})


def _filesystem_view(python: str, tmp_bytes: int = 0, hide: Sequence[str] = ()) -> list[str]:
    """bwrap's mounts: an empty root (bwrap's own tmpfs); the system folders, a few files of /etc and the
    interpreter's roots, read-only; a fresh /dev, a /proc of the sandbox's own PID namespace and a /tmp of
    ``tmp_bytes`` (0: the kernel's default, half the RAM); each private path that would still be visible covered
    by an empty tmpfs (a file: by /dev/null), and an interpreter root inside one (a venv in a checkout under
    /usr/local/src) bound again on top."""
    args, mounts, made = [], [], {"/"}
    for folder in SYSTEM_DIRS:
        if os.path.islink(folder):
            args += ["--symlink", os.readlink(folder), folder]
        elif os.path.isdir(folder):
            args += ["--ro-bind", folder, folder]
            mounts.append((folder, "bind"))
    args += ["--perms", "0755", "--dir", "/etc"]
    for entry in ETC_ENTRIES:
        if os.path.exists(os.path.join("/etc", entry)):
            args += ["--ro-bind", os.path.join("/etc", entry), os.path.join("/etc", entry)]
    if tmp_bytes and "--size" not in _bwrap_options():
        _say_once("no-tmp-size", "critic_tasks sandbox: this bwrap has no --size, so the sandbox's /tmp (and the work "
                  "dir in it) is a tmpfs of the kernel's default size, bounded only by the memory cgroup where there "
                  "is one; a newer bubblewrap caps it")
        tmp_bytes = 0
    args += ["--dev", "/dev", "--proc", "/proc", "--perms", "1777", *(["--size", str(tmp_bytes)] if tmp_bytes else []),
             "--tmpfs", "/tmp"]
    made.update(("/etc", "/dev", "/proc", "/tmp"))
    mounts.append(("/tmp", "empty"))
    roots = _interpreter_roots(python)
    needed = {os.path.realpath(p) for p in (python, *_interpreter(python)[2], *_site_dirs(python))}
    needed.add(os.path.abspath(python))
    system = [path for path, kind in mounts if kind == "bind"]
    hidden = []
    for path in private_paths(hide):
        if not any(_inside(path, s) for s in system + roots) or any(_inside(s, path) for s in system):
            continue  # not visible anyway (the usual case), or it holds a system folder itself
        if any(_inside(n, path) and not any(_inside(n, r) and _inside(r, path) and r != path for r in roots)
               for n in needed):
            _say_once(f"unhidden:{path}", "critic_tasks sandbox: %s holds the interpreter (%s), so programs can read "
                      "it; run from elsewhere or use an interpreter outside it", path, python)
            continue
        hidden.append(path)

    def innermost(folder: str) -> str:
        """How ``folder`` is mounted now: "bind" (the host's), "empty" (a tmpfs of ours) or "" (the empty root)."""
        best = ("", "")
        for path, kind in mounts:
            if _inside(folder, path) and len(path) >= len(best[0]):
                best = (path, kind)
        return best[1]

    def present(folder: str) -> bool:
        return folder in made or (innermost(folder) == "bind" and os.path.isdir(folder))

    # parents before children; at one depth, a cover before a root
    for path, kind in sorted([(r, "root") for r in roots] + [(h, "hide") for h in hidden],
                             key=lambda item: (item[0].count(os.sep), item[1] == "root")):
        if kind == "hide":
            args += ["--tmpfs", path] if os.path.isdir(path) else ["--ro-bind", "/dev/null", path]
            mounts.append((path, "empty"))
            made.add(path)
            continue
        if innermost(path) == "bind":
            continue  # shown already, by a bind above it
        steps, parent = [], os.path.dirname(path)
        while not present(parent):  # folders bwrap makes on the way are 0700: open them for an unprivileged uid
            steps.append(parent)
            parent = os.path.dirname(parent)
        for step in reversed(steps):
            args += ["--perms", "0755", "--dir", step]
            made.add(step)
        if os.stat(path).st_mode & 0o001:
            args += ["--ro-bind", path, path]
        else:  # a 0700 root (a venv made in a mkdtemp folder): a bind keeps its mode, so bind what is inside it
            args += ["--perms", "0755", "--dir", path]
            made.add(path)
            for entry in sorted(os.listdir(path)):
                args += ["--ro-bind", os.path.join(path, entry), os.path.join(path, entry)]
        mounts.append((path, "bind"))
    return args


def _bwrap_prefix(python: str, workdir: str, uid: int | None = None, tmp_bytes: int = 0, main_fd: int | None = None,
                  hide: Sequence[str] = (), setpriv: bool = True) -> list[str]:
    """bwrap's arguments, up to the program. ``uid``: we are root and the program runs as that uid (setpriv).
    ``workdir`` is made inside the sandbox's sized /tmp (its bytes count against ``tmp_bytes``; nothing of it is on
    the host); ``main_fd``: a file descriptor whose content becomes ``main.py`` there."""
    if uid is None:  # a user namespace of its own; no nested ones (seccomp refuses them too: boot.py)
        namespaces = ["--unshare-all", "--unshare-user", *_disable_userns()]
        namespaces += ["--cap-drop", "ALL"] if os.geteuid() == 0 else []
    else:  # no user namespace: setpriv's uid must be a real one; CAP_SETUID/SETGID go when the uid changes
        namespaces = ["--unshare-ipc", "--unshare-pid", "--unshare-net", "--unshare-uts", "--unshare-cgroup-try",
                      "--cap-drop", "ALL", "--cap-add", "CAP_SETUID", "--cap-add", "CAP_SETGID"]
    args = ["bwrap", *namespaces, "--die-with-parent", "--new-session", *_filesystem_view(python, tmp_bytes, hide)]
    # a zygote (workdir /tmp: its items make theirs): the IPC namespace's POSIX message queues made visible, so
    # they can be removed between items (zygote.py)
    args += ["--perms", "1777", "--dir", workdir] if workdir != "/tmp" else ["--mqueue", "/dev/mqueue"]
    if main_fd is not None:
        args += ["--perms", "0644", "--file", str(main_fd), os.path.join(workdir, "main.py")]
    args += ["--chdir", workdir, "--"]
    if uid is not None and setpriv:  # (without: a zygote, which keeps CAP_SETUID/SETGID to drop each item's uid)
        args += ["setpriv", f"--reuid={uid}", f"--regid={uid}", "--clear-groups", "--"]
    return args


@functools.lru_cache(maxsize=1)
def _bwrap_options() -> str:
    """This bwrap's ``--help`` text (the options it has)."""
    try:
        return subprocess.run(["bwrap", "--help"], capture_output=True, text=True, timeout=30).stdout
    except (OSError, subprocess.SubprocessError):
        return ""


def _disable_userns() -> tuple[str, ...]:
    """bwrap >= 0.8's ``--disable-userns`` (no user namespace inside the sandbox), where this bwrap has it."""
    return ("--disable-userns",) if "--disable-userns" in _bwrap_options() else ()


PROBE_WORKDIR = "/tmp/critic-sbx-probe"  # inside the sandbox's own /tmp: nothing on the host
_UNSHARE = ["unshare", "--net", "--pid", "--mount-proc", "--ipc", "--uts", "--fork", "--kill-child", "--"]


@functools.lru_cache(maxsize=None)
def detect_isolation(python: str = sys.executable) -> str:
    """The strongest layer that can run ``python -c pass`` here."""
    python = os.path.abspath(python)
    probe = [python, "-c", "pass"]
    # the stdlib's shared modules too: the sandbox shows only what the interpreter needs, and must show all of it
    full = [python, "-c", "import ctypes, json, math"]
    if shutil.which("bwrap") and _works(_bwrap_prefix(python, PROBE_WORKDIR) + full, cwd="/"):
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
def _unprivileged_can_run(python: str, isolation: str) -> bool:
    """Are we root, and can ``SANDBOX_UID`` run the interpreter in this layer (under bwrap: through setpriv)? (The
    probe gets none of our environment: its uid is not ours.)"""
    uid = SANDBOX_UID
    if os.geteuid() != 0:
        return False
    if isolation != "bwrap":
        return _works([python, "-c", "pass"], user=uid, group=uid, extra_groups=[], cwd="/", env=PROBE_ENV)
    if not shutil.which("setpriv"):
        return False
    probe = [python, "-c", "import ctypes, os, sys; sys.exit(os.getuid() != %d)" % uid]
    return _works(_bwrap_prefix(python, PROBE_WORKDIR, uid) + probe, cwd="/", env=PROBE_ENV)


PROBE_ENV = {"PATH": "/usr/local/bin:/usr/bin:/bin", "LANG": "C.UTF-8"}


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


# ----------------------------------------------------------------------------- the executor


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


def _release(live: dict, lease: _UidLease) -> None:
    """An executor's end: its pre-started sandboxes first, then its uids (no program of ours runs as them now)."""
    _close_workers(live)
    lease.close()


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


class SandboxExecutor:
    """Runs programs in parallel (a thread pool of subprocess launches), each in the sandbox described above."""

    def __init__(self, max_workers: int | None = None, memory_mb: int = 1024, max_processes: int = 64,
                 max_file_mb: int = 64, max_open_files: int = 256, capture_bytes: int = 64 << 10,
                 max_output_bytes: int = 8 << 20, python: str | None = None, isolation: str | None = None,
                 use_cgroup: bool = True, allow_unisolated: bool | None = None, max_disk_mb: int = 128,
                 hide: Sequence[str] = (), reuse_sandboxes: bool = True):
        # absolute and without ``..``: an interpreter started as ``../.venv/bin/python`` reports a path through
        # folders the sandbox does not show (the caller's cwd), which bwrap cannot exec
        self.python = os.path.abspath(python or sys.executable)
        # bytes a program may write in all (its work dir and /tmp: one sized tmpfs under bwrap); ``hide``: more
        # folders the sandbox must never show (output folders), on top of ``private_paths()``
        self.max_disk_mb, self.hide = max_disk_mb, tuple(hide)
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
        _announce(self.isolation, allow_unisolated)
        _sweep_stale_workdirs()
        self.cgroups = dict(_cgroup_bases()) if use_cgroup else {}
        self.cgroup = self.cgroups.get("pids")  # where programs get pids.max (None: not here)
        if "memory" not in self.cgroups:
            _say_once("no-memory-cgroup", "critic_tasks sandbox: no writable cgroup memory controller here, so "
                      "memory_mb caps each process's address space (RLIMIT_AS) but not a program's whole tree: N "
                      "forked processes may hold up to N x %d MB", self.memory_mb)
        self._slots: queue.SimpleQueue[int] = queue.SimpleQueue()  # one pair of uids per running program or pair
        for slot in range(self.max_workers):
            self._slots.put(slot)
        # pairs under bwrap run in pre-started sandboxes, one fresh process per item (``_Worker``, zygote.py); only
        # where the zygote can run as another uid than its items (we are root): else an item could signal it
        self.reuse_sandboxes = reuse_sandboxes and self.isolation == "bwrap" and self.run_as is not None
        if self.reuse_sandboxes and any(_inside(r, "/tmp") for r in _interpreter_roots(self.python)):
            # the zygote empties the sandbox's /tmp between items, and an interpreter under the host's /tmp is
            # bound inside it (read-only): it could not empty /tmp and every item would end. Same isolation,
            # two sandboxes per item (slower)
            self.reuse_sandboxes = False
            _say_once("tmp-python", "critic_tasks sandbox: the interpreter lives under /tmp, so code pairs start two "
                      "sandboxes per item instead of reusing pre-started ones (same isolation, slower)")
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
            result = worker.run(pair, start)
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

    def _start_zygote(self, kind: str, uid: int | None) -> _Side:
        ours, theirs = socket.socketpair(socket.AF_UNIX, socket.SOCK_SEQPACKET)
        program = (ZYGOTE.replace("socket(fileno=CTL)", f"socket(fileno={theirs.fileno()})", 1)
                   .replace("_KIND = KIND  #", f"_KIND = {kind!r}  #", 1).replace("_UID = UID  #", f"_UID = {uid!r}  #"))
        running = _Running(None, None, [])  # type: ignore[arg-type]
        try:
            running.cgroups = self._cgroups_for()
            cmd = [self.python, "-S", "-B", "-c", _boot(self.python, program)]
            cmd = _bwrap_prefix(self.python, "/tmp", uid, self.max_disk_mb << 20, None, self.hide, setpriv=False) + cmd
            # no CPU limit on the zygote itself: each item's process sets its own (zygote.py)
            limits = [limit for limit in self._limits(1.0) if limit[0] != "cpu"]
            cmd, preexec = self._launch(cmd, uid, running.cgroups, 1.0, limits)
            running.proc = _spawner().call(functools.partial(
                subprocess.Popen, cmd, cwd="/", env=self._env("/tmp"), stdin=subprocess.DEVNULL,
                stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, start_new_session=True, close_fds=True,
                preexec_fn=preexec, pass_fds=(theirs.fileno(),)))
        except BaseException:
            self._clean(running)
            ours.close()
            raise
        finally:
            theirs.close()
        return _Side(running, ours)

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

    def _launch(self, cmd: list[str], uid: int | None, cgroups: list[str], timeout_s: float,
                limits: list[tuple[str, int, int]] | None = None):
        """The command line and preexec_fn (None when wrappers do it all; see the module docstring)."""
        limits = self._limits(timeout_s) if limits is None else limits
        procs = [os.path.join(c, "cgroup.procs") for c in cgroups]
        setuid = uid if self.isolation == "rlimits" else None  # bwrap/unshare change uid themselves
        if not _prlimit() or setuid is not None:
            return cmd, functools.partial(_limit_child, limits, [os.fsencode(p) for p in procs], setuid)
        cmd = [_prlimit(), *(f"--{name}={soft}:{hard}" for name, soft, hard in limits), "--", *cmd]
        if procs:  # "0": the writing process itself, which then execs the rest of the chain
            script = " && ".join(f'echo 0 > "${i}"' for i in range(len(procs)))
            cmd = ["/bin/sh", "-c", f'{script} && shift {len(procs) - 1} && exec "$@"', *procs, *cmd]
        return cmd, None

    def _cgroups_for(self) -> list[str]:
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
            running.cgroups = self._cgroups_for()
            cmd, preexec = self._launch(self._command(workdir, uid, inline, main_fd), uid, running.cgroups,
                                        timeout_s)
            running.proc = subprocess.Popen(cmd, cwd=running.workdir or "/", env=self._env(workdir), stdin=stdin,
                                            stdout=stdout, stderr=subprocess.PIPE, start_new_session=True,
                                            close_fds=True, preexec_fn=preexec,
                                            pass_fds=() if main_fd is None else (main_fd,))
        except BaseException:
            self._clean(running)
            raise
        finally:
            if main_fd is not None:
                os.close(main_fd)
        return running

    @staticmethod
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


# ----------------------------------------------------------------------------- reused sandboxes for pairs


# tree.py in front: the zygote empties its /tmp with the walk remove_tree uses (it cannot import the package)
ZYGOTE = "\n".join((Path(__file__).parent / name).read_text(encoding="utf-8") for name in ("tree.py", "zygote.py"))
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
        SandboxExecutor._clean(self.running)
        if self.running.proc is not None and self.running.proc.stderr:
            self.running.proc.stderr.close()


class _Worker:
    """A tester sandbox and a candidate sandbox, each a zygote that forks one fresh process per item; used by one
    thread at a time. Each item gets pipes of its own: the two channel pipes, a stderr pipe per side, its source in
    a memfd (see zygote.py for what is reset between items)."""

    def __init__(self, ex: "SandboxExecutor", number: int):
        self.ex, self.items = ex, itertools.count()
        uid = ex._uid(ex.max_workers + number)  # a uid range apart from ``run``'s slots
        self.sides: list[_Side] = []
        self.dirty: str | None = None  # what the last item left behind that outlives its processes
        try:
            self.tester = ex._start_zygote("tester", None if uid is None else uid + 1)
            self.sides.append(self.tester)
            self.candidate = ex._start_zygote("candidate", uid)
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

    def run(self, pair: Pair, start: float) -> PairResult:
        ex, deadline = self.ex, start + pair.timeout_s
        workdir = f"/tmp/{WORKDIR_PREFIX}{os.getpid()}-{next(self.items)}"
        statuses: dict[_Side, int] = {}
        to_candidate, to_tester = os.pipe(), os.pipe()
        errs = {self.tester: os.pipe(), self.candidate: os.pipe()}
        sources = {self.tester: _memfd(pair.trusted), self.candidate: _memfd(pair.untrusted)}
        theirs = {self.tester: (to_tester[0], to_candidate[1]), self.candidate: (to_candidate[0], to_tester[1])}
        try:
            for side in self.sides:
                side.send(f"go {pair.timeout_s!r} {workdir}", [*theirs[side], errs[side][1], sources[side]])
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
                    SandboxExecutor._clean(side.running)
            for fd in open_pipes:
                while self._read(fd, bufs[pipes[fd]], block=True):
                    pass
        finally:
            for fd in pipes:
                os.close(fd)
        results = []
        for side in self.sides:
            err = bytes(bufs[side][-ex.capture_bytes:]).decode("utf-8", "replace")
            status = statuses.get(side)
            code = -signal.SIGKILL if status is None else os.waitstatus_to_exitcode(status)
            results.append(ex._result(code, "", err, why, start))
        return PairResult(*results)

    def _read(self, fd: int, buf: bytearray, block: bool = False) -> int:
        if block and not select.select([fd], [], [], ZYGOTE_REPLY_S)[0]:
            return 0
        chunk = os.read(fd, 1 << 16)
        buf += chunk
        if len(buf) > 2 * self.ex.capture_bytes:  # keep the tail (tracebacks)
            del buf[: -self.ex.capture_bytes]
        return len(chunk)


def _collect_unix_garbage() -> None:
    """Start the kernel's collector of in-flight Unix sockets (the release of one does, while any descriptor is in
    flight): a program that sent a socket to itself over itself (SCM_RIGHTS) leaves a cycle that holds its memfds
    and files, and their memory and disk, after every process of it is gone, until the next collection."""
    for end in socket.socketpair():
        end.close()


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


def _memfd(text: str) -> int:
    fd = os.memfd_create("main.py")
    _write_all(fd, text.encode("utf-8"))
    os.lseek(fd, 0, os.SEEK_SET)
    return fd


def _write_all(fd: int, data: bytes) -> None:
    view = memoryview(data)
    while view:
        view = view[os.write(fd, view):]


def _close_workers(live: dict) -> None:
    for number in list(live):
        worker = live.pop(number, None)
        if worker is not None:
            worker.close()


def _harness_error(err: Exception, start: float) -> ExecResult:
    return ExecResult("error", None, "", f"[sandbox] {type(err).__name__}: {err}", time.monotonic() - start)


def _exited(pid: int) -> bool:
    """True once ``pid`` has exited, without reaping it (so its pid, our pgid, cannot be reused yet)."""
    try:
        return os.waitid(os.P_PID, pid, os.WEXITED | os.WNOHANG | os.WNOWAIT) is not None
    except ChildProcessError:
        return True


def _kill(proc: subprocess.Popen, cgroups: Sequence[str]) -> None:
    """SIGKILL the child's process group (it leads its own session: pgid == pid) and all else in its cgroups."""
    members = [p for cgroup in cgroups for p in _members(cgroup)]
    for kill, pid in [(os.killpg, proc.pid)] + [(os.kill, p) for p in members]:
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
