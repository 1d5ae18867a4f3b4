"""constraints.txt is the lock a fresh machine installs the test suite from (scripts/test): it must pin
every package the extras name, at a version those extras allow, so no test depends on what pip finds."""

import re
import tomllib
from pathlib import Path

from packaging.requirements import Requirement
from packaging.utils import canonicalize_name

ROOT = Path(__file__).resolve().parents[1]
EXTRAS = ("server", "parquet", "tokenizer", "dev", "docs", "train", "tracking", "ray", "deepspeed")  # what scripts/test installs (tokenizer: through train's transformers)


def _locked() -> dict[str, str]:
    pins = {}
    for line in (ROOT / "constraints.txt").read_text().splitlines():
        line = line.split("#", 1)[0].strip()
        if not line:
            continue
        match = re.fullmatch(r"([A-Za-z0-9_.\-]+)==([^\s;]+)", line)
        assert match, f"constraints.txt: not an exact pin: {line!r}"
        pins[canonicalize_name(match[1])] = match[2]
    return pins


def _requirements() -> list[Requirement]:
    project = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]
    reqs = [Requirement(r) for r in project["dependencies"]]
    for extra in EXTRAS:
        reqs += [Requirement(r) for r in project["optional-dependencies"][extra]]
    return [r for r in reqs if canonicalize_name(r.name) != "olmorl"]


def test_every_requirement_is_pinned_within_its_range():
    pins = _locked()
    for req in _requirements():
        name = canonicalize_name(req.name)
        assert name in pins, f"{req.name} is required by pyproject.toml but not pinned in constraints.txt"
        assert req.specifier.contains(pins[name], prereleases=True), \
            f"constraints.txt pins {req.name}=={pins[name]}, outside pyproject.toml's {req.specifier}"


def test_scripts_test_installs_under_the_lock():
    script = (ROOT / "scripts" / "test").read_text().replace("\\\n", " ")  # continuation lines joined
    installs = [line for line in script.splitlines() if "pip install" in line and not line.lstrip().startswith("#")]
    # each install is held to the lock, or (verl, apart) installs exactly the pins of its own file
    assert installs and all("-c constraints.txt" in line or "-r constraints-verl.txt" in line for line in installs)
    for line in (ROOT / "constraints-verl.txt").read_text().splitlines():
        line = line.split("#", 1)[0].strip()
        assert not line or re.fullmatch(r"[A-Za-z0-9_.\-]+==[^\s;]+", line), f"constraints-verl.txt: {line!r}"
