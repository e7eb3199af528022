#!/usr/bin/env bash
# Shared set-up for the build and test commands: create .venv if missing and install into it torch (with pip), then
# this project in editable mode with the extras asked for (pyproject.toml), pinned by constraints.txt (with uv).
# Needs only Python >= 3.11 with pip and venv (and gcc for any package without a wheel). A second run with
# unchanged requirements returns at once; an environment set up with [all] serves every command.
#   bash scripts/setup_env.sh          every extra, [all]: what the tests and CI need (scripts/test_all.sh)
#   bash scripts/setup_env.sh book     the reader's install, [book]: run and build the book (scripts/build_book.sh)
#   PYTHON=python3.12 bash scripts/setup_env.sh        pick the interpreter that creates .venv
#   TORCH_INDEX_URL=https://download.pytorch.org/whl/cpu  where torch comes from when none is installed
#   VENV=.venv-reader bash scripts/setup_env.sh book   another environment than .venv (scripts/test_all.sh runs the
#                                                      pages and the build in a [book]-only one)
set -euo pipefail
root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
cd "$root"
venv="${VENV:-.venv}"
[[ "$venv" = /* ]] || venv="$root/$venv"
py="$venv/bin/python"
extras="${1:-all}"
case "$extras" in
    all|book) ;;
    *) echo "setup: expected 'all' or 'book' as the extras to install, got '$extras'" >&2; exit 2 ;;
esac

if [ ! -x "$py" ]; then
    base="${PYTHON:-python3}"
    if ! "$base" -c 'import sys; sys.exit(sys.version_info < (3, 11))' 2>/dev/null; then
        echo "setup: need Python >= 3.11 as '$base' (set PYTHON=...); found: $("$base" --version 2>&1 || true)" >&2
        exit 1
    fi
    echo "setup: creating $venv with $("$base" --version)"
    "$base" -m venv "$venv"
fi

stamp="$venv/.transformer-book-setup"
wanted="$(cat requirements.txt constraints.txt pyproject.toml | sha256sum | cut -d' ' -f1)"
# the stamp holds the requirements' hash and the extras installed; [all] includes [book]
if [ -f "$stamp" ] && { [ "$(cat "$stamp")" = "$wanted $extras" ] || [ "$(cat "$stamp")" = "$wanted all" ]; } \
    && "$py" -c "import importlib.metadata as m, torch; m.version('transformer-lib')" 2>/dev/null; then
    exit 0  # already set up for these requirements
fi

# torch first and on its own, with pip and without its dependencies (they come with the rest, pinned):
# pyproject.toml only asks for torch>=2.2, which an installed torch satisfies. With none installed, pick 2.13.0
# explicitly: on the project's machines pip's own configuration finds its CPU wheel on disk (a bare "torch", or any
# installer that does not read pip's configuration, would fetch the newest CUDA build, several GB).
if ! "$py" -c "import importlib.metadata as m; m.version('torch')" 2>/dev/null; then
    echo "setup: installing torch ${TORCH_VERSION:-2.13.0}"
    "$py" -m pip install --no-deps ${TORCH_INDEX_URL:+--index-url "$TORCH_INDEX_URL"} "torch==${TORCH_VERSION:-2.13.0}"
fi
# Everything else with uv (itself pinned in constraints.txt, installed by pip into the environment): it downloads
# and installs in parallel and compiles no bytecode ahead of the first import. torch is held at the version just
# installed (a second constraints file), so that uv keeps that build or fails; it never fetches another one.
if ! "$venv/bin/uv" --version >/dev/null 2>&1; then
    "$py" -m pip install -q -c constraints.txt uv
fi
torch_pin="$(mktemp)"
trap 'rm -f "$torch_pin"' EXIT
"$py" -c "import importlib.metadata as m; print('torch==' + m.version('torch'))" > "$torch_pin"
echo "setup: installing transformer_lib (editable) with its [$extras] extra, pinned by constraints.txt ($(cat "$torch_pin") kept)"
# --system-certs: uv trusts the certificates the system trusts, as pip does. By default uv knows only its own copy of
# the public roots, so behind a proxy or mirror with a private certificate authority (pip told of it by /etc/pip.conf
# or the system's store) pip installed torch and uv then failed with "invalid peer certificate: UnknownIssuer".
"$venv/bin/uv" pip install --system-certs --python "$py" -c constraints.txt -c "$torch_pin" -e ".[$extras]"
# Register this environment's Python as the "python3" kernel that the notebooks name, so that Jupyter Book,
# nbval and jupyter lab run them here even if the user has another python3 kernel installed.
"$py" -m ipykernel install --sys-prefix --name python3 --display-name "Python 3 (ipykernel)" >/dev/null
echo "$wanted $extras" > "$stamp"
echo "setup: done"
