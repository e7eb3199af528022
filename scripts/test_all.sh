#!/usr/bin/env bash
# Run every test, each notebook executed once: lint (ruff, mypy, import-linter); every notebook under nbval (times
# reported; one over 3 x 90 s fails), which keeps what it executed for the build; unit tests and doctests, those that
# read what the pages printed among them; the site built from those executed pages; every page opened in JupyterLab;
# the built site checked in headless Chromium (skipped, with a message, when /usr/bin/chromium is missing). Every stage
# runs; the exit status is non-zero if any stage failed. The pages run, and the site is built, in the reader's install alone: a second environment,
# .venv-reader, with [book] and nothing else (its kernel runs the notebooks that nbval drives from .venv, and its
# Jupyter Book builds the site), so a page that imports a package outside [book] fails here as it would for a reader.
#   bash scripts/test_all.sh           everything (CI runs this)
#   bash scripts/test_all.sh --fast    the contributor's lane, no browser, no notebook run, no build (under 5 minutes):
#                                      lint, unit tests and doctests not marked slow (notebook hygiene, catalogs,
#                                      the live translator's decoding against the library's, in Python)
set -uo pipefail
root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
cd "$root"
bash scripts/setup_env.sh all || exit 1  # every extra: no test is skipped for want of a package
py=.venv/bin/python
# One torch thread per process: the suite runs two processes on two cores, and tiny models only lose time to
# threads fighting over them (measured: 2-7x slower notebooks with the default of one thread per core).
export OMP_NUM_THREADS="${OMP_NUM_THREADS:-1}"
# Python's bytecode written as modules are first imported: uv installs without compiling any, so where the environment
# sets PYTHONDONTWRITEBYTECODE (this project's machines do) every process compiled what it imported from source again
# (measured: a grader's kernel 2.7 CPU s, 2.1 s with the bytecode of an earlier one; a chapter's kernel, imports and
# first figure 7.7 CPU s, 3.5 s; the notebook stage 297 -> 236 CPU s, the build 71 -> 67). The bytecode goes into
# .venv, .venv-reader and the repository's __pycache__ folders (git ignores them); the grader's sandboxed kernels read
# it and write none (transformer_lib/classroom/bwrap.py), and its copy of the library leaves it out.
unset PYTHONDONTWRITEBYTECODE
failed=()

marked() {  # the test files that hold tests with this mark: a later stage collects those alone (15 s less each)
    grep -l -E "mark\.$1\b" tests/*.py | tr '\n' ' '
}

machine_busy() {  # CPU seconds this machine has run anything since boot (/proc/stat: user, nice, system, irq, softirq)
    awk -v hz="$(getconf CLK_TCK)" '$1 == "cpu" { printf "%.2f\n", ($2 + $3 + $4 + $7 + $8) / hz }' /proc/stat
}

counted() {  # counted FILE COMMAND...: run it in a subshell, then write to FILE what `times` says of that subshell and
    # every process it waited for, theirs included (getrusage's children: an xdist worker, a Jupyter kernel, a Dask
    # worker; a subshell, so that a background stage ending meanwhile is not counted in a foreground one), and the
    # machine's busy CPU seconds meanwhile. The first misses a process whose parent did not wait for it: the grader's
    # kernels, in bubblewrap's PID namespace (measured: a kernel's 4 s of spinning counted nowhere), so the second,
    # which counts everything that ran on the machine, is the stage's whole CPU where nothing else runs (CI).
    local file="$1"; shift
    local busy=$(machine_busy) status=0
    (
        "$@"
        status=$?
        times >"$file"  # the builtin itself, not in a pipe: a pipe's forked side would read its own, empty, counts
        exit $status
    ) || status=$?
    echo "machine $busy $(machine_busy)" >>"$file"
    return $status
}

spent() {  # spent START FILE [END]: "W s wall; C s CPU in its processes (CPU/wall R), M s CPU busy on the machine (R)":
    # on 2 cores R near 2 means both cores kept busy, R near 1 or below that the stage waited (more parallelism pays)
    awk -v w="$(awk -v start="$1" -v now="${3:-$(date +%s.%N)}" 'BEGIN { print now - start }')" '
        $1 == "machine" { machine = $3 - $2; next }
        { for (i = 1; i <= NF; i++) { split($i, t, "m"); sub("s", "", t[2]); cpu += t[1] * 60 + t[2] } }
        function per(c) { return w > 0 ? sprintf("%.2f", c / w) : "-" }
        END { printf "%.0f s wall; %.0f s CPU in its processes (CPU/wall %s), %.0f s CPU busy on the machine (%s)",
            w, cpu, per(cpu), machine, per(machine) }' "$2"
    rm -f "$2"
}

stage() {  # stage NAME COMMAND...: run it, time it (wall and CPU), remember a failure
    local name="$1"; shift
    local start=$(date +%s.%N) cpu_file=$(mktemp)
    echo; echo "=== $name: $*"
    if counted "$cpu_file" "$@"; then
        echo "=== $name: passed in $(spent "$start" "$cpu_file")"
    else
        echo "=== $name: FAILED (exit $?) after $(spent "$start" "$cpu_file")"
        failed+=("$name")
    fi
}

declare -A bg_pid bg_log bg_cpu bg_start  # the background stages, by name

background() {  # background NAME COMMAND...: start it now, its output kept aside; `joined NAME` waits for it
    local name="$1"; shift
    bg_log[$name]="$(mktemp)"; bg_cpu[$name]="$(mktemp)"; bg_start[$name]=$(date +%s.%N)
    echo; echo "=== $name: started in the background: $*"
    (
        status=0
        counted "${bg_cpu[$name]}" "$@" >"${bg_log[$name]}" 2>&1 || status=$?
        echo "end $(date +%s.%N)" >>"${bg_cpu[$name]}"  # when it ended, which may be long before it is joined
        exit $status
    ) &
    bg_pid[$name]=$!
}

joined() {  # joined NAME: wait for that background stage, print its output, time it (wall and CPU), remember a failure
    local name="$1" status=0 end
    wait "${bg_pid[$name]}" || status=$?
    end=$(awk '$1 == "end" { print $2 }' "${bg_cpu[$name]}")
    sed -i '/^end /d' "${bg_cpu[$name]}"
    echo; echo "=== $name (ran in the background):"; cat "${bg_log[$name]}"; rm -f "${bg_log[$name]}"
    if [ "$status" -eq 0 ]; then
        echo "=== $name: passed, $(spent "${bg_start[$name]}" "${bg_cpu[$name]}" "$end") from its start to its end"
    else
        echo "=== $name: FAILED (exit $status), $(spent "${bg_start[$name]}" "${bg_cpu[$name]}" "$end") from its start to its end"
        failed+=("$name")
    fi
}

if [ "${1:-}" = "--fast" ]; then
    stage "lint" bash scripts/lint.sh
    stage "unit tests (fast lane)" $py -m pytest tests transformer_lib --doctest-modules \
        -m "not slow and not browser and not jupyterlab and not executed" -n 2 --dist loadfile -p no:cacheprovider
    echo
    [ ${#failed[@]} -gt 0 ] && { echo "test_all --fast: FAILED stages: ${failed[*]}"; exit 1; }
    echo "test_all --fast: all stages passed (the full run adds the slow tests, the notebooks, the build and the browser)"
    exit 0
fi
# the reader's install: [book] alone, in its own environment (a second run with unchanged requirements takes a second).
# It runs beside lint, which needs only .venv and one core; the notebook stage, the first to use it, waits for it.
reader=.venv-reader
reader_install() {  # [book] into .venv-reader, and its Python as the kernel "reader", which exists nowhere else
    VENV="$reader" bash scripts/setup_env.sh book &&
        "$reader/bin/python" -m ipykernel install --sys-prefix --name reader --display-name "Python 3 ([book] only)" >/dev/null
}
background "reader's install" reader_install
stage "lint" bash scripts/lint.sh
# every notebook, two at a time; book/conftest.py (and assignments/conftest.py, for the solutions) keeps each page as
# it ran (_build/.executed) for the build, the tests that read what the pages printed, and the teacher's book. With
# torch's default thread count, as a reader's Jupyter or Colab starts it (OMP_NUM_THREADS unset for this stage only):
# each chapter pins itself to one thread in its set-up cell, and its checks must hold with 1, 2 or 4 threads anyway.
# The kernel is the reader's install's ("reader", found through JUPYTER_PATH; without it the stage fails rather than
# fall back on .venv's): nbval and pytest run here, in .venv, but every cell runs with [book] alone. Without the unit
# tests' pytest plugins, hypothesis and anyio, which no notebook uses (1.4 CPU s of imports in each of the three
# pytest processes).
joined "reader's install"
rm -rf _build/.executed
stage "notebooks" env -u OMP_NUM_THREADS JUPYTER_PATH="$root/$reader/share/jupyter" $py -m pytest --nbval-lax \
    --nbval-kernel-name reader book assignments -n 2 --dist loadfile --nbval-cell-timeout=300 -p no:cacheprovider \
    -p no:hypothesispytest -p no:anyio
# the unit tests and doctests, after the notebooks: among them the tests marked executed (every solution, and every
# section of prose, states the numbers its cells printed, read from the pages the notebook stage kept), and the
# teacher's book, which takes the pages the notebook stage ran instead of running them again. Files in the order
# tests/conftest.py gives them (those with slow tests first), not xdist's most-tests-first.
stage "unit tests" $py -m pytest tests transformer_lib --doctest-modules -m "not browser and not jupyterlab" \
    -n 2 --dist loadfile --no-loadscope-reorder -p no:cacheprovider --durations=25
# the site, from the pages the notebook stage executed (a page that failed there runs again here, and fails the build),
# built by the reader's install
stage "build" env VENV="$reader" bash scripts/build_book.sh
# every page opened in a real JupyterLab in headless Chromium, two pages at a time (the pages with widgets run up to
# their first widget; those without open with no kernel), in the background beside the browser stage: both wait on
# their Chromium much of the time (measured on a quiet machine: 567 s for the two side by side, against 172 s + 466 s
# one after the other)
background "jupyterlab" $py -m pytest $(marked jupyterlab) -m jupyterlab -n 2 -p no:cacheprovider
if [ -d _build/html ]; then
    # every test marked browser, in any file, on two workers: the tests that read one language's sweeps on one worker
    # (each page is visited once per language and width: tests/site_browser.py, xdist groups), the other tests on
    # whichever is free (measured in a fresh clone's .ci/run on a quiet machine, JupyterLab beside it: 457 s wall on two
    # workers, 516 s on one; the pair is CPU-bound, ~885 s of CPU on 2 cores); the slowest tests are listed at the end.
    # The unit tests, JupyterLab, the build and this stage all side by side took longer, not less: 1,125 s for the
    # whole run against 1,030 (the build 44 -> 244 s, the machine's CPU after the notebooks ~1,530 -> ~1,810 s)
    stage "browser" $py -m pytest $(marked browser) -m browser -n 2 --dist loadgroup -p no:cacheprovider --durations=15
else
    echo "=== browser: not run, the build produced no _build/html"; failed+=("browser")
fi
joined "jupyterlab"

echo
if [ ${#failed[@]} -gt 0 ]; then
    echo "test_all: FAILED stages: ${failed[*]}"
    exit 1
fi
echo "test_all: all stages passed"
