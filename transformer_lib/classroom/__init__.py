"""What only a class needs: the assignments' checks, the student/teacher notebooks, and the grader.

* ``checks``: one ``check_*`` per exercise, with tiered hints (used inside the students' notebooks).
* ``registry``: the assignments, their exercises, points and parts (partial credit); everything else reads it.
* ``assignments``: writes the students' versions and the teacher's copy of the book.
* ``grade``: the grader's command line (``tl-grade``): ``folder`` grades a folder of submitted notebooks,
  ``notebook`` one of them, ``runs`` runs it until each exercise has a verdict, in ``sandbox`` (``bwrap`` builds
  its world, ``limits`` bound it); ``graded`` (what grading one notebook found), ``submissions`` (which file is
  whose: student folders, LMS bulk downloads, a roster, duplicates), ``gradebook`` (the sheets, the written answers,
  feedback and a checksum manifest, written atomically, from ``sheet_rows``, ``written_answers`` and ``feedback``),
  ``lms`` (Moodle's and Canvas's import files), ``similarity`` (near-identical solutions, with copydetect) and
  ``sheets`` (sheets anchored with the teacher's key; ``tl-grade verify`` and ``tl-grade totals``).
* ``nbgrader_export``: the assignments as an nbgrader course folder.

The core library never imports this package.
"""
