#!/usr/bin/env bash
# Rewrite constraints.txt from the working environment, set up with every extra (bash scripts/setup_env.sh): every
# installed package at its exact version (setuptools and wheel too), except torch (pyproject.toml keeps it a range so
# that an existing torch is kept), pip and this project itself. Run after changing the dependencies or extras in
# pyproject.toml and checking that the book builds and the tests pass.
set -euo pipefail
root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
# Pins held below what .venv has: the newer release needs a newer Python than pyproject.toml's requires-python
# (soupsieve 3.0 and later ask for 3.11.5; Debian 12's Python is 3.11.2). tests/test_extras.py finds any new one.
OLDEST_PYTHON_PINS="soupsieve==2.10"
# Pins held below the newest for speed: jsonschema 4.25 and later import rfc3987-syntax, which builds a lark grammar
# as it is imported, 1.6 s of CPU in every process that imports nbformat (every kernel that shows a plotly figure,
# since plotly's renderers import nbformat; every grader, nbval and Sphinx process); 4.24.1 reads the same schemas.
# tests/test_extras.py checks that importing nbformat imports neither.
HELD_PINS="jsonschema==4.24.1"
# --all: setuptools and wheel too, which torch, nbgrader and sphinx-togglebutton require (uv, which installs them,
# would otherwise take the newest); pip itself is the environment's, not a requirement
frozen="$("$root/.venv/bin/python" -m pip freeze --all --exclude-editable \
    | grep -viE '^(torch|transformer[-_]lib|pip)([=@ ]|$)' | grep -v '^-e ')"
for pin in $OLDEST_PYTHON_PINS $HELD_PINS; do
    frozen="$(echo "$frozen" | sed -E "s/^${pin%%==*}==.*/$pin/I")"
done
{
    echo "# Exact versions of everything this project's extras pull in, frozen from an environment with all of them"
    echo "# (pip freeze, minus torch and this project). Used as: pip install -c constraints.txt -e \".[book]\" (or .[all])"
    echo "# Regenerate after changing pyproject.toml's dependencies or extras:  bash scripts/freeze_constraints.sh"
    echo "$frozen"
} > "$root/constraints.txt"
echo "constraints.txt: $(echo "$frozen" | wc -l) pinned packages"
