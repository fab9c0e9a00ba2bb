"""Shared fixtures: paths, a tiny scenario builder, a script loader and a
small disk."""

from __future__ import annotations

import contextlib
import importlib.util
import os
import subprocess
from pathlib import Path
from types import ModuleType

import pytest

ROOT = Path(__file__).resolve().parent.parent
SCENARIOS = ROOT / "scenarios"


#: Run a command as the unprivileged user `nobody` (the tests of refusals
#: without root, run as root).
AS_NOBODY = ["setpriv", "--reuid=65534", "--regid=65534", "--clear-groups"]


def skip_unless_nobody_can_run_xrc() -> None:
    """Skips the test, saying why, where the user `nobody` cannot import
    this checkout's xrc: a directory above it is not world-readable (a clone
    inside ``mktemp -d``, mode 0700, is one), so a refusal cannot be tested
    as that user."""
    import sys

    r = subprocess.run([*AS_NOBODY, sys.executable, "-c", "import xrc.cli"], capture_output=True, text=True,
                       timeout=60, cwd="/")
    if r.returncode != 0:
        pytest.skip(f"the unprivileged user (uid 65534) cannot import xrc from {ROOT} (a parent directory is not "
                    f"readable to it); clone into a world-readable directory to run this test")


def load_script(name: str) -> ModuleType:
    """``scripts/NAME.py`` as a module (the scripts are not a package)."""
    spec = importlib.util.spec_from_file_location(name, ROOT / "scripts" / f"{name}.py")
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod


@contextlib.contextmanager
def small_tmpfs(where: Path, size: str):
    """A tmpfs of `size` (``96k``, ``2m``) mounted at `where`/disk, unmounted
    on every exit path; skips the test without root or where it cannot be
    mounted."""
    if os.geteuid() != 0:
        pytest.skip("mounting a small tmpfs needs root")
    disk = where / "disk"
    disk.mkdir()
    if subprocess.run(["mount", "-t", "tmpfs", "-o", f"size={size}", "tmpfs", str(disk)],
                      capture_output=True).returncode:
        pytest.skip("cannot mount a tmpfs here")
    try:
        yield disk
    finally:
        subprocess.run(["umount", str(disk)], check=False)

MINIMAL_CELL = """
name = "minimal"
seed = 3
duration_s = 2.0
topology = "cellular"

[[ues]]
channel = { kind = "fixed_cqi", cqi = 10 }

[[flows]]
ue = 0
cc = "newreno"
"""


@pytest.fixture
def write_scenario(tmp_path):
    """Writes TOML text to a scenario file and returns its path."""

    def _write(text: str, name: str = "s.toml") -> Path:
        p = tmp_path / name
        p.write_text(text)
        return p

    return _write
