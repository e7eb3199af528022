"""What only a class needs: the assignments' checks, the student/teacher notebooks, and the grader.

* ``checks``: one ``check_*`` per exercise, with tiered hints (used inside the students' notebooks).
* ``assignments``: the registry of assignments and their exercises; writes the students' versions.
* ``grade``: grades a folder of submitted notebooks (``python -m transformer_lib.classroom.grade``).

The core library never imports this package.
"""
