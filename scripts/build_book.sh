#!/usr/bin/env bash
# Build the website into _build/html: set up .venv if needed, execute every notebook (cached in
# _build/.jupyter_cache; --force re-runs them all) and fail on any error or warning (-W).
#   bash scripts/build_book.sh            build
#   bash scripts/build_book.sh --force    forget cached notebook outputs first (after changing transformer_lib)
set -euo pipefail
root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
cd "$root"
bash scripts/setup_env.sh
extra=()
if [ "${1:-}" = "--force" ]; then
    rm -rf _build/.jupyter_cache  # forget executed notebooks ...
    extra=(--all)                 # ... and make Sphinx re-read every page, so that each one runs again
fi
start=$(date +%s)
.venv/bin/jupyter-book build . --builder html -W --keep-going "${extra[@]}"
echo "build_book: built _build/html in $(( $(date +%s) - start )) s; open _build/html/index.html"
