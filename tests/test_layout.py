"""The floors of `olmorl/rewards/`: each concept's room imports only from the floors below it.

service (HTTP face, CLI, launchers) on top; sessions and the verifier folders in the middle; the engine and the
shared wire types at the base. An import running back up (even a lazy one inside a function) is the start of
a cycle and of a newcomer not finding where a thing lives.
"""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

REWARDS = Path(__file__).resolve().parent.parent / "olmorl" / "rewards"
WIRE = {"_models", "_settings", "_metrics", "_not_ok", "_settings_doc", "_token_count"}  # the base floor


def _floor(path: Path) -> str:
    part = path.relative_to(REWARDS).parts
    if part[0] in ("service", "engine", "sessions"):
        return part[0]
    if len(part) == 1 and path.stem in WIRE:
        return "wire"
    if part[0] in ("__init__.py", "__main__.py"):
        return "package"
    return "verifiers"  # math/, code/, ..., environments/, text.py, shaping.py, composite.py


# What each floor may import from inside olmorl.rewards (besides itself).
ALLOWED = {
    "wire": {"wire"},
    "engine": {"wire"},
    "verifiers": {"wire", "engine", "sessions", "verifiers"},
    "sessions": {"wire", "engine"},
    "service": {"wire", "engine", "sessions", "verifiers"},
    "package": {"wire", "engine", "sessions", "verifiers", "service"},
}


def _imported_floors(path: Path) -> set[str]:
    floors = set()
    for node in ast.walk(ast.parse(path.read_text())):
        names = []
        if isinstance(node, ast.ImportFrom) and node.module:
            names = [node.module] + [f"{node.module}.{a.name}" for a in node.names]
        elif isinstance(node, ast.Import):
            names = [a.name for a in node.names]
        for name in names:
            if name.startswith("olmorl.rewards."):
                target = REWARDS.joinpath(*name.split(".")[2:])
                for candidate in (target.with_suffix(".py"), target / "__init__.py"):
                    if candidate.exists():
                        floors.add(_floor(candidate))
        if isinstance(node, ast.Constant) and isinstance(node.value, str) and node.value.startswith("olmorl.rewards."):
            target = REWARDS.joinpath(*node.value.split(".")[2:])  # modules named for importlib
            if target.with_suffix(".py").exists() or (target / "__init__.py").exists():
                floors.add(_floor(target.with_suffix(".py") if target.with_suffix(".py").exists() else target / "__init__.py"))
    return floors


# The registry loads the built-in verifier modules by name: discovery, the one import that runs up by design.
DISCOVERY = {"engine/_registry.py": {"verifiers"}}

MODULES = sorted(p for p in REWARDS.rglob("*.py") if "nltk_data" not in p.parts)


@pytest.mark.parametrize("path", MODULES, ids=lambda p: str(p.relative_to(REWARDS)))
def test_imports_only_from_floors_below(path: Path) -> None:
    floor = _floor(path)
    up = _imported_floors(path) - ALLOWED[floor] - {floor} - DISCOVERY.get(str(path.relative_to(REWARDS)), set())
    assert not up, f"{path.relative_to(REWARDS)} ({floor}) imports from {sorted(up)}"


def test_no_private_module_left_at_the_top_but_the_wire_types() -> None:
    top = {p.stem for p in REWARDS.glob("_*.py")} - {"__init__", "__main__"}
    assert top <= WIRE, f"move {sorted(top - WIRE)} into service/, engine/ or sessions/"
