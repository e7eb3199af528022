"""What only a class needs: the assignments' checks, the student/teacher notebooks, and the grader.

* ``checks``: one ``check_*`` per exercise, with tiered hints (used inside the students' notebooks).
* ``assignments``: the registry of assignments and their exercises; writes the students' versions.
* ``grade``: grades a folder of submitted notebooks (``python -m transformer_lib.classroom.grade``), with
  ``submissions`` (which file is whose: student folders, LMS bulk downloads, a roster, duplicates) and
  ``gradebook`` (the sheets, the written answers, feedback and a checksum manifest, written atomically).
* ``nbgrader_export``: the assignments as an nbgrader course folder.

The core library never imports this package.
"""
