"""mypy (pyproject.toml ``[tool.mypy] files``) checks every pure module, which the import contract "Pure
computation imports no Django, DRF or Celery" lists by dotted name, so a pure module added to the contract is not
left out of the type check; it checks Django modules as well (the engine, common/)."""
from __future__ import annotations

import tomllib
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent


def covers(module: str, names: set[str]) -> bool:
    """Whether ``module`` is one of ``names`` or inside one of them (a package)."""
    return any(module == name or module.startswith(f"{name}.") for name in names)


def test_mypy_checks_every_pure_module_and_only_files_that_exist():
    config = tomllib.loads((REPO / "pyproject.toml").read_text())
    checked = {path.removesuffix(".py").removesuffix("/__init__").replace("/", ".")
               for path in config["tool"]["mypy"]["files"]}
    [pure] = [contract for contract in config["tool"]["importlinter"]["contracts"]
              if contract["name"].startswith("Pure computation")]
    listed = set(pure["source_modules"])
    assert sorted(name for name in listed if not covers(name, checked) and not any(
        covers(module, {name}) for module in checked)) == [], "pure modules mypy does not check"
    # Beyond the pure modules mypy checks Django modules too (through django-stubs); a listed file that was moved
    # or removed must not leave the list naming nothing.
    assert [path for path in config["tool"]["mypy"]["files"] if not (REPO / path).is_file()] == []
