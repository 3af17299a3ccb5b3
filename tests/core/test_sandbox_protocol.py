"""Every registered sandbox driver has every member of the ``Sandbox`` protocol (core/sandbox/base.py), as the
protocol declares it.

mypy checks a driver against the protocol only where the driver is assigned to a ``Sandbox``, and ``open_sandbox``
looks drivers up by name (``DRIVERS``); tests are not type-checked (``make lint``). So this checks at run time: a
driver missing a member, or a member added to the protocol that a driver lacks, fails here and not inside an
evaluation.
"""

from __future__ import annotations

import inspect
import typing
from pathlib import Path
from typing import Any

import pytest

from coder_eval_dagster.core.models.sandbox import SandboxConfig
from coder_eval_dagster.core.sandbox import DRIVERS, Sandbox, open_sandbox

# What the protocol declares beside its attributes: its methods and properties.
MEMBERS = {name: value for name, value in vars(Sandbox).items() if not name.startswith("_")}


def _parameters(function: Any) -> list[tuple[str, Any]]:
    return [(p.name, p.kind) for p in inspect.signature(function).parameters.values()]


@pytest.mark.parametrize("driver", sorted(DRIVERS))
def test_each_driver_has_the_protocols_methods_and_properties(driver: str, tmp_path: Path) -> None:
    sandbox = open_sandbox(tmp_path / "sandbox", SandboxConfig(driver=driver))  # built only: nothing is started
    cls = type(sandbox)
    for name, declared in MEMBERS.items():
        found = inspect.getattr_static(cls, name, None)
        assert found is not None, f"{cls.__name__} has no {name}"
        if isinstance(declared, property):
            assert isinstance(found, property), f"{cls.__name__}.{name} is not a property"
            continue
        assert callable(found), f"{cls.__name__}.{name} is not a method"
        assert _parameters(getattr(cls, name)) == _parameters(declared), f"{cls.__name__}.{name}'s parameters"


@pytest.mark.parametrize("driver", sorted(DRIVERS))
def test_each_driver_sets_the_protocols_attributes(driver: str, tmp_path: Path) -> None:
    sandbox = open_sandbox(tmp_path / "sandbox", SandboxConfig(driver=driver))
    for name, kind in typing.get_type_hints(Sandbox).items():
        assert isinstance(getattr(sandbox, name, None), kind), f"{type(sandbox).__name__}.{name}"


def test_the_check_covers_every_member_the_protocol_declares() -> None:
    assert {"venv", "end_processes", "mark_services", "end_leftovers", "shared", "close"} <= set(MEMBERS)
    assert set(typing.get_type_hints(Sandbox)) == {"root", "config", "interrupt"}
