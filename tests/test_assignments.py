"""The assignment notebooks: student versions generated from the solutions and in sync with them, stubs that
raise, no leaked answers, consistent check cells, and the teacher's copy of the book."""

import os
import re
import shutil
import subprocess
import sys
from pathlib import Path

import nbformat
import pytest
import yaml

from transformer_lib.classroom import assignments as A
from transformer_lib.classroom.assignments import ASSIGNMENTS, BEGIN, END
from transformer_lib.site.page_dependencies import fingerprint

ROOT = Path(__file__).resolve().parents[1]
IDS = list(ASSIGNMENTS)


def read(path):
    return nbformat.read(path, as_version=4)


def solution(aid):
    return read(ROOT / "assignments" / f"{aid}.ipynb")


def student(aid):
    return read(ROOT / "book" / "assignments" / f"{aid}.ipynb")


def tags(cell):
    return cell.metadata.get("tags", [])


def test_the_registry_lists_exactly_the_solution_notebooks():
    on_disk = sorted(p.stem for p in (ROOT / "assignments").glob("*.ipynb"))
    assert on_disk == sorted(ASSIGNMENTS) and len(on_disk) >= 6
    assert sorted(p.stem for p in (ROOT / "book" / "assignments").glob("*.ipynb")) == on_disk
    with pytest.raises(KeyError, match="03_attention"):
        A.get_assignment("3_attention")


def test_committed_student_notebooks_are_generated_from_the_solutions(tmp_path):
    assert A.generate(ROOT, check_only=True) == []
    (tmp_path / "assignments").mkdir()
    for aid in IDS:
        shutil.copy(ROOT / "assignments" / f"{aid}.ipynb", tmp_path / "assignments")
    written = A.generate(tmp_path)
    assert len(written) == len(IDS)
    for path in written:  # byte for byte, so the diff of a commit shows any drift
        assert path.read_bytes() == (ROOT / "book" / "assignments" / path.name).read_bytes()
    assert A.generate(tmp_path) == []  # idempotent
    assert A.main(["--root", str(tmp_path), "--check"]) == 0
    path = tmp_path / "book" / "assignments" / f"{IDS[0]}.ipynb"
    path.write_text(path.read_text().replace("YOUR CODE HERE", "edited"))
    assert A.main(["--root", str(tmp_path), "--check"]) == 1


@pytest.mark.parametrize("aid", IDS)
def test_notebooks_are_committed_without_outputs(aid):
    for nb in (solution(aid), student(aid)):
        assert nb.metadata.kernelspec.name == "python3"
        for cell in nb.cells:
            if cell.cell_type == "code":
                assert cell.outputs == [] and cell.execution_count is None


@pytest.mark.parametrize("aid", IDS)
def test_student_notebooks_hold_no_solution(aid):
    text = nbformat.writes(student(aid))
    assert BEGIN not in text and END not in text and "solution-only" not in text
    for cell in solution(aid).cells:
        for block in re.findall(rf"{re.escape(BEGIN)}\n(.*?)\n\s*{re.escape(END)}", cell.source, re.S):
            for line in block.splitlines():
                if len(line.strip()) > 25:  # a long answer line must not survive in the student version
                    assert line.strip() not in text, line


@pytest.mark.parametrize("aid", IDS)
def test_every_exercise_has_a_stub_a_demo_and_a_check_cell(aid):
    nb = student(aid)
    code = [c for c in nb.cells if c.cell_type == "code"]
    stubs = [c for c in code if "raise NotImplementedError(" in c.source]
    assert len(stubs) == len(ASSIGNMENTS[aid].exercises)
    for ex, cell in zip(ASSIGNMENTS[aid].exercises, stubs, strict=True):
        name = ex.names[0]
        assert re.search(rf"^(def|class) {name}\b", cell.source, re.M), (name, cell.source)
        assert '"""' in cell.source  # the docstring stays
        assert any(f"checks.{ex.check}({name})" in c.source and "check" in tags(c) for c in code), ex.check
    demos = [c for c in code if "demo" in tags(c)]
    assert demos and all("raises-exception" in tags(c) for c in demos)
    assert not any("raises-exception" in tags(c) for c in code if "demo" not in tags(c))
    assert f'checks.check_assignment("{aid}", globals())' in code[-1].source and "check" in tags(code[-1])
    assert not any("raises-exception" in tags(c) for c in solution(aid).cells)


@pytest.mark.parametrize("aid", IDS)
def test_student_notebook_runs_and_each_try_it_cell_raises_not_implemented(aid, capsys):
    """What executing the student notebook (nbval, the website build) does, without a kernel."""
    namespace = {"__name__": "student"}
    for i, cell in enumerate(c for c in student(aid).cells if c.cell_type == "code"):
        code = compile(cell.source, f"{aid} cell {i}", "exec")
        if "demo" in tags(cell):
            with pytest.raises(NotImplementedError, match="not implemented yet"):
                exec(code, namespace)
        else:
            exec(code, namespace)  # setup, stubs, explorations and check cells must not raise
    out = capsys.readouterr().out
    n = len(ASSIGNMENTS[aid].exercises)
    assert f"{aid}: 0/{n} exercises pass" in out and out.count("is not implemented yet.") >= n


@pytest.mark.parametrize("aid", IDS)
def test_each_stub_raises_not_implemented_error(aid):
    namespace = A.notebook_namespace(ROOT / "book" / "assignments" / f"{aid}.ipynb", skip_tags=("check", "demo"))
    for ex in ASSIGNMENTS[aid].exercises:
        obj = namespace[ex.names[0]]
        if isinstance(obj, type):  # a module: __init__ is given, forward is the exercise
            with pytest.raises(NotImplementedError, match=rf"{ex.names[0]}.forward: not implemented yet"):
                obj.forward(None, *[None] * (obj.forward.__code__.co_argcount - 1))
        else:
            with pytest.raises(NotImplementedError, match=rf"^{ex.names[0]}: not implemented yet"):
                obj(*[None] * obj.__code__.co_argcount)


def test_student_source_replaces_each_marked_block():
    source = (
        "class M:\n"
        "    def forward(self, x):\n"
        '        """Doc."""\n'
        f"        {BEGIN}\n"
        "        return x + 1\n"
        f"        {END}\n"
        "\n"
        "def top():\n"
        f"    {BEGIN}\n"
        "    return 2\n"
        f"    {END}\n"
        "print('kept')"
    )
    out = A.student_source(source)
    assert out == (
        "class M:\n"
        "    def forward(self, x):\n"
        '        """Doc."""\n'
        "        # YOUR CODE HERE\n"
        '        raise NotImplementedError("M.forward: not implemented yet")\n'
        "\n"
        "def top():\n"
        "    # YOUR CODE HERE\n"
        '    raise NotImplementedError("top: not implemented yet")\n'
        "print('kept')"
    )
    assert A.student_source(f"Q?\n{BEGIN}\nAnswer.\n{END}", code=False) == "Q?\n*Write your answer here.*"


@pytest.mark.parametrize(
    "source, message",
    [
        (f"{BEGIN}\n{BEGIN}\n{END}\n{END}", "inside another one"),
        (f"{END}", "never opened"),
        (f"{BEGIN}\nx = 1", "never closed"),
    ],
)
def test_unbalanced_markers_are_refused(source, message):
    with pytest.raises(ValueError, match=message):
        A.student_source(source)


def test_student_notebook_drops_teacher_cells_and_tags_demos():
    nb = nbformat.v4.new_notebook(
        cells=[
            nbformat.v4.new_markdown_cell("For teachers", metadata={"tags": ["solution-only"]}),
            nbformat.v4.new_code_cell(f"def f():\n    {BEGIN}\n    return 1\n    {END}"),
            nbformat.v4.new_code_cell("f()", metadata={"tags": ["demo"]}, outputs=[], execution_count=3),
        ]
    )
    out = A.student_notebook(nb)
    assert [c.source for c in out.cells] == [
        'def f():\n    # YOUR CODE HERE\n    raise NotImplementedError("f: not implemented yet")',
        "f()",
    ]
    assert out.cells[1].metadata.tags == ["demo", "raises-exception"] and out.cells[1].execution_count is None
    assert len(nb.cells) == 3 and BEGIN in nb.cells[1].source  # the input is left alone
    bad = nbformat.v4.new_notebook(cells=[nbformat.v4.new_code_cell(END)])
    with pytest.raises(ValueError, match="cell 0"):
        A.student_notebook(bad)


def test_teacher_book_puts_the_solutions_in_place(tmp_path):
    root = tmp_path / "repo"
    (root / "book" / "assignments").mkdir(parents=True)
    (root / "assignments").mkdir()
    (root / ".git").mkdir()
    (root / "_toc.yml").write_text("root: book/intro\n")
    shutil.copy(ROOT / "assignments" / "03_attention.ipynb", root / "assignments")
    shutil.copy(ROOT / "book" / "assignments" / "03_attention.ipynb", root / "book" / "assignments")
    # what the notebook test kept: a chapter, the student page and the solution (run in assignments/)
    executed = root / "_build" / ".executed"
    for kept, text in [
        ("book/intro", "intro"),
        ("book/assignments/03_attention", "student"),
        ("assignments/03_attention", "solution"),
    ]:
        (executed / kept).parent.mkdir(parents=True, exist_ok=True)
        (executed / kept).with_suffix(".ipynb").write_text(f"{text} as nbval ran it")
    dest = A.build_teacher_book(tmp_path / "teacher", root)
    assert (dest / "_toc.yml").exists() and not (dest / ".git").exists()
    copied = (dest / "book" / "assignments" / "03_attention.ipynb").read_text()
    assert BEGIN in copied and copied == (root / "assignments" / "03_attention.ipynb").read_text()
    # the copy's build finds them where the copy has the pages: the solution in place of the student page
    seeded = dest / "_build" / ".executed" / "book"
    assert (seeded / "intro.ipynb").read_text() == "intro as nbval ran it"
    assert (seeded / "assignments" / "03_attention.ipynb").read_text() == "solution as nbval ran it"
    with pytest.raises(FileExistsError):
        A.build_teacher_book(dest, root)
    with pytest.raises(ValueError, match="outside the repository"):
        A.build_teacher_book(root / "inside", root)


def test_the_teacher_build_runs_the_books_notebook_execution_with_this_python(tmp_path, monkeypatch):
    root = tmp_path / "repo"
    (root / "book" / "assignments").mkdir(parents=True)
    (root / "assignments").mkdir()
    (root / "_build" / ".jupyter_cache").mkdir(parents=True)
    (root / "_build" / ".jupyter_cache" / "global.db").write_text("the book's cache")
    shutil.copy(ROOT / "_toc.yml", root / "_toc.yml")
    shutil.copy(ROOT / "assignments" / "03_attention.ipynb", root / "assignments")
    ran = []
    monkeypatch.setattr(A.subprocess, "run", lambda cmd, **kw: ran.append((cmd, kw)))
    dest = A.build_teacher_book(tmp_path / "teacher", root, build=True, jobs=3)
    (execute, kw), (build, _) = ran
    assert execute == [
        sys.executable,
        str(dest / "scripts" / "execute_notebooks.py"),
        "--jobs",
        "3",
        "--timeout",
        "600",
    ]
    assert kw["cwd"] == dest and kw["env"]["OMP_NUM_THREADS"]  # as scripts/build_book.sh runs it
    assert build[0] == sys.executable and build[-6:] == ["build", str(dest), "--builder", "html", "-W", "--keep-going"]
    assert (dest / "_build" / ".jupyter_cache" / "global.db").read_text() == "the book's cache"  # unchanged: reused
    A.build_teacher_book(tmp_path / "quick", root, assignments_only=True)
    captions = [p["caption"] for p in yaml.safe_load((tmp_path / "quick" / "_toc.yml").read_text())["parts"]]
    assert captions == ["Assignments", "Reference"]
    with pytest.raises(ValueError, match="jobs: expected an int >= 1, got 0"):
        A.build_teacher_book(tmp_path / "none", root, jobs=0)


@pytest.mark.slow
def test_command_5_builds_the_teachers_book_without_an_activated_venv(tmp_path):
    """README's command 5, from a shell whose PATH has no virtual environment (the assignments part only: executing
    every chapter is the book build's business, and the full command reuses its cache). A page that the notebook test
    (nbval) executed as it is now is taken from that run (scripts/test_all.sh runs the notebooks first): measured,
    31 s of CPU time with the seven pages taken, where the command alone took 50 s running them."""
    env = {k: v for k, v in os.environ.items() if k in ("HOME", "LANG", "TMPDIR", "CI")}
    env["PATH"] = "/usr/bin:/bin"
    command = [sys.executable, "-m", "transformer_lib.classroom.assignments", "--teacher-book", str(tmp_path / "tb")]
    done = subprocess.run(
        [*command, "--build", "--assignments-only"], cwd=ROOT, env=env, capture_output=True, text=True, timeout=600
    )
    assert done.returncode == 0, done.stdout[-3000:] + done.stderr[-3000:]
    # the six solutions and the intro, each run or taken as the notebook test ran it, less those that the book's own
    # cache already holds (after a local build)
    ran = re.search(r"execute_notebooks: (\d+) notebook\(s\) to run, 2 at a time", done.stdout)
    reused = re.findall(r"execute_notebooks: reused (\S+) as the notebook test ran it", done.stdout)
    assert ran and 6 <= int(ran.group(1)) + len(reused) <= 7, done.stdout[-2000:]
    kept = ROOT / "_build" / ".executed" / "assignments"  # the solutions as nbval ran them (assignments/conftest.py)
    fresh = {
        f"book/assignments/{path.name}"
        for path in sorted((ROOT / "assignments").glob("[0-9][0-9]_*.ipynb"))
        if (kept / path.name).is_file()
        and nbformat.read(kept / path.name, as_version=4).metadata.get("tl_executed", {}).get("fingerprint")
        == fingerprint(path)
    }
    assert fresh <= set(reused), f"solutions the notebook test ran as they are, run again: {fresh - set(reused)}"
    page = (tmp_path / "tb" / "_build" / "html" / "book" / "assignments" / "03_attention.html").read_text()
    assert "BEGIN SOLUTION" in page and "All 7 cases match the reference" in page  # the solution, run and checked


def test_the_installed_package_finds_the_repository_from_the_current_folder_not_its_own_path(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)  # no assignments/ here
    with pytest.raises(FileNotFoundError, match=f"root: no solution notebooks .* under {tmp_path}"):
        A.main(["--check"])
    monkeypatch.chdir(ROOT)
    assert A.main(["--check"]) == 0
    assert "parents[2]" not in Path(A.__file__).read_text()


def test_solutions_from_a_private_folder(tmp_path):
    """--solutions: the student notebooks and the teacher's copy come from a folder outside the repository."""
    root, private = tmp_path / "repo", tmp_path / "private"
    (root / "book" / "assignments").mkdir(parents=True)
    private.mkdir()
    nb = solution("03_attention")
    nb.cells[0].source += "\n\nA private edition."
    nbformat.write(nb, private / "03_attention.ipynb")
    assert A.main(["--root", str(root), "--solutions", str(private)]) == 0
    assert "A private edition." in (root / "book" / "assignments" / "03_attention.ipynb").read_text()
    assert not (root / "assignments").exists()
    assert A.main(["--root", str(root), "--solutions", str(private), "--check"]) == 0
    dest = A.build_teacher_book(tmp_path / "teacher", root, solutions=private)
    assert BEGIN in (dest / "book" / "assignments" / "03_attention.ipynb").read_text()
    with pytest.raises(FileNotFoundError, match=f"solutions: no solution notebooks NN_name.ipynb in {root}"):
        A.main(["--root", str(root), "--solutions", str(root)])
