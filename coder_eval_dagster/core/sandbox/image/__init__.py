"""Build the sandbox image from the Dockerfile shipped here, on any base, offline if need be.

The image carries a label with a hash of what went into it (Dockerfile, base
name, uv binary), so a build whose inputs did not change is skipped. The
``debian-local`` base is made without any registry: ``debootstrap`` from the
host's Debian mirror, then imported into the engine (cached under its tag).
"""

from __future__ import annotations

import hashlib
import re
import shutil
import subprocess
import tarfile
import tempfile
from collections.abc import Callable
from pathlib import Path

from ..engine import EngineError, client, sdk
from ..process import run_group
from ..tempdir import uv_binary

DOCKERFILE = Path(__file__).with_name("Dockerfile")
DEFAULT_BASE = "python:3.11-slim-bookworm"
DEBIAN_LOCAL = "debian-local"
DEBIAN_LOCAL_TAG = "coder-eval-base:debian-bookworm"
DEBIAN_PACKAGES = "python3,python3-venv,git,ca-certificates,passwd"
DEFAULT_MIRROR = "http://deb.debian.org/debian"
HASH_LABEL = "coder-eval.image-hash"
DEBOOTSTRAP_TIMEOUT_S = 900
BUILD_TIMEOUT_S = 900

Say = Callable[[str], None]


def inputs_hash(base: str, uv: Path) -> str:
    """What the image is made of: the Dockerfile, the base's name and the uv binary."""
    digest = hashlib.sha256(DOCKERFILE.read_bytes())
    digest.update(base.encode())
    digest.update(hashlib.sha256(uv.read_bytes()).digest())
    return digest.hexdigest()[:16]


def current_hash(tag: str) -> str | None:
    errors = sdk().errors
    try:
        return (client().images.get(tag).labels or {}).get(HASH_LABEL)
    except errors.ImageNotFound:
        return None


def build(tag: str, base: str = DEFAULT_BASE, force: bool = False, say: Say = print) -> bool:
    """Build ``tag`` on ``base``; False when an image with the same inputs already exists."""
    uv = Path(uv_binary() or "")
    if not uv.is_file():
        raise EngineError("no uv binary to copy into the image: install the uv package")
    if base == DEBIAN_LOCAL:
        base = debian_local_base(say)
    wanted = inputs_hash(base, uv)
    if not force and current_hash(tag) == wanted:
        say(f"{tag} is up to date (inputs {wanted})")
        return False
    with tempfile.TemporaryDirectory(prefix="coder-eval-image-") as context:
        shutil.copy(DOCKERFILE, Path(context) / "Dockerfile")
        shutil.copy(uv, Path(context) / "uv")
        say(f"building {tag} on {base}")
        build_from_context(context, tag, base, wanted)
    say(f"built {tag} (inputs {wanted})")
    return True


def build_from_context(context: str, tag: str, base: str, wanted: str) -> None:
    errors = sdk().errors
    try:
        client().images.build(
            path=context,
            tag=tag,
            buildargs={"BASE": base},
            labels={HASH_LABEL: wanted},
            rm=True,
            forcerm=True,  # a failed legacy build leaves no container behind
            network_mode="host",  # apt-get on a base without git; never the bridge
            timeout=BUILD_TIMEOUT_S,
        )
    except errors.BuildError as exc:
        raise EngineError(f"building {tag} failed: {exc.msg.strip()}") from None
    except errors.APIError as exc:
        raise EngineError(f"building {tag} failed: {exc.explanation or exc}") from None


def debian_local_base(say: Say = print) -> str:
    """Debian bookworm from the host's mirror (debootstrap), imported once and cached under its tag."""
    errors = sdk().errors
    try:
        client().images.get(DEBIAN_LOCAL_TAG)
        return DEBIAN_LOCAL_TAG
    except errors.ImageNotFound:
        pass
    if shutil.which("debootstrap") is None:
        raise EngineError("--base debian-local needs debootstrap: apt-get install debootstrap")
    mirror = host_debian_mirror()
    say(f"making {DEBIAN_LOCAL_TAG} with debootstrap from {mirror}")
    with tempfile.TemporaryDirectory(prefix="coder-eval-debootstrap-") as scratch:
        root = Path(scratch) / "root"
        command = ["debootstrap", "--variant=minbase", f"--include={DEBIAN_PACKAGES}", "bookworm", str(root), mirror]
        run_build_step(command, DEBOOTSTRAP_TIMEOUT_S, "debootstrap")
        for cache in ("var/cache/apt/archives", "var/lib/apt/lists"):
            for item in (root / cache).glob("*"):
                if item.is_file():
                    item.unlink()
        archive = Path(scratch) / "root.tar"
        with tarfile.open(archive, mode="w") as tar:
            tar.add(root, arcname=".")
        repository, tag = DEBIAN_LOCAL_TAG.split(":")
        client().api.import_image_from_file(
            str(archive), repository=repository, tag=tag, changes=['CMD ["/bin/bash"]', "ENV LANG=C.UTF-8"]
        )
    return DEBIAN_LOCAL_TAG


def host_debian_mirror() -> str:
    """The first Debian mirror of the host's apt sources (deb822 or one-line format)."""
    sources = [Path("/etc/apt/sources.list"), *sorted(Path("/etc/apt/sources.list.d").glob("*"))]
    for path in sources:
        text = path.read_text(encoding="utf-8", errors="replace") if path.is_file() else ""
        match = re.search(r"^(?:URIs:\s*|deb\s+(?:\[[^\]]*\]\s+)?)(\S+/debian)/?\s", text, re.MULTILINE)
        if match:
            return match.group(1)
    return DEFAULT_MIRROR


def run_build_step(command: list[str], timeout: float, what: str) -> None:
    """One host-side step of an offline image build; its failure or timeout is one EngineError line."""
    try:
        done = run_group(command, timeout)
    except subprocess.TimeoutExpired:
        raise EngineError(f"{what} did not finish within {timeout:g} s") from None
    if done.returncode != 0:
        raise EngineError(f"{what} failed: {(done.stderr or done.stdout).strip().splitlines()[-1:]}")
