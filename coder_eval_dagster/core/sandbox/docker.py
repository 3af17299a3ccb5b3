"""The `docker` sandbox driver: one container per evaluation (``container.py``), whose limits bind.

The evaluation's sandbox folder stays on the host (criteria read it there,
rescoring reuses it) and is bind-mounted into the container at ``/sandbox``,
as tempdir shows it. Every command runs in the container through the engine's exec API;
this module is that exec and its I/O, the container's environment, and how
an agent CLI is started inside it.

Commands: ``timeout -s KILL`` inside the container kills a command's whole
process group at its timeout (it needs no new process, so it works at the
pids limit too); output goes to files in the I/O folder, so a background
daemon cannot hold the command open. A command still running well after its
timeout, or when the run is interrupted, takes the container with it. What a
criterion's command leaves running ends with it (``SWEEPING``); what the
agent's phase left, before the criteria (``LEFTOVERS``).
"""

from __future__ import annotations

import contextlib
import functools
import ipaddress
import json
import logging
import os
import shlex
import shutil
import socket
import sys
import tempfile
import time
import uuid
from collections.abc import Iterator, Mapping
from pathlib import Path
from typing import Any

from ..agent_cli import launchers
from ..model_proxy import shared_proxy
from ..models.results import CommandRun
from ..models.sandbox import NetworkPolicy, SandboxConfig
from ..secrets import redact
from .base import LEFTOVERS_NOTE
from .container import CONTAINER_CA_BUNDLE, HOST_CA_BUNDLE, IO_PATH, Container
from .egress import EGRESS_PORT, LOOPBACK, acceptor, proxy_environment, refusal_notes, serve_forwarded
from .engine import (
    EngineError,
    client,
    default_image,
)
from .holder import SandboxUnavailable
from .process import INTERRUPTED_ERROR, Interrupt, ReplacedCapture, read_capped, timed_out_error
from .tempdir import SCORING_STAGES, VENV_TIMEOUT_S, TempdirSandbox, pip_shims, shared_path
from .templates import TemplateError

CONTAINER_PATH = "/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin"
KILL_GRACE_S = 5.0  # past its timeout, a command still running takes the container with it
ENDING_GIVES_UP_S = 10  # ENDING's ``until``: then the container is restarted
SWEEP_GRACE_S = ENDING_GIVES_UP_S + KILL_GRACE_S  # a sweep's own time, past its command's (or a sweep's own exec)
SIGNALLED_EXIT = 128  # a shell's exit status from 128 on: killed by signal (status - 128)
log = logging.getLogger(__name__)
OOM_EXIT = 137
# A command: its own shell, replaced by ``timeout`` ($0 seconds) running ``$1``, its output in the files $2 and $3.
RUNNING = 'exec timeout -s KILL "$0" /bin/sh -c "$1" >"$2" 2>"$3" </dev/null'
# What the sweeps read of a process: /proc/PID/stat after its name's closing ") " (fields 3 on: state, parent,
# group, session... start ticks is $20), in ``s``. The name is the process's own to set (prctl), a newline or
# ") " in it included: the file is read whole and cut at its last ") ". Its threads: a leader that has exited
# shows Z while its other threads run on.
STAT = r"""
stat_of() {
  s= line=
  { while IFS= read -r line; do s="$s$line "; done; } 2>/dev/null <"/proc/$1/stat" || return 1
  case $s in *") "*) s=${s##*) } ;; *) return 1 ;; esac
}
threaded() { set -- /proc/"$1"/task/[0-9]*; [ $# -gt 1 ]; }
"""
# A criterion's command, as RUNNING's, then every process of its own still running ends, as under tempdir (the
# next criterion's command could be traced, or find no pid free): each process started after this shell (start
# ticks, then pid within the tick) whose parents, up to this shell or init, did too; not pre_run's services, nor
# what the agent left (ended once before the criteria: LEFTOVERS), nor a process either starts. ENDING's way.
BELOW_THIS_SHELL = r"""
own_start() { stat_of $$; set -- $s; born=${20}; }
own_start
ours() {
  p=$top k=0
  while [ "$p" != $$ ]; do
    stat_of "$p" || { [ "$p" != "$top" ]; return; }
    set -- $s
    [ "${20}" -gt "$born" ] || { [ "${20}" -eq "$born" ] && [ "$p" -gt $$ ]; } || return 1
    if [ "$p" = "$top" ]; then
      state=$1 group=$3 session=$4
      [ "$1" != Z ] || [ "$sig" = 0 ] || threaded "$p" || return 1
    elif [ "$1" = Z ]; then
      return 0
    fi
    case $2 in 0) return 1 ;; 1) return 0 ;; esac
    p=$2 k=$((k + 1))
    [ "$k" -lt 4096 ] || return 0
  done
}
timeout -s KILL "$0" /bin/sh -c "$1" >"$2" 2>"$3" </dev/null
code=$?
left=$4
"""
# What the agent's phase left running, before the criteria (it could trace their commands and set their exit
# codes) and at an agent's cut, as under tempdir: every process but pre_run's services, as listed when pre_run
# ended ($1: "pid:start ..."), and what they started. The keeper is another user's: its kill fails, uncounted (an
# ownership test would pass over a process that made itself non-dumpable: its /proc folder is root's).
NOT_A_SERVICE = r"""
services=" $1 " left=$2
ours() {
  p=$top k=0
  while :; do
    stat_of "$p" || { [ "$p" != "$top" ]; return; }
    set -- $s
    if [ "$p" = "$top" ]; then
      state=$1 group=$3 session=$4
      [ "$1" != Z ] || [ "$sig" = 0 ] || threaded "$p" || return 1
    fi
    case $services in *" $p:${20} "*) return 1 ;; esac
    case $2 in 0 | 1) return 0 ;; esac
    p=$2 k=$((k + 1))
    [ "$k" -lt 4096 ] || return 0
  done
}
code=0
"""
# The processes ``ours`` selects end. Builtins only: nothing is forked, so it works at the pids limit. They are
# stopped, pass after pass until none runs (a stopped process cannot fork and keeps its pid: a fork bomb cannot
# refill what a kill frees), then killed, then waited for until the container's init has reaped them (a zombie
# holds its pid; one whose other threads run on is killed at once). Each phase ends after two passes found
# nothing: a child whose parent was stopped (or killed) in the middle of its fork can show in /proc only after a
# pass listed it, and its parent is seen stopped only once that fork is done, so the second pass lists it. A
# process in this shell's session (docker exec makes it a session's leader) has its process group signalled at
# once too: such a group, other than this shell's, holds only processes started below it, and one kill reaches a
# whole bomb, a fork in flight included (a loaded machine took up to 6 s without, 0.2 s with). Not done within
# 10 s (something continues them), it touches the file $left: the harness restarts the container.
ENDING = r"""
signal() {
  n=0 signalled=$$
  for d in /proc/[0-9]*; do
    top=${d#/proc/}
    [ "$top" != $$ ] && ours || continue
    [ "$1" = 0 ] || [ "$session" != $$ ] || [ "$group" = "$signalled" ] || {
      signalled=$group
      kill -"$1" -"$group" 2>/dev/null
    }
    case $1$state in STOPT | STOPt) continue ;; STOPZ) kill -KILL "$top" 2>/dev/null && n=$((n + 1)); continue ;; esac
    ! kill -"$1" "$top" 2>/dev/null || n=$((n + 1))
  done
}
now() { read -r up _ </proc/uptime; up=${up%.*}${up#*.}; }
now
until=$((up + GIVES_UP))
for sig in STOP KILL 0; do
  quiet=0
  while [ "$quiet" -lt 2 ]; do
    signal $sig
    [ "$n" -gt 0 ] || { quiet=$((quiet + 1)); continue; }
    quiet=0
    now
    [ "$up" -lt "$until" ] || { : >"$left"; break 2; }
  done
done
exit $code
"""
ENDING = ENDING.replace("GIVES_UP", str(ENDING_GIVES_UP_S * 100))  # (uptime's hundredths)
SWEEPING = STAT + BELOW_THIS_SHELL + ENDING
LEFTOVERS = STAT + NOT_A_SERVICE + ENDING
# Each process's "pid:start" (start ticks: a pid alone may be taken again), one space between.
LISTING = (
    STAT
    + r"""
for d in /proc/[0-9]*; do
  stat_of "${d#/proc/}" || continue
  set -- $s
  printf '%s:%s ' "${d#/proc/}" "${20}"
done"""
)
TAMPERED_NOTE = (
    "[coder-eval: a process changed where this command's output is captured: the container was restarted, which "
    "ended every process in it, pre_run's services too]\n"
)
UNSTOPPABLE_NOTE = (
    "[coder-eval: what this command left running could not be stopped (it kept forking): the container was "
    "restarted, which ended every process in it, pre_run's services too]\n"
)


def _is_ipv6(config: Mapping[str, Any]) -> bool:
    return ":" in str(config.get("Subnet") or config.get("Gateway") or "")


def bridge_gateway(attrs: Mapping[str, Any]) -> str:
    """The bridge network's gateway: as its IPAM config names it, else the first address of its subnet, which the
    engine gives the gateway when it names none (Docker 20.10's default bridge lists only its subnet)."""
    configs = sorted((attrs.get("IPAM") or {}).get("Config") or [], key=_is_ipv6)  # IPv4 first: the proxy's URL
    for config in configs:
        if config.get("Gateway"):
            return str(config["Gateway"]).split("/")[0]
        if config.get("Subnet"):
            return str(next(ipaddress.ip_network(config["Subnet"], strict=False).hosts()))
    raise EngineError(f"the docker bridge network names no gateway nor subnet: {configs}")


class DockerSandbox(TempdirSandbox):
    """A TempdirSandbox whose commands, venv and agent tools run inside its own container."""

    def __init__(
        self,
        root: Path,
        config: SandboxConfig,
        cache_dir: Path | None = None,
        labels: dict[str, str] | None = None,
        interrupt: Interrupt | None = None,
    ):
        # the engine needs absolute paths to bind-mount (a run folder may be given relative)
        super().__init__(
            root.absolute(), config, cache_dir.absolute() if cache_dir is not None else None, interrupt=interrupt
        )
        uv_cache = self.cache_dir.with_name(f"{self.cache_dir.name}-docker") if self.cache_dir is not None else None
        # a confined network: the container has none, and a forwarder relays its egress proxy's port and the
        # allowed loopback ports to this process (see egress); else sandbox.network is the container's own
        network = config.network
        confined = isinstance(network, NetworkPolicy) and not network.open
        forwarded = [EGRESS_PORT, *self.gate.loopback_ports()] if confined and self.gate is not None else None
        self.container = Container(
            self.root.parent,
            config,
            config.docker.image or default_image(),
            uv_cache,
            labels or {},
            self.interrupt,
            forwarded,
        )
        # this process's listener on the egress socket of the container it names (a container that replaces it
        # has an I/O folder, and so a socket, of its own)
        self._egress: tuple[str, socket.socket] | None = None
        self._scoring_cleared = False  # what the agent left has ended, for this process's scoring phase

    def environment(self) -> dict[str, str]:
        """What every command in the container sees: nothing of the host's environment."""
        env = {
            "PATH": CONTAINER_PATH,
            "HOME": "/tmp",
            "LANG": "C.UTF-8",
            "GIT_CEILING_DIRECTORIES": str(self.workdir.parent),
            "PYTHONDONTWRITEBYTECODE": "1",
        }
        if self.venv is not None:
            env["VIRTUAL_ENV"] = str(self.workdir / ".venv")
            env["PATH"] = f"{self.workdir / '.venv' / 'bin'}:{CONTAINER_PATH}"
        if self.container.uv_cache is not None:  # the containers' own: it belongs to the container user
            env["UV_CACHE_DIR"] = str(self.container.uv_cache)
        if HOST_CA_BUNDLE.is_file():  # the host's CAs: package indexes behind an intercepting proxy
            env |= {"SSL_CERT_FILE": CONTAINER_CA_BUNDLE, "PIP_CERT": CONTAINER_CA_BUNDLE}
        if self.container.forwarded is not None:
            env |= proxy_environment()
        return self.phase_settings(self.with_node(env))

    # ----------------------------------------------------------------- lifecycle

    def create(self, task_dir: Path) -> None:
        """The folder as tempdir lays it out, then the container (and in it, the venv)."""
        self.close()  # a container of an earlier attempt at this evaluation
        super().create(task_dir)
        self.container.id()

    def _make_venv(self) -> None:
        packages = self.config.python.env_packages if self.config.python else []
        venv, install = shlex.quote(str(self.workdir / ".venv")), shlex.join(packages)
        for step in (
            f"uv venv --quiet --system-site-packages --python python3 {venv}",
            f"uv pip install --quiet --python {venv}/bin/python {install}",
            pip_shims(str(self.workdir / ".venv")),
        ):
            done = self.run_unlimited(step, VENV_TIMEOUT_S)
            if not done.ok:
                raise TemplateError(f"creating the sandbox venv failed: {(done.error or done.stderr).strip()[-800:]}")

    def mark_services(self) -> None:
        """What runs in the container now, pre_run's services among it, stays when what the agent left ends."""
        with self._engine_failures():
            self.container.mark_services(self.container.shell(LISTING))

    def set_phase(self, phase: str) -> None:
        """As tempdir's; the container also learns when the scoring phase uses it (``Container.id``)."""
        super().set_phase(phase)
        self.container.scoring = phase in SCORING_STAGES

    def end_leftovers(self) -> str | None:
        """What the agent's phase left running ends, pre_run's services and what they start kept: once before the
        criteria, whose commands each end their own (``SWEEPING``), and at an agent's cut."""
        scoring = self.phase in SCORING_STAGES
        if self.interrupt.is_set() or (scoring and self._scoring_cleared):
            return None
        note = None
        with self._engine_failures():
            if self.container.running():  # (none: nothing to end; a rescore grading host files starts none)
                note = self._end_unkept()
        self._scoring_cleared = scoring
        return note

    def _end_unkept(self) -> str | None:
        """Every process but the services ends (``LEFTOVERS``). Its shell is the commands' user's, whom a process
        it ends may stop or kill first: one that did not end its way, or that gave up, restarts the container
        (which ends every process in it, the services too); one still running at its timeout took the container
        with it (``_wait``). Either way, a note saying so."""
        container, left = self.container.id(), self.container.io_dir / f"{uuid.uuid4().hex}.left"
        services, left_at = self.container.services(), str(IO_PATH / left.name)
        argv = [self.container.sweep_shell(), "-c", LEFTOVERS, "coder-eval", services, left_at]
        code, stopped = self._exec_script(container, argv, time.perf_counter() + SWEEP_GRACE_S)
        if stopped:
            if stopped != "timeout":  # (the run interrupted)
                return None
            log.warning("%s: what was left running stopped its ending: the container was removed", self.root)
            return f"{LEFTOVERS_NOTE}: the container was removed, pre_run's services with it"
        if code != 0 or os.path.lexists(left):
            left.unlink(missing_ok=True)
            log.warning("%s: what was left running could not be ended: the container was restarted", self.root)
            self.container.restart()
            return f"{LEFTOVERS_NOTE}: the container was restarted, which ended pre_run's services too"
        if self.container.forwarded is not None and not self.container.services():
            self.container.forward(self.container.forwarded)  # its relay, ended with the rest: pre_run listed none
        return None

    @contextlib.contextmanager
    def _engine_failures(self) -> Iterator[None]:
        """No engine, or the container gone: the machine's failure, the evaluation's ERROR."""
        try:
            yield
        except EngineError as exc:
            raise SandboxUnavailable(str(exc)) from None
        except Exception as exc:
            if self.container.gone(exc) and not self.interrupt.is_set():  # removed under the command (not by Ctrl-C)
                raise SandboxUnavailable(f"the sandbox's container is gone: {redact(str(exc))}") from None
            raise

    def end_processes(self) -> None:
        """What follows runs in a new container on the same sandbox folder, without the package cache: what the
        earlier stages left ends with the old one. A ``kill -1`` inside could be starved of the fork it needs (a
        process holding every pid of ``max_pids``) and left /tmp, the commands' HOME, whose files ran inside the
        criteria's ``python3`` (a ``usercustomize``); the shared cache carried a criterion's staged folders to
        later evaluations."""
        self.close()
        self.container.uv_cache = None

    def close(self) -> None:
        self._stop_egress()
        self.container.close()

    def _stop_egress(self) -> None:
        if self._egress is not None:
            acceptor().stop(self._egress[1])
            self._egress = None

    @contextlib.contextmanager
    def shared(self, folder: Path) -> Iterator[Path]:
        """A copy of the host folder in the container, where a tempdir sandbox's commands see it, removed after the
        block (the host's path would name the run, the variant and the row)."""
        seen = shared_path(folder)
        self.container.copy_in(folder, seen, read_only=True)  # as tempdir mounts it: the agent's code runs here too
        try:
            yield seen
        finally:
            with contextlib.suppress(Exception):  # the engine or the container gone: so is the copy
                self.container.remove_as_root(seen)

    def _serve_egress(self, container: str) -> None:
        """Listen on the egress socket of ``container`` from this process (once per container: any process of the
        harness may run one of the evaluation's stages, and the container's forwarder connects to whoever listens
        now; a container that replaced the one served, swept or stopped meanwhile, is served again)."""
        if self.container.forwarded is None or self.gate is None:
            return
        if self._egress is not None and self._egress[0] == container:
            return
        self._stop_egress()
        path = self.container.egress_socket
        listener = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        # Bound and opened to the container's user in a folder of the evaluation's that the container cannot
        # reach, then renamed into the folder it writes: a process there could swap the name for a link between
        # a bind and a chmod there, and the harness (root) would chmod the link's target.
        private = Path(tempfile.mkdtemp(prefix=".egress-", dir=path.parent.parent))
        folder = os.open(private, os.O_PATH | os.O_DIRECTORY)
        try:  # through the folder's descriptor: a socket's path may be at most 107 bytes long
            listener.bind(f"/proc/self/fd/{folder}/{path.name}")
            os.chmod(path.name, 0o777, dir_fd=folder)  # the container's user connects
            os.rename(path.name, path, src_dir_fd=folder)  # replaces whatever is there, a link itself included
        finally:
            os.close(folder)
            shutil.rmtree(private, ignore_errors=True)
        listener.listen(64)
        acceptor().serve(listener, functools.partial(serve_forwarded, gate=self.gate))
        self._egress = (container, listener)

    # ----------------------------------------------------------------- agents

    def agent_launcher(self, home: Path, read_only: Mapping[Path, Path] | None = None) -> list[str]:
        """Nothing to prefix: the container is the agent's confinement (``agent_command`` enters it); ``read_only``'s
        folders are copied in, where the CLI expects them."""
        for source, target in (read_only or {}).items():
            self.container.copy_in(source, target)
        return []

    def model_proxy_host(self) -> str:
        """Where the CLI in the container reaches this machine: its loopback (a confined network: the forwarder;
        the host's network), else the bridge's gateway (the model proxy then also listens there; other hosts
        cannot reach that address)."""
        network = self.config.network
        if network != "bridge" and not (isinstance(network, NetworkPolicy) and network.open):
            return LOOPBACK
        return bridge_gateway(client().networks.get("bridge").attrs)

    def agent_command(self, home: Path, cli: str) -> str:
        """A launcher running ``cli`` in the container (see docker_attach), with ``home`` copied in at its path
        and, under a confined network, the model proxy's port relayed (and the loopback ports granted since the
        container started: the harness's telemetry endpoint)."""
        self.container.copy_in(home)
        if self.container.forwarded is not None and self.gate is not None:
            self._serve_egress(self.container.id())
            model = [shared_proxy().port()] if self.gate.model else []
            self.container.forward([*model, *self.gate.loopback_ports()])
        launcher = launchers(home) / "docker" / Path(cli).name  # (the wrapper of it is beside "docker")
        launcher.parent.mkdir(exist_ok=True)
        container, user = self.container.id(), self.container.user
        spec = {"container": container, "user": user, "docker_host": os.environ.get("DOCKER_HOST")}
        spec["workdir"] = str(self.workdir)  # the CLI's (this machine's sandbox path is its SDK's working folder)
        module = "coder_eval_dagster.core.sandbox.docker_attach"
        command = [sys.executable, "-m", module, json.dumps(spec), cli]
        launcher.write_text(f'#!/bin/sh\nexec {shlex.join(command)} "$@"\n', encoding="utf-8")
        launcher.chmod(0o700)
        return str(launcher)

    # ----------------------------------------------------------------- commands

    def run_unlimited(self, command: str, timeout: float, setup: bool = False) -> CommandRun:
        """One shell command in the container, killed with its process group at ``timeout`` (the container's
        minimal environment, a ``setup`` step's too: the image holds what its venv needs)."""
        if self.interrupt.is_set():
            return CommandRun(command=command, error=INTERRUPTED_ERROR)
        start = time.perf_counter()
        refused = self.gate.mark() if self.gate is not None else (0, 0)
        try:
            container = self.container.id()
            self._serve_egress(container)
            done = self._exec(container, command, timeout, start)
            done.stderr += refusal_notes(self.gate, refused)
            return done
        except EngineError as exc:  # no engine, no container: the machine's failure, the evaluation's ERROR
            raise SandboxUnavailable(str(exc)) from None
        except SandboxUnavailable:
            raise
        except Exception as exc:  # the engine refused the exec (the pids limit at exec time, the container gone)
            error = f"the docker engine failed: {type(exc).__name__}: {exc}"
            if self.container.gone(exc) and not self.interrupt.is_set():  # removed under the command (not by Ctrl-C)
                raise SandboxUnavailable(f"the sandbox's container is gone: {redact(error)}") from None
            return CommandRun(command=command, error=redact(error), duration_s=round(time.perf_counter() - start, 3))

    def _exec(self, container: str, command: str, timeout: float, start: float) -> CommandRun:
        token, sweeping = uuid.uuid4().hex, self.phase == "score"
        out, err, left = (self.container.io_dir / f"{token}.{kind}" for kind in ("out", "err", "left"))
        files = (out, err, left) if sweeping else (out, err)
        shell, script = (self.container.sweep_shell(), SWEEPING) if sweeping else ("/bin/sh", RUNNING)
        argv = [shell, "-c", script, f"{timeout:g}", command, *(str(IO_PATH / path.name) for path in files)]
        grace = SWEEP_GRACE_S if sweeping else KILL_GRACE_S
        exit_code, stopped = self._exec_script(container, argv, start + timeout + grace)
        duration = time.perf_counter() - start
        timed_out = stopped == "timeout" or (exit_code == OOM_EXIT and duration >= timeout)
        try:
            stdout, stderr, replaced = read_capped(out), read_capped(err), None
            if not stopped and not (os.path.lexists(out) and os.path.lexists(err)):  # the shell makes both first
                raise ReplacedCapture("its capture file was not written, or was removed")
        except ReplacedCapture as exc:
            stdout, stderr, replaced = "", "", f"its output is not known: {exc} (by a process left in the sandbox)"
        result = CommandRun(
            command=command,
            exit_code=None if timed_out or stopped or replaced else exit_code,
            stdout=redact(stdout),
            stderr=redact(stderr),
            duration_s=round(duration, 3),
            timed_out=timed_out,
        )
        out.unlink(missing_ok=True)
        err.unlink(missing_ok=True)
        if replaced:
            result.error = replaced
        elif timed_out:
            result.error = timed_out_error(timeout)  # as under tempdir: a query on the text finds both
        elif stopped:
            result.error = "stopped: the run was interrupted (container removed)"
        elif exit_code == OOM_EXIT and not self.interrupt.is_set() and self.container.vanished():
            raise SandboxUnavailable("the sandbox's container is gone: the command was killed with it (exit code 137)")
        elif exit_code == OOM_EXIT and self.container.oom_killed():
            result.oom_killed = True
            result.error = (
                f"killed by the out-of-memory killer (OOMKilled): the command exceeded "
                f"sandbox.limits.max_memory_mb={self.config.limits.max_memory_mb}"
            )
        note = UNSTOPPABLE_NOTE if os.path.lexists(left) else TAMPERED_NOTE if replaced else None
        if sweeping and not stopped and note:
            self.container.restart()
            result.stderr += note
        elif sweeping and not stopped and exit_code is not None and exit_code >= SIGNALLED_EXIT:
            self._end_after_signal()
        return result

    def _end_after_signal(self) -> None:
        """A sweep's shell that ended by a signal (or a command that did: their statuses are one) may have been
        killed before it ended what the command left: everything but the services ends now. The command's result
        stands: an engine that fails this takes the container with it."""
        try:
            self._end_unkept()
        except Exception as exc:
            log.warning("%s: ending what a command left failed (%s): the container is removed", self.root, exc)
            self.container.close()

    def _exec_script(self, container: str, argv: list[str], deadline: float) -> tuple[int | None, str | None]:
        """``argv`` run in the container as the commands' user, in their environment and folder, until it ends."""
        api = client().api
        exec_id = api.exec_create(
            container, argv, environment=self.environment(), workdir=str(self.workdir), user=self.container.user
        )
        api.exec_start(exec_id["Id"], detach=True)
        return self._wait(exec_id["Id"], deadline)

    def _wait(self, exec_id: str, deadline: float) -> tuple[int | None, str | None]:
        """Poll the exec until it ends; past the deadline or on an interruption, remove the container."""
        api, pause = client().api, 0.002
        while True:
            state = api.exec_inspect(exec_id)
            if not state["Running"] and state["ExitCode"] is not None:
                return state["ExitCode"], None
            stop = "interrupted" if self.interrupt.is_set() else "timeout" if time.perf_counter() > deadline else None
            if stop:
                self.container.close()
                return None, stop
            time.sleep(pause)
            pause = min(pause * 2, 0.05)
