"""mypy checks the pure modules (pyproject.toml ``[tool.mypy] files``), which the import contract "Pure
computation imports no Django, DRF or Celery" lists by dotted name: the two lists name the same modules, so a
pure module added to one is not left out of the other."""
from __future__ import annotations

import tomllib
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent


def covers(module: str, names: set[str]) -> bool:
    """Whether ``module`` is one of ``names`` or inside one of them (a package)."""
    return any(module == name or module.startswith(f"{name}.") for name in names)


def test_mypy_checks_exactly_the_pure_modules():
    config = tomllib.loads((REPO / "pyproject.toml").read_text())
    checked = {path.removesuffix(".py").removesuffix("/__init__").replace("/", ".")
               for path in config["tool"]["mypy"]["files"]}
    [pure] = [contract for contract in config["tool"]["importlinter"]["contracts"]
              if contract["name"].startswith("Pure computation")]
    listed = set(pure["source_modules"])
    assert sorted(name for name in listed if not covers(name, checked) and not any(
        covers(module, {name}) for module in checked)) == [], "pure modules mypy does not check"
    assert sorted(module for module in checked if not covers(module, listed)) == [], \
        "modules mypy checks that the pure contract does not list"
