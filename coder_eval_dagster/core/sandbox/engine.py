"""The Docker engine: one client per process, the sandbox image's name, and the sweeper of orphaned containers.

The engine is the one ``DOCKER_HOST`` names (default: the local socket). Every
failure to reach it or to find the image becomes an ``EngineError`` whose one
line names the fix, never a traceback; so does a missing docker extra, since
every use of the docker SDK imports it through :func:`sdk`.
"""

from __future__ import annotations

import functools
import os
import re
import threading
from collections.abc import Iterable
from importlib.metadata import version
from pathlib import Path, PurePath
from types import ModuleType
from typing import TYPE_CHECKING, Any

from ..run_lock import in_use

if TYPE_CHECKING:
    from docker import DockerClient

IMAGE_ENV = "CODER_EVAL_DOCKER_IMAGE"
API_TIMEOUT_S = 60
MAX_CONNECTIONS = 64  # one per evaluation thread polling its command, at any --concurrency we expect
LABEL = "coder-eval"  # every sandbox container carries it; the others below name its evaluation
LABEL_RUN, LABEL_TASK, LABEL_VARIANT, LABEL_REPLICATE = (
    "coder-eval.run",
    "coder-eval.task",
    "coder-eval.variant",
    "coder-eval.replicate",
)
LABEL_OWNER = "coder-eval.owner"  # "<host>:<pid>:<process start ticks>" of the process that created it
LABEL_FOLDER = "coder-eval.folder"  # the evaluation's folder: <run folder>/<variant>/<task>/<NN>
_swept = threading.Event()


class EngineError(Exception):
    """The engine or the image is unavailable: the evaluation ends as ERROR with this one line."""


class MissingExtraError(EngineError):
    """The docker SDK is not installed: an installation problem (the image commands exit 2 on it)."""


def sdk() -> ModuleType:
    """The docker SDK (with ``docker.errors``), imported on first use so that start-up stays light."""
    try:
        import docker
        import docker.errors
    except ImportError:
        raise MissingExtraError("the docker extra is not installed: pip install 'coder-eval-dagster[docker]'") from None
    return docker


def default_image() -> str:
    """``CODER_EVAL_DOCKER_IMAGE``, else ``coder-eval-sandbox:<package version>``."""
    return os.environ.get(IMAGE_ENV) or f"coder-eval-sandbox:{version('coder-eval-dagster')}"


def apply_default_docker_image(row_tasks: Iterable[Any], image: str | None) -> None:
    """Give docker tasks that name no image the run's one (the Dagster resource's setting)."""
    for row_task in row_tasks if image else []:
        sandbox = row_task.task.sandbox
        if sandbox.driver == "docker" and sandbox.docker.image is None:
            sandbox.docker.image = image


@functools.cache
def client() -> DockerClient:
    """A client of the engine DOCKER_HOST names, checked once per process."""
    docker = sdk()
    where = os.environ.get("DOCKER_HOST") or "the default socket"
    try:
        engine: DockerClient = docker.from_env(timeout=API_TIMEOUT_S, max_pool_size=MAX_CONNECTIONS)
        engine.ping()
    except Exception as exc:
        raise EngineError(
            f"no Docker engine answers at {where} ({type(exc).__name__}): start dockerd or set DOCKER_HOST"
        ) from None
    return engine


def require_image(name: str) -> None:
    errors = sdk().errors
    try:
        client().images.get(name)
    except errors.ImageNotFound:
        raise EngineError(
            f"sandbox image {name} not found on the engine: run `coder-eval sandbox build` "
            f"(or set sandbox.docker.image / {IMAGE_ENV})"
        ) from None


def _start_ticks(pid: int) -> str | None:
    """The process's start time in clock ticks since boot: a pid reused by another process differs."""
    try:
        with open(f"/proc/{pid}/stat", encoding="ascii") as handle:
            return handle.read().rsplit(")", 1)[1].split()[19]
    except (OSError, IndexError):
        return None


def owner_label() -> str:
    """Who created a sandbox container, so that a sweep can tell whether its creator is gone.

    A process inside a container (a Dagster run container) is named by that
    container: its pid means nothing outside its own PID namespace, and with
    the host's network it even shares the host's name, so a pid check from
    another run container would take a live run's containers for orphans.
    """
    container = _own_container_id()
    if container:
        return f"{CONTAINER_OWNER}{container}"
    return f"{os.uname().nodename}:{os.getpid()}:{_start_ticks(os.getpid())}"


# The engine mounts /etc/hostname (and hosts, resolv.conf) from its folder for the container, whatever the network.
_CONTAINER_MOUNT = re.compile(r"/containers/([0-9a-f]{64})/(?:hostname|hosts|resolv\.conf) ")
CONTAINER_OWNER = "container:"


@functools.cache
def _own_container_id() -> str | None:
    """The id of the container this process runs in, from its mount table (None: not in a container)."""
    try:
        with open("/proc/self/mountinfo", encoding="utf-8") as handle:
            found = _CONTAINER_MOUNT.search(handle.read())
    except OSError:
        return None
    return found.group(1) if found else None


def _orphaned(owner: str) -> bool:
    if owner.startswith(CONTAINER_OWNER):
        try:
            return not container_running(owner[len(CONTAINER_OWNER) :])
        except sdk().errors.APIError:
            return False  # the engine cannot tell: sweep nothing
    host, _, rest = owner.partition(":")
    pid, _, ticks = rest.partition(":")
    if host != os.uname().nodename or not pid.isdigit():
        return False  # another machine's container: not ours to judge
    if _own_container_id():
        # A run container (host network: the host's name) sees its own PID namespace, not the host's: the host
        # process that owns it would look gone, and a CLI run beside a deployment lost containers mid-evaluation.
        return False
    return _start_ticks(int(pid)) != ticks


def container_running(container_id: str) -> bool:
    """Is the container running? (One that is gone is not.)"""
    try:
        return bool(client().api.inspect_container(container_id)["State"]["Running"])
    except sdk().errors.NotFound:
        return False


def _run_going_on(labels: dict[str, str]) -> bool:
    """Whether a live process holds the work lock of the container's run folder: a resumed run's evaluations
    reuse the containers of the process it resumes (gone, yet they are no orphans), or replace them themselves."""
    folder, variant, task = labels.get(LABEL_FOLDER), labels.get(LABEL_VARIANT), labels.get(LABEL_TASK)
    if not (folder and variant and task):
        return False  # a sandbox of no run's
    parents, depth = Path(folder).parents, len(PurePath(variant, task).parts)  # a task id may hold a "/"
    try:
        return depth < len(parents) and in_use(parents[depth])
    except OSError:
        return False  # cannot tell: its creator being gone decides, as for any other


def sweep_orphans() -> list[str]:
    """Remove the sandbox containers whose creating process is gone (a killed run) and whose run no live process
    resumed; once per process."""
    if _swept.is_set():
        return []
    _swept.set()
    removed = []
    for container in labelled_containers(LABEL):
        labels = container["Labels"]
        if _orphaned(labels.get(LABEL_OWNER, "")) and not _run_going_on(labels):
            remove_container(container["Id"])
            removed.append(container["Id"])
    return removed


def labelled_containers(label: str) -> list[dict[str, Any]]:
    """Id and Labels of the containers with ``label`` (``name`` or ``name=value``), running or not.

    One list call, no per-container inspect: a container removed meanwhile cannot fail it.
    """
    containers: list[dict[str, Any]] = client().api.containers(all=True, filters={"label": label})
    return containers


def remove_container(container_id: str) -> None:
    """Kill and remove a container; one already gone is fine."""
    errors = sdk().errors
    try:
        client().api.remove_container(container_id, force=True, v=True)
    except errors.NotFound:
        pass
    except errors.APIError as exc:
        if "already in progress" not in str(exc):
            raise
