"""What the sandbox is and what a program in it sees: the isolation layers, the one in use, and bwrap's view.

Isolation is layered by what works on this machine (``detect_isolation``: once per interpreter, cached). Only
``bwrap`` keeps every promise; a weaker layer refuses to run anything unless the caller opts in
(``CRITIC_ALLOW_UNISOLATED=1`` or ``allow_unisolated=True``), and the layer in use is logged once per run:

* ``bwrap``       -- bubblewrap: new user/pid/net/ipc/uts namespaces, no capabilities, and an empty root that shows
  only what the interpreter needs, read-only (``/usr``, a few files of ``/etc``, the interpreter's prefix, stdlib and
  site-packages; ``_filesystem_view``): no data, outputs, working tree or home. Its ``/tmp``, which holds the work
  dir, is a tmpfs of ``max_disk_mb``; a PID namespace, so nothing escapes.
* ``unshare-net`` -- ``unshare`` (root only): new net/pid/mount/ipc/uts namespaces and a private ``/proc``, so no
  network and no signals or ``/proc/<pid>/environ`` outside; the filesystem stays writable unless uids drop.
* ``rlimits``     -- plain subprocess with rlimits only. No network isolation.

As root, programs run as uids of their own (_limits.py leases them): under bwrap through ``setpriv`` inside the
sandbox (bwrap keeps only CAP_SETUID/CAP_SETGID for it, and no user namespace, whose uid map would keep the program
root outside); ``_unprivileged_can_run`` asks whether such a uid can run the interpreter at all. Every layer also
gets inside/boot.py's seccomp filter (the program's first lines: no namespaces, mounts, io_uring, bpf, ptrace, ...) and an
environment built from scratch (``sandbox_env``: no API keys or tokens).
"""

from __future__ import annotations

import functools
import json
import logging
import os
import shutil
import subprocess
import sys
from pathlib import Path
from typing import Sequence

from critic_tasks.core.run_state import per_run
from critic_tasks.sandbox._limits import SANDBOX_UID, _works

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


# ----------------------------------------------------------------------------- what is said (once per run)


_ANNOUNCED: set[str] = per_run(set())  # the detection is the process's; saying what it found is each run's


def _say_once(key: str, message: str, *args) -> None:
    """A warning logged once per run (what a missing safeguard means here)."""
    if key not in _ANNOUNCED:
        _ANNOUNCED.add(key)
        log.warning(message, *args)


def _announce(layer: str, by_setting: bool) -> None:
    """The layer in use, logged once per run (and recorded with every check outcome); ``by_setting``: a weaker one
    was allowed by CRITIC_ALLOW_UNISOLATED rather than by the caller."""
    if layer not in _ANNOUNCED:
        _ANNOUNCED.add(layer)
        if layer == "bwrap":
            log.info("critic_tasks sandbox: isolation layer 'bwrap'")
        else:
            log.warning("critic_tasks sandbox: isolation layer %r (%s); allowed by %s", layer, WEAKER[layer],
                        ALLOW_UNISOLATED_ENV if by_setting else "the caller")


# ----------------------------------------------------------------------------- the interpreter and bwrap's view


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
# Folders a run names in its environment: covered even where they lie inside a folder the sandbox shows (read when
# an executor is built, ``executor.named_folders``, and handed down as part of its ``hide``).
PRIVATE_ENV = ("CRITICBENCH_DATA_DIR", "CRITIQUELLM_DATA_DIR", "METACRITIQUE_DATA_DIR", "CRITICBENCH_TOOLKIT_DIR",
               "HF_HOME", "HF_HUB_CACHE", "HUGGINGFACE_HUB_CACHE", "HF_DATASETS_CACHE", "TRANSFORMERS_CACHE",
               "HF_TOKEN_PATH", "XDG_CACHE_HOME", "XDG_CONFIG_HOME", "CRITIC_REQUEST_CACHE", "CRITIC_RESCUE_DIR")


def private_paths(extra: Sequence[str] = ()) -> list[str]:
    """What a program must never read, even where it lies inside a folder the sandbox shows (a checkout under
    /usr/local/src, our package installed into site-packages with its bundled data, a cache inside the venv): our
    package, its checkout (an editable install), the working directory, $HOME, and ``extra`` (the executor's
    ``hide``: output folders, and the data, cache and toolkit folders the environment names)."""
    package = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))  # critic_tasks/
    checkout = os.path.dirname(package)
    try:
        cwd = os.getcwd()
    except OSError:  # removed under us: nothing there to read
        cwd = ""
    paths = [package, cwd, os.path.expanduser("~"), *extra]
    paths += [checkout] if any(os.path.exists(os.path.join(checkout, m)) for m in ("pyproject.toml", ".git")) else []
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


def _view_in_tmp(python: str) -> tuple[str, ...] | None:
    """The entries of the sandbox's /tmp that belong to its view, not to its programs: the first folder below /tmp
    of each interpreter root there (a venv under /tmp, as many CI systems make), bound read-only on folders bwrap
    makes (zygote.py keeps them when it empties /tmp); None when an interpreter root is /tmp itself (nothing of
    /tmp could then be emptied)."""
    roots = [r for r in _interpreter_roots(python) if _inside(r, "/tmp")]
    if "/tmp" in roots:
        return None
    return tuple(sorted({os.path.relpath(r, "/tmp").split(os.sep)[0] for r in roots}))


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


def interpreter_path(python: str) -> str:
    """``python`` as the sandbox can exec it: absolute, without ``..``, and through real folders (a venv reached by
    a symlink, ``checkout/.venv -> /elsewhere/.venv``: the sandbox binds the real folders only, so the linked path
    does not exist inside it), keeping the file's own name (a venv's ``bin/python`` is itself a link to the base
    interpreter: resolving it would leave the venv and its site-packages)."""
    python = os.path.abspath(python)
    return os.path.join(os.path.realpath(os.path.dirname(python)), os.path.basename(python))


@functools.lru_cache(maxsize=None)
def detect_isolation(python: str = sys.executable) -> str:
    """The strongest layer that can run ``python -c pass`` here."""
    python = interpreter_path(python)
    probe = [python, "-c", "pass"]
    # the stdlib's shared modules too: the sandbox shows only what the interpreter needs, and must show all of it
    full = [python, "-c", "import ctypes, json, math"]
    if shutil.which("bwrap") and _works(_bwrap_prefix(python, PROBE_WORKDIR) + full, cwd="/"):
        return "bwrap"
    if shutil.which("unshare") and _works(_UNSHARE + probe):
        return "unshare-net"
    return "rlimits"


BOOT = (Path(__file__).parent / "inside" / "boot.py").read_text(encoding="utf-8")


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
    python = interpreter_path(python)  # as the executor runs it
    if isolation != "bwrap":
        return _works([python, "-c", "pass"], user=uid, group=uid, extra_groups=[], cwd="/", env=PROBE_ENV)
    if not shutil.which("setpriv"):
        return False
    probe = [python, "-c", "import ctypes, os, sys; sys.exit(os.getuid() != %d)" % uid]
    return _works(_bwrap_prefix(python, PROBE_WORKDIR, uid) + probe, cwd="/", env=PROBE_ENV)


PROBE_ENV = {"PATH": "/usr/local/bin:/usr/bin:/bin", "LANG": "C.UTF-8"}


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


def sandbox_env(python: str, workdir: str) -> dict[str, str]:
    """A program's environment, built from scratch: nothing of ours (OPENAI_API_KEY, HF_TOKEN, CRITIC_JUDGE_API_KEY,
    ...) is inherited."""
    return {"PATH": f"{os.path.dirname(python)}:/usr/local/bin:/usr/bin:/bin", "LANG": "C.UTF-8",
            "LC_ALL": "C.UTF-8", "HOME": workdir, "TMPDIR": workdir, "PYTHONHASHSEED": "0",
            "PYTHONDONTWRITEBYTECODE": "1", "PYTHONIOENCODING": "utf-8", "OMP_NUM_THREADS": "1",
            "OPENBLAS_NUM_THREADS": "1", "MKL_NUM_THREADS": "1", "MPLBACKEND": "Agg"}


def _memfd(text: str) -> int:
    fd = os.memfd_create("main.py")
    _write_all(fd, text.encode("utf-8"))
    os.lseek(fd, 0, os.SEEK_SET)
    return fd


def _write_all(fd: int, data: bytes) -> None:
    view = memoryview(data)
    while view:
        view = view[os.write(fd, view):]
