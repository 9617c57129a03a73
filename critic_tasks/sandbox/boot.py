# Runs first in every sandboxed program (passed to ``python -S -B -c`` with SITE_DIRS filled in), before main.py.
# Read as text by executor.py, never imported by the package; tests run it.
#
# 1. site-packages appended by hand: the same path as a normal start without running .pth files.
# 2. A seccomp filter, installed for good (no_new_privs, and a filter cannot be removed): socket(AF_UNIX, ...)
#    fails with EACCES, so no Unix socket anywhere on the machine (a database, a container daemon, a desktop bus)
#    can be reached, whatever the file system layer leaves visible. x32 system calls, and every call made through
#    another architecture's entry (a 32-bit `int 0x80`, whose numbers differ), are refused outright.
import sys

sys.path.extend(SITE_DIRS)  # noqa: F821  (filled in by the executor)


def _forbid_unix_sockets():
    import ctypes
    import platform
    import struct

    known = {"x86_64": (0xC000003E, 41), "aarch64": (0xC00000B7, 198)}
    if platform.machine() not in known:  # refuse rather than run without the filter
        raise SystemExit(f"critic sandbox: no seccomp filter for {platform.machine()}; refusing to run model code")
    arch, socket_nr = known[platform.machine()]
    allow, refuse = 0x7FFF0000, 0x00050000 | 13  # SECCOMP_RET_ALLOW, SECCOMP_RET_ERRNO | EACCES
    ld, jeq, jge, ret = 0x20, 0x15, 0x35, 0x06  # BPF_LD|W|ABS, BPF_JMP|JEQ|K, BPF_JMP|JGE|K, BPF_RET|K
    program = [
        (ld, 0, 0, 4),                # 0: the architecture
        (jeq, 0, 6, arch),            # 1: another one (a 32-bit int 0x80 call, say) -> refuse (8)
        (ld, 0, 0, 0),                # 2: the system call number
        (jge, 4, 0, 0x40000000),      # 3: an x32 call -> refuse (8)
        (jeq, 0, 2, socket_nr),       # 4: not socket() -> allow (7)
        (ld, 0, 0, 16),               # 5: its first argument, the address family
        (jeq, 1, 0, 1),               # 6: AF_UNIX -> refuse (8), else allow (7)
        (ret, 0, 0, allow),           # 7
        (ret, 0, 0, refuse),          # 8
    ]
    code = b"".join(struct.pack("HBBI", op, jt, jf, k) for op, jt, jf, k in program)
    buffer = ctypes.create_string_buffer(code)

    class Program(ctypes.Structure):
        _fields_ = [("len", ctypes.c_ushort), ("filter", ctypes.c_void_p)]

    libc = ctypes.CDLL(None, use_errno=True)
    if libc.prctl(38, 1, 0, 0, 0) != 0:  # PR_SET_NO_NEW_PRIVS
        raise OSError(ctypes.get_errno(), "no_new_privs")
    if libc.prctl(22, 2, ctypes.byref(Program(len(program), ctypes.addressof(buffer))), 0, 0) != 0:  # SECCOMP_FILTER
        raise OSError(ctypes.get_errno(), "seccomp")


_forbid_unix_sockets()
del _forbid_unix_sockets

import runpy  # noqa: E402

runpy.run_path("main.py", run_name="__main__")
