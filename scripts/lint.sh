#!/usr/bin/env bash
# The lint stage: lint, format, types and import layering, each reported; non-zero if any fails.
# Runs first in scripts/test_all.sh and from pre-commit (.pre-commit-config.yaml). Configuration: pyproject.toml.
set -uo pipefail
root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
cd "$root"
bin=.venv/bin
failed=()
check() {  # check NAME COMMAND...
    local name="$1"; shift
    if "$@"; then echo "lint: $name passed"; else echo "lint: $name FAILED"; failed+=("$name"); fi
}
check "ruff check" "$bin/ruff" check .
check "ruff format" "$bin/ruff" format --check .
check "mypy" "$bin/mypy"                   # the packages named in [tool.mypy]
check "import-linter" "$bin/lint-imports"  # the contracts in [tool.importlinter]
if [ ${#failed[@]} -gt 0 ]; then
    echo "lint: FAILED: ${failed[*]}"
    exit 1
fi
