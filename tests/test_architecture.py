"""The import-linter contracts in pyproject.toml cover the whole core, not only the modules that existed when they
were written: a new core module must be named in the core's contract, or the rule between the rooms does not hold
for it."""

import tomllib
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
ROOMS = {"book", "classroom", "site"}  # the packages the core must not import


def _core_modules() -> set[str]:
    """Every module and package directly under transformer_lib that is not the book, the classroom or the site."""
    package = ROOT / "transformer_lib"
    modules = {p.stem for p in package.glob("*.py") if p.name != "__init__.py"}
    packages = {p.name for p in package.iterdir() if (p / "__init__.py").is_file()}
    return {f"transformer_lib.{name}" for name in (modules | packages) - ROOMS}


def _contract(name: str) -> dict:
    contracts = tomllib.loads((ROOT / "pyproject.toml").read_text())["tool"]["importlinter"]["contracts"]
    matches = [c for c in contracts if c["name"] == name]
    assert len(matches) == 1, f"expected one contract named {name!r}, found {len(matches)}"
    return matches[0]


def test_the_core_contract_names_every_core_module() -> None:
    contract = _contract("The core imports neither the book, the classroom nor the site")
    assert set(contract["forbidden_modules"]) == {f"transformer_lib.{room}" for room in ROOMS}
    listed = set(contract["source_modules"])
    assert listed == _core_modules(), (
        f"not in the contract: {sorted(_core_modules() - listed)}; no such module: {sorted(listed - _core_modules())}"
    )


def test_the_book_contract_forbids_the_classroom_and_the_site() -> None:
    contract = _contract(
        "The book imports neither the classroom nor the site (the site draws the book's figures, not the reverse)"
    )
    assert contract["source_modules"] == ["transformer_lib.book"]
    assert contract["forbidden_modules"] == ["transformer_lib.classroom", "transformer_lib.site"]
