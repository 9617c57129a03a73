# Runs first in every sandboxed program (passed to ``python -S -B -c`` with SITE_DIRS filled in), before main.py.
# Read as text by _isolation.py, never imported by the package; tests run it.
#
# 1. site-packages appended by hand: the same path as a normal start without running .pth files.
# 2. A seccomp filter, installed for good (no_new_privs, and a filter cannot be removed), with Docker's default
#    profile as the floor: no new namespaces (unshare, setns, clone with a CLONE_NEW* flag; clone3 answers ENOSYS,
#    so libc falls back to clone, whose flags a filter can read), no mounts, no io_uring (its requests bypass
#    per-call filters), no bpf, perf_event_open, keyrings, userfaultfd, ptrace / process_vm_* / kcmp / pidfd_getfd
#    (reading or steering another process), kexec, kernel modules, swap, reboot, syslog, acct, quotactl, chroot,
#    file handles. socket() only for AF_INET / AF_INET6 (EACCES otherwise): no Unix socket anywhere on the machine
#    (a database, a container daemon, a desktop bus), no netlink, no packet sockets, whatever the file system and
#    network layers leave visible. x32 calls, and every call made through another architecture's entry (a 32-bit
#    `int 0x80`, whose numbers differ), are refused outright.
import sys

sys.path.extend(SITE_DIRS)  # noqa: F821  (filled in by the executor)


def _install_seccomp_filter():
    import ctypes
    import os
    import struct

    # (audit arch, {name: number}); numbers from each architecture's unistd headers
    tables = {
        "x86_64": (0xC000003E, dict(
            socket=41, clone=56, clone3=435, unshare=272, setns=308, mount=165, umount2=166, pivot_root=155,
            chroot=161, io_uring_setup=425, io_uring_enter=426, io_uring_register=427, bpf=321, perf_event_open=298,
            keyctl=250, add_key=248, request_key=249, userfaultfd=323, ptrace=101, process_vm_readv=310,
            process_vm_writev=311, kcmp=312, pidfd_getfd=438, kexec_load=246, kexec_file_load=320, init_module=175,
            finit_module=313, delete_module=176, open_by_handle_at=304, name_to_handle_at=303, fsopen=430,
            fsconfig=431, fsmount=432, fspick=433, move_mount=429, open_tree=428, mount_setattr=442, swapon=167,
            swapoff=168, reboot=169, syslog=103, acct=163, quotactl=179, lookup_dcookie=212)),
        "aarch64": (0xC00000B7, dict(
            socket=198, clone=220, clone3=435, unshare=97, setns=268, mount=40, umount2=39, pivot_root=41,
            chroot=51, io_uring_setup=425, io_uring_enter=426, io_uring_register=427, bpf=280, perf_event_open=241,
            keyctl=219, add_key=217, request_key=218, userfaultfd=282, ptrace=117, process_vm_readv=270,
            process_vm_writev=271, kcmp=272, pidfd_getfd=438, kexec_load=104, kexec_file_load=294, init_module=105,
            finit_module=273, delete_module=106, open_by_handle_at=265, name_to_handle_at=264, fsopen=430,
            fsconfig=431, fsmount=432, fspick=433, move_mount=429, open_tree=428, mount_setattr=442, swapon=224,
            swapoff=225, reboot=142, syslog=116, acct=89, quotactl=60, lookup_dcookie=18)),
    }
    machine = os.uname().machine  # what platform.machine() says, without importing platform (~8 ms per start)
    if machine not in tables:  # refuse rather than run without the filter
        raise SystemExit(f"critic sandbox: no seccomp filter for {machine}; refusing to run model code")
    arch, nr = tables[machine]
    special = {"socket", "clone", "clone3"}
    denied = [n for name, n in nr.items() if name not in special]
    new_namespaces = 0x7E020000  # CLONE_NEWNS | NEWCGROUP | NEWUTS | NEWIPC | NEWUSER | NEWPID | NEWNET
    af_inet, af_inet6 = 2, 10
    allow, errno = 0x7FFF0000, 0x00050000  # SECCOMP_RET_ALLOW, SECCOMP_RET_ERRNO | errno
    eperm, eacces, enosys = 1, 13, 38
    ld, jeq, jge, jset, ret = 0x20, 0x15, 0x35, 0x45, 0x06  # BPF_LD|W|ABS, BPF_JMP|JEQ|K, |JGE|K, |JSET|K, BPF_RET|K
    arch_at, nr_at, arg0_at = 4, 0, 16  # offsets in struct seccomp_data (arg0's low 32 bits, little-endian)

    # (op, jump-if-true label, jump-if-false label, k); labels resolve to relative jumps below
    code = [(ld, None, None, arch_at), (jeq, None, "eacces", arch), (ld, None, None, nr_at),
            (jge, "eacces", None, 0x40000000)]
    code += [(jeq, "eperm", None, n) for n in denied]
    code += [(jeq, "enosys", None, nr["clone3"]), (jeq, "socket", None, nr["socket"]),
             (jeq, "clone", "allow", nr["clone"])]
    labels = {"socket": len(code)}
    code += [(ld, None, None, arg0_at), (jeq, "allow", None, af_inet), (jeq, "allow", "eacces", af_inet6)]
    labels["clone"] = len(code)
    code += [(ld, None, None, arg0_at), (jset, "eperm", "allow", new_namespaces)]
    for label, value in (("allow", allow), ("eperm", errno | eperm), ("eacces", errno | eacces),
                         ("enosys", errno | enosys)):
        labels[label] = len(code)
        code.append((ret, None, None, value))

    def jump(label, at):
        return 0 if label is None else labels[label] - at - 1

    blob = b"".join(struct.pack("HBBI", op, jump(jt, i), jump(jf, i), k) for i, (op, jt, jf, k) in enumerate(code))
    buffer = ctypes.create_string_buffer(blob)

    class Program(ctypes.Structure):
        _fields_ = [("len", ctypes.c_ushort), ("filter", ctypes.c_void_p)]

    libc = ctypes.CDLL(None, use_errno=True)
    if libc.prctl(38, 1, 0, 0, 0) != 0:  # PR_SET_NO_NEW_PRIVS
        raise OSError(ctypes.get_errno(), "no_new_privs")
    if libc.prctl(22, 2, ctypes.byref(Program(len(code), ctypes.addressof(buffer))), 0, 0) != 0:  # SECCOMP_FILTER
        raise OSError(ctypes.get_errno(), "seccomp")


_install_seccomp_filter()
del _install_seccomp_filter

import runpy  # noqa: E402

runpy.run_path("main.py", run_name="__main__")
