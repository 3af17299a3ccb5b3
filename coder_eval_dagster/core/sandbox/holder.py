"""What an evaluation's commands see of the machine: a root built from the host's system folders, read-only.

The namespace's first process (``HOLDER``, a small Python program started by
``unshare`` in new user, PID, mount and, when the network is confined,
network namespaces) builds the view once, then keeps it:

- a new root (a tmpfs) holding read-only copies of the system (``/usr``,
  ``/etc``, ``/opt``, the ``/bin``-style links), the Python that runs the
  harness and its venv (uv and the agent CLIs' bundled binaries live there),
  the folders on ``PATH`` (pyenv's shims with pyenv), ``/sys``; a fresh
  ``/proc``; a ``/dev`` of its own (null, zero, full, random, urandom, tty,
  a private ``pts`` and ``shm``); a private ``/tmp``; ``/sandbox`` to mount
  an evaluation's sandbox on. Nothing else of the host: not the homes, not
  ``/run`` (the Docker socket), ``/var``, ``/srv``, ``/mnt``, the project
  (task files, datasets, references), the runs folder or ``DAGSTER_HOME``
  (one of those, or the harness user's home, under ``/opt`` or ``/usr`` shows
  empty, but for the venv or a ``PATH`` folder inside it). Files of ``/etc``
  that only their owner may read (``/etc/shadow``, keys) show empty: commands
  run as the harness's user, root on CI.
- ``pivot_root`` into it, the host's tree detached: nothing below it is
  reachable by any path.

It then serves the harness over a socket (its stdin): how many processes the
namespace holds; give the namespace to an evaluation (the last one's sandbox
and ``/tmp`` go, this one's sandbox shows at ``/sandbox``); mount a host
folder under ``/tmp`` for a while (an agent's home at its own path, an
agent's installed tools in it read-only, the package cache); open a listening socket on the namespace's loopback and
hand it to the harness (the egress proxy and the model proxy listen inside
the namespace that way, with no process of theirs in it). Host folders are
taken from the mount namespace it started in, which it keeps open for that
(``open_tree`` there, ``move_mount`` here: a bind across mount namespaces).
It ends at the end of that socket, and the kernel kills every process
inside with it.

Why no command can undo it: commands and agents run without
``CAP_SYS_ADMIN`` (dropped from their bounding set with ``CAP_SYS_PTRACE``),
so they cannot mount, unmount or remount in this mount namespace; a user
namespace they create gets copies of these mounts locked together (a mask
cannot be lifted, a read-only mount stays read-only); and this process,
which keeps the host's mount namespace open, cannot be traced or have its
descriptors read (it has capabilities they lack, and is not dumpable).
Needs Linux 5.12 (``mount_setattr``).
"""

from __future__ import annotations

import array
import contextlib
import functools
import os
import socket
import stat
import subprocess
import sys
import threading
from collections.abc import Iterable
from dataclasses import dataclass
from pathlib import Path

from ..places import dagster_home, user_home

SANDBOX_PATH = Path("/sandbox")  # where commands and agents see their sandbox: no run, variant or row in it
REPLY_TIMEOUT_S = 10.0
# The host's system folders a command may need, shown read-only when they exist.
SYSTEM = ("/usr", "/etc", "/opt", "/bin", "/sbin", "/lib", "/lib32", "/lib64", "/libx32", "/sys")
# Shown where they are only when the harness runs as root: a file only its owner may read is a secret then.
SCANNED_FOR_SECRETS = ("/etc",)
# A venv's own entries (python -m venv, uv venv): its Python, packages (the agent CLIs' binaries) and settings.
VENV_PARTS = ("bin", "include", "lib", "lib64", "share", "pyvenv.cfg")
# Never shown whole, whatever PATH says (homes, other evaluations' files, services' sockets and data).
NEVER_WHOLE = ("/home", "/root", "/tmp", "/dev/shm", "/var", "/var/tmp", "/run", "/srv", "/mnt", "/media")
# Made anew in every sandbox: a PATH folder under them is not the host's there (one under /dev/shm is shown).
MADE_ANEW = ("/dev/", "/proc/", "/var/tmp/", str(SANDBOX_PATH) + "/")
# The sandbox's own places: what a command names there is not the host's.
OWN_PLACES = (str(SANDBOX_PATH), "/tmp", "/dev", "/proc", "/var/tmp")

HOLDER = r"""
import array, ctypes, errno, fcntl, os, signal, socket, struct, sys, time
signal.signal(signal.SIGINT, signal.SIG_IGN)
signal.signal(signal.SIGCHLD, signal.SIG_IGN)  # the namespace's init: orphans are reaped by the kernel
libc = ctypes.CDLL(None, use_errno=True)
libc.mount.argtypes = (ctypes.c_char_p, ctypes.c_char_p, ctypes.c_char_p, ctypes.c_ulong, ctypes.c_char_p)
libc.syscall.restype = ctypes.c_long
PIVOT_ROOT = {"x86_64": 155, "aarch64": 41}[os.uname().machine]
KEYCTL = {"x86_64": 250, "aarch64": 219}[os.uname().machine]
OPEN_TREE, MOVE_MOUNT, MOUNT_SETATTR = 428, 429, 442
NEWNS, RDONLY, NOSUID, NODEV, NOEXEC, REMOUNT, BIND, REC, PRIVATE = 0x20000, 1, 2, 4, 8, 32, 4096, 16384, 1 << 18
ATTR_RDONLY, ATTR_NOSUID, ATTR_NODEV = 1, 2, 4
SWEEP_ROUNDS = 200
BIND_WAIT_S = 2.0
# The kernel's knobs in /proc: read-only, and its secrets masked (as a container runtime does). Commands run as the
# harness's user, root on CI, and a sysctl checks the writer's user, not its namespace: core_pattern written from
# a sandbox ran a program as the host's root.
PROC_READ_ONLY = ("/proc/sys", "/proc/sysrq-trigger", "/proc/bus", "/proc/fs", "/proc/irq")
PROC_MASKED = ("/proc/kcore", "/proc/keys", "/proc/kmsg", "/proc/timer_list", "/proc/sched_debug",
               "/proc/latency_stats", "/proc/acpi", "/proc/scsi", "/proc/asound")
NEW = "/tmp"  # the new root is built on a tmpfs mounted here (this mount namespace's view only), then pivoted into

class Attr(ctypes.Structure):
    _fields_ = [("set", ctypes.c_uint64), ("clear", ctypes.c_uint64), ("propagation", ctypes.c_uint64),
                ("userns", ctypes.c_uint64)]

def ok(result, what):
    if result < 0:
        code = ctypes.get_errno()
        raise OSError(code, what + ": " + os.strerror(code))
    return result

def mount(source, target, kind, flags, data=None):
    enc = lambda text: text.encode() if text is not None else None
    ok(libc.mount(enc(source), enc(target), enc(kind), flags, enc(data)), "mount " + target)

def clone(path):
    # a copy of a host folder's mounts, from the mount namespace the holder started in
    ok(libc.setns(outer, NEWNS), "setns")
    try:
        return ok(libc.syscall(OPEN_TREE, -100, path.encode(), 0x1 | 0x8000 | 0x80000), "open_tree " + path)
    finally:
        ok(libc.setns(inner, NEWNS), "setns")

def attach(tree, target, attrs):
    attr = Attr(attrs, 0, 0, 0)
    size = ctypes.sizeof(attr)
    ok(libc.syscall(MOUNT_SETATTR, tree, b"", 0x1000 | 0x8000, ctypes.byref(attr), size), "mount_setattr")
    ok(libc.syscall(MOVE_MOUNT, tree, b"", -100, target.encode(), 0x4), "move_mount " + target)
    os.close(tree)

def place(tree, target):
    # the mount point, a folder or a file as what is mounted there
    if os.path.lexists(target):
        return
    os.makedirs(os.path.dirname(target), exist_ok=True)
    if (os.fstat(tree).st_mode & 0o170000) == 0o040000:
        os.mkdir(target)
    else:
        os.close(os.open(target, os.O_CREAT | os.O_WRONLY, 0o644))

def show(path, target, attrs):
    tree = clone(path)
    place(tree, target)
    attach(tree, target, attrs)

TMP_FOLDERS = ("/tmp", "/dev/shm")
TMP_PREFIXES = tuple(folder + "/" for folder in TMP_FOLDERS)  # shown after the fresh tmpfs, not hidden by it
as_made = {}  # each one's state as last mounted: kept while no evaluation changed it

def as_left(path):
    # what an evaluation could leave on the folder itself: an entry made or removed moves its times, and an owner,
    # a mode, a time or an extended attribute set moves its ctime (a tmpfs mounted again costs a 1,000-row run 0.3 s)
    info = os.stat(path)
    return info.st_dev, info.st_ino, info.st_mode, info.st_uid, info.st_gid, info.st_mtime_ns, info.st_ctime_ns, \
        info.st_atime_ns

def fresh_tmp(at):
    mount("tmpfs", at + "/tmp", "tmpfs", NOSUID | NODEV, "mode=1777")
    mount("tmpfs", at + "/dev/shm", "tmpfs", NOSUID | NODEV, "mode=1777")
    for path in under_tmp:  # the harness's own Python or a PATH folder, when it lives under /tmp or /dev/shm
        show(path, at + path, ATTR_RDONLY | ATTR_NOSUID | ATTR_NODEV)

def build(ops):
    mount("tmpfs", NEW, "tmpfs", NOSUID | NODEV, "mode=0755")
    masks = []
    for op, path, extra in ops:
        if op == "ro" and not path.startswith(TMP_PREFIXES):
            show(path, NEW + path, ATTR_RDONLY | ATTR_NOSUID | ATTR_NODEV)
        elif op == "mask":  # the harness's own folder inside a shown one: empty, but for what is shown again in it
            mount("tmpfs", NEW + path, "tmpfs", NOSUID | NODEV, "mode=0755")
            masks.append(NEW + path)
        elif op == "link":
            os.makedirs(os.path.dirname(NEW + path), exist_ok=True)
            os.symlink(extra, NEW + path)
        elif op == "hide" and os.path.isdir(NEW + path):
            mount("tmpfs", NEW + path, "tmpfs", RDONLY | NOSUID | NODEV, "mode=0")
        elif op == "hide":
            show("/dev/null", NEW + path, ATTR_RDONLY | ATTR_NOSUID | ATTR_NODEV)
    os.mkdir(NEW + "/dev")
    mount("tmpfs", NEW + "/dev", "tmpfs", NOSUID, "mode=0755")
    for name in ("null", "zero", "full", "random", "urandom", "tty"):
        show("/dev/" + name, NEW + "/dev/" + name, ATTR_NOSUID)
    for name, target in (("fd", "/proc/self/fd"), ("stdin", "/proc/self/fd/0"), ("stdout", "/proc/self/fd/1"),
                         ("stderr", "/proc/self/fd/2"), ("ptmx", "pts/ptmx")):
        os.symlink(target, NEW + "/dev/" + name)
    for name in ("pts", "shm"):
        os.mkdir(NEW + "/dev/" + name)
    mount("devpts", NEW + "/dev/pts", "devpts", NOSUID | NOEXEC, "newinstance,ptmxmode=0666,mode=620")
    for name in ("proc", "tmp", "sandbox", "var", ".old"):
        os.makedirs(NEW + "/" + name, exist_ok=True)
    os.symlink("../tmp", NEW + "/var/tmp")
    mount("proc", NEW + "/proc", "proc", NOSUID | NODEV | NOEXEC)
    lock_proc()
    os.mkdir(NEW + "/dev/mqueue")
    mount("mqueue", NEW + "/dev/mqueue", "mqueue", NOSUID | NODEV | NOEXEC)
    fresh_tmp(NEW)
    mount(None, NEW + "/dev", None, REMOUNT | BIND | RDONLY | NOSUID)
    for path in masks:
        mount(None, path, None, REMOUNT | BIND | RDONLY | NOSUID | NODEV)
    ok(libc.syscall(PIVOT_ROOT, NEW.encode(), (NEW + "/.old").encode()), "pivot_root")
    os.chdir("/")
    ok(libc.umount2(b"/.old", 2), "umount the host's tree")
    os.rmdir("/.old")
    mount(None, "/", None, REMOUNT | BIND | RDONLY | NOSUID | NODEV)

def lock_proc():
    for path in PROC_READ_ONLY:
        if os.path.lexists(NEW + path):
            mount(NEW + path, NEW + path, None, BIND | REC)
            mount(None, NEW + path, None, REMOUNT | BIND | RDONLY | NOSUID | NODEV | NOEXEC)
    for path in PROC_MASKED:
        if os.path.isdir(NEW + path):
            mount("tmpfs", NEW + path, "tmpfs", RDONLY | NOSUID | NODEV, "mode=0")
        elif os.path.lexists(NEW + path):
            show("/dev/null", NEW + path, ATTR_RDONLY | ATTR_NOSUID | ATTR_NODEV)

def clear_keys():
    # the keyrings of this namespace's root, which commands run as: its user, user-session and persistent ones.
    # An evaluation may have taken its write permission on one away: given back first (this process is their
    # owner); a keyring that cannot be cleared fails the scrub, and the namespace is not kept for another.
    persistent = libc.syscall(KEYCTL, 22, ctypes.c_long(-1), ctypes.c_long(-2))  # KEYCTL_GET_PERSISTENT
    for ring in (-4, -5) + ((persistent,) if persistent >= 0 else ()):  # KEY_SPEC_USER_KEYRING, _SESSION_
        libc.syscall(KEYCTL, 5, ctypes.c_long(ring), ctypes.c_long(0x3F3F0000))  # KEYCTL_SETPERM: owner, all
        ok(libc.syscall(KEYCTL, 7, ctypes.c_long(ring)), "clear keyring %d" % ring)  # KEYCTL_CLEAR

def clear_ipc():
    # what the last evaluation left in this namespace's IPC: SysV objects and POSIX message queues
    for kind, remove in (("shm", lambda i: libc.shmctl(i, 0, None)), ("msg", lambda i: libc.msgctl(i, 0, None)),
                         ("sem", lambda i: libc.semctl(i, 0, 0))):  # IPC_RMID
        with open("/proc/sysvipc/" + kind) as table:
            for line in table.readlines()[1:]:
                if line.strip():
                    remove(int(line.split()[1]))
    for name in os.listdir("/dev/mqueue"):
        os.unlink("/dev/mqueue/" + name)

def loopback_up():
    probe = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
    flags = struct.unpack("16sH", fcntl.ioctl(probe, 0x8913, struct.pack("16sH", b"lo", 0)))[1]
    fcntl.ioctl(probe, 0x8914, struct.pack("16sH", b"lo", flags | 1))
    probe.close()

def bind_soon(listener, port):
    # The last evaluation's listener on this port may outlive its close for a moment: a process the harness
    # is starting holds a copy of its descriptors from fork to exec. Wait for it (BIND_WAIT_S at most).
    deadline = time.monotonic() + BIND_WAIT_S
    while True:
        try:
            return listener.bind(("127.0.0.1", port))
        except OSError as exc:
            if exc.errno != errno.EADDRINUSE or time.monotonic() > deadline:
                raise
            time.sleep(0.01)

services = set()  # (pid, start time) of the processes running when the evaluation's pre_run ended

def others():
    return [int(name) for name in os.listdir("/proc") if name.isdigit() and int(name) != os.getpid()]

def identity(pid):
    # ((pid, its start time), its parent's pid): a PID alone may be taken again by another process (wrapped)
    try:
        with open("/proc/%d/stat" % pid, "rb") as stat:
            data = stat.read()
        fields = data[data.rindex(b")") + 2:].split()
        return (pid, int(fields[19])), int(fields[1])
    except (OSError, ValueError, IndexError):
        return None, 0

def of_services(pid):
    # a service, or a process one started (its parent chain reaches one before the namespace's init)
    for _ in range(4096):
        known, parent = identity(pid)
        if known in services:
            return True
        if known is None or pid <= 1:
            return False
        pid = parent
    return False

def handle(words):
    if words[0] == b"scrub":  # an evaluation let it go: what it left in the kernel's keyrings goes
        clear_keys()
        return b"", []
    if words[0] == b"count":
        return str(sum(name.isdigit() for name in os.listdir("/proc"))).encode(), []  # its own /proc
    if words[0] == b"mark":  # pre_run ended: what runs now is a service the task started, kept into scoring
        services.clear()
        services.update(known for known, _ in map(identity, others()) if known is not None)
        return b"", []
    if words[0] == b"sweep":  # before each criterion: what else was left running goes, the services and theirs stay
        for _ in range(SWEEP_ROUNDS):
            left = [pid for pid in others() if not of_services(pid)]
            if not left:
                return b"", []
            for pid in left:
                try:
                    os.kill(pid, signal.SIGKILL)
                except ProcessLookupError:
                    pass
            time.sleep(0.01)
        raise OSError(errno.EAGAIN, "processes kept starting while they were ended")
    if words[0] == b"claim":  # an evaluation takes the namespace: the last one's sandbox and /tmp go, its own comes
        services.clear()
        if os.path.ismount("/sandbox"):
            ok(libc.umount2(b"/sandbox", 2), "umount /sandbox")
        if any(as_left(path) != as_made.get(path) for path in TMP_FOLDERS):
            for path in TMP_FOLDERS:
                ok(libc.umount2(path.encode(), 2), "umount " + path)
            fresh_tmp("")
            as_made.update((path, as_left(path)) for path in TMP_FOLDERS)
        clear_ipc()  # (its keyrings were scrubbed when the last evaluation let it go)
        show(words[1].decode(), "/sandbox", ATTR_NOSUID | ATTR_NODEV)
        return b"", []
    if words[0] == b"bind":  # a host folder under /tmp for a while: an agent's home, its tools, the package cache
        source, target = words[1].decode(), words[2].decode()
        if not target.startswith("/tmp/"):
            raise OSError(1, "only /tmp takes a mount")
        show(source, target, ATTR_NOSUID | ATTR_NODEV | (ATTR_RDONLY if words[3:] == [b"ro"] else 0))
        return b"", []
    if words[0] == b"unbind":  # a folder mounted for a while (the package cache, during setup)
        target = words[1].decode()
        if not target.startswith("/tmp/"):
            raise OSError(1, "only what is under /tmp is unmounted alone")
        ok(libc.umount2(target.encode(), 2), "umount " + target)
        return b"", []
    if words[0] == b"listen":  # a socket on this namespace's loopback, for the harness to accept on
        listener = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
        listener.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)  # the last evaluation's closed connections
        bind_soon(listener, int(words[1]))
        listener.listen(128)
        return b"", [listener.detach()]
    raise OSError(22, "unknown request")

options, ops, args = sys.argv[1], [], sys.argv[2:]
while args:
    arity = 3 if args[0] == "link" else 2
    ops.append((args[0], args[1], args[2] if arity == 3 else None))
    args = args[arity:]
under_tmp = [path for op, path, _ in ops if op == "ro" and path.startswith(TMP_PREFIXES)]
control = socket.socket(fileno=os.dup(0))
os.dup2(os.open("/dev/null", os.O_RDONLY), 0)
try:
    # No user namespace inside this one: in one of its own, a command would hold CAP_SYS_ADMIN again (a cgroup2
    # mount there showed the host's whole tree, writable as the harness's user: it killed host processes).
    with open("/proc/sys/user/max_user_namespaces", "w") as limit:  # this namespace's own limit, not the host's
        limit.write("0")
    outer = os.open("/proc/self/ns/mnt", os.O_RDONLY | os.O_CLOEXEC)
    ok(libc.unshare(NEWNS), "unshare")
    mount(None, "/", None, REC | PRIVATE)
    inner = os.open("/proc/self/ns/mnt", os.O_RDONLY | os.O_CLOEXEC)
    build(ops)
    if "net" in options:
        loopback_up()
    ok(libc.prctl(4, 0, 0, 0, 0), "PR_SET_DUMPABLE")
except OSError as exc:
    sys.exit("cannot build the sandbox's view: " + str(exc))
control.send(b"ready")
while True:
    message = control.recv(65536)
    if not message:
        break
    try:
        reply, fds = handle(message.split(b"\0"))
        reply = b"ok " + reply
    except (OSError, ValueError) as exc:
        reply, fds = b"error " + str(exc).encode(), []
    control.sendmsg([reply], [(socket.SOL_SOCKET, socket.SCM_RIGHTS, array.array("i", fds))] if fds else [])
    for fd in fds:
        os.close(fd)
"""


class SandboxUnavailable(RuntimeError):
    """The sandbox's namespaces could not be built or entered: the machine failed, so the evaluation is an ERROR
    (a criterion's command that could not start for this reason does not score 0)."""


class HolderError(SandboxUnavailable):
    """The namespace's first process refused a request, or is gone."""


class Holder:
    """The harness's end of a namespace's first process (see the module docstring); one request at a time."""

    def __init__(self, control: socket.socket, starter: subprocess.Popen[bytes]):
        self.control, self.starter = control, starter
        self.lock = threading.Lock()
        self.pid = int(Path(f"/proc/{starter.pid}/task/{starter.pid}/children").read_text().split()[0])

    def ask(self, *words: str) -> tuple[bytes, list[int]]:
        """Send one request; its reply and the descriptors that came with it. HolderError: refused or gone."""
        with self.lock:
            try:
                self.control.send("\0".join(words).encode())
                reply, ancillary, _, _ = self.control.recvmsg(4096, socket.CMSG_SPACE(4))
            except OSError as exc:
                raise HolderError(f"the namespace's init is gone: {exc}") from None
        fds = array.array("i")
        for _level, _type, data in ancillary:
            fds.frombytes(data[: len(data) - len(data) % fds.itemsize])
        if not reply.startswith(b"ok"):
            raise HolderError(reply.decode(errors="replace").removeprefix("error ") or "no reply")
        return reply[3:], list(fds)

    def processes(self) -> int:
        """How many processes the namespace holds, its init included (0: it is gone)."""
        try:
            return int(self.ask("count")[0] or 0)
        except (HolderError, ValueError):
            return 0

    def listen(self, port: int) -> socket.socket:
        """A listening socket on the namespace's 127.0.0.1:``port``."""
        _, fds = self.ask("listen", str(port))
        return socket.socket(fileno=fds[0])

    def close(self) -> None:
        self.control.close()


def holder_argv(confine_network: bool) -> list[str]:
    """The program and its arguments: what to show of the host."""
    return [sys.executable, "-I", "-S", "-c", HOLDER, "net" if confine_network else "-", *_view().operations]


def shown(path: str) -> bool:
    """Whether commands see ``path`` (this machine's) where it is, or it is one of the sandbox's own places."""
    return bool(_deepest(path, OWN_PLACES)) or shows_host(path)


def shows_host(path: str) -> bool:
    """Whether commands see the host's ``path`` where it is: the deepest shown or hidden folder holding it says."""
    view = _view()
    return len(_deepest(path, view.shown)) > len(_deepest(path, view.hidden))


def _deepest(path: str, tops: Iterable[str]) -> str:
    """The deepest of ``tops`` holding ``path`` (or being it), "" for none."""
    inside = path.rstrip("/") + "/"
    return max((top for top in tops if inside.startswith(top.rstrip("/") + "/")), key=len, default="")


@dataclass(frozen=True)
class View:
    shown: tuple[str, ...]  # host folders (and links) commands see where they are, read-only
    hidden: tuple[str, ...]  # under those, what shows empty (a folder shown again inside one is in ``shown``)
    operations: tuple[str, ...]  # the same, as the holder's arguments


@functools.cache
def _view() -> View:
    """The host paths commands see, as the holder's operations (``ro PATH``, ``link PATH TARGET``, ``hide PATH``).

    Computed once per process: the system, the harness's Python and what is on PATH.
    """
    ops: list[str] = []
    shown: list[str] = []
    toolchain = _toolchain()
    for path in sorted(set(_system() + toolchain)):
        if os.path.islink(path) and path in SYSTEM:
            ops += ["link", path, os.readlink(path)]
            shown.append(path)
        elif os.path.exists(path) and not any(path.startswith(parent + "/") for parent in shown):
            ops += ["ro", path]
            shown.append(path)
    masked = _masked_places(shown)
    for place in masked:  # the project, the Dagster home or the runs folder under /opt or /usr: hidden, and in
        ops += ["mask", place]  # them only the harness's Python and PATH's folders are shown again
        again = [path for path in [*toolchain, *_venv_parts(place)] if path.startswith(place + "/")]
        for path in sorted(path for path in again if not any(path.startswith(other + "/") for other in again)):
            ops += ["ro", path]
            shown.append(path)
    hidden = [path for top in SCANNED_FOR_SECRETS for path in _owner_only(top)] if os.geteuid() == 0 else []
    ops += [word for path in hidden for word in ("hide", path)]
    return View(tuple(shown), (*masked, *hidden), tuple(ops))


def _masked_places(shown: list[str]) -> list[str]:
    """The harness's places that a shown folder holds (a project under /opt): each to be shown empty."""
    inside = sorted({place for place in harness_places() if any(place.startswith(top + "/") for top in shown)})
    for place in inside:  # a Dagster home or a runs folder the run makes a moment later, after the view is built
        with contextlib.suppress(OSError):  # one that cannot be made is never written to either
            os.makedirs(place, exist_ok=True)
    outermost = [place for place in inside if not any(place.startswith(other + "/") for other in inside)]
    return [place for place in outermost if os.path.isdir(place)]


def _venv_parts(place: str) -> list[str]:
    """What makes the harness's venv, when it is ``place`` or holds it (the code image runs in its venv,
    /opt/coder-eval): shown again in the mask, without what else the folder holds (a .env, ./runs, .dagster)."""
    venv = os.path.realpath(sys.prefix)
    if venv == os.path.realpath(sys.base_prefix) or not (place + "/").startswith(venv + "/"):
        return []
    return [os.path.join(venv, part) for part in VENV_PARTS if os.path.lexists(os.path.join(venv, part))]


def folder_showing(path: Path) -> str | None:
    """The host folder that shows ``path`` to commands read-only, if one does (a system folder, a folder on PATH or
    of the harness's Python): a runs folder there would show them every evaluation's files."""
    inside = str(path.resolve())
    return _deepest(inside, _view().shown) if shows_host(inside) else None


def _system() -> list[str]:
    return [path for path in SYSTEM if os.path.lexists(path)]


def _toolchain() -> list[str]:
    """The harness's Python (its venv with uv and the agent CLIs, its base install), pyenv, and PATH's folders."""
    found = {sys.prefix, sys.base_prefix, os.path.dirname(os.path.dirname(os.path.realpath(sys.executable)))}
    base = Path(sys.base_prefix)
    if base.parent.name == "versions" and (base.parent.parent / "libexec" / "pyenv").exists():
        found.add(str(base.parent.parent))  # pyenv: its shims on PATH need it whole
    found.update(entry for entry in os.environ.get("PATH", "").split(os.pathsep) if os.path.isabs(entry))
    found = {os.path.realpath(path) for path in found if os.path.isdir(path)}
    private = [*NEVER_WHOLE, *harness_places()]
    # never one of these or a folder holding one (a PATH entry such as "/", "~" or the project's); a folder inside
    # them may be
    found = {path for path in found if not any((p + "/").startswith(path.rstrip("/") + "/") for p in private)}
    return [path for path in found if not path.startswith(MADE_ANEW) or path.startswith("/dev/shm/")]


def harness_places() -> list[str]:
    """Where the harness keeps what commands must not read: the folder it runs in (the project: task files,
    references, a .env, ./runs), its user's home, its Dagster home and the runs folder a launched run writes to."""
    places: list[str | Path] = [os.getcwd(), user_home(), dagster_home(), os.environ.get("CODER_EVAL_RUNS_DIR") or "."]
    return [os.path.realpath(place) for place in places]


def _owner_only(top: str) -> list[str]:
    """Files and folders under ``top`` that others may not read (their owner: root, whom commands run as)."""
    found, pending = [], [top]
    while pending:
        with os.scandir(pending.pop()) as entries:
            for entry in entries:
                try:
                    mode = entry.stat(follow_symlinks=False).st_mode
                except OSError:
                    continue
                if stat.S_ISLNK(mode):
                    continue
                if not mode & stat.S_IROTH:
                    found.append(entry.path)  # hidden whole: a folder's content need not be looked at
                elif stat.S_ISDIR(mode):
                    pending.append(entry.path)
    return found
