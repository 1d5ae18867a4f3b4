"""scripts/install-torch.sh picks the torch build for the machine: installed, a local wheel (this machine's
find-links), PyTorch's CPU index when no GPU is present, PyPI's CUDA build when one is (`--dry-run`: real
pip resolution, nothing installed)."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parent.parent
SCRIPT = REPO / "scripts" / "install-torch.sh"


@pytest.fixture(scope="module")
def bare_python(tmp_path_factory) -> str:
    """A Python with pip and no torch."""
    venv = tmp_path_factory.mktemp("venv")
    subprocess.run([sys.executable, "-m", "venv", str(venv)], check=True, timeout=120)
    return str(venv / "bin" / "python")


def choose(python: str, find_links: str, path: str) -> subprocess.CompletedProcess[str]:
    env = {**os.environ, "PYTHON": python, "PIP_CONFIG_FILE": os.devnull, "PIP_FIND_LINKS": find_links,
           "PATH": path}
    return subprocess.run(["bash", str(SCRIPT), "--dry-run"], capture_output=True, text=True, env=env, timeout=120)


def test_installed_torch_is_kept():
    proc = subprocess.run(["bash", str(SCRIPT), "--dry-run"], capture_output=True, text=True, timeout=120)
    assert proc.returncode == 0 and proc.stdout == ""
    assert "torch 2.13.0" in proc.stderr and "is installed" in proc.stderr


def test_without_a_gpu_the_cpu_index_with_one_pypi(bare_python, tmp_path):
    empty, fake_bin = tmp_path / "wheels", tmp_path / "bin"
    empty.mkdir()
    fake_bin.mkdir()
    path = f"{fake_bin}:{os.environ['PATH']}"
    (fake_bin / "nvidia-smi").write_text("#!/bin/sh\necho 'No devices were found' >&2\nexit 6\n")  # a GPU-less host
    (fake_bin / "nvidia-smi").chmod(0o755)
    cpu = choose(bare_python, str(empty), path)
    assert cpu.returncode == 0, cpu.stderr
    assert cpu.stdout.split() == [bare_python, "-m", "pip", "install", "torch==2.13.0", "--index-url",
                                  "https://download.pytorch.org/whl/cpu"]
    (fake_bin / "nvidia-smi").write_text("#!/bin/sh\necho 'GPU 0: NVIDIA H100 (UUID: GPU-0)'\n")
    (fake_bin / "nvidia-smi").chmod(0o755)
    gpu = choose(bare_python, str(empty), path)
    assert gpu.stdout.split() == [bare_python, "-m", "pip", "install", "torch==2.13.0"] and "CUDA" in gpu.stderr


def test_a_local_wheel_wins(bare_python, tmp_path):
    wheels = tmp_path / "wheels"
    wheels.mkdir()
    # a stand-in wheel of the pinned version is enough for pip to resolve (nothing is installed)
    name = "torch-2.13.0+cpu-py3-none-any.whl"
    import zipfile

    with zipfile.ZipFile(wheels / name, "w") as wheel:
        wheel.writestr("torch/__init__.py", "")
        wheel.writestr("torch-2.13.0+cpu.dist-info/METADATA", "Metadata-Version: 2.1\nName: torch\nVersion: 2.13.0+cpu\n")
        wheel.writestr("torch-2.13.0+cpu.dist-info/WHEEL", "Wheel-Version: 1.0\nRoot-Is-Purelib: true\nTag: py3-none-any\n")
        wheel.writestr("torch-2.13.0+cpu.dist-info/RECORD", "")
    local = choose(bare_python, str(wheels), os.environ["PATH"])
    assert local.returncode == 0, local.stderr
    assert local.stdout.split() == [bare_python, "-m", "pip", "install", "torch==2.13.0"]
    assert "a local torch 2.13.0 wheel" in local.stderr
