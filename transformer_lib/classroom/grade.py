"""Grade a folder of submitted assignment notebooks offline.

    python -m transformer_lib.classroom.grade SUBMISSIONS_DIR --out grades.csv [--roster roster.csv]

``SUBMISSIONS_DIR`` holds one folder per student with that student's notebooks, each named after its assignment
(as in ``book/assignments/``), or the files of an LMS bulk download (``smithjohn_123_03_attention.ipynb``), or
both; :mod:`transformer_lib.classroom.submissions` says which file is whose and which of several is graded::

    submissions/
        alice/03_attention.ipynb
        alice/04_masks.ipynb
        bob/03_attention.ipynb

Each notebook runs in its own Jupyter kernel (nbclient), in an empty temporary folder, with a time limit per cell:
first the student's cells, except the check cells (tagged ``check``), then one injected cell per exercise that
runs :func:`transformer_lib.classroom.checks.grade_exercise` on the student's objects and prints the result as one line of
JSON. The grader reads back only that text: it opens notebooks with nbformat (plain JSON) and never unpickles
anything. A notebook that is not valid JSON, misses cells, has a syntax error, raises, or loops forever gets
failed rows with the reason, and grading goes on with the next one.

:mod:`transformer_lib.classroom.gradebook` then writes the sheets (one row per exercise with points, file name
and the file's SHA-256; a totals sheet; the written answers), one markdown feedback file per student
(``feedback/<student>.md`` next to the CSV unless ``--feedback`` says otherwise) and a checksum manifest.

Grading runs the students' code with your permissions: run it in a container or a throw-away account, not on a
machine that holds secrets. The checks are honest feedback, not an anti-cheating device.
"""

from __future__ import annotations

import argparse
import json
import os
import secrets
import sys
import tempfile
import threading
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from .assignments import ASSIGNMENTS, Assignment
from .checks import DEFAULT_TIME_LIMIT, RESULT_MARKER, CheckResult
from .gradebook import feedback_markdown, sha256_file, write_csv, write_gradebook
from .submissions import assignment_for, collect_submissions, read_roster

__all__ = ["GradedNotebook", "find_submissions", "grade_notebook", "grade_folder", "write_csv", "feedback_markdown",
           "main"]

_LIBRARY_PARENT = str(Path(__file__).resolve().parents[2])  # so the kernel imports this very transformer_lib


@dataclass
class GradedNotebook:
    """What grading one notebook found: a result per exercise, and the problems met while running it."""

    student: str
    assignment: str
    path: Path
    results: list[CheckResult] = field(default_factory=list)
    problems: list[str] = field(default_factory=list)
    file_name: str = ""  # as found in the submissions folder, e.g. "alice/03_attention (1).ipynb"
    sha256: str = ""  # of the file's bytes before grading
    notes: list[str] = field(default_factory=list)  # for the teacher: duplicates not graded, roster, late

    def rows(self) -> list[dict[str, Any]]:
        if not self.results:  # unknown assignment: one row that says so
            return [{"student": self.student, "assignment": self.assignment, "exercise": "-", "passed": 0,
                     "message": "; ".join(self.problems)}]
        return [{"student": self.student, "assignment": self.assignment, "exercise": r.exercise,
                 "passed": int(r.passed), "message": r.message} for r in self.results]


def find_submissions(folder: str | Path, roster: dict[str, str] | None = None) -> list[tuple[str, Path]]:
    """``(student, notebook)`` for every notebook that will be graded under ``folder``, sorted: one per student and
    assignment (see :func:`~transformer_lib.classroom.submissions.collect_submissions`)."""
    return [(s.student, s.path) for s in collect_submissions(folder, roster)]


def _assignment_for(path: Path) -> Assignment | None:
    """The assignment a file name stands for: ``03_attention.ipynb``, ``03_attention (1).ipynb``, an LMS name."""
    return assignment_for(path)


def _all_failed(assignment: Assignment, summary: str, hint: str, error: str) -> list[CheckResult]:
    return [CheckResult(ex.name, False, summary, "", (hint,), error) for ex in assignment.exercises]


def _result_cell(assignment: Assignment, index: int, nonce: str, time_limit: float) -> Any:
    import nbformat

    ex = assignment.exercises[index]
    source = (
        "import json as _tl_json\n"
        "from transformer_lib.classroom.checks import grade_exercise as _tl_grade\n"
        f"_tl_result = _tl_grade({ex.check!r}, globals(), {list(ex.names)!r}, time_limit={time_limit!r})\n"
        f"print({RESULT_MARKER + nonce!r} + _tl_json.dumps(_tl_result.to_dict()))"
    )
    cell = nbformat.v4.new_code_cell(source)
    cell.metadata["tags"] = ["grader"]
    return cell


def _read_result(cell: Any, marker: str, exercise: str) -> CheckResult | None:
    """The result printed by an injected cell: the last line that starts with ``marker`` (parsed as JSON)."""
    text = "".join(o.get("text", "") for o in cell.get("outputs", []) if o.get("output_type") == "stream")
    lines = [line[len(marker):] for line in text.splitlines() if line.startswith(marker)]
    if not lines:
        return None
    try:
        result = CheckResult.from_dict(json.loads(lines[-1]))
    except (ValueError, KeyError, TypeError):
        return None
    return result if result.exercise == exercise else None


def _cell_errors(cells: list[Any], numbers: list[int], cell_timeout: float) -> list[str]:
    problems = []
    for cell, number in zip(cells, numbers):
        for out in cell.get("outputs", []):
            if out.get("output_type") != "error":
                continue
            name, value = out.get("ename", "Error"), str(out.get("evalue", ""))
            if name in ("KeyboardInterrupt", "CellTimeoutError"):
                problems.append(f"Cell {number} did not finish within {cell_timeout:g} s and was stopped "
                                "(an endless loop?).")
            else:
                problems.append(f"Cell {number} raised {name}: {value}".rstrip(": "))
    return problems


def _kill_kernel(client: Any) -> None:
    """Last resort when a kernel ignores interrupts: kill its process (nbclient then reports a dead kernel)."""
    process = getattr(getattr(getattr(client, "km", None), "provisioner", None), "process", None)
    if process is not None and process.poll() is None:
        process.kill()


def grade_notebook(path: str | Path, student: str = "", *, cell_timeout: float = 60,
                   time_limit: float = DEFAULT_TIME_LIMIT, kernel_name: str = "python3") -> GradedNotebook:
    """Run one submitted notebook in a fresh kernel and check each exercise of its assignment.

    ``cell_timeout`` limits each cell (a cell that runs longer is interrupted and grading goes on);
    ``time_limit`` limits each call of the student's code inside a check.
    """
    import nbformat
    from nbclient import NotebookClient
    from nbclient.exceptions import DeadKernelError

    path = Path(path)
    student = student or path.parent.name
    assignment = _assignment_for(path)
    graded = GradedNotebook(student, path.stem, path)
    if assignment is None:
        graded.problems.append(f"Unknown assignment file name {path.name!r}: expected one of "
                               f"{', '.join(a + '.ipynb' for a in ASSIGNMENTS)}.")
        return graded
    graded.assignment = assignment.id
    try:
        nb = nbformat.read(path, as_version=4)  # plain JSON: nothing in a submission is ever unpickled
        if not isinstance(nb.get("cells"), list):
            raise ValueError("it has no list of cells")
    except Exception as e:  # not JSON, not a notebook, not UTF-8, ...
        reason = f"{type(e).__name__}: {str(e).splitlines()[0] if str(e) else ''}".rstrip(": ")
        graded.problems.append(f"The notebook could not be read ({reason}).")
        graded.results = _all_failed(assignment, "The notebook could not be read: it is not a valid .ipynb file.",
                                     "Save the notebook from Jupyter (File > Save) and submit the .ipynb file "
                                     "itself, not a copy edited by hand or renamed from another format.",
                                     "NotebookError")
        return graded

    kept, numbers = [], []
    for number, cell in enumerate(nb.cells, start=1):
        if cell.get("cell_type") == "code" and "check" in cell.get("metadata", {}).get("tags", []):
            continue  # the student's own check cells: the injected cells below run the same checks
        if cell.get("cell_type") == "code":
            cell.outputs, cell.execution_count = [], None
        kept.append(cell)
        numbers.append(number)
    nonce = secrets.token_hex(8) + " "
    injected = [_result_cell(assignment, i, nonce, time_limit) for i in range(len(assignment.exercises))]
    warm_up = nbformat.v4.new_code_cell("import transformer_lib.classroom.checks  # loaded before the student's cells are timed")
    warm_up.metadata["tags"] = ["grader-setup"]
    nb.cells = [warm_up] + kept + injected

    def cell_time_limit(cell: Any) -> int:  # importing torch may take long on a busy machine: not the student's fault
        setup = "grader-setup" in cell.get("metadata", {}).get("tags", [])
        return max(1, round(max(cell_timeout, 120) if setup else cell_timeout))

    env = {**os.environ, "PYTHONPATH": os.pathsep.join(filter(None, [_LIBRARY_PARENT, os.environ.get("PYTHONPATH")])),
           "OMP_NUM_THREADS": "1", "MPLBACKEND": "Agg"}
    with tempfile.TemporaryDirectory(prefix="tl-grade-") as workdir:
        client = NotebookClient(nb, timeout_func=cell_time_limit, kernel_name=kernel_name, allow_errors=True,
                                interrupt_on_timeout=True, resources={"metadata": {"path": workdir}})
        n_code = sum(c.get("cell_type") == "code" for c in nb.cells)
        watchdog = threading.Timer(cell_timeout * (n_code + 1) + 240, _kill_kernel, [client])
        watchdog.daemon = True
        watchdog.start()
        try:
            client.execute(env=env, cwd=workdir)
        except DeadKernelError:
            graded.problems.append("The kernel died (or was stopped) while running the notebook.")
        except Exception as e:  # a kernel that cannot start, a timeout nbclient could not recover from, ...
            graded.problems.append(f"Running the notebook failed: {type(e).__name__}: {e}")
        finally:
            watchdog.cancel()

    graded.problems[:0] = _cell_errors(kept, numbers, cell_timeout)
    if _cell_errors([warm_up], [0], cell_timeout):  # the teacher's set-up, not the student's fault
        graded.problems.append(f"The grader could not import transformer_lib in the kernel {kernel_name!r}: install "
                               "the library in that kernel's environment (pip install -e .) or pick another with "
                               "--kernel.")
    marker = RESULT_MARKER + nonce
    for ex, cell in zip(assignment.exercises, injected):
        result = _read_result(cell, marker, ex.name)
        if result is None:
            result = CheckResult(ex.name, False, "The check did not finish (a time-out, or the kernel stopped).",
                                 "", ("Make sure the notebook runs from top to bottom (Kernel > Restart & Run All) "
                                      "in reasonable time.",), "GraderError")
        graded.results.append(result)
    return graded


def _default_templates() -> Path | None:
    """The student notebooks that were handed out: ``book/assignments`` of the current folder, else of the
    repository this library sits in."""
    for root in (Path.cwd(), Path(_LIBRARY_PARENT)):
        if (root / "book" / "assignments").is_dir():
            return root / "book" / "assignments"
    return None


def grade_folder(folder: str | Path, out: str | Path, feedback_dir: str | Path | None = None, *,
                 cell_timeout: float = 60, time_limit: float = DEFAULT_TIME_LIMIT, kernel_name: str = "python3",
                 jobs: int = 1, progress: bool = True, roster: str | Path | None = None,
                 totals: str | Path | None = None, answers: str | Path | None = None,
                 templates: str | Path | None = None, written: dict[Path, str] | None = None
                 ) -> list[GradedNotebook]:
    """Grade every notebook under ``folder`` (student folders or LMS file names; ``roster``, a CSV, maps LMS
    names and ids to students) and write the gradebook: the CSV ``out``, the totals and answers sheets, the
    feedback files and the checksum manifest (see :func:`~transformer_lib.classroom.gradebook.write_gradebook`;
    ``templates`` is the folder of the handed-out notebooks, default ``book/assignments``). ``jobs`` notebooks
    run at once, each in its own kernel. Returns what was graded, sorted by student and file; ``written``, if
    given, receives ``{path: sha256}`` of the files written."""
    from concurrent.futures import ThreadPoolExecutor, as_completed

    from tqdm.auto import tqdm

    if isinstance(jobs, bool) or not isinstance(jobs, int) or jobs < 1:
        raise ValueError(f"jobs: expected an int >= 1, got {jobs!r}")
    submissions = collect_submissions(folder, read_roster(roster) if roster is not None else None)
    if not submissions:
        raise FileNotFoundError(f"submissions: no <student>/<assignment>.ipynb or LMS-named .ipynb files under {folder}")
    digests = [sha256_file(s.path) for s in submissions]  # before any kernel runs
    graded: list[GradedNotebook | None] = [None] * len(submissions)
    with ThreadPoolExecutor(max_workers=jobs) as pool, \
            tqdm(total=len(submissions), desc="grading", unit="notebook", disable=not progress) as bar:
        futures = {pool.submit(grade_notebook, s.path, s.student, cell_timeout=cell_timeout, time_limit=time_limit,
                               kernel_name=kernel_name): i for i, s in enumerate(submissions)}
        for future in as_completed(futures):
            i = futures[future]
            graded[i] = future.result()
            bar.set_postfix_str(f"{submissions[i].student}/{submissions[i].path.name}")
            bar.update()
    for g, s, digest in zip(graded, submissions, digests):
        g.student, g.sha256, g.notes = s.student, digest, [*g.notes, *s.notes]
        g.file_name = s.path.relative_to(folder).as_posix() if Path(folder) in s.path.parents else s.path.name
    templates = templates if templates is not None else _default_templates()
    files = write_gradebook(out, graded, feedback_dir=feedback_dir, totals=totals, answers=answers,
                            templates=templates)
    if written is not None:
        written.update(files)
    return graded


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        prog="python -m transformer_lib.classroom.grade",
        description="Run each submitted notebook (SUBMISSIONS_DIR/<student>/<assignment>.ipynb, or LMS bulk-download "
                    "names such as smithjohn_123_03_attention.ipynb) in its own kernel, check every exercise, and "
                    "write the gradebook: a CSV per exercise, a totals CSV, a CSV of written answers, a markdown "
                    "feedback file per student and a SHA-256 manifest of them all.")
    parser.add_argument("submissions", type=Path, metavar="SUBMISSIONS_DIR")
    parser.add_argument("--out", type=Path, default=Path("grades.csv"),
                        help="the per-exercise CSV to write (default: %(default)s); the other sheets go next to it")
    parser.add_argument("--totals", type=Path, default=None, metavar="CSV",
                        help="one row per student with points per assignment (default: <out>_totals.csv)")
    parser.add_argument("--answers", type=Path, default=None, metavar="CSV",
                        help="the written answers, for grading by hand (default: <out>_answers.csv)")
    parser.add_argument("--roster", type=Path, default=None, metavar="CSV",
                        help="maps LMS ids/names to students: columns student, lms_id and/or lms_name")
    parser.add_argument("--templates", type=Path, default=None, metavar="DIR",
                        help="the student notebooks handed out, whose 'answer' cells hold the written questions "
                             "(default: book/assignments)")
    parser.add_argument("--feedback", type=Path, default=None, metavar="DIR",
                        help="folder for <student>.md feedback files (default: 'feedback' next to --out)")
    parser.add_argument("--timeout", type=float, default=60, metavar="SECONDS",
                        help="time limit per notebook cell (default: %(default)s)")
    parser.add_argument("--check-time-limit", type=float, default=DEFAULT_TIME_LIMIT, metavar="SECONDS",
                        help="time limit per call of a student's function inside a check (default: %(default)s)")
    parser.add_argument("--kernel", default="python3", help="Jupyter kernel name (default: %(default)s)")
    parser.add_argument("--jobs", type=int, default=1, help="notebooks graded at once (default: %(default)s)")
    parser.add_argument("--no-progress", action="store_true", help="hide the progress bar")
    args = parser.parse_args(argv)
    written: dict[Path, str] = {}
    try:
        graded = grade_folder(args.submissions, args.out, args.feedback, cell_timeout=args.timeout,
                              time_limit=args.check_time_limit, kernel_name=args.kernel, jobs=args.jobs,
                              progress=not args.no_progress, roster=args.roster, totals=args.totals,
                              answers=args.answers, templates=args.templates, written=written)
    except (FileNotFoundError, NotADirectoryError, ValueError) as e:
        print(e, file=sys.stderr)
        return 2
    rows = [row for g in graded for row in g.rows()]
    n_students = len({g.student for g in graded})
    print(f"Graded {len(graded)} notebook{'s' * (len(graded) != 1)} of {n_students} student{'s' * (n_students != 1)}: "
          f"{sum(r['passed'] for r in rows)}/{len(rows)} exercises pass. Wrote {args.out}.")
    *sheets, manifest = written
    for path in sheets:
        if path.suffix == ".csv":
            print(f"sha256 {written[path]}  {path}")
    print(f"sha256 {written[manifest]}  {manifest} (checksums of every file written; verify with "
          f"`sha256sum -c {manifest.name}` in {manifest.parent})")
    return 0


if __name__ == "__main__":
    sys.exit(main())
