#!/usr/bin/env bash
# Build the website into _build/html and its Chinese edition into _build/html/zh: set up .venv if needed, execute
# every notebook that is new, whose code changed or one of whose imported modules changed (two at a time, into
# _build/.jupyter_cache, where both builds find them; a page that the notebook test just executed is taken from it
# instead; --force re-runs them all), then build the pages of both languages and fail on any error or warning (-W).
# Sphinx re-reads a page whose modules changed (transformer_lib.site.page_dependencies tells it which).
#   bash scripts/build_book.sh            build
#   bash scripts/build_book.sh --force    forget cached notebook outputs first
#   VENV=.venv-reader bash scripts/build_book.sh   build in another environment than .venv (scripts/test_all.sh)
set -euo pipefail
root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
cd "$root"
venv="${VENV:-.venv}"
bash scripts/setup_env.sh book  # the reader's install builds the book (an environment set up with [all] serves too)
extra=()
if [ "${1:-}" = "--force" ]; then
    rm -rf _build/.jupyter_cache  # forget executed notebooks ...
    extra=(--all)                 # ... and make Sphinx re-read every page, so that each one runs again
fi
# One torch thread per kernel: two notebooks run at once, and tiny models only lose time to threads fighting over
# two cores (scripts/test_all.sh does the same).
export OMP_NUM_THREADS="${OMP_NUM_THREADS:-1}"
start=$(date +%s)
# Jupyter Book would run the notebooks one after another; scripts/execute_notebooks.py runs them two at a time into
# the same cache, exactly as the build would (same reader, folder and per-cell timeout), and the build reuses them.
"$venv"/bin/python scripts/execute_notebooks.py --jobs "${BUILD_JOBS:-2}" --timeout 600
# The English site and the Chinese one (the same executed pages, the catalogs in locale/: scripts/i18n.py), both -W,
# at the same time: each Sphinx uses one core, and they share nothing but the cache they read. Each log is printed
# when both are done.
# viewcode rewrites a module's source page only when the module is newer than the page: start them afresh, so that
# they follow the templates and catalogs as the other pages do (scripts/i18n.py build does the same for zh/)
rm -rf _build/html/_modules
logs="$(mktemp -d)"
trap 'rm -rf "$logs"' EXIT
"$venv"/bin/jupyter-book build . --builder html -W --keep-going "${extra[@]}" >"$logs/en.log" 2>&1 &
english=$!
"$venv"/bin/python scripts/i18n.py build >"$logs/zh.log" 2>&1 &
chinese=$!
en_status=0; wait "$english" || en_status=$?
zh_status=0; wait "$chinese" || zh_status=$?
cat "$logs/en.log"; echo; cat "$logs/zh.log"
if [ "$en_status" -ne 0 ] || [ "$zh_status" -ne 0 ]; then
    echo "build_book: FAILED (English: exit $en_status, Chinese: exit $zh_status)" >&2
    exit 1
fi
# one copy of what both languages' _static hold alike (the Chinese pages link to the English site's)
"$venv"/bin/python scripts/i18n.py share-static
echo "build_book: built _build/html (English) and _build/html/zh (中文) in $(( $(date +%s) - start )) s; open _build/html/index.html"
