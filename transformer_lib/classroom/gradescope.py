"""The grader as a Gradescope autograder: ``tl-grade gradescope ASSIGNMENT --out autograder.zip``.

:func:`build_autograder` writes the zip Gradescope asks for: ``setup.sh`` (run once when the image is built: Python,
bubblewrap and util-linux from apt, a venv in ``/autograder/venv`` with torch 2.13.0 for the CPU and this project from
the wheel inside the zip, pinned by ``constraints.txt``, with its ``[classroom]`` extra), ``run_autograder`` (run for
each submission), the wheel of this very version of the grader, and the handed-out notebook (its written questions).

:func:`run_autograder` grades ``/autograder/submission/*.ipynb`` with :func:`~.notebook.grade_notebook`, the same
checks, replay and sandbox as ``tl-grade``, and writes ``/autograder/results/results.json`` in Gradescope's format:
the overall ``score``, one test per exercise (its points, its maximum, the check's message as ``output``) and one
test with no score per written answer, for grading by hand.

The student's code never sees the grader's files: its kernel runs in bubblewrap, whose world holds neither
``/autograder`` (the source, this wheel, the results folder) nor the submission's original; the results are written
after the kernel has ended, replacing anything there. A container where bubblewrap cannot run (Docker's default
profile forbids the namespaces it needs) runs the kernel as the unprivileged user ``nobody`` instead, with the same
limits (:func:`unprivileged`): ``/autograder``'s source, submission and results folders and the installed grader's
package are then closed to every user but root, so the kernel can neither read the checks' code nor write the
results; the results' ``output`` says which way the notebook ran.
"""

from __future__ import annotations

import argparse
import contextlib
import json
import os
import shutil
import stat
import subprocess
import sys
import tempfile
import zipfile
from collections.abc import Iterator
from pathlib import Path
from typing import Any

from .graded import GradedNotebook
from .registry import ASSIGNMENTS
from .sandbox import UNSANDBOXED_NOTE, bwrap_problem
from .sheet_rows import clean_text

__all__ = [
    "TORCH",
    "NOBODY",
    "build_autograder",
    "run_autograder",
    "results_json",
    "unprivileged",
    "closed_to_others",
    "main",
]

TORCH = "torch==2.13.0"  # the CPU build, as on the project's machines
_ROOT = Path(__file__).resolve().parents[2]  # the repository this library sits in (pyproject.toml, constraints.txt)

_SETUP = """#!/usr/bin/env bash
# Gradescope runs this once, as root, when it builds the autograder's image (Ubuntu 24.04 base: Python 3.12).
set -euo pipefail
export DEBIAN_FRONTEND=noninteractive
apt-get update
apt-get install -y --no-install-recommends python3 python3-venv python3-pip bubblewrap util-linux
python3 -m venv /autograder/venv
/autograder/venv/bin/pip install --no-cache-dir {torch} --index-url https://download.pytorch.org/whl/cpu
/autograder/venv/bin/pip install --no-cache-dir -c /autograder/source/constraints.txt \\
    "/autograder/source/{wheel}[classroom]"
"""

_RUN = """#!/usr/bin/env bash
# Gradescope runs this for each submission: grade /autograder/submission/*.ipynb as {assignment}, write
# /autograder/results/results.json. (TL_AUTOGRADER_PYTHON and TL_AUTOGRADER_ROOT exist for the grader's own tests.)
set -euo pipefail
root="${{TL_AUTOGRADER_ROOT:-/autograder}}"
exec "${{TL_AUTOGRADER_PYTHON:-/autograder/venv/bin/python}}" -m transformer_lib.classroom.gradescope run \\
    {assignment} --root "$root"
"""


def _assignment(assignment: str) -> str:
    if assignment not in ASSIGNMENTS:
        raise ValueError(f"assignment: expected one of {', '.join(ASSIGNMENTS)}, got {assignment!r}")
    return assignment


def _wheel(folder: Path) -> Path:
    """A wheel of this project (the grader's own version), built from the repository it sits in."""
    if not (_ROOT / "pyproject.toml").is_file():
        raise FileNotFoundError(
            f"wheel: this transformer_lib is not in a source checkout ({_ROOT} has no pyproject.toml); pass the "
            "project's wheel with --wheel"
        )
    # built from a copy of what goes into the wheel: setuptools writes build/ and *.egg-info next to the sources it
    # builds, and the checkout must not change (nor race an editable install running there, as in scripts/test_all.sh)
    source = folder / "source"
    shutil.copytree(_ROOT / "transformer_lib", source / "transformer_lib", ignore=shutil.ignore_patterns("__pycache__"))
    for name in ["pyproject.toml", "README.md", *(p.name for p in _ROOT.glob("LICENSE*"))]:
        shutil.copy2(_ROOT / name, source / name)
    subprocess.run(
        [
            sys.executable,
            "-m",
            "pip",
            "wheel",
            "--no-deps",
            "--no-build-isolation",
            "-q",
            "-w",
            str(folder),
            str(source),
        ],
        check=True,
        capture_output=True,
    )
    shutil.rmtree(source)
    (wheel,) = folder.glob("transformer_lib-*.whl")
    return wheel


def build_autograder(assignment: str, out: str | Path, *, wheel: str | Path | None = None) -> Path:
    """Write Gradescope's autograder zip for ``assignment`` to ``out`` (see the module's docstring); ``wheel`` is
    this project's wheel (built from the repository if not given). Returns ``out``."""
    assignment = _assignment(assignment)
    out = Path(out)
    template = _ROOT / "book" / "assignments" / f"{assignment}.ipynb"
    with tempfile.TemporaryDirectory(prefix="tl-gradescope-") as tmp:
        built = Path(wheel) if wheel is not None else _wheel(Path(tmp))
        out.parent.mkdir(parents=True, exist_ok=True)
        with zipfile.ZipFile(out, "w", zipfile.ZIP_DEFLATED) as z:
            for name, text in (
                ("setup.sh", _SETUP.format(torch=TORCH, wheel=built.name)),
                ("run_autograder", _RUN.format(assignment=assignment)),
            ):
                info = zipfile.ZipInfo(name)
                info.external_attr = 0o755 << 16  # executable once unzipped
                z.writestr(info, text)
            z.write(built, built.name)
            z.write(_ROOT / "constraints.txt", "constraints.txt")
            if template.is_file():
                z.write(template, f"templates/{assignment}.ipynb")
    return out


NOBODY = 65534  # the unprivileged user (and group) a kernel runs as where bubblewrap cannot run
# The kernel's command where bubblewrap cannot run: started as root by the grader, it hands the kernel's folders to
# `nobody`, then becomes the kernel through setpriv (as the bubblewrap route does: every group, id and capability
# dropped; the same process, so the grader's signals reach it).
_DROP = """import os, sys
connection = os.path.realpath(sys.argv[sys.argv.index("-f") + 1])
folder = os.path.dirname(connection)
if not os.path.basename(folder).startswith("tl-kernel-"):  # never hand a shared folder (/tmp, the cwd) to nobody
    sys.exit("tl-nobody: the connection file is not in a kernel folder of the grader's: " + connection)
for path in (folder, os.path.join(folder, "sockets"), os.getcwd(), connection):
    if os.path.exists(path) and (path == folder or os.path.realpath(path).startswith(folder + os.sep)):
        os.chown(path, {uid}, {uid})
drop = ["setpriv", "--reuid={uid}", "--regid={uid}", "--clear-groups", "--bounding-set=-all"]
os.execvp("setpriv", drop + [{python!r}, "-m", "ipykernel_launcher", "-f", connection])
"""


def closed_to_others(folder: Path) -> str:
    """Why a kernel run as ``nobody`` cannot reach its folder in ``folder`` (the temporary folder): the first folder
    on the way that others cannot cross (no ``x`` for others), with its mode and owner; empty if none. (``/tmp`` was
    once left at mode 1700, owned by nobody: every unprivileged kernel died before it answered.)"""
    folder = folder.resolve()
    for part in [*reversed(folder.parents), folder]:
        info = os.stat(part)
        if not info.st_mode & stat.S_IXOTH:
            return (
                f"the temporary folder {folder} is closed to other users at {part} (mode {stat.S_IMODE(info.st_mode):o}"
                f", owner uid {info.st_uid}; expected a folder others can cross, such as /tmp at mode 1777)"
            )
    return ""


@contextlib.contextmanager
def unprivileged(root: Path) -> Iterator[str]:
    """A kernel that runs as ``nobody``, for a container without bubblewrap: yields its kernel name (a kernel spec
    in a temporary ``JUPYTER_PATH``). Meanwhile ``root`` (``/autograder``) can only be crossed by others, its
    ``source``, ``submission`` and ``results`` folders and this installed package are closed to all but root."""
    import transformer_lib

    closed = [root / "source", root / "submission", root / "results"]
    package = Path(transformer_lib.__file__).resolve().parent
    if "site-packages" in package.parts:  # the installed wheel (an editable checkout stays where it is)
        closed.append(package)
    with tempfile.TemporaryDirectory(prefix="tl-unprivileged-") as tmp:
        os.chmod(tmp, 0o755)  # the kernel spec, readable; the launcher, run by root before it drops
        launcher = Path(tmp) / "drop.py"
        launcher.write_text(_DROP.format(uid=NOBODY, python=sys.executable))
        spec = Path(tmp) / "kernels" / "tl-nobody"
        spec.mkdir(parents=True)
        argv = [sys.executable, "-I", "-S", str(launcher), "-f", "{connection_file}"]
        (spec / "kernel.json").write_text(json.dumps({"argv": argv, "display_name": "nobody", "language": "python"}))
        before = os.environ.get("JUPYTER_PATH")
        os.environ["JUPYTER_PATH"] = tmp
        os.chmod(root, 0o711)
        for folder in closed:
            if folder.exists():
                os.chmod(folder, 0o700)
        try:
            yield "tl-nobody"
        finally:
            if before is None:
                os.environ.pop("JUPYTER_PATH", None)
            else:
                os.environ["JUPYTER_PATH"] = before


def _submission(folder: Path, assignment: str) -> Path | None:
    """The notebook to grade: ``<assignment>.ipynb``, else the only ``.ipynb``, else the first by name."""
    notebooks = sorted(p for p in folder.glob("*.ipynb") if p.is_file()) if folder.is_dir() else []
    named = [p for p in notebooks if p.name == f"{assignment}.ipynb"]
    return (named or notebooks)[0] if notebooks else None


def results_json(graded: GradedNotebook, templates: Path | None) -> dict[str, Any]:
    """Gradescope's ``results.json`` for one graded notebook: ``score``, ``output`` (what went wrong, the notes),
    one test per exercise and one test with no score per written answer."""
    from .written_answers import answer_rows

    assignment = ASSIGNMENTS[graded.assignment]
    tests: list[dict[str, Any]] = []
    for r in graded.results:
        ex = assignment.exercise(r.exercise)
        flags = "; ".join(r.flags)
        tests.append(
            {
                "name": f"{r.exercise}{' (extension)' if ex and ex.extension else ''}",
                "score": float(ex.earned(r)) if ex else 0.0,
                "max_score": float(ex.points) if ex else 0.0,
                "output": clean_text(r.message + (f" Flags: {flags}" if flags else ""), lines=True),
                "visibility": "visible",
            }
        )
    if templates is not None and (templates / f"{graded.assignment}.ipynb").is_file():
        for row in answer_rows([graded], templates):
            tests.append(
                {
                    "name": f"Written answer {row['question']}: {row['question_text']}",
                    "max_score": 0.0,  # graded by hand in Gradescope's own questions
                    "output": clean_text(
                        f"({row['max_points']} point(s), graded by hand)\n{row['answer']}", lines=True
                    ),
                    "visibility": "visible",
                }
            )
    return {
        "score": float(sum(t.get("score", 0.0) for t in tests)),
        "output": clean_text("\n".join(graded.problems + graded.notes), lines=True),
        "visibility": "visible",
        "stdout_visibility": "hidden",
        "tests": tests,
    }


def run_autograder(
    assignment: str, root: str | Path = "/autograder", *, cell_timeout: float = 60, time_limit: float | None = None
) -> dict[str, Any]:
    """Grade the submission under ``root``/submission as ``assignment`` and write ``root``/results/results.json
    (returned too). Without a working bubblewrap the kernel runs as ``nobody`` (:func:`unprivileged`); not root
    either, nothing of the student's runs, and the results say why."""
    from .notebook import grade_notebook

    assignment, root = _assignment(assignment), Path(root)
    results_dir = root / "results"
    results_dir.mkdir(parents=True, exist_ok=True)
    submitted = _submission(root / "submission", assignment)
    if submitted is None:
        results: dict[str, Any] = {
            "score": 0.0,
            "output": f"No .ipynb file in the submission: upload {assignment}.ipynb.",
        }
        results["tests"] = []
    elif (problem := bwrap_problem()) and os.geteuid() != 0:
        results = {
            "score": 0.0,
            "output": f"The autograder cannot run a sandbox here ({problem}) nor, not being root, run your notebook "
            "as another user, so it did not run it; your teacher will grade it.",
            "tests": [],
        }
    elif problem and (closed := closed_to_others(Path(tempfile.gettempdir()))):
        results = {
            "score": 0.0,
            "output": f"The autograder cannot run a sandbox here ({problem}) nor run your notebook as an unprivileged "
            f"user: {closed}; your teacher will grade it.",
            "tests": [],
        }
    else:
        with tempfile.TemporaryDirectory(prefix="tl-submission-") as tmp:  # the name graded is the assignment's
            path = Path(tmp) / f"{assignment}.ipynb"
            shutil.copyfile(submitted, path)
            options: dict[str, Any] = {"cell_timeout": cell_timeout}
            if time_limit is not None:
                options["time_limit"] = time_limit
            with contextlib.ExitStack() as stack:
                if problem:  # no bubblewrap: the kernel runs as nobody, the grader's files closed to it
                    options.update(unsandboxed=True, kernel_name=stack.enter_context(unprivileged(root)))
                graded = grade_notebook(path, "student", **options)
            if problem:
                graded.notes = [n for n in graded.notes if n != UNSANDBOXED_NOTE]
                graded.notes.append(f"Your notebook ran as an unprivileged user, without bubblewrap ({problem}).")
            results = results_json(graded, root / "source" / "templates")
    written = results_dir / f".results-{os.getpid()}.json"
    written.write_text(json.dumps(results, indent=1) + "\n", encoding="utf-8")
    os.replace(written, results_dir / "results.json")  # replaces whatever was there
    return results


def main(argv: list[str] | None = None) -> int:
    """``tl-grade gradescope ASSIGNMENT --out autograder.zip``; ``... gradescope run ASSIGNMENT`` (in the
    container, from ``run_autograder``)."""
    argv = sys.argv[1:] if argv is None else argv
    if argv[:1] == ["run"]:
        parser = argparse.ArgumentParser(prog="tl-grade gradescope run", description=run_autograder.__doc__)
        parser.add_argument("assignment", choices=list(ASSIGNMENTS))
        parser.add_argument("--root", type=Path, default=Path("/autograder"))
        args = parser.parse_args(argv[1:])
        results = run_autograder(args.assignment, args.root)
        print(f"score {results['score']:g}; wrote {args.root / 'results' / 'results.json'}")
        return 0
    parser = argparse.ArgumentParser(
        prog="tl-grade gradescope",
        description="Write a Gradescope autograder zip that grades one assignment with this grader's checks and "
        "sandbox (setup.sh, run_autograder, this project's wheel).",
    )
    parser.add_argument("assignment", choices=list(ASSIGNMENTS), metavar="ASSIGNMENT")
    parser.add_argument("--out", type=Path, default=Path("autograder.zip"), help="(default: %(default)s)")
    parser.add_argument("--wheel", type=Path, help="this project's wheel (default: built from the repository)")
    args = parser.parse_args(argv)
    print(f"wrote {build_autograder(args.assignment, args.out, wheel=args.wheel)}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
