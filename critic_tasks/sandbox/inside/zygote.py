# A pre-started sandboxed interpreter that forks one fresh process per item (_workers.py, ``_Worker``): the
# sandbox (bwrap, uid, namespaces, cgroup, seccomp from boot.py) is made once per worker instead of twice per item.
# Runs after boot.py, as the program (tree.py in front); never imported by the package; the constants in capitals
# are filled in.
#
# Never runs model code itself, and runs as another uid than its items: started as root without capabilities but
# CAP_SETUID/CAP_SETGID (bwrap's uid-dropping set-up, where setpriv would otherwise run), it forks one child per
# item, which drops to the item uid (UID) before anything else, so no item can signal, trace or read us. Before the
# next item every process the uid has in the sandbox's PID namespace is killed (kill(-1); we, the subreaper, reap
# them), /tmp (the work dirs) and /dev/mqueue are emptied and System V IPC objects removed, so no item sees
# another's files, processes or messages: by our janitor, a process forked at boot that does it with that uid as its
# effective uid (_janitor). Not dumpable either.
# Not root (UID None): the sandbox has a user namespace of its own and no capabilities, the items run as our uid, and
# we kill them ourselves (kill(-1) spares the caller) and remove what we named; a helper forked for it empties /tmp
# and IPC where counts say anything else is left (_only_ours_left, _in_helper).
# An item can then signal us, as it can signal its own fresh sandbox's processes: that ends (or stalls) its own item
# only, as the executor then ends this worker; it can still neither trace nor read us (not dumpable; ptrace,
# process_vm_* and pidfd_getfd are refused by the filter).
# Control messages from the executor on a Unix socket pair made before the sandbox (CTL; the filter refuses
# socket(), not a pair handed in), each answered there:
#   go <timeout_s> <workdir> <shared>  + 4 descriptors (stdin, stdout, stderr, source): fork a child on those, which
#                             reads its source and runs it (<shared>: the byte length of its shared prefix, 0 for
#                             none; _shared_code); our copies are closed at once             -> "started"
#   end                       kill everything but us, empty /tmp, IPC and /dev/mqueue         -> "clean"
# and, unasked, "exit <wait status>" when the child ends. Every item gets pipes of its own: nothing of one item's
# channel, output or source is ever held where the next could read it, and the tester sees the candidate's end as
# the end of its pipe, as with a fresh sandbox.
# what every item imports (the toolkit header, the wire, runpy) is loaded once here, before any item: each child
# gets its own copy of these modules (fork), pristine, so a program that patches one patches only its own. Not what
# few items use (fractions with decimal, traceback): a larger heap costs every item's fork and copy-on-write (issue 46:
# ~0.8 ms of CPU per item, ~12 ms per worker's start, against ~5 ms for an item that imports them itself)
import __future__ as _future

import atexit  # noqa: E402, F401
import collections  # noqa: E402, F401
import ctypes as _ctypes
import errno as _errno
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
import types as _types
import typing  # noqa: E402, F401
import warnings as _warnings

# Our imports are done: from here on nothing of ours imports from the working directory. `python -c` puts it first on
# sys.path (""), and ours is /tmp, where items write: a module an item left there would run in us at our next lazy
# import (on 3.13, sys.excepthook imports traceback, no longer preloaded, on any error we report; not root an item can
# make that happen at will with SIGINT) and stay in every later item's process. Each item gets it back for itself
# (_child), as a fresh `python -c` has it.
_CWD_FIRST = _sys.path[:1] == [""]
if _CWD_FIRST:
    del _sys.path[0]
_libc = _ctypes.CDLL(None, use_errno=True)
_libc.prctl(4, 0, 0, 0, 0)  # PR_SET_DUMPABLE 0
_libc.prctl(36, 1, 0, 0, 0)  # PR_SET_CHILD_SUBREAPER: orphans of an item come back to us, to be killed and reaped
_CONTROL = _socket.socket(fileno=CTL)  # noqa: F821  (filled in)
_KIND = KIND  # noqa: F821  ("candidate": source as main.py, run by path; "tester": source run inline)
_UID = UID  # noqa: F821  (the items' uid; None: not root, items run as our uid in the sandbox's user namespace)
_KEEP = KEEP  # noqa: F821  (names in /tmp that are the sandbox's view: an interpreter under /tmp, bound read-only)
_SHARED_END = SHARED_END  # noqa: F821  (the line that ends a program's shared prefix: executor.SHARED_PREFIX_END)
TMP_SLACK_BYTES = 64 << 10  # an empty tmpfs uses none; a few pages of folder entries are still empty


def _drop():
    if _UID is None:  # nothing to drop: no capabilities in the sandbox's user namespace
        return
    _os.setgroups([])
    _os.setresgid(_UID, _UID, _UID)
    _os.setresuid(_UID, _UID, _UID)  # all uids non-zero: the capabilities go too


def _say(text):
    _CONTROL.send(text.encode())


def _child(timeout_s, workdir, fds, shared):
    """The item's process: our socket closed, its pipes on 0, 1, 2, its source read and its limits set, then its
    program (``shared``: its shared prefix as ``_shared_code`` found it); never returns."""
    _CONTROL.close()
    for fd in _JANITOR[:2] if _JANITOR else ():  # an item must never ask the janitor or read its answers
        _os.close(fd)
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
    if _CWD_FIRST:  # its own working directory first, as in a fresh sandbox (see _CWD_FIRST)
        _sys.path.insert(0, "")
    _os.environ["HOME"] = _os.environ["TMPDIR"] = workdir
    code = 0
    try:
        codes = _program(source, shared)
        if _KIND == "candidate":
            with open("main.py", "wb") as f:
                f.write(source)
            import runpy

            if codes is None or _is_path_entry("main.py"):
                runpy.run_path("main.py", run_name="__main__")
            else:
                _run_as_main_file("main.py", codes)
        else:
            run_globals = {"__name__": "__main__"}
            for part in codes or [compile(source, "main.py", "exec")]:
                exec(part, run_globals)
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


# Programs of one kind start alike: the wire and the side's code of a code check, ~30 KB that took 7-9 ms per item to
# compile. Where a program's text has SHARED_END, its text up to that line (the executor passes its length) is
# compiled here once and kept; each item's process compiles only the rest, padded to the same line numbers, and runs
# the two code objects in turn in one namespace, which is the whole text run at once: the rest must compile alone,
# else the item compiles its whole text as before (a rest that continues a statement of the prefix). Only the prefix
# is read here, never an item's own text: it is the caller's code (programs.py), the same for every item.
_FUTURE_FLAGS = 0  # the flags `from __future__ import ...` in the prefix sets, which the rest is compiled with
for _feature in _future.all_feature_names:
    _FUTURE_FLAGS |= getattr(_future, _feature).compiler_flag
_SHARED_MAX_BYTES = 256 << 10
_SHARED = {}  # prefix bytes -> its code object (None: it does not compile alone, or warns)
_CODING = re.compile(rb"^[ \t\f]*#.*?coding[:=]", re.M)


def _shared_code(fd, length):
    """(length, prefix bytes, its code) for an item whose source (memfd ``fd``) starts with a shared prefix of
    ``length`` bytes ending in SHARED_END, compiled once per zygote; None for any other item."""
    if not 0 < length <= _SHARED_MAX_BYTES:
        return None
    head = _os.pread(fd, length, 0)
    if len(head) != length or head.find(_SHARED_END) != length - len(_SHARED_END):
        return None
    if head not in _SHARED:
        if len(_SHARED) >= 8:
            _SHARED.clear()
        code = None
        if not _CODING.search(b"\n".join(head.split(b"\n", 2)[:2])):  # a coding line would not reach the rest
            try:
                with _warnings.catch_warnings():  # a warning belongs on the item's stderr: let it compile the text
                    _warnings.simplefilter("error")
                    code = compile(head, "main.py", "exec", dont_inherit=True)
            except Exception:
                code = None
        _SHARED[head] = code
    return None if _SHARED[head] is None else (length, head, _SHARED[head])


def _program(source, shared):
    """The item's code objects, run in turn in one namespace: the shared prefix's and the rest's; None where there is
    no shared prefix or the rest does not compile alone (the item then compiles its whole text, as ever)."""
    if shared is None:
        return None
    length, head, code = shared
    if source[:length] != head:
        return None
    lines = head.count(b"\n")  # SHARED_END's line becomes `pass`: a string after it is no docstring, as in the whole
    rest = b"\n" * (lines - 1) + b"pass\n" + source[length:]
    try:
        return [code, compile(rest, "main.py", "exec", flags=code.co_flags & _FUTURE_FLAGS, dont_inherit=True)]
    except Exception:
        return None


def _is_path_entry(path):
    """Whether a path hook takes ``path`` (a zip file, a folder): runpy.run_path then runs the ``__main__`` found in
    it, not the file (pkgutil.get_importer's test, without importing pkgutil)."""
    for hook in _sys.path_hooks:
        try:
            hook(path)
            return True
        except ImportError:
            continue
    return False


def _run_as_main_file(path, codes):
    """What ``runpy.run_path(path, run_name="__main__")`` does with a source file (a module ``__main__`` in
    sys.modules, argv[0] the path, runpy's globals), with the file's code in parts."""
    module = _types.ModuleType("__main__")
    saved_module, saved_argv0 = _sys.modules.get("__main__"), _sys.argv[0]
    _sys.modules["__main__"], _sys.argv[0] = module, path
    try:
        run_globals = module.__dict__
        run_globals.update(__name__="__main__", __file__=path, __cached__=None, __doc__=None, __loader__=None,
                           __package__="", __spec__=None)
        for part in codes:
            exec(part, run_globals)
    finally:
        _sys.argv[0] = saved_argv0
        if saved_module is None:
            del _sys.modules["__main__"]
        else:
            _sys.modules["__main__"] = saved_module


def _janitor():
    """As root: a process of ours, forked before any item, that resets the sandbox between items on our word
    (``_clear`` with the items' uid as its effective uid, ``_as_items``) and answers b"c" (clean) or b"f" (failed);
    our ends of its two pipes (pipes, not sockets: the reset counts the namespace's sockets). It keeps our uids (root,
    CAP_SETUID/CAP_SETGID only) and is not dumpable, so no item can signal, trace or read it; it holds nothing but a
    copy of our memory at boot and starts nothing, so what it reads (names an item chose) reaches no other process.
    Before issue 46 a helper was forked per item and side for this (~3 ms of CPU each). If it ends (or cannot take
    root back), the reset fails and the worker is replaced."""
    (asks, ask), (answer, answers) = _os.pipe(), _os.pipe()
    janitor = _os.fork()
    if janitor == 0:
        try:
            _CONTROL.close()
            _os.close(ask)
            _os.close(answer)
            while _os.read(asks, 1):
                try:
                    _as_items(_clear)
                    _os.write(answers, b"c")
                except BaseException:
                    _sys.excepthook(*_sys.exc_info())
                    _os.write(answers, b"f")
        finally:
            _os._exit(0)
    _os.close(asks)
    _os.close(answers)
    return ask, answer, janitor


def _as_items(work):
    """``work()`` with the items' uid and gid as our effective ids, our real and saved uid staying root: root without
    CAP_KILL, we may signal the items' processes only so (kill(2) checks the sender's real or effective uid), and the
    file system treats us as the owner of what they made, as it treats them. None of them may signal us meanwhile
    (kill(2) checks the target's real and saved uid: ours are root), trace us (the filter; ptrace also checks all three
    of our uids) or read us (not dumpable: set again, as a change of effective uid resets it). Never returns as them:
    if root cannot be taken back, this process ends at once."""
    _os.setresgid(-1, _UID, -1)  # while we are still root (CAP_SETGID)
    _os.setresuid(-1, _UID, -1)
    _libc.prctl(4, 0, 0, 0, 0)  # PR_SET_DUMPABLE 0
    try:
        work()
    finally:
        try:
            _os.setresuid(-1, 0, -1)  # our saved uid: allowed without a capability; the effective set comes back
            _os.setresgid(-1, 0, -1)
            _libc.prctl(4, 0, 0, 0, 0)
        except BaseException:
            _os._exit(70)


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
    _kill_items()
    _empty_all()


def _kill_items():
    """Kill every process of the items' uid here but the caller and init (reading nothing but pids)."""
    while _others():  # zombies count until they are reaped
        _kill_all()
        _reap()
        _time.sleep(0.0002)


def _empty_all():
    """Empty /tmp, System V IPC and /dev/mqueue (this reads names an item chose), and set the times of OWN_TIMES."""
    _empty("/tmp")
    _remove_ipc()
    _reset_times()


def _reset_times():
    for path in OWN_TIMES:
        try:
            _os.utime(path)  # now: nothing an item chose
        except PermissionError:  # as root they are root's (but /tmp and /dev/mqueue: 1777) and no item sets them
            pass


def _only_ours_left(workdir):
    """Not root, with the items killed: remove what we named (the item's work dir, the candidate's main.py in it) and
    say whether nothing else is left, from counts alone (no name an item chose enters our memory): /tmp back to its
    inode count at boot (hard links count), /dev/mqueue's size at boot (20 bytes a queue), no System V IPC object.
    False (anything else, or a count we cannot read): the helper walks it all (``_in_helper``), a fork per item
    (~5 ms of wall time an item not root, measured) that the items' usual leavings spare."""
    try:
        if workdir is not None:
            fd = _os.open(workdir, TREE_FLAGS)  # noqa: F821  (tree.py; never through a link an item made)
            try:
                if _KIND == "candidate":
                    _os.unlink("main.py", dir_fd=fd)
            finally:
                _os.close(fd)
            _os.rmdir(workdir)
        return (_TMP_INODES is not None and _tmp_inodes() == _TMP_INODES
                and _os.stat("/dev/mqueue").st_size == _MQUEUE_SIZE
                and not any(_more_than_a_header(f"/proc/sysvipc/{kind}") for kind in ("shm", "msg", "sem")))
    except OSError:
        return False


def _tmp_inodes():
    tmp = _os.statvfs("/tmp")
    return tmp.f_files - tmp.f_ffree if tmp.f_files else None  # (None: no inode count)


_READ = bytearray(1 << 12)  # /proc/sysvipc's keys are an item's choice: read into this, counted, zeroed


def _more_than_a_header(path):
    """Whether the table at ``path`` has a line below its header (or is too long to tell)."""
    fd = _os.open(path, _os.O_RDONLY)
    try:
        size = _os.readv(fd, [_READ])
    finally:
        _os.close(fd)
    more = size == len(_READ) or _READ.count(b"\n", 0, size) > 1
    _READ[:size] = bytes(size)
    return more


def _in_helper(work):
    """Not root: ``work()`` in a process forked now that ends after it, so the names it reads (an item's files, queues
    and IPC keys) never enter our memory, of which the next item's process starts as a copy (we ran the reset
    ourselves before, and the next item found hundreds of copies of the names the item before it chose in its own
    memory). No janitor here: it would have the items' uid, and our kill(-1) would reach it. Its exit code."""
    helper = _os.fork()
    if helper == 0:
        code = 0
        try:
            _CONTROL.close()
            work()
        except BaseException:
            _sys.excepthook(*_sys.exc_info())
            code = 1
        _os._exit(code)
    return _os.waitstatus_to_exitcode(_os.waitpid(helper, 0)[1])


def _kill_all():
    """SIGKILL every process of the items' uid in this PID namespace (kill(-1) spares the caller and init). kill(-1)
    reaches each process whose real or saved uid is our real or effective uid: as root (only the janitor, in ``_as_items``)
    our real uid is root, which would reach the zygote too, so it is the items' for that one call (our saved uid stays
    root, to take it back). Meanwhile the items' last processes may signal us; all that can do is fail this reset, and
    the worker is then replaced."""
    if _UID is None:
        _libc.kill(-1, _signal.SIGKILL)
        return
    _os.setresuid(_UID, -1, -1)
    _libc.prctl(4, 0, 0, 0, 0)  # PR_SET_DUMPABLE 0 again (a change of uid resets it)
    try:
        _libc.kill(-1, _signal.SIGKILL)
    finally:
        try:
            _os.setresuid(0, -1, -1)
            _libc.prctl(4, 0, 0, 0, 0)
        except BaseException:
            _os._exit(70)


def _reap():
    try:
        while _os.waitpid(-1, _os.WNOHANG)[0]:
            pass
    except ChildProcessError:
        pass


def _reset(workdir=None):
    """Kill every process of the items, empty /tmp and IPC (``_clear``). Returns what is still left
    (``_leftovers``): the worker is replaced when anything is. ``workdir``: the last item's work dir.

    Not root, the items run as our uid: we kill them ourselves, remove what we named (``_only_ours_left``) and, if
    anything else is left, a helper forked for it empties the rest (``_in_helper``). As root (without CAP_KILL, we
    may signal them only with their uid) our janitor does it (``_janitor``) while we reap, so nothing an item chose
    (the names of its files, queues and IPC keys, which the walk reads) ever enters our memory, of which the next
    item's process starts as a copy."""
    status = 0
    if _JANITOR is None:  # not root: the items have our uid; we kill them (kill(-1) spares us), a helper empties
        try:
            _kill_items()
            if not _only_ours_left(workdir):
                status = _in_helper(_empty_all)
            _reset_times()
        except BaseException:
            _sys.excepthook(*_sys.exc_info())
            status = 1
    else:
        ask, answer, janitor = _JANITOR
        _os.write(ask, b"?")
        reply = None
        while reply is None:  # its kill(-1) waits for the zombies, which only we, the subreaper, can reap
            _reap()
            if _select.select([answer], [], [], 0.0005)[0]:
                reply = _os.read(answer, 1)  # b"": it ended
            else:  # an item may stop it (SIGSTOP) in its kill(-1) window, when it has their real uid: it goes on
                _os.kill(janitor, _signal.SIGCONT)  # (this stalled the reset until the executor's 10 s timeout)
        status = 0 if reply == b"c" else 1
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
    child = pidfd = workdir = None
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
            shared, workdir = _shared_code(fds[3], int(args[2])), args[1]
            child = _os.fork()
            if child == 0:
                _child(float(args[0]), args[1], fds, shared)
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
            left = _reset(workdir)
            workdir = None
            view = _view_in_tmp()
            if view is None or view != _VIEW_IN_TMP:  # (unreadable: never taken for unchanged)
                left.append("view-changed")
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
            found.append((name, st.st_mode, st.st_uid, st.st_dev, st.st_ino, st.st_ctime_ns))
            if st.st_dev == tmp and _stat.S_ISDIR(st.st_mode):
                todo += [f"{name}/{entry}" for entry in _os.listdir("/tmp/" + name)]
        return sorted(found) + _view_outside_tmp() + [("/tmp", _xattrs("/tmp"))]
    except OSError:
        return None


def _xattrs(path):
    """``path``'s extended attributes (names and values; ACLs are some). /tmp's own: not root, its tmpfs is the items'
    uid's, and an attribute an item set on it reached the next item (the reset empties /tmp, not its attributes; its
    ctime moves with every item's work dir, so the view cannot compare that)."""
    try:
        names = _os.listxattr(path, follow_symlinks=False)
    except OSError as err:
        if err.errno in (_errno.ENOTSUP, _errno.EOPNOTSUPP):
            return ()
        raise
    return tuple(sorted((name, _os.getxattr(path, name, follow_symlinks=False)) for name in names))


VIEW_MAX_ENTRIES = 4096  # far more than a view has (~50): beyond it, something was planted


def _view_outside_tmp():
    """What bwrap made outside /tmp, as it is: every entry of its root and /dev file systems (``/``, ``/etc``,
    ``/dev``, ``/dev/shm``, the empty folders on the way to the interpreter; the mounts in them, such as ``/usr``,
    by device and inode, not entered) and of the empty tmpfs it mounts over the run's own paths (``_COVERS``), with
    mode, owner and ctime (which any write, chmod or xattr moves). As root bwrap makes them as root and no item can
    change them; not root, it makes them as the items' uid, so an item can plant a file there (``/dev/shm``,
    ``/etc``), which no reset empties: the worker is then replaced, as for ``_view_in_tmp``. Raises OSError where
    they cannot be read or hold more than VIEW_MAX_ENTRIES."""
    ours = {_os.stat(path).st_dev for path in ("/", "/dev", *_COVERS)}
    found, todo = [], ["/", *_COVERS]
    for path in todo:  # the tops themselves
        st = _os.lstat(path)
        found.append((path, st.st_mode, st.st_uid, st.st_gid, st.st_dev, st.st_ino, st.st_ctime_ns))
    while todo:
        with _os.scandir(todo.pop()) as entries:
            for entry in entries:
                st = entry.stat(follow_symlinks=False)
                mine = st.st_dev in ours
                found.append((entry.path, st.st_mode, st.st_uid, st.st_gid, st.st_dev, st.st_ino,
                              st.st_ctime_ns if mine else 0))
                if len(found) > VIEW_MAX_ENTRIES:
                    raise OSError("more entries than a view has")
                if mine and _stat.S_ISDIR(st.st_mode):
                    todo.append(entry.path)
    return sorted(found)


def _tmpfs_covers():
    """The mount points of the tmpfs bwrap mounted but its root, /dev and /tmp: the empty ones over the run's own
    paths (isolation.py's private_paths), read once at boot from our mount table."""
    found = []
    with open("/proc/self/mountinfo") as f:
        for line in f:
            fields = line.split()
            point = re.sub(r"\\([0-7]{3})", lambda m: chr(int(m.group(1), 8)), fields[4])  # (octal escapes)
            if fields[fields.index("-") + 1] == "tmpfs" and point not in ("/", "/dev", "/tmp"):
                found.append(point)
    return found


# the folders of the sandbox's own file systems whose times the items' uid may set (not root: it owns them), which no
# compare can hold (their ctime moves with what items do in them): each reset sets them to the time it runs, so an
# item cannot leave a chosen time there for the next (a 64-bit channel: /tmp's atime was)
OWN_TIMES = ("/tmp", "/dev/mqueue", "/dev/pts")
_COVERS = _tmpfs_covers()
_TMP_INODES = _tmp_inodes()  # at boot: /tmp's root and the view's entries there
_MQUEUE_SIZE = _os.stat("/dev/mqueue").st_size
_VIEW_IN_TMP = _view_in_tmp()
if _UID is not None:
    _os.setgroups([])  # (our groups would count when the file system treats us as the items' uid: _as_items)
_JANITOR = None if _UID is None else _janitor()  # (our ends of its pipes, and its pid)
_say("ready")  # imports done: what the worker measures as this sandbox's empty state
_serve()
