"""Build the code image (the project for a Dagster deployment) from wheels prepared on the host.

A container does not see the host's package configuration (indexes,
find-links, an intercepting proxy's CA), so the host resolves and downloads
every wheel (``pip wheel``, with whatever configuration it has) and the build
installs them with no index. The image carries a hash of its inputs (the
Dockerfile, the base name, the project's sources and pyproject.toml): an
unchanged project is not rebuilt, so the command is cheap before every deploy.
"""

from __future__ import annotations

import hashlib
import shutil
import sys
import tempfile
from pathlib import Path

from ..core.sandbox.engine import EngineError
from ..core.sandbox.image import DEBIAN_LOCAL, Say, build_from_context, current_hash, debian_local_base, run_build_step

DOCKERFILE = Path(__file__).with_name("Dockerfile")
PACKAGE = Path(__file__).resolve().parent.parent
SOURCE_ROOT = PACKAGE.parent
DEFAULT_TAG = "coder-eval-code:latest"
SOURCE_SUFFIXES = {".py", ".yaml", ".html", ".css", ".db", ""}
WHEEL_TIMEOUT_S = 900


def project_hash(base: str) -> str:
    """What the image is made of: the Dockerfile, the base's name, pyproject.toml and the package's files."""
    digest = hashlib.sha256(DOCKERFILE.read_bytes())
    digest.update(base.encode())
    for path in [SOURCE_ROOT / "pyproject.toml", *_package_files()]:
        digest.update(str(path.relative_to(SOURCE_ROOT)).encode())
        digest.update(hashlib.sha256(path.read_bytes()).digest())
    return digest.hexdigest()[:16]


def _package_files() -> list[Path]:
    return sorted(
        p for p in PACKAGE.rglob("*") if p.is_file() and p.suffix in SOURCE_SUFFIXES and "__pycache__" not in p.parts
    )


def build_code_image(tag: str = DEFAULT_TAG, base: str = DEBIAN_LOCAL, force: bool = False, say: Say = print) -> bool:
    """Build ``tag``; False when an image of the same inputs exists already."""
    if not (SOURCE_ROOT / "pyproject.toml").is_file():
        raise EngineError(f"the code image is built from a source checkout; no pyproject.toml in {SOURCE_ROOT}")
    if base == DEBIAN_LOCAL:
        base = debian_local_base(say)
    wanted = project_hash(base)
    if not force and current_hash(tag) == wanted:
        say(f"{tag} is up to date (inputs {wanted})")
        return False
    with tempfile.TemporaryDirectory(prefix="coder-eval-code-image-") as scratch:
        context = Path(scratch) / "context"
        _prepare_wheels(Path(scratch), context, say)
        shutil.copy(DOCKERFILE, context / "Dockerfile")
        say(f"building {tag} on {base}")
        build_from_context(str(context), tag, base, wanted)
    say(f"built {tag} (inputs {wanted})")
    return True


def _prepare_wheels(scratch: Path, context: Path, say: Say) -> None:
    """The project's wheel in context/project, every dependency's (docker extra included) in context/wheels.

    The project is built from a copy, so setuptools' build folder never lands in the checkout.
    """
    source = scratch / "source"
    source.mkdir()
    for name in ("pyproject.toml", "README.md"):
        shutil.copy(SOURCE_ROOT / name, source / name)
    shutil.copytree(PACKAGE, source / PACKAGE.name, ignore=shutil.ignore_patterns("__pycache__", "*.pyc"))
    wheels, project = context / "wheels", context / "project"
    project.mkdir(parents=True)
    say("preparing wheels on the host (pip wheel)")
    command = [sys.executable, "-m", "pip", "wheel", "--quiet", "--wheel-dir", str(wheels), f"{source}[docker]"]
    run_build_step(command, WHEEL_TIMEOUT_S, "pip wheel")
    for wheel in wheels.glob("coder_eval_dagster-*.whl"):
        wheel.rename(project / wheel.name)
