#!/usr/bin/env bash
# Run every test: lint (ruff, mypy, import-linter), unit tests and doctests, every notebook under nbval (times reported; one over 3 x 90 s fails), then build the site
# and check it in headless Chromium (skipped, with a message, when /usr/bin/chromium is missing).
# Every stage runs; the exit status is non-zero if any stage failed.
set -uo pipefail
root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
cd "$root"
bash scripts/setup_env.sh || exit 1
py=.venv/bin/python
# One torch thread per process: the suite runs two processes on two cores, and tiny models only lose time to
# threads fighting over them (measured: 2-7x slower notebooks with the default of one thread per core).
export OMP_NUM_THREADS="${OMP_NUM_THREADS:-1}"
failed=()

stage() {  # stage NAME COMMAND...: run it, time it, remember a failure
    local name="$1"; shift
    local start=$(date +%s)
    echo; echo "=== $name: $*"
    if "$@"; then
        echo "=== $name: passed in $(( $(date +%s) - start )) s"
    else
        echo "=== $name: FAILED (exit $?) after $(( $(date +%s) - start )) s"
        failed+=("$name")
    fi
}

stage "lint" bash scripts/lint.sh
stage "unit tests" $py -m pytest tests transformer_lib --doctest-modules -m "not browser and not jupyterlab" -n 2 --dist loadfile
stage "notebooks" $py -m pytest --nbval-lax book assignments -n 2 --dist loadfile --nbval-cell-timeout=300 -p no:cacheprovider
# every chapter page run in a real JupyterLab in headless Chromium (skipped, with a message, without Chromium)
stage "jupyterlab" $py -m pytest tests -m jupyterlab -n 2 -p no:cacheprovider  # two pages at a time
stage "build" bash scripts/build_book.sh
if [ -d _build/html ]; then
    # every test marked browser, in any file, one at a time: two at a time (-n 2) took 1230 s against about 880 s,
    # two Chromiums fighting over two cores; the slowest tests are listed at the end
    stage "browser" $py -m pytest tests -m browser -p no:cacheprovider --durations=15
else
    echo "=== browser: not run, the build produced no _build/html"; failed+=("browser")
fi

echo
if [ ${#failed[@]} -gt 0 ]; then
    echo "test_all: FAILED stages: ${failed[*]}"
    exit 1
fi
echo "test_all: all stages passed"
