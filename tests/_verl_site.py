"""verl in tests: scripts/test installs it in build/verl-site, and its antlr4 4.9 must not meet latex2sympy's 4.13
in one process, so a verl test runs again in a process of its own with that site first on the path."""

from __future__ import annotations

import importlib.util
import os
import subprocess
import sys
from pathlib import Path

import pytest

VERL_SITE = Path(__file__).resolve().parents[1] / "build" / "verl-site"


def verl_here_or_rerun(test_file: str, test_name: str) -> bool:
    """True: verl imports in this process, run the test body. False: the test ran (and passed) in a new process."""
    if os.environ.get("OLMORL_VERL_SITE"):  # the run below: verl goes first on the path
        sys.path.insert(0, os.environ["OLMORL_VERL_SITE"])
        return True
    if importlib.util.find_spec("verl") is not None:
        return True
    if not VERL_SITE.is_dir():
        pytest.skip("verl is not installed: scripts/test puts it in build/verl-site (constraints-verl.txt)")
    test = f"{Path(test_file).resolve()}::{test_name}"
    proc = subprocess.run([sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", test],
                          env={**os.environ, "OLMORL_VERL_SITE": str(VERL_SITE)}, capture_output=True, text=True,
                          timeout=600)
    assert proc.returncode == 0 and "1 passed" in proc.stdout, proc.stdout[-4000:] + proc.stderr[-2000:]
    return False
