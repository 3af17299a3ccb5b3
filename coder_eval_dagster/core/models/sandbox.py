"""`sandbox`: where the agent works, what it starts with, and its limits."""

from __future__ import annotations

import ipaddress
import os
import posixpath
import re
from pathlib import Path, PurePosixPath
from typing import Annotated, Any, Literal

from pydantic import AliasChoices, Field, ValidationInfo, field_validator, model_validator

from .base import RegisteredNames, StrictModel, is_inside, is_partial, rule_error, rule_errors, valid_file_name
from .cli_match import ArgvPattern
from .criterion import nulls_unset
from .ignore import IgnorePattern

RECORD_CLI_DIR = "cli_mocks"  # the record_cli shims, in the sandbox
RECORD_CLI_LOG = f"{RECORD_CLI_DIR}/calls.jsonl"  # one JSON line per call; cli_called's default log
# Names a shim may not take: the shell and interpreters the harness itself runs, and the shims' own files.
RESERVED_TOOLS = ("python", "python3", "py", "env", "sh", "bash", "zsh", "cmd", "node", "uv", "git")


class PythonEnv(StrictModel):
    """Packages installed into a venv inside the sandbox (none: the host Python)."""

    env_packages: list[str] = Field(default_factory=list)


class NodeEnv(StrictModel):
    """npm packages installed into the sandbox folder (``bun add``, else ``npm install``)."""

    env_packages: list[str] = Field(default_factory=list)


class CliMatch(ArgvPattern):
    """A response rule's pattern: cli_called's facets, but no flag is ignored (a rule may key on any, ``output``
    included, which takes a value)."""

    value_flags: list[str] = Field(default_factory=lambda: ["output"])
    ignore_flags: list[str] = Field(default_factory=list)

    _nulls = nulls_unset("positional", "flags")  # coder_eval's Optional fields

    @model_validator(mode="before")
    @classmethod
    def _a_mapping(cls, data: Any) -> Any:
        if isinstance(data, str):
            raise ValueError(f"a pattern, not a command line: write {{verb: {data!r}}}")
        return data

    @model_validator(mode="after")
    def _some_facet(self) -> CliMatch:
        if not (self.verb or self.verb_any_of or self.positional or self.flags):
            raise rule_error("", "needs a verb, verb_any_of, positional or flags (the entry's own answer is the rest)")
        return self


class CliResponse(StrictModel):
    """What a shim answers to a call matching ``when`` (the first matching rule wins)."""

    when: CliMatch
    exit_code: int = Field(default=0, ge=0, le=255)
    stdout: str = ""
    stderr: str = ""


class RecordedCli(StrictModel):
    """A command shadowed by a recording shim: it runs nothing, records each call, and answers as told."""

    tool: str = Field(pattern=r"^[A-Za-z0-9._+-]+$")
    exit_code: int = Field(default=1, ge=0, le=255)
    stdout: str = ""
    stderr: str = ""
    responses: list[CliResponse] = Field(default_factory=list)

    @field_validator("tool")
    @classmethod
    def _not_reserved(cls, value: str) -> str:
        if value in RESERVED_TOOLS or value in ("calls.jsonl", "argv_match.py") or value.endswith((".cmd", ".bat")):
            raise ValueError(f"{value!r} cannot be shadowed (the harness and the shims use it)")
        if value in (".", ".."):
            raise ValueError("must be a command name")
        return value

    @model_validator(mode="after")
    def _reachable_rules(self) -> RecordedCli:
        """A rule after one that already answers every call it could match is a mistake: refuse it."""
        for index, rule in enumerate(self.responses):
            for earlier in self.responses[:index]:
                if _covers(earlier.when, rule.when):
                    raise rule_error(f"responses.{index}.when", "never reached: an earlier rule answers these calls")
        return self


def _covers(earlier: CliMatch, later: CliMatch) -> bool:
    """``earlier`` matches every call ``later`` does: the same pattern, or a bare verb prefixing later's verbs."""
    if earlier == later:
        return True
    bare = not (earlier.positional or earlier.flags or earlier.exact_positional)
    return bare and all(any(verb[: len(e)] == e for e in earlier.verbs) for verb in later.verbs)


BUILD_YOURSELF = "images are not built here: build it (docker build -t NAME DIR) and name it in sandbox.docker.image"
NO_HOST_VARIABLES = (
    "the sandbox gets no host variable (agents reach the model through the model proxy): "
    "set it in pre_run or in the image"
)
# coder_eval's other docker keys, and why this driver does not do what they ask (an empty value asks nothing).
UNSUPPORTED_DOCKER_KEYS = {
    "dockerfile_path": BUILD_YOURSELF,
    "build": BUILD_YOURSELF,
    "working_dir": "the sandbox is the working directory, mounted at /sandbox",
    "env_passthrough": NO_HOST_VARIABLES,
    "env_passthrough_extra": NO_HOST_VARIABLES,
    "extra_mounts": "no host folder but the sandbox is mounted: copy what it needs with template_sources",
}


class NetworkPolicy(StrictModel):
    """What a sandbox's commands and agent may reach (both drivers): the hosts allowed, or the open network."""

    allow: list[str] = Field(default_factory=list)
    open: bool = False

    @field_validator("allow")
    @classmethod
    def _host_ports(cls, entries: list[str]) -> list[str]:
        for entry in entries:
            host, _, port = entry.rpartition(":")
            if "*" in host:
                raise ValueError(f"{entry!r}: entries are matched exactly, a wildcard matches no host: name each one")
            if not _is_host(host) or not port.isdigit() or not 0 < int(port) < 65536:
                raise ValueError(f"{entry!r} is not host:port (a name or an address, and a port from 1 to 65535)")
        return entries

    @model_validator(mode="after")
    def _open_or_allow(self) -> NetworkPolicy:
        if self.open and self.allow:
            raise rule_error("allow", "an open network allows everything: drop allow, or open")
        return self


HOST_NAME = re.compile(r"(?!-)[A-Za-z0-9_-]{1,63}(?<!-)(\.(?!-)[A-Za-z0-9_-]{1,63}(?<!-))*\.?")


def _is_host(host: str) -> bool:
    """A name the proxy could match (no space, no wildcard, no path), an IPv4 address, or an IPv6 one in brackets."""
    if host.startswith("[") and host.endswith("]"):
        try:
            return ipaddress.ip_address(host[1:-1]).version == 6
        except ValueError:
            return False
    return len(host) <= 253 and HOST_NAME.fullmatch(host) is not None


NETWORK_NAMES = ("bridge", "none", "host")
Network = Literal["bridge", "none", "host"] | NetworkPolicy  # a block, or one of docker's network names


def _known_network_name(value: Any) -> Any:
    """An unknown network name, or a value neither a name nor a block (``5``, ``true``, a list), in one line
    (pydantic would explain both arms of the union)."""
    named = isinstance(value, str) and value in NETWORK_NAMES
    if named or value is None or isinstance(value, dict | NetworkPolicy):
        return value
    later = " (llm_only is coder_eval's later form, not in its release)" if value == "llm_only" else ""
    raise ValueError(
        f"unknown network {value!r}{later}: use {', '.join(NETWORK_NAMES)}, or a block {{allow: [host:port, ...]}}"
    )


def asks_nothing(value: Any) -> bool:
    """Null, an empty text or list, or a mapping of such: coder_eval dumps an unused ``build`` block as
    ``{buildkit: null, args: {}, secrets: [], extra_args: []}`` in every resolved config."""
    if isinstance(value, dict):
        return all(asks_nothing(item) for item in value.values())
    return value is None or value == "" or value == []


class DockerConfig(StrictModel):
    """The docker driver's settings, in coder_eval's place: the image (read only under ``driver: docker``), and
    the network (``sandbox.network`` by another name)."""

    image: str | None = Field(default=None, min_length=1)
    network: Network | None = None  # coder_eval's spelling of sandbox.network: the same setting, both drivers

    _network = field_validator("network", mode="before")(_known_network_name)

    @model_validator(mode="before")
    @classmethod
    def _unsupported_keys(cls, data: Any) -> Any:
        if not isinstance(data, dict):
            return data
        asked = [(key, why) for key, why in UNSUPPORTED_DOCKER_KEYS.items() if not asks_nothing(data.get(key))]
        if asked:
            raise rule_errors(cls.__name__, [(key, f"not supported: {why}") for key, why in asked])
        return {key: value for key, value in data.items() if key not in UNSUPPORTED_DOCKER_KEYS}


REPO_FOLDER = "repo"  # where a repo source is cloned, in the sandbox (coder_eval's place)
REPO_FIRST = "a repo source must be first in the list"
ENV_VARIABLE = re.compile(r"\$\{([A-Za-z_][A-Za-z0-9_]*)\}|\$([A-Za-z_][A-Za-z0-9_]*)")  # coder_eval's $VAR / ${VAR}


class RepoSource(StrictModel):
    """A git clone into ``repo/`` of the sandbox, checked out at ``commit`` (a branch, a tag or a commit) when
    given."""

    type: Literal["repo"]
    url: str = Field(min_length=1)
    commit: str | None = None

    @field_validator("commit")
    @classmethod
    def _not_an_option(cls, value: str | None) -> str | None:
        if value is not None and value.startswith("-"):
            raise ValueError(f"must name a branch, tag or commit, not an option: {value!r}")
        return value


def is_relative_local_path(url: str) -> bool:
    """A repo source's ``url`` that is a relative local path: not a URL (``scheme://``), a ``host:path`` or an
    absolute path, which git reads as written. Such a path is relative to the file naming it."""
    remote = "://" in url or re.match(r"^[^/]+:", url) is not None
    return not remote and not Path(url).is_absolute()


def unset_variables(path: str) -> list[str]:
    """The ``$VAR`` / ``${VAR}`` that ``path`` names and the environment does not set, as ``$VAR``."""
    named = dict.fromkeys(match.group(1) or match.group(2) for match in ENV_VARIABLE.finditer(path))
    return [f"${name}" for name in named if name not in os.environ]


def expand_environment(path: str) -> str:
    """``$VAR`` and ``${VAR}`` in ``path`` from the environment, as coder_eval expands a template folder; a variable
    that is not set is refused (the folder would otherwise be looked for under a literal ``$VAR``)."""
    unset = unset_variables(path)
    if len(unset) == 1:
        raise ValueError(f"environment variable {unset[0]} is not set ({path!r} names it): set it before loading")
    if unset:
        raise ValueError(f"environment variables {', '.join(unset)} are not set ({path!r} names them): set them first")
    return os.path.expandvars(path)


class TemplateDirSource(StrictModel):
    type: Literal["template_dir"]
    path: str = Field(min_length=1)  # $VAR / ${VAR} taken from the environment when the task is read
    mount_point: str = "."
    # coder_eval's: template-relative globs copied even when an ignore pattern would skip them.
    include_patterns: list[str] = Field(default_factory=list)

    _expanded = field_validator("path")(expand_environment)

    @field_validator("mount_point")
    @classmethod
    def _stays_inside(cls, value: str) -> str:
        valid_file_name(value)
        if not is_inside(value):
            raise ValueError("must be a relative path that stays inside the sandbox")
        return value

    @field_validator("include_patterns")
    @classmethod
    def _relative_patterns(cls, value: list[str]) -> list[str]:
        for pattern in value:
            if not pattern:
                raise ValueError("entries must not be empty")
            if pattern.startswith(("/", "\\")) or re.match(r"^[A-Za-z]:", pattern):
                raise ValueError(f"entries must be relative to the template folder, got {pattern!r}")
            if ".." in re.split(r"[/\\]", pattern):
                raise ValueError(f"entries must not contain '..' segments, got {pattern!r}")
        return value


class StarterFile(StrictModel):
    path: str = Field(min_length=1)
    content: str = ""

    @field_validator("path")
    @classmethod
    def _stays_inside(cls, value: str) -> str:
        valid_file_name(value)
        if not is_inside(value) or value.strip("./") == "":
            raise ValueError("must be a relative file path that stays inside the sandbox")
        named = [part for part in re.split(r"[/\\]+", value) if part not in ("", ".")]
        if not named or named[-1] == "..":  # `a/..` is the folder holding a: nothing a file can be written to
            raise ValueError(f"must name a file, not a folder: {value!r} ends in '..'")
        return value


class StarterFilesSource(StrictModel):
    type: Literal["starter_files"]
    files: list[StarterFile] = Field(min_length=1)

    @model_validator(mode="after")
    def _no_file_holds_another(self) -> StarterFilesSource:
        """``a`` and ``a/b`` in one list: ``a`` would be a file and a folder (the second one written failed at run
        time, with the sandbox's host path)."""
        paths = [PurePosixPath(posixpath.normpath(starter.path)) for starter in self.files]
        for index, path in enumerate(paths):
            for earlier in paths[:index]:
                file, inside = (earlier, path) if earlier in path.parents else (path, earlier)
                if file in inside.parents:
                    raise rule_error(
                        f"files.{index}.path",
                        f"{file} is a file of this source, so it cannot be a folder holding {inside}",
                    )
        return self


TemplateSource = Annotated[RepoSource | TemplateDirSource | StarterFilesSource, Field(discriminator="type")]


def check_repo_first(sources: list[TemplateSource]) -> None:
    """A repo clone (into ``repo/``) comes before every other source, as coder_eval requires: the folder git clones
    into must be empty."""
    for index, source in enumerate(sources):
        if isinstance(source, RepoSource) and index != 0:
            raise rule_error(f"template_sources.{index}", REPO_FIRST)


class SandboxLimits(StrictModel):
    timeout: float | None = Field(default=None, gt=0)
    max_memory_mb: int | None = Field(default=None, ge=1)
    max_cpus: float | None = Field(default=None, gt=0)
    max_pids: int | None = Field(default=None, ge=1)
    max_disk_mb: int | None = Field(default=None, ge=1)


SANDBOX_DRIVERS = RegisteredNames("sandbox driver")  # core/sandbox/__init__.py registers each with its class


class SandboxConfig(StrictModel):
    driver: str = Field(default="tempdir", json_schema_extra=SANDBOX_DRIVERS.schema)
    python: PythonEnv | None = Field(default_factory=PythonEnv)
    template_sources: list[TemplateSource] = Field(default_factory=list)
    # coder_eval reads its legacy name too
    ignore_patterns: list[IgnorePattern] = Field(
        default_factory=list, validation_alias=AliasChoices("ignore_patterns", "additional_ignore_patterns")
    )
    limits: SandboxLimits = Field(default_factory=SandboxLimits)
    node: NodeEnv | None = None
    record_cli: list[RecordedCli] = Field(default_factory=list)
    mock_path_dirs: list[str] = Field(default_factory=list)
    docker: DockerConfig = Field(default_factory=DockerConfig)
    # This project's first spelling of docker.image, kept (setting both ways is refused).
    image: str | None = Field(default=None, min_length=1)
    # Both drivers' (beyond the guide): what commands and agents may reach, phase by phase.
    network: Network = Field(default_factory=NetworkPolicy)

    _network = field_validator("network", mode="before")(_known_network_name)
    _nulls = nulls_unset("template_sources", "record_cli", "mock_path_dirs")  # coder_eval's Optional fields

    @field_validator("driver")
    @classmethod
    def _registered_driver(cls, value: str) -> str:
        return SANDBOX_DRIVERS.check(value)

    @field_validator("mock_path_dirs")
    @classmethod
    def _dirs_inside(cls, value: list[str]) -> list[str]:
        for entry in value:
            valid_file_name(entry)
            if not is_inside(entry):
                raise ValueError(f"{entry!r} must be a relative folder that stays inside the sandbox")
        return value

    @model_validator(mode="after")
    def _repo_first(self, info: ValidationInfo) -> SandboxConfig:
        if not is_partial(info):
            check_repo_first(self.template_sources)
        return self

    @model_validator(mode="after")
    def _one_spelling(self) -> SandboxConfig:
        """``image`` fills ``docker.image``; ``docker.network`` fills ``network`` (whose home is here: it binds
        under both drivers). The same setting given both ways must agree."""
        if self.image is not None:
            if "image" in self.docker.model_fields_set and self.docker.image != self.image:
                raise rule_error("image", "set once: sandbox.image and sandbox.docker.image differ")
            self.docker.image = self.image
        if self.docker.network is not None:
            if "network" in self.model_fields_set and self.network != self.docker.network:
                raise rule_error("network", "set once: sandbox.network and sandbox.docker.network differ")
            self.network = self.docker.network
        return self

    @model_validator(mode="after")
    def _one_shim_per_tool(self) -> SandboxConfig:
        tools = [entry.tool for entry in self.record_cli]
        for index, tool in enumerate(tools):
            if tool in tools[:index]:
                raise rule_error(f"record_cli.{index}.tool", f"{tool!r} is shadowed twice")
        return self


CONFINING_LIMITS = ("max_memory_mb", "max_cpus", "max_pids")


def unbound_limits(sandbox: dict[str, Any]) -> list[tuple[str, str]]:
    """(field, why) for each limit a sandbox section sets that will not bind (a warning, not an error)."""
    limits = sandbox.get("limits")
    if not isinstance(limits, dict):
        limits = {}
    driver = sandbox.get("driver", "tempdir")
    found = []
    for name in [*CONFINING_LIMITS, "max_disk_mb"]:
        if limits.get(name) is None:
            continue
        if name == "max_disk_mb":  # reserved, as the guide's table says
            found.append((name, "max_disk_mb is not enforced by either driver"))
        elif driver != "docker":
            found.append((name, f"{name} does not bind under driver {driver}: use driver: docker"))
    return found
