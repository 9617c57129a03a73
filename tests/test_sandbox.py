"""The code sandbox: normal programs, and a hostile suite each member of which must be scored as a failure while the
run completes and this test process survives.

What "failure" means: a hostile program must not come back ``passed`` (exit 0 within the limit). Two programs are
the exception and say so: the secrets probe exits 1 when it *finds* a secret, so it must come back ``passed``; a
program that closes its stdout/stderr and exits 0 did exit 0, so it is ``passed`` by definition -- there the test
only checks that the harness survives and reports it.

The suite runs once per isolation layer available here (the detected one, each weaker one, and the unprivileged-uid
fallback when some interpreter allows it); programs that only a layer's isolation can contain are skipped on the
layers without it (e.g. the socket probe on ``rlimits``, which has no network isolation).
"""

import glob
import json
import os
import platform
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import time
import uuid

import pytest

from critic_tasks.sandbox import ExecResult, Pair, Program, SandboxExecutor, get_executor
from critic_tasks.sandbox._executor import builtin_executor
from critic_tasks.sandbox._isolation import LAYERS, _site_dirs, _unprivileged_can_run, detect_isolation

SECRETS = {"OPENAI_API_KEY": "sk-test-" + uuid.uuid4().hex, "HF_TOKEN": "hf_" + uuid.uuid4().hex,
           "CRITIC_JUDGE_API_KEY": "judge-" + uuid.uuid4().hex}
T = 2.0  # timeout of the hostile programs


def _temp_dir_venv() -> str | None:
    """An interpreter in a virtual environment under the system temp dir, as many CI systems have it."""
    folder = tempfile.mkdtemp(prefix="critic-venv-")
    made = subprocess.run([sys.executable, "-m", "venv", "--without-pip", folder], capture_output=True, timeout=120)
    return os.path.join(folder, "bin", "python") if made.returncode == 0 else None


TEMP_VENV_PYTHON = _temp_dir_venv()


SYSTEM_PYTHON = shutil.which("python3", path="/usr/bin:/bin")


def _runnable_python(layer: str) -> str | None:
    """An interpreter the layer will run: ours, or (as root, where the sandbox uid cannot reach ours, e.g. a pyenv
    under a 0700 /root) the system one; None when neither (the layer refuses: test_root_is_refused_...)."""
    if os.geteuid() != 0 or _unprivileged_can_run(sys.executable, layer):
        return sys.executable
    return SYSTEM_PYTHON if SYSTEM_PYTHON and _unprivileged_can_run(SYSTEM_PYTHON, layer) else None


def _variants():
    detected = detect_isolation()
    # weaker layers than bwrap run only when the caller opts in, as here (they are under test)
    out = []
    for layer in LAYERS[LAYERS.index(detected):]:
        python = _runnable_python(layer)
        marks = [] if python else [pytest.mark.skip(reason=f"{layer}: no interpreter an unprivileged uid can run")]
        out.append(pytest.param({"isolation": layer, "allow_unisolated": True, "python": python}, id=layer, marks=marks))
    if TEMP_VENV_PYTHON:
        out.append(pytest.param({"python": TEMP_VENV_PYTHON, "allow_unisolated": detected != "bwrap"},
                                id="venv-under-tmp"))
    return out


def _contains_pids(ex) -> bool:
    """A process-count limit holds: a pids cgroup, or RLIMIT_NPROC under an unprivileged uid."""
    return bool(ex.cgroup) or ex.run_as is not None


def _can_signal_us(ex) -> bool:
    """Our uid without a PID namespace can kill this test process: such programs must not be run at all."""
    return ex.isolation == "rlimits" and ex.run_as is None


def _fs_writable(ex) -> bool:
    return ex.isolation != "bwrap" and ex.run_as is None


KERNEL_DOORS = """
import ctypes, errno, os, platform, socket, sys
libc = ctypes.CDLL(None, use_errno=True)
NR = {"x86_64": dict(unshare=272, clone=56, clone3=435, setns=308, io_uring_setup=425, bpf=321, perf_event_open=298,
                     keyctl=250, add_key=248, userfaultfd=323, ptrace=101, kexec_load=246, init_module=175,
                     process_vm_readv=310, pidfd_getfd=438, open_tree=428, fsopen=430),
      "aarch64": dict(unshare=97, clone=220, clone3=435, setns=268, io_uring_setup=425, bpf=280, perf_event_open=241,
                      keyctl=219, add_key=217, userfaultfd=282, ptrace=117, kexec_load=104, init_module=105,
                      process_vm_readv=270, pidfd_getfd=438, open_tree=428, fsopen=430)}[platform.machine()]
params = ctypes.create_string_buffer(120)
calls = {
    "unshare(CLONE_NEWUSER)": (NR["unshare"], 0x10000000), "unshare(CLONE_NEWNET)": (NR["unshare"], 0x40000000),
    "unshare(CLONE_NEWNS)": (NR["unshare"], 0x20000), "clone(CLONE_NEWUSER)": (NR["clone"], 0x10000000 | 17, 0, 0, 0, 0),
    "clone(CLONE_NEWPID)": (NR["clone"], 0x20000000 | 17, 0, 0, 0, 0), "clone3": (NR["clone3"], 0, 0),
    "setns": (NR["setns"], 0, 0), "io_uring_setup": (NR["io_uring_setup"], 8, ctypes.addressof(params)),
    "bpf": (NR["bpf"], 0, 0, 0), "perf_event_open": (NR["perf_event_open"], 0, 0, -1, -1, 0),
    "keyctl": (NR["keyctl"], 0, 0), "add_key": (NR["add_key"], 0, 0, 0, 0, 0), "userfaultfd": (NR["userfaultfd"], 0),
    "ptrace(ATTACH parent)": (NR["ptrace"], 16, os.getppid(), 0, 0), "kexec_load": (NR["kexec_load"], 0, 0, 0, 0),
    "init_module": (NR["init_module"], 0, 0, 0), "process_vm_readv": (NR["process_vm_readv"], 1, 0, 0, 0, 0, 0),
    "pidfd_getfd": (NR["pidfd_getfd"], 0, 0, 0), "open_tree": (NR["open_tree"], -100, 0, 0),
    "fsopen": (NR["fsopen"], 0, 0),
}
opened = []
for name, (nr, *args) in calls.items():
    if libc.syscall(nr, *[ctypes.c_long(a) for a in args]) >= 0:
        opened.append(name)
if libc.mount(b"none", b"/tmp", b"tmpfs", 0, None) == 0:
    opened.append("mount tmpfs")
for family, kind, name in ((16, socket.SOCK_RAW, "AF_NETLINK"), (17, socket.SOCK_RAW, "AF_PACKET"),
                           (1, socket.SOCK_STREAM, "AF_UNIX")):
    try:
        socket.socket(family, kind).close()
        opened.append(name)
    except OSError:
        pass
try:  # plain fork still works (EAGAIN: this uid's process limit, a neighbour's leftovers not yet reaped)
    child = os.fork()
    if child == 0:
        os._exit(7)
    assert os.waitpid(child, 0)[1] >> 8 == 7
except BlockingIOError:
    pass
print("opened:", opened)
sys.exit(0 if opened else 1)
"""


def _hostile(ex, port: int, outside: list[str], marker: str, unix_path: str = "") -> dict[str, tuple[str, str | None]]:
    """name -> (source, reason to skip on this executor or None)."""
    no_pids = None if _contains_pids(ex) else "no pids cgroup nor uid of its own: a fork bomb would not be contained"
    unsafe = "our uid, no PID namespace: the program could kill the test process" if _can_signal_us(ex) else None
    return {
        "infinite_loop": ("while True:\n    pass\n", None),
        "fork_bomb": ("import os\nwhile True:\n    try:\n        os.fork()\n    except OSError:\n        pass\n",
                      no_pids),
        "memory_bomb": ("blocks = []\nwhile True:\n    blocks.append(bytearray(1 << 26))\n", None),
        "huge_output": ("import sys\nfor _ in range(1 << 14):\n    sys.stdout.write('x' * 65536)\n", None),
        "write_outside": (
            "import sys\nok = 0\n"
            f"for path in {outside!r}:\n"
            "    try:\n        open(path, 'w').write('pwned')\n        ok += 1\n    except OSError:\n        pass\n"
            "sys.exit(0 if ok else 1)\n",
            "filesystem writable (no bwrap, no uid of its own)" if _fs_writable(ex) else None),
        "socket_connect": (
            f"import socket\ns = socket.create_connection(('127.0.0.1', {port}), timeout=1)\ns.sendall(b'pwned')\n",
            "isolation 'rlimits' has no network isolation" if ex.isolation == "rlimits" else None),
        "kill_parent": (
            "import os, signal\nppid = os.getppid()\n"
            "for attempt in (lambda: os.kill(ppid, 9), lambda: os.killpg(os.getpgid(ppid), 9),\n"
            "                lambda: os.killpg(0, 9), lambda: os.kill(-1, 9)):\n"
            "    try:\n        attempt()\n    except OSError:\n        pass\n"
            "raise SystemExit(3)\n", unsafe),
        "os_system": ("import os, sys\nos.system('kill -9 -1 2>/dev/null; echo pwned > pwned.txt')\nsys.exit(1)\n",
                      unsafe),
        "recursion_bomb": ("import sys\nsys.setrecursionlimit(10 ** 7)\ndef f(n):\n    return f(n + 1) + 1\nf(0)\n",
                           None),
        "escaping_grandchild": (
            "import os\nif os.fork() == 0:\n    os.setsid()\n"
            f"    os.execvp('sleep', ['sleep', '{marker}'])\n"
            "raise SystemExit(1)\n",
            None if ex.isolation != "rlimits" or ex.cgroup else "no PID namespace and no cgroup to find it"),
        "sleeps_forever": ("import time\ntime.sleep(10 ** 6)\n", None),
        "cpu_threads": ("import threading\ndef burn():\n    while True:\n        pass\n"
                        "for _ in range(4):\n    threading.Thread(target=burn, daemon=True).start()\nburn()\n", None),
        "big_file": ("open('big.bin', 'wb').write(b'x' * (256 << 20))\n", None),
        "unix_socket": (f"import socket\ns = socket.socket(socket.AF_UNIX)\ns.connect({unix_path!r})\ns.sendall(b'pwned')\n",
                        None),
        # root-owned files (root without capabilities still owns them): only a uid of its own keeps them shut
        "read_root_files": (
            "for path in ('/etc/shadow', '/etc/gshadow'):\n    try:\n        open(path).read()\n"
            "        print('READ', path)\n    except OSError:\n        pass\nraise SystemExit(1)\n",
            "root without a uid of its own reads root-owned files" if ex.run_as is None else None),
        # socket(AF_UNIX) through the 32-bit entry (int 0x80, i386 call 359): the filter must not wave it through
        "unix_socket_compat": (
            "import ctypes, mmap\n"
            "code = bytes.fromhex('53' 'b867010000' 'bb01000000' 'b901000000' '31d2' 'cd80' '5b' 'c3')\n"
            "buf = mmap.mmap(-1, 4096, prot=mmap.PROT_READ | mmap.PROT_WRITE | mmap.PROT_EXEC)\nbuf.write(code)\n"
            "ret = ctypes.CFUNCTYPE(ctypes.c_int)(ctypes.addressof(ctypes.c_char.from_buffer(buf)))()\n"
            "print('compat socket:', 'FD' if ret >= 0 else ret)\nraise SystemExit(1)\n",
            None if platform.machine() == "x86_64" else "the 32-bit entry is an x86_64 matter"),
        # kernel doors (Docker's default seccomp profile as the floor): each call must fail; exit 0 if one opened
        "kernel_doors": (KERNEL_DOORS, None),
        # unmount the fresh /proc to see the harness's, read its environment, join its network namespace
        "namespace_escape": (
            "import ctypes, os, socket, sys\nlibc = ctypes.CDLL(None, use_errno=True)\n"
            "libc.umount2(b'/proc', 2)\nescaped = []\n"
            "try:\n"
            f"    if b'pytest' in open('/proc/{os.getpid()}/cmdline', 'rb').read():\n"
            f"        open('/proc/{os.getpid()}/environ', 'rb').read()\n"
            "        escaped.append('harness /proc')\n"
            "except OSError:\n    pass\n"
            "try:\n"
            f"    fd = os.open('/proc/{os.getpid()}/ns/net', os.O_RDONLY)\n"
            "    if libc.setns(fd, 0) == 0:\n"
            f"        socket.create_connection(('127.0.0.1', {port}), timeout=1).close()\n"
            "        escaped.append('harness network')\n"
            "except OSError:\n    pass\n"
            "print(escaped)\nsys.exit(0 if escaped else 1)\n",
            "root without bwrap keeps the capabilities to unmount /proc and join namespaces"
            if ex.isolation != "bwrap" and ex.run_as is None else None),
    }


@pytest.fixture(scope="module", params=_variants())
def hostile_run(request):
    ex = SandboxExecutor(max_workers=8, **request.param)  # most of the batch sleeps or waits to be killed
    listener = socket.socket()
    listener.bind(("127.0.0.1", 0))
    listener.listen(8)
    listener.settimeout(0)
    port = listener.getsockname()[1]
    tag = uuid.uuid4().hex[:12]
    # the real /tmp, $HOME, /var/tmp, and the interpreter's site-packages (a .pth there runs in every later process)
    outside = [f"/tmp/../critic-sbx-escape-{tag}", os.path.join(os.path.expanduser("~"), f"critic-sbx-escape-{tag}")]
    outside += [os.path.join(site, f"critic-sbx-escape-{tag}.pth") for site in _site_dirs(ex.python)[:1]]
    if ex.isolation == "bwrap":  # only bwrap's read-only root closes world-writable places to a dropped uid too
        outside.append(f"/var/tmp/critic-sbx-escape-{tag}")
    marker = f"{4000 + int(tag[:4], 16) % 1000}.{int(tag[4:8], 16)}"  # a unique `sleep` argument to look for
    # a Unix socket in a place every layer leaves visible (read-only under bwrap): connecting needs no write access
    unix_path = f"/var/tmp/critic-sbx-{tag}.sock"
    unix_listener = socket.socket(socket.AF_UNIX)
    unix_listener.bind(unix_path)
    os.chmod(unix_path, 0o777)
    unix_listener.listen(8)
    unix_listener.settimeout(0)
    programs = _hostile(ex, port, outside, marker, unix_path)
    runnable = {name: src for name, (src, skip) in programs.items() if skip is None}
    # a well-behaved neighbour in the same batch: hostile programs must not take it down
    runnable["neighbour"] = "import time\ntime.sleep(1.5)\nprint('still here')\n"
    with pytest.MonkeyPatch.context() as mp:
        for key, value in SECRETS.items():
            mp.setenv(key, value)
        secrets_probe = (
            "import os, sys, glob\n"
            f"secrets = {sorted(SECRETS.values())!r}\n"
            f"found = [k for k in {sorted(SECRETS)!r} if k in os.environ]\n"
            "for path in glob.glob('/proc/*/environ'):\n"
            "    try:\n        blob = open(path, 'rb').read().decode('latin-1')\n"
            "    except OSError:\n        continue\n"
            "    found += [path for s in secrets if s in blob]\n"
            "print(found)\nsys.exit(1 if found else 0)\n")
        runnable["secrets_probe"] = secrets_probe
        start = time.monotonic()
        patient = {"neighbour", "secrets_probe"}  # must not time out merely because the batch hogs the CPUs
        results = ex.run([Program(src, timeout_s=10 if name in patient else T) for name, src in runnable.items()])
        elapsed = time.monotonic() - start
    try:
        accepted = listener.accept()[0]
        accepted.close()
        connected = True
    except BlockingIOError:
        connected = False
    listener.close()
    try:
        unix_listener.accept()[0].close()
        unix_connected = True
    except BlockingIOError:
        unix_connected = False
    unix_listener.close()
    os.remove(unix_path)
    leftovers = [p for p in outside if os.path.exists(p)]
    for p in leftovers:
        os.remove(p)
    survivors = []
    for cmdline in _cmdlines():
        if marker in cmdline:
            survivors.append(cmdline)
    return {"ex": ex, "results": dict(zip(runnable, results)), "skips": {n: s for n, (_, s) in programs.items()},
            "connected": connected, "unix_connected": unix_connected, "leftovers": leftovers, "survivors": survivors,
            "elapsed": elapsed}


def _cmdlines():
    for path in os.listdir("/proc"):
        if path.isdigit():
            try:
                yield open(f"/proc/{path}/cmdline", "rb").read().replace(b"\0", b" ").decode(errors="replace")
            except OSError:
                continue


HOSTILE = ["kernel_doors", "infinite_loop", "fork_bomb", "memory_bomb", "huge_output", "write_outside", "socket_connect",
           "kill_parent", "os_system", "recursion_bomb", "escaping_grandchild", "sleeps_forever", "cpu_threads",
           "big_file", "namespace_escape", "unix_socket", "unix_socket_compat", "read_root_files"]


@pytest.mark.parametrize("name", HOSTILE)
def test_hostile_program_fails_and_harness_survives(hostile_run, name):
    if hostile_run["skips"][name]:
        pytest.skip(f"{hostile_run['ex'].isolation}: {hostile_run['skips'][name]}")
    result = hostile_run["results"][name]
    assert isinstance(result, ExecResult)
    assert result.status != "passed", (name, result)
    assert result.duration_s < T + 3, (name, result.duration_s)
    cap = hostile_run["ex"].capture_bytes
    assert len(result.stdout) <= cap and len(result.stderr) <= cap
    if name == "write_outside":
        assert not hostile_run["leftovers"]
    if name == "socket_connect":
        assert not hostile_run["connected"]
    if name == "unix_socket":
        assert not hostile_run["unix_connected"] and "Permission denied" in result.stderr
    if name == "read_root_files":
        assert "READ" not in result.stdout, result
    if name == "unix_socket_compat":
        # refused with an errno, or (a kernel without the 32-bit entry) killed before printing
        assert result.stdout.startswith("compat socket: -") or result.stdout == "", result
    if name == "kernel_doors":
        assert result.stdout == "opened: []\n", result
    if name == "escaping_grandchild":
        assert not hostile_run["survivors"], hostile_run["survivors"]
    if name in ("infinite_loop", "sleeps_forever", "cpu_threads"):
        assert result.status == "timeout"
    if name == "huge_output":  # stopped at the output cap, or (on a loaded machine) by the timeout first
        assert "output" in result.stderr or result.status == "timeout", result.stderr


def test_hostile_batch_neighbour_and_secrets(hostile_run):
    results = hostile_run["results"]
    assert results["neighbour"].status == "passed" and results["neighbour"].stdout == "still here\n"
    probe = results["secrets_probe"]
    if _can_signal_us(hostile_run["ex"]):  # our uid without PID namespace can read our /proc/<pid>/environ ...
        assert not any(k in probe.stdout for k in SECRETS)  # ... but never sees them in its own environment
    else:
        assert probe.status == "passed", probe
    # the batch runs in parallel: far less than the sum of its timeouts
    assert hostile_run["elapsed"] < 0.8 * T * sum(r.status == "timeout" for r in results.values()) + 5


# ----------------------------------------------------------------------------- normal programs


@pytest.fixture(scope="module")
def ex(executor):
    return executor


def test_pass_fail_timeout_and_stdin(ex):
    passing, failing, slow, echo = ex.run([
        Program("print('hello')"), Program("assert 1 + 1 == 3, 'math broke'"),
        Program("while True:\n    pass", timeout_s=1.0), Program("print(input()[::-1])", stdin="abc\n")])
    assert (passing.status, passing.returncode, passing.stdout) == ("passed", 0, "hello\n")
    assert failing.status == "failed" and failing.returncode == 1 and "AssertionError: math broke" in failing.stderr
    assert slow.status == "timeout" and 1.0 <= slow.duration_s < 3.0
    assert echo.status == "passed" and echo.stdout == "cba\n"


def test_order_preserved_with_50_mixed_programs(ex):
    programs = [Program(f"import time, sys\ntime.sleep({(i * 7) % 5} / 100)\nprint({i})\nsys.exit({i % 3})")
                for i in range(50)]
    results = ex.run(programs)
    assert [r.stdout for r in results] == [f"{i}\n" for i in range(50)]
    assert [r.status for r in results] == ["passed" if i % 3 == 0 else "failed" for i in range(50)]
    assert [r.returncode for r in results] == [i % 3 for i in range(50)]


def test_environment_is_scrubbed(ex, monkeypatch):
    for key, value in SECRETS.items():
        monkeypatch.setenv(key, value)
    (result,) = ex.run([Program("import os, json\nprint(json.dumps(dict(os.environ)))\nprint(os.getcwd())")])
    env_line, cwd = result.stdout.splitlines()
    import json

    env = json.loads(env_line)
    assert not set(SECRETS) & set(env) and not any(v in env_line for v in SECRETS.values())
    assert set(env) <= {"PATH", "LANG", "LC_ALL", "HOME", "TMPDIR", "PWD", "PYTHONHASHSEED", "PYTHONDONTWRITEBYTECODE",
                        "PYTHONIOENCODING", "OMP_NUM_THREADS", "OPENBLAS_NUM_THREADS", "MKL_NUM_THREADS", "MPLBACKEND"}
    assert env["HOME"] == cwd and not os.path.exists(cwd)  # fresh work dir, deleted afterwards


def test_output_is_capped_to_its_tail(ex):
    (result,) = ex.run([Program("import sys\nfor i in range(40000):\n    print(f'line {i:06d}')\n")])
    assert result.status == "passed"
    assert len(result.stdout) == ex.capture_bytes and result.stdout.endswith("line 039999\n")


def test_closed_stdout_is_reported(ex):
    closes_and_exits, closes_and_hangs = ex.run([
        Program("import os\nos.close(1)\nos.close(2)\n"),
        Program("import os\nos.close(1)\nos.close(2)\nwhile True:\n    pass\n", timeout_s=1.0)])
    assert closes_and_exits.status == "passed"  # exit 0: passed by definition, and we got a result
    assert closes_and_hangs.status == "timeout"


def _child_cgroups(base: str) -> set[str]:
    return {d for d in os.listdir(base) if os.path.isdir(os.path.join(base, d))}


def test_no_cgroup_left_behind(ex):
    if not ex.cgroup:
        pytest.skip("no writable cgroup pids controller here: programs run without a per-program cgroup")
    before = _child_cgroups(ex.cgroup)  # the pre-started sandboxes of pairs keep theirs while they live
    ex.run([Program("import os\nos.fork()\n")] * 3)
    assert _child_cgroups(ex.cgroup) <= before


@pytest.mark.parametrize("variant", _variants())
def test_every_layer_runs_normal_programs(variant):
    layer_ex = SandboxExecutor(**variant)
    assert layer_ex.isolation == variant.get("isolation", detect_isolation())
    ok, bad = layer_ex.run([Program("import json, os\nprint(json.dumps(sorted(os.environ)))"), Program("1/0")])
    assert ok.status == "passed" and "HF_TOKEN" not in ok.stdout and bad.status == "failed"


def test_preexec_fallback_launch(monkeypatch):
    """Without ``prlimit`` the rlimits (and the cgroup) are set in preexec_fn: same limits, same containment."""
    monkeypatch.setattr("critic_tasks.sandbox._limits._prlimit", lambda: None)
    layer_ex = SandboxExecutor()
    before = _child_cgroups(layer_ex.cgroup) if layer_ex.cgroup else set()
    limits, bomb = layer_ex.run([
        Program("import resource\nprint(resource.getrlimit(resource.RLIMIT_AS)[0] >> 20)"),
        Program("import os\nwhile True:\n    os.fork()\n", timeout_s=T)])
    assert limits.status == "passed" and limits.stdout.strip() == str(layer_ex.memory_mb)
    assert bomb.status != "passed"
    if layer_ex.cgroup:
        assert _child_cgroups(layer_ex.cgroup) <= before


# ----------------------------------------------------------------------------- plugin plumbing


def test_get_executor_and_hook(ex):
    assert isinstance(get_executor(), SandboxExecutor)
    assert get_executor("sandbox", max_workers=1).max_workers == 1
    assert builtin_executor("docker", {}) is None
    with pytest.raises(ValueError, match="sandbox"):
        get_executor("no-such-runner")
    with pytest.raises(ValueError, match="memory_mb"):
        get_executor("sandbox", memroy_mb=5)
    assert ex.isolation in LAYERS and ex.run([]) == []


def test_interpreter_under_the_temp_dir_keeps_the_strongest_layer():
    """A venv under /tmp must not make bwrap's probe fail (its --tmpfs /tmp hid the interpreter) and drop to a
    weaker layer silently."""
    if TEMP_VENV_PYTHON is None:
        pytest.skip("could not make a virtual environment under the temp dir")
    assert detect_isolation(TEMP_VENV_PYTHON) == detect_isolation()


def test_interpreter_started_by_a_relative_path_keeps_the_strongest_layer(tmp_path):
    """``../.venv/bin/python`` (run from the tests folder, say) reports ``sys.executable`` through the caller's
    cwd, a folder the sandbox does not show: bwrap could not exec it and the run was refused (seen in a session)."""
    script = ("import sys\nfrom critic_tasks.sandbox import Program, SandboxExecutor\n"
              "ex = SandboxExecutor()\n(r,) = ex.run([Program('print(6 * 7)')])\n"
              "print(sys.executable, ex.isolation, r.status, r.stdout.strip())")
    relative = os.path.relpath(sys.executable, tmp_path)
    assert ".." in relative
    out = subprocess.run([relative, "-c", script], cwd=tmp_path, capture_output=True, text=True, timeout=120,
                         env={**os.environ, "PYTHONPATH": os.path.dirname(os.path.dirname(os.path.abspath(__file__)))})
    assert out.returncode == 0, out.stderr[-2000:]
    executable, layer, status, value = out.stdout.split()
    assert ".." in executable and (layer, status, value) == (detect_isolation(), "passed", "42")


def test_interpreter_of_a_venv_reached_through_a_symlink_keeps_the_strongest_layer(tmp_path):
    """A checkout whose ``.venv`` links to a venv elsewhere (a worktree sharing one venv): ``sys.executable`` runs
    through the link, a folder the sandbox does not bind, so bwrap could not exec it, the probe fell to a weaker
    layer and the run was refused as root (seen in a session)."""
    venv = os.path.dirname(os.path.dirname(os.path.abspath(sys.executable)))
    linked = tmp_path / "checkout" / ".venv"
    linked.parent.mkdir()
    linked.symlink_to(venv, target_is_directory=True)
    python = str(linked / "bin" / os.path.basename(sys.executable))
    script = ("import sys\nfrom critic_tasks.sandbox import Program, SandboxExecutor\n"
              "ex = SandboxExecutor()\n(r,) = ex.run([Program('print(6 * 7)')])\n"
              "print(sys.executable, ex.isolation, r.status, r.stdout.strip(), ex.python)")
    out = subprocess.run([python, "-c", script], cwd=tmp_path, capture_output=True, text=True, timeout=120,
                         env={**os.environ, "PYTHONPATH": os.path.dirname(os.path.dirname(os.path.abspath(__file__)))})
    assert out.returncode == 0, out.stderr[-2000:]
    executable, layer, status, value, used = out.stdout.split()
    assert executable == python and (layer, status, value) == (detect_isolation(), "passed", "42")
    # the venv's own bin/python through real folders, not its base interpreter
    assert used == os.path.join(os.path.realpath(os.path.join(venv, "bin")), os.path.basename(sys.executable))


def test_weaker_layer_refuses_without_opt_in(monkeypatch):
    monkeypatch.delenv("CRITIC_ALLOW_UNISOLATED", raising=False)
    with pytest.raises(ValueError, match=r"refusing to run model-written code: .*CRITIC_ALLOW_UNISOLATED=1"):
        SandboxExecutor(isolation="rlimits")
    monkeypatch.setenv("CRITIC_ALLOW_UNISOLATED", "1")
    python = _runnable_python("rlimits")
    if python is None:
        pytest.skip("no interpreter an unprivileged uid can run here")
    (result,) = SandboxExecutor(isolation="rlimits", python=python).run([Program("print('ran')")])
    assert (result.status, result.stdout) == ("passed", "ran\n")


@pytest.mark.parametrize("layer", ["unshare-net", "rlimits"])
def test_root_is_refused_when_the_sandbox_uid_cannot_reach_the_interpreter(layer):
    """The weaker layers once ran model code as real root when the interpreter sat under a 0700 folder: it read
    /etc/shadow, planted a .pth in site-packages and killed the harness. Now: one line, no program run."""
    if os.geteuid() != 0:
        pytest.skip("only root could run programs as root")
    if LAYERS.index(layer) < LAYERS.index(detect_isolation()):
        pytest.skip(f"{layer} is not available here")
    closed = tempfile.mkdtemp(prefix="critic-closed-")  # 0700, like /root
    venv = os.path.join(closed, "venv")
    subprocess.run([SYSTEM_PYTHON or sys.executable, "-m", "venv", "--without-pip", venv], check=True, timeout=120)
    try:
        with pytest.raises(ValueError) as refused:
            SandboxExecutor(isolation=layer, allow_unisolated=True, python=os.path.join(venv, "bin", "python"))
        message = str(refused.value)
        assert "\n" not in message and message.startswith("refusing to run model-written code as root")
        assert closed in message and "bubblewrap" in message
    finally:
        shutil.rmtree(closed)


@pytest.mark.parametrize("variant", _variants())
def test_programs_never_run_as_root(variant):
    layer_ex = SandboxExecutor(**variant)
    (result,) = layer_ex.run([Program("import os\nprint(os.getuid(), os.geteuid(), os.getgid())")])
    uid, euid, gid = map(int, result.stdout.split())
    if os.geteuid() == 0:
        assert uid >= 64000 and euid == uid and gid == uid, result.stdout  # outside any user namespace
    assert layer_ex.run_as is not None or os.geteuid() != 0


def test_stale_work_dirs_of_a_killed_harness_are_swept():
    dead = subprocess.Popen(["true"])
    dead.wait()  # a pid that no longer runs
    stale = tempfile.mkdtemp(prefix=f"critic-sbx-{dead.pid}-")
    live = tempfile.mkdtemp(prefix=f"critic-sbx-{os.getpid()}-")
    open(os.path.join(stale, "main.py"), "w").write("x = 1\n")
    try:
        SandboxExecutor(**_variants()[0].values[0])
        assert not os.path.exists(stale) and os.path.isdir(live)
    finally:
        shutil.rmtree(live, ignore_errors=True)
        shutil.rmtree(stale, ignore_errors=True)


# ----------------------------------------------------------------------------- pairs: an untrusted and a trusted side


def test_pair_sides_are_wired_and_the_trusted_side_decides(ex):
    echo_twice = "import sys\nfor line in sys.stdin:\n    print(line.strip() * 2, flush=True)\n"
    asks = ("import sys\nprint('ab', flush=True)\nreply = sys.stdin.readline().strip()\n"
            "print('got', reply, file=sys.stderr)\nsys.exit(0 if reply == 'abab' else 1)\n")
    exits_1 = "import sys\nsys.exit(1)\n"
    (ok, fails, untrusted_exit_0) = ex.run_pairs([
        Pair(echo_twice, asks), Pair(echo_twice, exits_1), Pair("import sys\nsys.exit(0)\n", exits_1)])
    assert (ok.trusted.status, ok.trusted.stderr) == ("passed", "got abab\n")
    assert fails.trusted.status == "failed"
    assert untrusted_exit_0.trusted.status == "failed"  # the untrusted side's exit 0 decides nothing


def test_untrusted_side_cannot_reach_the_trusted_one(ex):
    """The trusted side sleeps; the untrusted side looks for it (by its command line, which holds a secret) to kill
    it, trace it, read its memory or write to its stderr. The trusted side must finish normally."""
    secret = uuid.uuid4().hex
    trusted = (f"import os, sys, time\nSECRET = {secret!r}\nprint(os.getpid(), flush=True)\ntime.sleep(1.5)\n"
               "print('done', file=sys.stderr)\n")
    untrusted = (
        "import os, signal, sys\nfound = []\ntheirs = sys.stdin.readline().strip()\n"
        "pids = [p for p in os.listdir('/proc') if p.isdigit()] + [theirs]\n"
        "for pid in [p for p in pids if int(p) != os.getpid()]:  # (its pid may be ours: namespaces differ)\n"
        "    try:\n"
        f"        if {secret!r}.encode() in open(f'/proc/{{pid}}/cmdline', 'rb').read():\n"
        "            found.append(pid)\n"
        "    except OSError:\n        pass\n"
        "    for attempt in (lambda: os.kill(int(pid), signal.SIGKILL),\n"
        "                    lambda: open(f'/proc/{pid}/fd/2', 'w').write('forged'),\n"
        "                    lambda: open(f'/proc/{pid}/mem', 'rb').read(1)):\n"
        "        try:\n            attempt()\n            found.append(pid)\n        except (OSError, ValueError):\n"
        "            pass\n"
        "print('reached:', sorted(set(found)), file=sys.stderr)\n")
    (result,) = ex.run_pairs([Pair(untrusted, trusted, timeout_s=10)])
    assert (result.trusted.status, result.trusted.stderr) == ("passed", "done\n"), result
    assert "reached: []" in result.untrusted.stderr, result.untrusted.stderr


def test_unavailable_isolation_is_refused():
    detected = detect_isolation()
    if detected == "bwrap":
        pytest.skip("bwrap works here: nothing stronger to refuse")
    with pytest.raises(ValueError, match="unavailable"):
        SandboxExecutor(isolation="bwrap")


def test_harness_signal_state_untouched(ex):
    before = signal.getsignal(signal.SIGCHLD), signal.getsignal(signal.SIGALRM)
    (result,) = ex.run([Program("print('ok')")])
    assert (signal.getsignal(signal.SIGCHLD), signal.getsignal(signal.SIGALRM)) == before
    assert (result.status, result.stdout) == ("passed", "ok\n")


# ----------------------------------------------------------------------------- what a program can read (issue 27.1)


def _world_readable(path: str, text: str) -> str:
    os.makedirs(os.path.dirname(path), exist_ok=True)
    with open(path, "w") as f:
        f.write(text)
    os.chmod(path, 0o644)
    folder = os.path.dirname(path)
    while folder not in ("/", "/var/tmp"):  # mkdtemp makes 0700 folders: open them, as a real data dir would be
        os.chmod(folder, 0o755)
        folder = os.path.dirname(folder)
    return path


@pytest.fixture
def run_paths(monkeypatch):
    """Every path a run knows, as a user would have them: the package's bundled sample data and the checkout it
    comes from, a CRITICBENCH_DATA_DIR copy, an HF_HOME outside $HOME with a token, an earlier --log_samples folder,
    the working directory with a world-readable .env, a file in $HOME, and the checkout the venv sits in.
    /var/tmp, not /tmp: the old layer hid /tmp, so only a place it left visible tells the layers apart."""
    import critic_tasks

    tag = uuid.uuid4().hex[:10]
    base = tempfile.mkdtemp(prefix=f"critic-sbx-known-{tag}-", dir="/var/tmp")
    os.chmod(base, 0o755)
    package = os.path.dirname(os.path.abspath(critic_tasks.__file__))
    sample = os.path.join(package, "protocols", "criticbench", "sample_data", "obj_dev_data",
                          "math_pot_feedback_correction.json")
    data_dir = os.path.join(base, "criticbench")
    copy = _world_readable(os.path.join(data_dir, "obj_dev_data", "math_pot_feedback_correction.json"),
                           open(sample).read())
    hf_home = os.path.join(base, "hf")
    token = _world_readable(os.path.join(hf_home, "token"), "hf_" + tag)
    cached = _world_readable(os.path.join(hf_home, "datasets", "criticbench.arrow"), "gold answers")
    samples = _world_readable(os.path.join(base, "out", "samples_critic_correction.jsonl"), '{"gold": 42}\n')
    project = os.path.join(base, "project")
    dotenv = _world_readable(os.path.join(project, ".env"), f"OPENAI_API_KEY=sk-{tag}\n")
    home_file = os.path.join(os.path.expanduser("~"), f"critic-sbx-known-{tag}.txt")
    _world_readable(home_file, "a user file")
    monkeypatch.setenv("CRITICBENCH_DATA_DIR", data_dir)
    monkeypatch.setenv("HF_HOME", hf_home)
    monkeypatch.chdir(project)
    paths = [sample, os.path.join(package, "__init__.py"), copy, token, cached, samples, dotenv, home_file]
    for checkout in {os.path.dirname(package), os.path.dirname(os.path.realpath(sys.prefix))}:
        paths += [p for p in (os.path.join(checkout, "pyproject.toml"), os.path.join(checkout, "README.md"))
                  if os.path.exists(p)]
    try:
        yield paths
    finally:
        shutil.rmtree(base, ignore_errors=True)
        os.remove(home_file)


READ_ALL = """
import os, sys
read = []
for path in {paths!r}:
    try:
        with open(path, "rb") as f:
            f.read(1)
        read.append(path)
    except OSError:
        pass
for folder in {folders!r}:  # a folder may show the way to the interpreter (the venv in a checkout), no file
    try:
        read += [os.path.join(folder, n) for n in os.listdir(folder) if not os.path.isdir(os.path.join(folder, n))]
    except OSError:
        pass
print("read:", read)
sys.exit(0 if read else 1)
"""


def test_a_program_reads_nothing_the_run_knows(run_paths):
    """Issue 27.1: the old bwrap layer bound all of / read-only, so a program opened the dataset (its gold
    answers), earlier outputs, the working tree and world-readable secrets. Now none of them exists inside."""
    layer_ex = SandboxExecutor(**_variants()[0].values[0])
    if layer_ex.isolation != "bwrap":
        pytest.skip(f"{layer_ex.isolation}: only bwrap hides the file system (the layer's warning says so)")
    folders = sorted({os.path.dirname(p) for p in run_paths} | {os.getcwd()})
    (result,) = layer_ex.run([Program(READ_ALL.format(paths=run_paths, folders=folders))])
    assert (result.status, result.stdout) == ("failed", "read: []\n"), result
    # ... while the interpreter, its stdlib and the site-packages a program may import are all there
    (ok,) = layer_ex.run([Program("import json, ctypes, numpy\nprint(numpy.arange(3).sum())")])
    assert (ok.status, ok.stdout) == ("passed", "3\n"), ok


def test_weaker_layers_say_what_they_cannot_hide(caplog):
    """A weaker layer never hides less silently: its one warning line says the file system stays readable."""
    import logging

    from critic_tasks.sandbox import _isolation as module

    for layer in ("unshare-net", "rlimits"):  # each said once in this test's run (tests/conftest.py: new_run)
        with caplog.at_level(logging.WARNING, logger="critic_tasks"):
            module._announce(layer, True)
        line = [r.getMessage() for r in caplog.records if layer in r.getMessage()][-1]
        assert "reads every file" in line and "no byte cap" in line and "\n" not in line


# ----------------------------------------------------------------------------- caps on the whole tree (issue 27.9)

THREE_CHILDREN = """
import os, select, signal, sys, time
r, w = os.pipe()
kids = []
for _ in range(3):
    kid = os.fork()
    if kid == 0:
        os.close(r)
        block = b"x" * (150 << 20)  # written, so every page is charged
        os.write(w, b"1")
        time.sleep(30)
        os._exit(0)
    kids.append(kid)
os.close(w)
held, killed, deadline = 0, 0, time.monotonic() + 8
while held < len(kids) and not killed and time.monotonic() < deadline:
    if select.select([r], [], [], 0.05)[0]:
        held += len(os.read(r, 3))
    done, status = os.waitpid(-1, os.WNOHANG)
    killed += bool(done) and os.WIFSIGNALED(status)
print("held", held, "killed", killed)
for kid in kids:
    os.kill(kid, signal.SIGKILL)
sys.exit(0 if held == len(kids) else 1)
"""


def test_three_children_over_memory_mb_together_are_killed():
    """Issue 27.9: RLIMIT_AS caps each process, so three forked children held 3 x 150 MB against 256 MB. The
    program's cgroup caps the whole tree: one of them is killed before all three hold their share."""
    layer_ex = SandboxExecutor(memory_mb=256, **_variants()[0].values[0])
    if "memory" not in layer_ex.cgroups:
        pytest.skip("no writable cgroup memory controller here (the executor's warning says what that means)")
    (result,) = layer_ex.run([Program(THREE_CHILDREN, timeout_s=12)])
    assert result.status == "failed" and result.stdout.startswith("held ") and "killed 1" in result.stdout, result
    # one child alone fits
    (one,) = layer_ex.run([Program(THREE_CHILDREN.replace("range(3)", "range(1)"), timeout_s=12)])
    assert (one.status, one.stdout) == ("passed", "held 1 killed 0\n"), one


WRITE_FILES = """
import sys
for i in range(3):
    with open(f"{folder}/f{{i}}.bin", "wb") as f:
        f.write(b"x" * (15 << 20))  # under the 16 MB per-file cap, 45 MB in all
print("wrote 45 MB")
"""


@pytest.mark.parametrize("folder", ["/tmp", "."])
def test_writing_beyond_the_tmp_and_work_dir_caps_fails(folder):
    """Issue 27.9: the per-file cap alone let a program fill /tmp (a RAM tmpfs of no size) and its work dir with
    many files. Both now live in one tmpfs of ``max_disk_mb``."""
    layer_ex = SandboxExecutor(max_disk_mb=32, max_file_mb=16, **_variants()[0].values[0])
    if layer_ex.isolation != "bwrap":
        pytest.skip(f"{layer_ex.isolation}: the weaker layers cap each file only (their warning says so)")
    (result,) = layer_ex.run([Program(WRITE_FILES.format(folder=folder), timeout_s=10)])
    assert result.status == "failed" and "No space left on device" in result.stderr, result
    (small,) = layer_ex.run([Program(WRITE_FILES.format(folder=folder).replace("range(3)", "range(1)"))])
    assert small.status == "passed", small


DEEP_TREE = """
import glob
import json
import os
for _ in range(3000):
    os.mkdir("d")
    os.chdir("d")
open("leaf.txt", "w").write("x")
os.chmod(".", 0)
print("deep")
"""


@pytest.mark.parametrize("variant", _variants())
def test_a_3000_deep_tree_is_removed(variant):
    """Issue 27.9: shutil.rmtree raised on a 3,000-deep tree and left the work dir on the host."""
    layer_ex = SandboxExecutor(**variant)
    before = set(glob.glob(os.path.join(tempfile.gettempdir(), f"critic-sbx-{os.getpid()}-*")))
    (result,) = layer_ex.run([Program(DEEP_TREE, timeout_s=20)])
    assert (result.status, result.stdout) == ("passed", "deep\n"), result
    assert set(glob.glob(os.path.join(tempfile.gettempdir(), f"critic-sbx-{os.getpid()}-*"))) <= before


def test_remove_tree_at_any_depth_without_following_links():
    from critic_tasks.sandbox._limits import remove_tree

    top = tempfile.mkdtemp(prefix="critic-deep-")
    outside = tempfile.mkdtemp(prefix="critic-keep-")
    open(os.path.join(outside, "keep.txt"), "w").write("keep")
    fd = os.open(top, os.O_RDONLY)
    for i in range(1200):  # deeper than shutil.rmtree's recursion; by descriptor, as the path outgrows PATH_MAX
        os.mkdir("d" * 8, dir_fd=fd)
        if i == 10:
            os.symlink(outside, "link", dir_fd=fd)
            open(os.open("file", os.O_WRONLY | os.O_CREAT, dir_fd=fd), "w").write("x")
        inner = os.open("d" * 8, os.O_RDONLY, dir_fd=fd)
        os.close(fd)
        fd = inner
    os.fchmod(fd, 0)  # closed by its program
    os.close(fd)
    remove_tree(top)
    assert not os.path.exists(top)
    assert open(os.path.join(outside, "keep.txt")).read() == "keep"
    shutil.rmtree(outside)


# ----------------------------------------------------------------------------- pre-started sandboxes (issue 27.12)

LEAVES_TRACES = r'''
import ctypes, os, sys, time
libc = ctypes.CDLL(None, use_errno=True)
open("/tmp/left-by-a", "w").write("a")
open("left-in-workdir", "w").write("a")
os.makedirs("/tmp/deep/" + "/".join(["d"] * 50))
os.chmod("/tmp/deep", 0)
made = [libc.msgget(4242, 0o1666) >= 0, libc.shmget(4243, 4096, 0o1666) >= 0,
        libc.semget(4244, 1, 0o1666) >= 0, libc.mq_open(b"/critic-q", os.O_CREAT | os.O_RDWR, 0o666, None) >= 0]
for dumpable in (1, 0):  # a daemon: its own session, its parent gone (not dumpable: root owns its /proc files)
    if os.fork() == 0:
        os.setsid()
        if os.fork() == 0:
            libc.prctl(4, dumpable, 0, 0, 0)  # PR_SET_DUMPABLE
            time.sleep(60)
        os._exit(0)
sys.stdout.write(f"made {made}\n")
sys.stdout.flush()
'''
LOOKS_FOR_TRACES = r'''
import ctypes, os, sys
libc = ctypes.CDLL(None, use_errno=True)
# not an item's trace: its own work dir, and the folder on the way to an interpreter that lives under /tmp
found = [p for p in os.listdir("/tmp") if p != os.path.basename(os.getcwd())
         and not any(x.startswith(f"/tmp/{p}/") for x in (sys.prefix, sys.base_prefix, sys.executable))]
found += os.listdir(".")
found += [name for name, there in (("msg", libc.msgget(4242, 0) >= 0), ("shm", libc.shmget(4243, 0, 0) >= 0),
                                   ("sem", libc.semget(4244, 0, 0) >= 0),
                                   ("mq", libc.mq_open(b"/critic-q", os.O_RDWR, 0, None) >= 0)) if there]
for pid in os.listdir("/proc"):
    if pid.isdigit() and int(pid) != os.getpid() and os.stat(f"/proc/{pid}").st_uid == os.getuid():
        found.append("process " + open(f"/proc/{pid}/cmdline", "rb").read().decode(errors="replace")[:40])
sys.stdout.write(f"found {found}\n")
sys.stdout.flush()
'''
REPORTS = "import sys\nprint(sys.stdin.readline().strip(), file=sys.stderr)\n"


def test_items_in_one_worker_see_nothing_of_each_other():
    """Pairs run in pre-started sandboxes, one fresh process per item. Item A leaves files in /tmp and its work dir
    (a folder it closed, 50 deep), System V and POSIX IPC objects and a daemon; item B, next in the same worker,
    finds none of them and only its own files."""
    layer_ex = SandboxExecutor(max_workers=1, **_variants()[0].values[0])
    (a,) = layer_ex.run_pairs([Pair(LEAVES_TRACES, REPORTS)])
    assert a.trusted.stderr == "made [True, True, True, True]\n", a
    (b,) = layer_ex.run_pairs([Pair(LOOKS_FOR_TRACES, REPORTS)])
    assert b.trusted.stderr == "found ['main.py']\n", b


def test_a_candidate_that_ends_its_sandbox_ends_only_its_item():
    """A candidate kills and stops every process it can reach (as its own uid) and exits; the tests' verdict
    stands, and the next item in the same worker runs normally."""
    layer_ex = SandboxExecutor(max_workers=1, **_variants()[0].values[0])
    rampage = ("import os, signal\nfor pid in os.listdir('/proc'):\n    if pid.isdigit() and int(pid) != os.getpid():\n"
               "        for sig in (signal.SIGSTOP, signal.SIGKILL):\n            try:\n"
               "                os.kill(int(pid), sig)\n            except OSError:\n                pass\n"
               "print('x', flush=True)\n")
    first, second = (layer_ex.run_pairs([Pair(rampage, REPORTS)])[0], layer_ex.run_pairs([Pair(rampage, REPORTS)])[0])
    assert (first.trusted.status, first.trusted.stderr) == ("passed", "x\n"), first
    assert (second.trusted.status, second.trusted.stderr) == ("passed", "x\n"), second




def _descendants(pid: int) -> list[int]:
    """Every process under ``pid`` (read from the host's /proc), parents first."""
    children: dict[int, list[int]] = {}
    for entry in os.listdir("/proc"):
        if entry.isdigit():
            try:
                with open(f"/proc/{entry}/stat") as f:
                    parent = int(f.read().rsplit(")", 1)[1].split()[1])
            except (OSError, IndexError, ValueError):
                continue
            children.setdefault(parent, []).append(int(entry))
    found, todo = [], [pid]
    while todo:
        for child in sorted(children.get(todo.pop(0), [])):
            found.append(child)
            todo.append(child)
    return found


@pytest.mark.serial  # times itself (under 5 s against the 10 s a stall took)
def test_a_stopped_janitor_does_not_stall_the_reset():
    """As root, the janitor has the items' real uid for its one kill(-1) call, and an item's process that stops it
    then (SIGSTOP; watching its /proc status, 2 items in 12 did) stalled the reset until the executor's 10 s timeout,
    then the worker was replaced. The zygote now sends its janitor SIGCONT while it waits. Here the janitor is
    stopped from outside between two items: the second item still ends at once, in the same worker."""
    layer_ex = SandboxExecutor(max_workers=1, **_variants()[0].values[0])
    if not layer_ex.reuse_sandboxes or layer_ex.run_as is None:
        pytest.skip("the janitor is the pre-started sandboxes' as root")
    (first,) = layer_ex.run_pairs([Pair("print('x', flush=True)", REPORTS)])
    assert first.trusted.status == "passed", first
    (worker,) = layer_ex._live.values()
    # between items the candidate's zygote has one child, its janitor: the last of the sandbox's processes
    janitor = _descendants(worker.candidate.running.proc.pid)[-1]
    with open(f"/proc/{janitor}/status") as f:
        assert "\nUid:\t0\t0\t0\t0\n" in f.read()
    os.kill(janitor, signal.SIGSTOP)
    start = time.monotonic()
    (second,) = layer_ex.run_pairs([Pair("print('x', flush=True)", REPORTS)])
    took = time.monotonic() - start
    assert (second.trusted.status, second.trusted.stderr) == ("passed", "x\n"), second
    assert took < 5.0 and list(layer_ex._live.values()) == [worker] and worker.alive(), took


def test_items_of_the_tests_side_see_nothing_of_each_other():
    """The tests' side is reset between items as the candidate's is (as root by the zygote's janitor): what one item's
    tests leave (files, a closed folder, IPC objects, a daemon) is gone for the next item's tests."""
    layer_ex = SandboxExecutor(max_workers=1, **_variants()[0].values[0])
    to_stderr = ("sys.stdout.write(", "sys.stderr.write("), ("sys.stdout.flush()", "sys.stderr.flush()")
    leaves, looks = LEAVES_TRACES, LOOKS_FOR_TRACES
    for old, new in to_stderr:
        leaves, looks = leaves.replace(old, new), looks.replace(old, new)
    (a,) = layer_ex.run_pairs([Pair("print('x')", leaves)])
    assert (a.trusted.status, a.trusted.stderr) == ("passed", "made [True, True, True, True]\n"), a
    (b,) = layer_ex.run_pairs([Pair("print('x')", looks)])
    assert (b.trusted.status, b.trusted.stderr) == ("passed", "found []\n"), b



def test_an_item_holds_no_descriptor_of_its_worker():
    """An item's processes hold their three pipes and nothing else of the worker: not the zygote's control socket,
    not the janitor's pipes (an item that could ask for a reset, or read its answer, could make the zygote take a
    stale answer for the next item's), not another item's source."""
    layer_ex = SandboxExecutor(max_workers=1, **_variants()[0].values[0])
    looks = "import os, sys\nprint(sorted(os.listdir('/proc/self/fd'), key=int), file=sys.stderr)\n"
    for pair in layer_ex.run_pairs([Pair(looks, looks + "sys.stdin.read()\n")] * 2):
        assert pair.trusted.stderr == pair.untrusted.stderr == "['0', '1', '2', '3']\n", pair

# programs with a shared prefix (SHARED_PREFIX_END): a pre-started sandbox compiles the prefix once and the rest per
# item; the same programs run whole in fresh sandboxes, where the line is a comment
SHARED_PREFIX = ('"""the prefix\'s docstring"""\nfrom __future__ import annotations\nimport sys\nprefix_only_name = 1\n\n'
                 "def f(x: NotDefinedAnywhere) -> int:\n    return x + 1\n")
SEES = ('"not a docstring: a statement after the prefix"\n'
        "import sys as _s\nmain = _s.modules['__main__']\n\n\ndef g(y: AlsoUndefined):\n    pass\n\n\n"
        "print(__doc__, f.__annotations__, g.__annotations__, f(1), __name__, globals().get('__file__'),\n"
        "      _s.argv[0] == globals().get('__file__', _s.argv[0]), getattr(main, 'f', None) is f, file=_s.stderr)\n"
        "print('whole:', 'prefix_only_name' in _s._getframe().f_code.co_names, file=_s.stderr)\n"
        "raise ValueError('from the rest')\n")
CONTINUES = "else:\n    y = 2\nprint('y', y, 'whole:', 'prefix_only_name' in sys._getframe().f_code.co_names, file=sys.stderr)\n"
BROKEN = "print('the prefix ran', file=sys.stderr)\ndef (:\n"
WAITS = "import sys\nsys.stdin.read()\n"


def _main_py_lines(text):
    """What a program's stderr says, but the frames of whoever ran it (boot.py, the zygote, runpy: functions, or not
    main.py)."""
    lines, skip = [], False
    for line in text.splitlines():
        if line.startswith("  File "):
            skip = not line.endswith('"main.py"') and not ('"main.py"' in line and line.endswith("in <module>"))
        elif not line.startswith("    ") or not skip:
            skip = False
        if not skip:
            lines.append(line)
    return lines


def test_a_shared_prefix_runs_as_the_whole_program_would():
    """A program whose text has SHARED_PREFIX_END runs in a pre-started sandbox as its whole text runs in a fresh one,
    on both sides of a pair, for a second item too (the prefix then comes from the zygote's cache): the prefix's
    docstring and ``from __future__`` hold, a string after the line is no docstring, ``__name__``, ``__file__``,
    ``argv[0]`` and ``__main__`` are the file's, and tracebacks name the same lines of main.py. The rest is compiled
    apart (its code does not hold the prefix's names) where it compiles alone; a rest that continues a statement of
    the prefix (``else:``) runs as the whole text, and one that is not Python fails before the prefix runs."""
    from critic_tasks.sandbox import SHARED_PREFIX_END

    layer = _variants()[0].values[0]
    if layer.get("isolation") != "bwrap":
        pytest.skip("pre-started sandboxes need bwrap")
    head = SHARED_PREFIX + SHARED_PREFIX_END
    programs = [head + SEES, head + SEES, SHARED_PREFIX + "if True:\n    y = 1\n" + SHARED_PREFIX_END + CONTINUES,
                head + BROKEN]
    pairs = [Pair(program, WAITS) for program in programs] + [Pair("print('x')", program + "\nsys.stdin.read()\n")
                                                                for program in programs]
    reused = SandboxExecutor(max_workers=1, **layer)
    fresh = SandboxExecutor(max_workers=1, reuse_sandboxes=False, **layer)
    assert reused.reuse_sandboxes and not fresh.reuse_sandboxes
    got, want = reused.run_pairs(pairs), fresh.run_pairs(pairs)
    for kind, (mine, whole) in [("candidate", (g.untrusted, w.untrusted)) for g, w in zip(got[:4], want[:4])] + \
                               [("tests", (g.trusted, w.trusted)) for g, w in zip(got[4:], want[4:])]:
        mine_lines, whole_lines = _main_py_lines(mine.stderr), _main_py_lines(whole.stderr)
        assert [line.replace("whole: False", "whole: True") for line in mine_lines] == whole_lines, (kind, mine, whole)
        assert mine.status == whole.status, (kind, mine, whole)
    sees = _main_py_lines(got[0].untrusted.stderr)
    assert sees[:2] == ["the prefix's docstring {'x': 'NotDefinedAnywhere', 'return': 'int'} {'y': 'AlsoUndefined'} 2 "
                        "__main__ main.py True True",
                        "whole: False"], sees  # split: the rest compiled apart
    assert sees[-3:] == ['  File "main.py", line 21, in <module>', "    raise ValueError('from the rest')",
                         "ValueError: from the rest"], sees
    assert _main_py_lines(got[1].untrusted.stderr) == sees  # the second item: the prefix from the cache
    assert _main_py_lines(got[4].trusted.stderr)[:2] == [
        "the prefix's docstring {'x': 'NotDefinedAnywhere', 'return': 'int'} {'y': 'AlsoUndefined'} 2 __main__ None "
        "True False",
        "whole: False"]  # the tests' side: run inline, as boot.py runs it (no file, no module of its own)
    assert _main_py_lines(got[2].untrusted.stderr) == ["y 1 whole: True"]
    broken = got[3].untrusted.stderr
    assert "the prefix ran" not in broken and "SyntaxError" in broken, broken


def test_the_shared_prefix_is_ours_whatever_a_model_writes():
    """A zygote compiles and keeps a program's text up to SHARED_PREFIX_END, which must be our own code: a model's
    revision (and an item's tests or question) that writes that line itself, at its start or in its middle, only
    adds text after our prefix, inside a string literal, so each program's shared prefix is the same bytes as ever
    and a zygote never compiles or keeps an item's text."""
    from critic_tasks.protocols.criticbench.correction.programs import CANDIDATE_HEAD, TESTER_HEAD, build_code_test_pair
    from critic_tasks.sandbox import SHARED_PREFIX_END
    from critic_tasks.sandbox._workers import _shared_length

    marker = SHARED_PREFIX_END
    code = f"{marker}def add(a, b):\n{marker}    return a + b\n{marker}"
    tests = f"{marker}assert add(1, 2) == 3\n{marker}"
    candidate, tester = build_code_test_pair(code, tests, "mbpp", "add", ["add"], "t" * 32,
                                             question=f"{marker}Write add.\n{marker}")
    assert candidate.startswith(CANDIDATE_HEAD) and tester.startswith(TESTER_HEAD)
    assert _shared_length(candidate) == len(CANDIDATE_HEAD.encode()) and _shared_length(tester) == len(TESTER_HEAD.encode())
    for program, head in ((candidate, CANDIDATE_HEAD), (tester, TESTER_HEAD)):  # the rest: no line of it is the marker
        assert marker.rstrip("\n") not in program[len(head):].splitlines()


def test_a_run_path_inside_a_shown_folder_is_covered(monkeypatch):
    """Where one of the run's paths lies inside a folder the sandbox must show (here a data dir and an output
    folder inside the interpreter's own venv), it is covered by an empty tmpfs: the venv still works, they are
    empty."""
    if TEMP_VENV_PYTHON is None:
        pytest.skip("could not make a virtual environment under the temp dir")
    prefix = os.path.dirname(os.path.dirname(TEMP_VENV_PYTHON))
    tag = uuid.uuid4().hex[:8]
    data = _world_readable(os.path.join(prefix, f"data-{tag}", "gold.json"), '{"answer": 42}')
    out = _world_readable(os.path.join(prefix, f"out-{tag}", "samples.jsonl"), '{"gold": 42}\n')
    os.chmod(prefix, 0o755)
    monkeypatch.setenv("CRITICBENCH_DATA_DIR", os.path.dirname(data))
    layer_ex = SandboxExecutor(python=TEMP_VENV_PYTHON, hide=[os.path.dirname(out)],
                               allow_unisolated=detect_isolation() != "bwrap")
    if layer_ex.isolation != "bwrap":
        pytest.skip(f"{layer_ex.isolation}: only bwrap hides the file system (the layer's warning says so)")
    folders = [os.path.dirname(data), os.path.dirname(out)]
    (result,) = layer_ex.run([Program(READ_ALL.format(paths=[data, out], folders=folders))])
    assert (result.status, result.stdout) == ("failed", "read: []\n"), result
    (ok,) = layer_ex.run([Program(f"import os, sys\nprint(os.path.isfile({os.path.join(prefix, 'pyvenv.cfg')!r}))")])
    assert (ok.status, ok.stdout) == ("passed", "True\n"), ok


# a candidate under an interpreter that lives under /tmp: what it finds in the sandbox's /tmp, whether it can change
# the interpreter's folder there, and a file it leaves behind for the next item
LOOKS_IN_TMP = r'''
import os, sys
top = os.path.abspath(sys.executable).split("/")[2]
found = sorted(n for n in os.listdir("/tmp") if n != os.path.basename(os.getcwd()))
changed = []
for target in (f"/tmp/{top}/planted", os.path.dirname(os.path.abspath(sys.executable)) + "/planted"):
    try:
        open(target, "w").close()
        changed.append(target)
    except OSError:
        pass
try:
    os.rename(f"/tmp/{top}", "/tmp/moved")
    changed.append("moved")
except OSError:
    pass
open("/tmp/left-by-an-item", "w").write("x")
print(repr((found, changed)), flush=True)
'''


def test_an_interpreter_under_the_temp_dir_keeps_the_pre_started_sandboxes():
    """An interpreter under /tmp (a venv there, as many CI systems make) is bound read-only into the sandbox's /tmp.
    The zygote empties that /tmp between items but the view's own folders, so pairs keep their pre-started
    sandboxes (they fell back to two fresh sandboxes per item, 0.71x a plain subprocess): the same worker runs every
    item, each item finds only the interpreter's folder in /tmp (nothing of the item before it), and no item can
    change, move or plant anything in the interpreter's folder."""
    if TEMP_VENV_PYTHON is None or detect_isolation() != "bwrap" or os.geteuid() != 0:
        pytest.skip("needs a venv under the temp dir, bwrap and root (where sandboxes are reused)")
    assert os.path.realpath(TEMP_VENV_PYTHON).startswith("/tmp/") or TEMP_VENV_PYTHON.startswith("/tmp/")
    top = TEMP_VENV_PYTHON.split("/")[2]
    ex = SandboxExecutor(python=TEMP_VENV_PYTHON, max_workers=1)
    assert ex.reuse_sandboxes is True
    first = ex.run_pairs([Pair(LOOKS_IN_TMP, REPORTS)])
    (worker,) = ex._live.values()
    pids = [side.running.proc.pid for side in worker.sides]
    rest = ex.run_pairs([Pair(LOOKS_IN_TMP, REPORTS)] * 2)
    assert list(ex._live.values()) == [worker] and [side.running.proc.pid for side in worker.sides] == pids
    for pair in first + rest:
        assert (pair.trusted.status, pair.trusted.stderr) == ("passed", f"{([top], [])!r}\n"), pair
    assert not os.path.exists(os.path.join("/tmp", top, "planted"))
    ex.close()


AS_ANOTHER_USER = r'''
import json, os, sys
from critic_tasks.sandbox import Pair, SandboxExecutor
REPORTS = "import sys\nprint(sys.stdin.readline().strip(), file=sys.stderr)\n"
# what an item finds in /tmp besides its own work folder and, for an interpreter under /tmp (a CI clone's venv),
# the read-only folder of the view that holds it
LOOKS = ("import os, sys\nview = {p.split('/')[2] for p in (sys.executable, sys.prefix) if p.startswith('/tmp/')}\n"
         "seen = sorted(n for n in os.listdir('/tmp') if n != os.path.basename(os.getcwd()) and n not in view)\n"
         "open('/tmp/left-by-an-item', 'w').write('x')\nprint(seen, os.getuid(), flush=True)\n")
KILLS = "import os, signal\nos.kill(-1, signal.SIGKILL)\n"
WAITS = "import sys\nsys.stdin.read()\nprint('tested', file=sys.stderr)\n"
ex = SandboxExecutor(max_workers=1)
out = {"reuse": ex.reuse_sandboxes, "uid": os.getuid()}
first = ex.run_pairs([Pair(LOOKS, REPORTS)] * 3)
out["workers"] = [[side.running.proc.pid for side in w.sides] for w in ex._live.values()]
out["items"] = [(p.trusted.status, p.trusted.stderr) for p in first]
after = ex.run_pairs([Pair(KILLS, WAITS), Pair(LOOKS, REPORTS)])
out["after"] = [(p.trusted.status, p.trusted.stderr) for p in after]
print(json.dumps(out))
'''


def test_a_non_root_user_keeps_the_pre_started_sandboxes():
    """Not root, the zygote runs as its items' uid (in the sandbox's own user namespace) and kills them itself, so
    pairs keep their pre-started sandboxes there too (they started two fresh sandboxes per item). Run as nobody: one
    worker runs every item, no item finds anything of the one before it, and a candidate that kills all it can
    reach (its zygote included) ends only its own item: the tester's verdict stands and the next item passes."""
    if os.geteuid() != 0 or detect_isolation() != "bwrap" or not shutil.which("setpriv"):
        pytest.skip("needs root (to become another user), bwrap and setpriv")
    repo = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
    cmd = ["setpriv", "--reuid=65534", "--regid=65534", "--clear-groups", sys.executable, "-c", AS_ANOTHER_USER]
    env = {"PATH": "/usr/bin:/bin", "HOME": "/nonexistent", "PYTHONPATH": repo, "LANG": "C.UTF-8"}
    if subprocess.run(cmd[:4] + [sys.executable, "-c", "import critic_tasks"], env=env, cwd="/",
                      capture_output=True, timeout=60).returncode != 0:
        pytest.skip(f"nobody cannot run {sys.executable} with this checkout")
    done = subprocess.run(cmd, env=env, cwd="/", capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stderr[-2000:]
    out = json.loads(done.stdout.splitlines()[-1])
    assert (out["reuse"], out["uid"], len(out["workers"])) == (True, 65534, 1), out
    assert out["items"] == [["passed", "[] 65534\n"]] * 3, out
    assert out["after"] == [["passed", "tested\n"], ["passed", "[] 65534\n"]], out


PLANTS_OUTSIDE_TMP_AS_ANOTHER_USER = r"""
import json, os, sys
from critic_tasks.sandbox import Pair, SandboxExecutor
REPORTS = "import sys\nprint(sys.stdin.readline().strip(), file=sys.stderr)\n"
# what bwrap makes outside /tmp as the items' own uid (not root): its root, /etc, /dev, /dev/shm, the empty tmpfs over
# a hidden folder inside a shown one (the venv's); and /tmp's own tmpfs, /dev/mqueue's and /dev/pts's roots
cover = sys.argv[1]
FOLDERS = ["/", "/etc", "/dev", "/dev/shm"] + ([cover] if cover else [])
PLANTS = ("import os\nplanted = []\nfor folder in FOLDERS:\n    try:\n"
          "        open(os.path.join(folder, 'left-by-an-item'), 'w').write('x')\n        planted.append(folder)\n"
          "    except OSError:\n        pass\nprint(planted, flush=True)\n").replace("FOLDERS", repr(FOLDERS))
MARKS = ("import os\ntry:\n    os.setxattr(FOLDER, 'user.left', b'x')\n    print('marked', flush=True)\n"
         "except OSError as err:\n    print('unmarked', err.errno, flush=True)\n")
TIMES = ("import os\nfor folder in ('/tmp', '/dev/mqueue', '/dev/pts'):\n"
         "    os.utime(folder, ns=(4242424242000000000, 4242424242000000000))\nprint('marked', flush=True)\n")
LOOKS = ("import os\nseen = [f for f in FOLDERS if 'left-by-an-item' in os.listdir(f)]\n"
         "for folder in ('/', '/tmp'):\n    try:\n"
         "        seen += [folder + ' ' + n for n in os.listxattr(folder) if n.startswith('user.')]\n"
         "    except OSError:\n        pass\n"
         "seen += [f for f in ('/tmp', '/dev/mqueue', '/dev/pts') if 4242424242000000000 in\n"
         "         (os.stat(f).st_atime_ns, os.stat(f).st_mtime_ns)]\nprint(seen, flush=True)\n").replace(
    "FOLDERS", repr(FOLDERS))
ex = SandboxExecutor(max_workers=1, hide=[cover] if cover else [])
out = {"reuse": ex.reuse_sandboxes, "items": [], "workers": []}
for program in (LOOKS, PLANTS, LOOKS, MARKS.replace("FOLDER", "'/'"), LOOKS, MARKS.replace("FOLDER", "'/tmp'"), LOOKS,
                TIMES, LOOKS):
    (pair,) = ex.run_pairs([Pair(program, REPORTS)])
    out["items"].append([pair.trusted.status, pair.trusted.stderr])
    out["workers"].append([[side.running.proc.pid for side in w.sides] for w in ex._live.values()])
print(json.dumps(out))
"""


def test_a_non_root_user_replaces_a_worker_whose_view_outside_tmp_an_item_changed():
    """Not root, bwrap makes its root, /etc, /dev and /dev/shm (and the empty folders on the way to the interpreter),
    the empty tmpfs over a hidden folder inside a shown one, and the roots of /tmp, /dev/mqueue and /dev/pts as the
    items' own uid, so an item could plant a file there, set an extended attribute on / or /tmp, or a time of its
    choosing on those roots, and the next item in the same worker (another model's answer) found it: the reset
    empties what is inside /tmp alone. The zygote now compares all of that with its state at boot after every item
    (entries, modes, owners, ctimes, /tmp's attributes) and replaces a worker whose view changed, and each reset sets
    those roots' times to its own: honest items keep one worker, and no item finds what the one before it left."""
    if os.geteuid() != 0 or detect_isolation() != "bwrap" or not shutil.which("setpriv"):
        pytest.skip("needs root (to become another user), bwrap and setpriv")
    repo = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
    env = {"PATH": "/usr/bin:/bin", "HOME": "/nonexistent", "PYTHONPATH": repo, "LANG": "C.UTF-8"}
    as_nobody = ["setpriv", "--reuid=65534", "--regid=65534", "--clear-groups", sys.executable, "-c"]
    if subprocess.run(as_nobody + ["import critic_tasks"], env=env, cwd="/", capture_output=True,
                      timeout=60).returncode != 0:
        pytest.skip(f"nobody cannot run {sys.executable} with this checkout")
    covers = [os.path.join(sys.prefix, name) for name in ("include", "share")]
    cover = next((c for c in covers if sys.prefix != sys.base_prefix and os.path.isdir(c)), "")
    done = subprocess.run(as_nobody + [PLANTS_OUTSIDE_TMP_AS_ANOTHER_USER, cover], env=env, cwd="/",
                          capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stderr[-2000:]
    out = json.loads(done.stdout.splitlines()[-1])
    assert out["reuse"] is True, out
    items, workers = out["items"], out["workers"]
    assert items[0::2] == [["passed", "[]\n"]] * 5, out  # every look after an attack finds nothing
    folders = ["/", "/etc", "/dev", "/dev/shm"] + ([cover] if cover else [])
    assert items[1] == ["passed", f"{folders!r}\n"], out  # what bwrap makes as nobody
    assert len(workers[0]) == 1 and workers[1] == [] and workers[2] and workers[2] != workers[0], out  # replaced
    for marked, after, before in ((items[3], workers[3], workers[2]), (items[5], workers[5], workers[4])):
        assert marked[0] == "passed" and marked[1] in ("marked\n", "unmarked 95\n"), out  # (95: no user xattrs)
        assert after == [] if marked[1] == "marked\n" else after == before, out  # replaced where marked
    assert workers[4] == workers[3] or workers[3] == [], out  # an honest item keeps its worker
    assert items[7] == ["passed", "marked\n"], out  # times: reset, not compared (the worker may stay)


LEAVES_ONE_THING_AS_ANOTHER_USER = r"""
import json
from critic_tasks.sandbox import Pair, SandboxExecutor
REPORTS = "import sys\nprint(sys.stdin.readline().strip(), file=sys.stderr)\n"
HEAD = "import ctypes, os\nlibc = ctypes.CDLL(None, use_errno=True)\n"
LEAVES = [HEAD + "print([libc.msgget(4242, 0o1666) >= 0, libc.shmget(4243, 4096, 0o1666) >= 0,"
                 " libc.semget(4244, 1, 0o1666) >= 0], flush=True)\n",
          HEAD + "print(libc.mq_open(b'/critic-q', os.O_CREAT | os.O_RDWR, 0o666, None) >= 0, flush=True)\n",
          HEAD + "os.link('main.py', '/tmp/kept-by-a-link')\nprint(True, flush=True)\n",
          HEAD + "os.rename('main.py', 'renamed.py')\nprint(True, flush=True)\n"]
LOOKS = (HEAD + "found = [n for n in os.listdir('/tmp') if n != os.path.basename(os.getcwd())] + os.listdir('.')\n"
         "found += [name for name, there in (('msg', libc.msgget(4242, 0) >= 0), ('shm', libc.shmget(4243, 0, 0) >= 0),"
         " ('sem', libc.semget(4244, 0, 0) >= 0), ('mq', libc.mq_open(b'/critic-q', os.O_RDWR, 0, None) >= 0))"
         " if there]\nprint(found, flush=True)\n")
ex = SandboxExecutor(max_workers=1)
programs = [LOOKS] + [p for leaves in LEAVES for p in (leaves, LOOKS)]
out = [[ex.run_as, p.trusted.status, p.trusted.stderr] for p in ex.run_pairs([Pair(p, REPORTS) for p in programs])]
print(json.dumps(out))
"""


def test_a_non_root_user_finds_nothing_of_an_item_that_left_one_thing():
    """Not root, the zygote removes the work dir and main.py it named and forks the helper that reads an item's
    names only when counts say something else is left (/tmp's inodes, /dev/mqueue's size, /proc/sysvipc's lines):
    items that leave only System V IPC objects, only a POSIX queue, only a hard link to their main.py in /tmp, or
    their main.py under another name are each followed by one that finds nothing of them."""
    if os.geteuid() != 0 or detect_isolation() != "bwrap" or not shutil.which("setpriv"):
        pytest.skip("needs root (to become another user), bwrap and setpriv")
    repo = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
    env = {"PATH": "/usr/bin:/bin", "HOME": "/nonexistent", "PYTHONPATH": repo, "LANG": "C.UTF-8"}
    as_nobody = ["setpriv", "--reuid=65534", "--regid=65534", "--clear-groups", sys.executable, "-c"]
    if subprocess.run(as_nobody + ["import critic_tasks"], env=env, cwd="/", capture_output=True,
                      timeout=60).returncode != 0:
        pytest.skip(f"nobody cannot run {sys.executable} with this checkout")
    done = subprocess.run(as_nobody + [LEAVES_ONE_THING_AS_ANOTHER_USER], env=env, cwd="/", capture_output=True,
                          text=True, timeout=120)
    assert done.returncode == 0, done.stderr[-2000:]
    out = json.loads(done.stdout.splitlines()[-1])
    assert all(o[0] is None and o[1] == "passed" for o in out), out
    assert [o[2] for o in out[1::2]] == ["[True, True, True]\n", "True\n", "True\n", "True\n"], out
    assert [o[2] for o in out[0::2]] == ["['main.py']\n"] * 5, out


# an item's names (files, folders, POSIX queues) with a token in them, and an item that looks for that token in its own
# memory: a pre-started sandbox's next item starts as a copy of the zygote's, which must never have read those names
LEAVES_NAMES = """
import ctypes, os
libc = ctypes.CDLL(None, use_errno=True)
for i in range(300):
    open(f"/tmp/{TOKEN}{i}", "w").close()
    os.makedirs(f"left/{TOKEN}d{i}")
    libc.mq_open(f"/{TOKEN}q{i}".encode(), os.O_CREAT | os.O_RDWR, 0o666, None)
print("left", flush=True)
"""
FINDS_IN_ITS_MEMORY = r"""
head, tail = bytes.fromhex(HEAD), bytes.fromhex(TAIL)  # never side by side here but where the token is
hits = 0
with open("/proc/self/maps") as maps, open("/proc/self/mem", "rb", 0) as mem:
    for line in maps:
        lo, hi = (int(x, 16) for x in line.split()[0].split("-"))
        if "r" not in line.split()[1] or hi - lo > (1 << 30):
            continue
        try:
            mem.seek(lo)
            chunk = mem.read(hi - lo)
        except OSError:
            continue
        at = chunk.find(head)
        while at >= 0:
            hits += chunk[at + len(head):at + len(head) + len(tail)] == tail
            at = chunk.find(head, at + 1)
print("hits", hits, flush=True)
"""
NAMES_AS_ANOTHER_USER = """
import json, sys
from critic_tasks.sandbox import Pair, SandboxExecutor
ex = SandboxExecutor(max_workers=1)
pairs = [Pair(program, sys.argv[2]) for program in json.loads(sys.argv[1])]
print(json.dumps([[ex.run_as, p.trusted.status, p.trusted.stderr] for p in ex.run_pairs(pairs)]))
"""


@pytest.mark.parametrize("user", ["root", "nobody"])
def test_the_next_item_finds_no_name_the_item_before_it_chose_in_its_memory(user):
    """Between items a pre-started sandbox reads what the item left (its files', folders' and queues' names) to
    remove it. Not root, the zygote did that itself, and the next item (another model's answer) starts as a copy of
    its memory: a candidate found ~180 copies of the names the one before it chose in its own memory. A helper forked
    per item now does it (as root the janitor does). The control: an item finds its own token."""
    if os.geteuid() != 0 or detect_isolation() != "bwrap" or not shutil.which("setpriv"):
        pytest.skip("needs root (and to become another user), bwrap and setpriv")
    token = "tok" + uuid.uuid4().hex
    finds = FINDS_IN_ITS_MEMORY.replace("HEAD", repr(token[:10].encode().hex())).replace(
        "TAIL", repr(token[10:].encode().hex()))
    programs = [finds, LEAVES_NAMES.replace("{TOKEN}", token), finds, f"mine = {token!r}\n" + finds]
    if user == "root":
        ex = SandboxExecutor(max_workers=1)
        out = [[ex.run_as, p.trusted.status, p.trusted.stderr] for p in ex.run_pairs([Pair(p, REPORTS) for p in programs])]
    else:
        repo = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
        env = {"PATH": "/usr/bin:/bin", "HOME": "/nonexistent", "PYTHONPATH": repo, "LANG": "C.UTF-8"}
        cmd = ["setpriv", "--reuid=65534", "--regid=65534", "--clear-groups", sys.executable, "-c"]
        if subprocess.run(cmd + ["import critic_tasks"], env=env, cwd="/", capture_output=True,
                          timeout=60).returncode != 0:
            pytest.skip(f"nobody cannot run {sys.executable} with this checkout")
        done = subprocess.run(cmd + [NAMES_AS_ANOTHER_USER, json.dumps(programs), REPORTS], env=env, cwd="/",
                              capture_output=True, text=True, timeout=120)
        assert done.returncode == 0, done.stderr[-2000:]
        out = json.loads(done.stdout.splitlines()[-1])
    assert (out[0][0] is None) == (user == "nobody"), out
    assert [o[1:] for o in out[:3]] == [["passed", "hits 0\n"], ["passed", "left\n"], ["passed", "hits 0\n"]], out
    assert out[3][1] == "passed" and out[3][2] != "hits 0\n", out  # the control


def _python_3_13_or_later() -> str | None:
    """An interpreter of Python 3.13 or later on this machine (its sys.excepthook imports traceback), if any."""
    found = glob.glob("/usr/bin/python3.1[3-9]") + glob.glob("/usr/local/bin/python3.1[3-9]")
    found += glob.glob(os.path.expanduser("~/.pyenv/versions/3.1[3-9]*/bin/python3.1[3-9]"))
    for python in found:
        try:
            done = subprocess.run([python, "-c", "import sys; sys.exit(sys.version_info < (3, 13))"],
                                  capture_output=True, timeout=30)
        except (OSError, subprocess.SubprocessError):
            continue
        if done.returncode == 0:
            return python
    return None


# a module an item leaves in /tmp, the working directory of its zygote, that takes the zygote over if imported there:
# it marks the builtins (which every later item's process inherits) and serves on
RUNS_IN_THE_ZYGOTE = r"""
import builtins, sys
builtins.LEFT_BY_AN_EARLIER_ITEM = "ran in the zygote"
exc = getattr(sys, "last_exc", None)
tb = exc.__traceback__ if exc is not None else getattr(sys, "last_traceback", None)
zygote = None
while tb is not None:
    if "_serve" in tb.tb_frame.f_globals and "_CONTROL" in tb.tb_frame.f_globals:
        zygote = tb.tb_frame.f_globals
    tb = tb.tb_next
if zygote is not None:
    zygote["_serve"]()
"""
PLANTS_A_MODULE_IN_ITS_ZYGOTES_FOLDER = f"""
import os, signal, time
open("/tmp/traceback.py", "w").write({RUNS_IN_THE_ZYGOTE!r})
print("planted", flush=True)
os.kill(os.getppid(), signal.SIGINT)  # not root, the zygote (our parent) has our uid
time.sleep(1)
"""
LOOKS_AT_ITS_BUILTINS = "import builtins\nprint(getattr(builtins, 'LEFT_BY_AN_EARLIER_ITEM', 'nothing'), flush=True)\n"
WITH_AN_INTERPRETER_AS_ANOTHER_USER = """
import json, sys
from critic_tasks.sandbox import Pair, SandboxExecutor
ex = SandboxExecutor(python=sys.argv[1], max_workers=1)
out = []
for program in json.loads(sys.argv[2]):
    (pair,) = ex.run_pairs([Pair(program, sys.argv[3], timeout_s=5)])
    out.append([ex.run_as, ex.reuse_sandboxes, pair.trusted.status, pair.trusted.stderr])
print(json.dumps(out))
"""


def test_a_module_an_item_leaves_in_the_temp_dir_never_runs_in_its_zygote():
    """The zygote's working directory is /tmp, where items write, and `python -c` put it first on sys.path. Since the
    zygote no longer preloads traceback (f57bfc4), Python 3.13's sys.excepthook imported it from there: not root, a
    candidate left /tmp/traceback.py and sent its zygote SIGINT, the module ran in the zygote and every later item
    (another model's answer) found what it left in its builtins. The zygote now drops the working directory from its
    sys.path after its own imports, and each item gets it back for itself: the zygote ends instead (a worker
    replaced). As root the janitor, root too, would import it the same way from an error during the reset."""
    python = _python_3_13_or_later()
    if python is None or os.geteuid() != 0 or detect_isolation() != "bwrap" or not shutil.which("setpriv"):
        pytest.skip("needs Python >= 3.13, root (to become another user), bwrap and setpriv")
    repo = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
    env = {"PATH": "/usr/bin:/bin", "HOME": "/nonexistent", "PYTHONPATH": repo, "LANG": "C.UTF-8"}
    cmd = ["setpriv", "--reuid=65534", "--regid=65534", "--clear-groups", sys.executable, "-c"]
    if subprocess.run(cmd + [f"import critic_tasks, subprocess; subprocess.run([{python!r}, '-c', ''], check=True)"],
                      env=env, cwd="/", capture_output=True, timeout=60).returncode != 0:
        pytest.skip(f"nobody cannot run {sys.executable} with this checkout, or {python}")
    programs = [LOOKS_AT_ITS_BUILTINS, PLANTS_A_MODULE_IN_ITS_ZYGOTES_FOLDER, LOOKS_AT_ITS_BUILTINS]
    done = subprocess.run(cmd + [WITH_AN_INTERPRETER_AS_ANOTHER_USER, python, json.dumps(programs), REPORTS], env=env,
                          cwd="/", capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stderr[-2000:]
    out = json.loads(done.stdout.splitlines()[-1])
    assert [o[:2] for o in out] == [[None, True]] * 3, out
    assert [o[2:] for o in out] == [["passed", "nothing\n"], ["passed", "planted\n"], ["passed", "nothing\n"]], out


IN_A_TMP_VENV_AS_ANOTHER_USER = r'''
import json, os, subprocess, sys
from critic_tasks.sandbox import Pair, SandboxExecutor
top = os.path.basename(sys.argv[1])
venv = os.path.join(sys.argv[1], "venv")
subprocess.run([sys.executable, "-m", "venv", "--without-pip", venv], check=True)
REPORTS = "import sys\nprint(sys.stdin.readline().strip(), file=sys.stderr)\n"
LOOKS = ("import os\nseen = sorted(n for n in os.listdir('/tmp') if n != os.path.basename(os.getcwd()))\n"
         f"print(seen, sorted(os.listdir('/tmp/{top}')), flush=True)\n")
PLANTS = f"import os\nopen('/tmp/{top}/planted', 'w').write('x')\nprint(os.path.exists('/tmp/{top}/planted'), flush=True)\n"
ex = SandboxExecutor(python=os.path.join(venv, "bin", "python"), max_workers=1)
out = {"reuse": ex.reuse_sandboxes, "workers": [], "items": []}
for program in (LOOKS, LOOKS, PLANTS, LOOKS):
    (pair,) = ex.run_pairs([Pair(program, REPORTS)])
    out["items"].append([pair.trusted.status, pair.trusted.stderr])
    out["workers"].append([[side.running.proc.pid for side in w.sides] for w in ex._live.values()])
print(json.dumps(out))
'''


def test_a_non_root_user_with_an_interpreter_under_the_temp_dir_keeps_them_and_replaces_a_changed_view():
    """Not root, bwrap makes the folders on the way to an interpreter under /tmp as the items' own uid, so an item
    can plant a file there, which the reset does not empty (it is the view's). The zygote compares those folders
    with their state at boot after every item: honest items keep one worker, and after an item that planted a file
    the worker is replaced, so the next item finds nothing of it."""
    if os.geteuid() != 0 or detect_isolation() != "bwrap" or not shutil.which("setpriv"):
        pytest.skip("needs root (to become another user), bwrap and setpriv")
    repo = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
    env = {"PATH": "/usr/bin:/bin", "HOME": "/nonexistent", "PYTHONPATH": repo, "LANG": "C.UTF-8"}
    as_nobody = ["setpriv", "--reuid=65534", "--regid=65534", "--clear-groups", sys.executable, "-c"]
    if subprocess.run(as_nobody + ["import critic_tasks"], env=env, cwd="/", capture_output=True,
                      timeout=60).returncode != 0:
        pytest.skip(f"nobody cannot run {sys.executable} with this checkout")
    folder = tempfile.mkdtemp(prefix="critic-nobody-", dir="/tmp")  # /tmp itself may be closed to nobody
    try:
        os.chown(folder, 65534, 65534)
        done = subprocess.run(as_nobody + [IN_A_TMP_VENV_AS_ANOTHER_USER, folder], env=env, cwd="/",
                              capture_output=True, text=True, timeout=120)
        assert done.returncode == 0, done.stderr[-2000:]
        out = json.loads(done.stdout.splitlines()[-1])
        top = os.path.basename(folder)
        looked = ["passed", f"{[top]!r} ['venv']\n"]
        assert out["reuse"] is True and out["items"] == [looked, looked, ["passed", "True\n"], looked], out
        first, second, planted, fresh = out["workers"]
        assert len(first) == 1 and second == first and planted == [] and fresh and fresh != first, out
    finally:
        shutil.rmtree(folder, ignore_errors=True)


# ----------------------------------------------------------------------------- what outlives an item (issue 34)

PARKS_FDS = r'''
import os, socket, tempfile
chunk = b"x" * (1 << 20)
memfds = []
for _ in range(3):  # 120 MB of memfds, 40 MB each (under the per-file cap)
    memfds.append(os.memfd_create("parked"))
    for _ in range(40):
        os.write(memfds[-1], chunk)
path = os.path.join(tempfile.gettempdir(), "parked.bin")  # the work dir: in the sandbox's /tmp under bwrap
filler = os.open(path, os.O_CREAT | os.O_RDWR, 0o600)
for _ in range(40):
    os.write(filler, chunk)
a, b = socket.socketpair()
socket.send_fds(a, [b"x"], [*memfds, filler, b.fileno()])  # b's queue holds b: a cycle no process can reach
for fd in (*memfds, filler):
    os.close(fd)
a.close()
b.close()
print("parked", flush=True)
'''
NEEDS_ITS_SHARE = r'''
import os, tempfile
tmp = os.statvfs("/tmp")
used = (tmp.f_blocks - tmp.f_bfree) * tmp.f_frsize
with open(os.path.join(tempfile.gettempdir(), "mine.bin"), "wb") as f:
    for _ in range(40):
        f.write(b"y" * (1 << 20))
held = bytearray(120 << 20)
held[:: 1 << 12] = b"z" * len(held[:: 1 << 12])  # touched: resident
print("ok", used, flush=True)
'''
SAYS_OK = ("import sys\nline = sys.stdin.readline()\nprint(line.strip(), file=sys.stderr)\n"
           "sys.exit(line[:3] not in ('ok ', 'par'))\n")


def _shmem_mb(cgroup: str) -> float:
    """tmpfs and memfd pages charged to ``cgroup`` and below it (v1: total_shmem; v2's shmem is hierarchical)."""
    stat = dict(line.split() for line in open(os.path.join(cgroup, "memory.stat")))
    return int(stat.get("total_shmem", stat["shmem"])) / (1 << 20)


@pytest.mark.parametrize("variant", _variants())
def test_fds_parked_in_a_unix_socket_do_not_reach_the_next_item(variant):
    """Issue 34: a program sent its memfds (120 MB) and a 40 MB file to itself over a socket pair that it left in
    flight, so they outlived all its processes: a pre-started worker stayed charged 160 MB of its 256 MB and its
    64 MB /tmp stayed 40 MB full, and the next right item failed with "No space left on device". Now the next item
    finds /tmp empty and gets its whole share, and no sandbox's memory holds the parked pages any more."""
    layer_ex = SandboxExecutor(max_workers=1, memory_mb=256, max_disk_mb=64, max_file_mb=48, **variant)
    memory = layer_ex.cgroups.get("memory")
    before = _shmem_mb(memory) if memory else 0.0
    (attack,) = layer_ex.run_pairs([Pair(PARKS_FDS, SAYS_OK, timeout_s=20)])
    assert (attack.trusted.status, attack.trusted.stderr) == ("passed", "parked\n"), attack
    # right away (the kernel frees such cycles when any Unix socket on the host is released, so waiting would let
    # some other process's socket do it): the worker that runs the next item holds none of it
    for worker in layer_ex._live.values():
        for side in worker.sides:
            held = [_shmem_mb(c) for c in side.running.cgroups if os.path.exists(os.path.join(c, "memory.stat"))]
            assert all(mb < 8 for mb in held), held
    (right,) = layer_ex.run_pairs([Pair(NEEDS_ITS_SHARE, SAYS_OK, timeout_s=20)])
    assert right.trusted.status == "passed" and right.trusted.stderr.startswith("ok "), right
    if layer_ex.isolation == "bwrap":  # its own /tmp: only its work dir's main.py in it
        assert int(right.trusted.stderr.split()[1]) < 1 << 20, right
    if memory:  # and none of this executor's cgroups (those of finished programs included) keeps it for long
        deadline = time.monotonic() + 2
        while _shmem_mb(memory) > before + 8 and time.monotonic() < deadline:
            time.sleep(0.05)
        assert _shmem_mb(memory) <= before + 8, (before, _shmem_mb(memory))


LEAVES_TIME_WAIT = r'''
import socket
server = socket.socket()
server.bind(("127.0.0.1", 8001))
server.listen()
client = socket.socket()
client.bind(("127.0.0.1", 8000))
client.connect(("127.0.0.1", 8001))
accepted, _ = server.accept()
client.close()  # the side that closes first keeps 127.0.0.1:8000 in TIME_WAIT for a minute
accepted.close()
server.close()
print("ok 0", flush=True)
'''
LISTENS_ON_8000 = r'''
import socket
server = socket.socket()
server.bind(("127.0.0.1", 8000))
server.listen()
print("ok 0", flush=True)
'''


def test_a_worker_that_is_not_back_to_empty_is_replaced():
    """A leftover no reset can remove (a TCP socket in TIME_WAIT holds its port for a minute in the sandbox's
    network namespace) made the next item's bind fail with "Address already in use". The worker measures its
    state after each item and is replaced when it is not empty, so the next item runs in a fresh one."""
    layer_ex = SandboxExecutor(max_workers=1, **_variants()[0].values[0])
    if not layer_ex.reuse_sandboxes:
        pytest.skip("pairs start two fresh sandboxes per item here (no pre-started workers)")
    (first,) = layer_ex.run_pairs([Pair(LEAVES_TIME_WAIT, SAYS_OK)])
    assert first.trusted.status == "passed", first
    (second,) = layer_ex.run_pairs([Pair(LISTENS_ON_8000, SAYS_OK)])
    assert (second.trusted.status, second.trusted.stderr) == ("passed", "ok 0\n"), second


UID_OF = "import os\nprint(os.getuid(), flush=True)\n"
TESTER_AND_CANDIDATE_UIDS = "import os, sys\nprint(sys.stdin.readline().strip(), os.getuid(), file=sys.stderr)\n"
HOLDS_AN_EXECUTOR = """
import json, sys
from critic_tasks.sandbox import Pair, Program, SandboxExecutor
ex = SandboxExecutor(max_workers=1, **{variant!r})
runs = ex.run([Program({program!r})] * 2)
pairs = ex.run_pairs([Pair({program!r}, {tester!r})] * 2)
print(json.dumps([r.stdout for r in runs] + [p.trusted.stderr for p in pairs]), flush=True)
sys.stdin.read()  # the executor (and its uids) lives until the test is done
"""


def _uids_in(outputs: list[str]) -> set[int]:
    uids = {int(uid) for text in outputs for uid in text.split()}
    assert len(uids) >= 3, outputs  # a plain program's, a candidate's and a tester's at least
    return uids


def _uids_of(ex) -> set[int]:
    """The uids that ``ex``'s programs ran as: plain programs, and both sides of pairs."""
    runs = ex.run([Program(UID_OF)] * 2)
    pairs = ex.run_pairs([Pair(UID_OF, TESTER_AND_CANDIDATE_UIDS)] * 2)
    return _uids_in([r.stdout for r in runs] + [p.trusted.stderr for p in pairs])


def test_two_executors_on_one_host_never_share_a_uid():
    """Issue 34: every run on a host used the same sandbox uids (64000 + slot), so two harness processes' programs
    could signal or read each other and shared RLIMIT_NPROC. Two executors in two processes, and two in one, now
    run their programs as disjoint uids."""
    if os.geteuid() != 0:
        pytest.skip("programs run as uids of their own only when the harness is root")
    variant = dict(_variants()[0].values[0])
    mine = SandboxExecutor(max_workers=1, **variant)
    my_uids = _uids_of(mine)
    holds = HOLDS_AN_EXECUTOR.format(variant=variant, program=UID_OF, tester=TESTER_AND_CANDIDATE_UIDS)
    other = subprocess.Popen([sys.executable, "-c", holds], stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True)
    try:
        other_uids = _uids_in(json.loads(other.stdout.readline()))
    finally:
        other.stdin.close()
        other.wait(timeout=60)
    assert other_uids and not my_uids & other_uids, (my_uids, other_uids)
    second = SandboxExecutor(max_workers=1, **variant)
    assert not my_uids & _uids_of(second), my_uids
    assert all(uid > 0 for uid in my_uids | other_uids)
