# A pre-started sandboxed interpreter that forks one fresh process per item (_workers.py, ``_Worker``): the
# sandbox (bwrap, uid, namespaces, cgroup, seccomp from boot.py) is made once per worker instead of twice per item.
# Runs after boot.py, as the program (tree.py in front); never imported by the package; the constants in capitals
# are filled in.
#
# Never runs model code itself, and runs as another uid than its items: started as root without capabilities but
# CAP_SETUID/CAP_SETGID (bwrap's uid-dropping set-up, where setpriv would otherwise run), it forks one child per
# item, which drops to the item uid (UID) before anything else, so no item can signal, trace or read us. Before the
# next item a helper of that uid kills every process the uid has in the sandbox's PID namespace (kill(-1); we,
# the subreaper, reap them), empties /tmp (the work dirs) and /dev/mqueue and removes System V IPC objects, so no
# item sees another's files, processes or messages. Not dumpable either.
# Not root (UID None): the sandbox has a user namespace of its own and no capabilities, the items run as our uid, and
# we kill them ourselves (kill(-1) spares the caller). An item can then signal us, as it can signal its own fresh
# sandbox's processes: that ends (or stalls) its own item only, as the executor then ends this worker; it can still
# neither trace nor read us (not dumpable; ptrace, process_vm_* and pidfd_getfd are refused by the filter).
# Control messages from the executor on a Unix socket pair made before the sandbox (CTL; the filter refuses
# socket(), not a pair handed in), each answered there:
#   go <timeout_s> <workdir>  + 4 descriptors (stdin, stdout, stderr, source): fork a child on those, which reads its
#                             source and runs it; our copies are closed at once              -> "started"
#   end                       kill everything but us, empty /tmp, IPC and /dev/mqueue         -> "clean"
# and, unasked, "exit <wait status>" when the child ends. Every item gets pipes of its own: nothing of one item's
# channel, output or source is ever held where the next could read it, and the tester sees the candidate's end as
# the end of its pipe, as with a fresh sandbox.
# what every item imports (the toolkit header, the wire, runpy) is loaded once here, before any item: each child
# gets its own copy of these modules (fork), pristine, so a program that patches one patches only its own
import atexit  # noqa: E402, F401
import collections  # noqa: E402, F401
import ctypes as _ctypes
import fractions  # noqa: E402, F401
import functools  # noqa: E402, F401
import heapq  # noqa: E402, F401
import importlib  # noqa: E402, F401
import itertools  # noqa: E402, F401
import json  # noqa: E402, F401
import math  # noqa: E402
import os as _os
import random  # noqa: E402, F401
import re  # noqa: E402, F401
import resource as _resource
import runpy  # noqa: E402, F401
import select as _select
import signal as _signal
import socket as _socket
import stat as _stat
import sys as _sys
import threading  # noqa: E402, F401
import time as _time  # noqa: E402
import traceback  # noqa: E402, F401
import typing  # noqa: E402, F401

_libc = _ctypes.CDLL(None, use_errno=True)
_libc.prctl(4, 0, 0, 0, 0)  # PR_SET_DUMPABLE 0
_libc.prctl(36, 1, 0, 0, 0)  # PR_SET_CHILD_SUBREAPER: orphans of an item come back to us, to be killed and reaped
_CONTROL = _socket.socket(fileno=CTL)  # noqa: F821  (filled in)
_KIND = KIND  # noqa: F821  ("candidate": source as main.py, run by path; "tester": source run inline)
_UID = UID  # noqa: F821  (the items' uid; None: not root, items run as our uid in the sandbox's user namespace)
_KEEP = KEEP  # noqa: F821  (names in /tmp that are the sandbox's view: an interpreter under /tmp, bound read-only)
TMP_SLACK_BYTES = 64 << 10  # an empty tmpfs uses none; a few pages of folder entries are still empty


def _drop():
    if _UID is None:  # nothing to drop: no capabilities in the sandbox's user namespace
        return
    _os.setgroups([])
    _os.setresgid(_UID, _UID, _UID)
    _os.setresuid(_UID, _UID, _UID)  # all uids non-zero: the capabilities go too


def _say(text):
    _CONTROL.send(text.encode())


def _child(timeout_s, workdir, fds):
    """The item's process: our socket closed, its pipes on 0, 1, 2, its source read and its limits set, then its
    program; never returns."""
    _CONTROL.close()
    _drop()
    for target, fd in enumerate(fds[:3]):
        _os.dup2(fd, target)
        _os.close(fd)
    with open(fds[3], "rb") as f:
        source = f.read()
    cpu = math.ceil(timeout_s) + 1  # as the executor's RLIMIT_CPU for a fresh process
    _resource.setrlimit(_resource.RLIMIT_CPU, (cpu, cpu + 1))
    _libc.prctl(4, 1, 0, 0, 0)  # dumpable again: its own /proc/self/fd (nothing else of the worker is left in it)
    _os.mkdir(workdir, 0o700)
    _os.chdir(workdir)
    _os.environ["HOME"] = _os.environ["TMPDIR"] = workdir
    code = 0
    try:
        if _KIND == "candidate":
            with open("main.py", "wb") as f:
                f.write(source)
            import runpy

            runpy.run_path("main.py", run_name="__main__")
        else:
            exec(compile(source, "main.py", "exec"), {"__name__": "__main__"})
    except SystemExit as stop:  # as the interpreter maps it to an exit status
        if stop.code is None or isinstance(stop.code, int):
            code = stop.code or 0
        else:
            print(stop.code, file=_sys.stderr)
            code = 1
    except BaseException:
        _sys.excepthook(*_sys.exc_info())  # as the interpreter reports it (a program may have set its own hook)
        code = 1
    try:  # what an interpreter does on its way out: non-daemon threads, atexit, flushed streams
        import threading

        threading._shutdown()
        import atexit

        atexit._run_exitfuncs()
        _sys.stdout.flush()
        _sys.stderr.flush()
    except BaseException:
        pass
    _os._exit(code & 0xFF)


def _others():
    """Processes of the items' uid in this PID namespace but the caller and bwrap's init (zombies included)."""
    me, uid, found = str(_os.getpid()), _os.getuid() if _UID is None else _UID, []
    for pid in _os.listdir("/proc"):
        if pid.isdigit() and pid not in (me, "1"):
            try:
                if _os.stat(f"/proc/{pid}").st_uid == uid:
                    found.append(pid)
            except OSError:
                pass
    return found


def _clear():
    """Kill every process of the items' uid here but the caller (kill(-1) spares it and init), reaping what is ours
    (orphans come to us, the subreaper), then empty /tmp and IPC."""
    while _others():  # zombies count until they are reaped
        _libc.kill(-1, _signal.SIGKILL)
        _reap()
        _time.sleep(0.0002)
    _empty("/tmp")
    _remove_ipc()


def _reap():
    try:
        while _os.waitpid(-1, _os.WNOHANG)[0]:
            pass
    except ChildProcessError:
        pass


def _reset():
    """Kill every process of the items, empty /tmp and IPC (``_clear``): as root, a helper of the items' uid does it
    while we reap (root without CAP_KILL, we may not signal them); not root, the items run as our uid and we do it
    ourselves. Returns what is still left (``_leftovers``): the worker is replaced when anything
    is."""
    status = 0
    if _UID is None:
        try:
            _clear()
        except BaseException:
            _sys.excepthook(*_sys.exc_info())
            status = 1
    else:
        helper = _os.fork()
        if helper == 0:
            code = 0
            try:
                _CONTROL.close()
                _drop()
                _clear()
            except BaseException:
                _sys.excepthook(*_sys.exc_info())
                code = 1
            _os._exit(code)
        status = None
        while status is None:
            done, wait_status = _os.waitpid(-1, 0)
            if done == helper:
                status = wait_status
    _reap()
    if status != 0:  # never hand the next item a dirty sandbox: end this worker instead
        raise SystemExit("critic sandbox: could not reset the sandbox between items")
    left = _leftovers()
    if left:  # a cycle of in-flight sockets is freed by the kernel's collector alone: start it, give it a moment
        _collect_unix_garbage()
        until = _time.monotonic() + 0.2
        while left and _time.monotonic() < until:
            _time.sleep(0.002)
            left = _leftovers()
    return left


def _leftovers():
    """What outlives every process of the items, measured after the reset (each a word): bytes still used in /tmp
    (a file unlinked but held open, e.g. in flight in a Unix socket) and sockets still in this network namespace,
    TCP's TIME_WAIT included (none of ours is there: our control socket was made outside it). File descriptors
    parked in a Unix socket that sends itself (SCM_RIGHTS) stay in flight with no process holding them, and with
    them their memfds and files: the worker is then replaced, as its memory cgroup and /tmp would stay charged.
    (/proc/net/sockstat counts per namespace, at a glance; /proc/net/tcp walks the host's whole table, ~10 ms.)"""
    found = []
    tmp = _os.statvfs("/tmp")
    used = (tmp.f_blocks - tmp.f_bfree) * tmp.f_frsize
    if used > TMP_SLACK_BYTES:
        found.append(f"tmp-bytes={used}")
    for table in ("/proc/net/sockstat", "/proc/net/sockstat6"):
        try:
            with open(table) as f:
                lines = f.read().splitlines()
        except OSError:
            continue
        for line in lines:  # "TCP: inuse 0 orphan 0 tw 0 alloc 3 mem 319": this namespace's are used, inuse, tw
            kind, _, counts = line.partition(":")
            words = counts.split()
            found += [f"{kind}-{key}={count}" for key, count in zip(words[::2], words[1::2])
                      if key in ("used", "inuse", "tw") and count != "0"]
    return found


def _collect_unix_garbage():
    """The release of a Unix socket while descriptors are in flight starts the kernel's garbage collector, which
    frees cycles of in-flight sockets no process can reach any more."""
    ends = _socket.socketpair()
    for end in ends:
        end.close()


def _empty(folder):
    """Remove what is inside ``folder`` at any depth (tree.py's walk, pasted in front of this file) but the view's
    own entries (``_KEEP``: as root, bwrap makes them as root, read-only or 0755, so no item can change them; not
    root, ``_view_in_tmp`` checks them after each item); raises if it cannot (the worker then ends rather than hand
    the next item a dirty /tmp)."""
    empty_folder(_os.open(folder, TREE_FLAGS), _KEEP)  # noqa: F821  (tree.py)


def _remove_ipc():
    """System V shared memory, message queues and semaphores left in the namespace, and POSIX message queues."""
    for name, call, extra in (("shm", _libc.shmctl, ()), ("msg", _libc.msgctl, ()), ("sem", _libc.semctl, (0,))):
        try:
            lines = open(f"/proc/sysvipc/{name}").read().splitlines()[1:]
        except OSError:
            continue
        for line in lines:
            ident = int(line.split()[1])
            call(ident, *extra, 0, None)  # IPC_RMID
    try:
        for entry in _os.listdir("/dev/mqueue"):
            _os.unlink(_os.path.join("/dev/mqueue", entry))
    except OSError:
        pass


def _serve():
    child = pidfd = None
    while True:
        ready = _select.select([_CONTROL] + ([pidfd] if pidfd is not None else []), [], [])[0]
        if pidfd is not None and pidfd in ready:
            _, status = _os.waitpid(child, 0)
            _os.close(pidfd)
            child = pidfd = None
            _say(f"exit {status}")
        if _CONTROL not in ready:
            continue
        message, fds, _, _ = _socket.recv_fds(_CONTROL, 4096, 4)
        if not message:
            return
        command, *args = message.decode().split()
        if command == "go" and len(fds) == 4:
            child = _os.fork()
            if child == 0:
                _child(float(args[0]), args[1], fds)
            for fd in fds:
                _os.close(fd)
            pidfd = _os.pidfd_open(child)
            _say("started")
        elif command == "end":
            for fd in fds:
                _os.close(fd)
            if pidfd is not None:
                _os.close(pidfd)
                child = pidfd = None
            left = _reset()
            if _view_in_tmp() != _VIEW_IN_TMP:
                left.append("view-in-tmp-changed")
            _say("clean" if not left else "dirty " + " ".join(left))
        else:
            raise SystemExit(f"critic sandbox: unknown control message {message[:80]!r}")


def _view_in_tmp():
    """The view's own entries in /tmp (``_KEEP``) as they are: each folder bwrap made there (on /tmp's own file
    system) with its mode and owner, and each mount in them (the interpreter's folders, read-only) by device and
    inode; None where they cannot be read. Not root, bwrap makes those folders as the items' uid: an item that
    changed them (planted a file, moved or closed a folder) leaves them unlike at boot, and the worker is replaced."""
    try:
        tmp, found, todo = _os.stat("/tmp").st_dev, [], list(_KEEP)
        while todo:
            name = todo.pop()
            st = _os.lstat("/tmp/" + name)
            found.append((name, st.st_mode, st.st_uid, st.st_dev, st.st_ino))
            if st.st_dev == tmp and _stat.S_ISDIR(st.st_mode):
                todo += [f"{name}/{entry}" for entry in _os.listdir("/tmp/" + name)]
        return sorted(found)
    except OSError:
        return None


_VIEW_IN_TMP = _view_in_tmp()
_say("ready")  # imports done: what the worker measures as this sandbox's empty state
_serve()
