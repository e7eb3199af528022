#!/usr/bin/env bash
# Rewrite constraints.txt from the working environment: every installed package at its exact version, except
# torch (requirements.txt keeps it a range so that an existing torch is kept) and this project itself.
# Run after changing requirements.txt and checking that the book builds and the tests pass.
set -euo pipefail
root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
frozen="$("$root/.venv/bin/python" -m pip freeze --exclude-editable \
    | grep -viE '^(torch|transformer[-_]lib)([=@ ]|$)' | grep -v '^-e ')"
{
    echo "# Exact versions of everything requirements.txt pulls in, frozen from a working environment"
    echo "# (pip freeze, minus torch and this project). Used as: pip install -r requirements.txt -c constraints.txt"
    echo "# Regenerate after changing requirements.txt:  bash scripts/freeze_constraints.sh"
    echo "$frozen"
} > "$root/constraints.txt"
echo "constraints.txt: $(echo "$frozen" | wc -l) pinned packages"
