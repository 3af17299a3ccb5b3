"""`sandbox`: where the agent works, what it starts with, and its limits."""

from __future__ import annotations

from typing import Annotated, Any, Literal

from pydantic import Field, ValidationInfo, field_validator, model_validator

from .base import RegisteredNames, StrictModel, is_inside, is_partial, rule_error
from .ignore import IgnorePattern


class PythonEnv(StrictModel):
    """Packages installed into a venv inside the sandbox (none: the host Python)."""

    env_packages: list[str] = Field(default_factory=list)


class RepoSource(StrictModel):
    type: Literal["repo"]
    url: str = Field(min_length=1)
    commit: str | None = None


class TemplateDirSource(StrictModel):
    type: Literal["template_dir"]
    path: str = Field(min_length=1)
    mount_point: str = "."

    @field_validator("mount_point")
    @classmethod
    def _stays_inside(cls, value: str) -> str:
        if not is_inside(value):
            raise ValueError("must be a relative path that stays inside the sandbox")
        return value


class StarterFile(StrictModel):
    path: str = Field(min_length=1)
    content: str = ""

    @field_validator("path")
    @classmethod
    def _stays_inside(cls, value: str) -> str:
        if not is_inside(value) or value.strip("./") == "":
            raise ValueError("must be a relative file path that stays inside the sandbox")
        return value


class StarterFilesSource(StrictModel):
    type: Literal["starter_files"]
    files: list[StarterFile] = Field(min_length=1)


TemplateSource = Annotated[RepoSource | TemplateDirSource | StarterFilesSource, Field(discriminator="type")]


def check_repo_first(sources: list[TemplateSource]) -> None:
    """A repo clone replaces the folder, so it can only be the first source."""
    for index, source in enumerate(sources):
        if isinstance(source, RepoSource) and index != 0:
            raise rule_error(f"template_sources.{index}", "a repo source must be first in the list")


class SandboxLimits(StrictModel):
    timeout: float | None = Field(default=None, gt=0)
    max_memory_mb: int | None = Field(default=None, ge=1)
    max_cpus: float | None = Field(default=None, gt=0)
    max_pids: int | None = Field(default=None, ge=1)
    max_disk_mb: int | None = Field(default=None, ge=1)


class NetworkPolicy(StrictModel):
    """What a sandbox's commands and agent may reach (both drivers): the hosts allowed, or the open network."""

    allow: list[str] = Field(default_factory=list)
    open: bool = False

    @field_validator("allow")
    @classmethod
    def _host_ports(cls, entries: list[str]) -> list[str]:
        for entry in entries:
            host, _, port = entry.rpartition(":")
            if not host.strip("[]") or not port.isdigit() or not 0 < int(port) < 65536 or "/" in host:
                raise ValueError(f"{entry!r} is not host:port (a name or an address, and a port from 1 to 65535)")
        return entries

    @model_validator(mode="after")
    def _open_or_allow(self) -> NetworkPolicy:
        if self.open and self.allow:
            raise rule_error("allow", "an open network allows everything: drop allow, or open")
        return self


SANDBOX_DRIVERS = RegisteredNames("sandbox driver")  # core/sandbox/__init__.py registers each with its class


class SandboxConfig(StrictModel):
    driver: str = Field(default="tempdir", json_schema_extra=SANDBOX_DRIVERS.schema)
    python: PythonEnv | None = Field(default_factory=PythonEnv)
    template_sources: list[TemplateSource] = Field(default_factory=list)
    ignore_patterns: list[IgnorePattern] = Field(default_factory=list)
    limits: SandboxLimits = Field(default_factory=SandboxLimits)
    # Extensions of the guide's format: the image is the docker driver's; the network, both drivers'.
    image: str | None = Field(default=None, min_length=1)
    network: Literal["bridge", "none", "host"] | NetworkPolicy = Field(default_factory=NetworkPolicy)

    @field_validator("driver")
    @classmethod
    def _registered_driver(cls, value: str) -> str:
        return SANDBOX_DRIVERS.check(value)

    @model_validator(mode="after")
    def _repo_first(self, info: ValidationInfo) -> SandboxConfig:
        if not is_partial(info):
            check_repo_first(self.template_sources)
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
        if driver != "docker":
            found.append((name, f"{name} does not bind under driver {driver}: use driver: docker"))
        elif name == "max_disk_mb":
            found.append((name, "max_disk_mb is not enforced by the docker driver"))
    return found
