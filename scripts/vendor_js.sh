#!/usr/bin/env bash
# Refresh the JavaScript the website serves from book/_static/vendor/ (committed, so that building and
# reading the book need neither npm nor a network). Run by hand when bumping a version; needs npm.
#   require.js            npm: requirejs                      (loads the widget modules, as myst-nb expects)
#   ipywidgets/embed-amd.js  npm: @jupyter-widgets/html-manager  (draws saved ipywidgets state on a page)
#   mathjax/              npm: mathjax                        (typesets $...$; Sphinx would fetch it from a CDN)
#   onnxruntime-web/      npm: onnxruntime-web                (runs chapter 7's live translator; loaded on demand by
#                         book/_static/translator/translator.js only: the plain WebAssembly build, one thread, so
#                         no WebGPU/WebGL/JSEP builds and no cross-origin isolation needed)
#   plotly/plotly-locale-zh-cn.js  npm: plotly.js (dist/plotly-locale-zh-cn.js: plotly's own Chinese words for its
#                         toolbar and messages; loaded with plotly.min.js on the Chinese pages by book/_static/plotly-theme.js)
#   tests/vendor/axe-core/axe.min.js  npm: axe-core           (accessibility checks; injected by the browser tests only,
#                         so it lives with the tests and is never published with the site)
# plotly.min.js is NOT vendored here: transformer_lib.site.figures copies it from the installed plotly package at
# build time, so the site's plotly.js always matches the Python plotly that wrote the figures. Its locale is taken from
# the plotly.js release that the installed plotly package ships (its version is read from .venv's plotly.min.js), and
# the build checks that the two still match (transformer_lib.site.figures).
set -euo pipefail
REQUIREJS_VERSION=2.3.7
HTML_MANAGER_VERSION=1.0.15   # pairs with ipywidgets 8.1 (@jupyter-widgets/controls 5, base 6)
MATHJAX_VERSION=3.2.2
ONNXRUNTIME_WEB_VERSION=1.30.0
AXE_CORE_VERSION=4.14.1

root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
# the plotly.js that the site ships (the installed plotly package's plotly.min.js, "* plotly.js v4.1.1" in its header)
PLOTLY_JS_VERSION="$("$root/.venv/bin/python" -c 'from transformer_lib.site.figures import plotly_js_version; print(plotly_js_version())')"
dest="$root/book/_static/vendor"
work="$(mktemp -d)"
trap 'rm -rf "$work"' EXIT
cd "$work"
npm pack --silent "requirejs@$REQUIREJS_VERSION" "@jupyter-widgets/html-manager@$HTML_MANAGER_VERSION" \
    "mathjax@$MATHJAX_VERSION" "onnxruntime-web@$ONNXRUNTIME_WEB_VERSION" "axe-core@$AXE_CORE_VERSION" \
    "plotly.js@$PLOTLY_JS_VERSION" >/dev/null
for tgz in *.tgz; do mkdir -p "${tgz%.tgz}" && tar xzf "$tgz" -C "${tgz%.tgz}"; done

rm -rf "$dest" && mkdir -p "$dest/ipywidgets" "$dest/mathjax/output/chtml/fonts" "$dest/mathjax/input/tex" \
    "$dest/onnxruntime-web" "$dest/plotly"
cp "requirejs-$REQUIREJS_VERSION/package/require.js" "$dest/require.js"
cp "jupyter-widgets-html-manager-$HTML_MANAGER_VERSION/package/dist/embed-amd.js" "$dest/ipywidgets/"
# its icon fonts (Font Awesome), found through book/_static/ipywidgets-setup.js; modern browsers need no more
cp "jupyter-widgets-html-manager-$HTML_MANAGER_VERSION/package/dist/"*.woff2 \
   "jupyter-widgets-html-manager-$HTML_MANAGER_VERSION/package/dist/"*.woff "$dest/ipywidgets/"
mj="mathjax-$MATHJAX_VERSION/package"
cp "$mj/es5/tex-mml-chtml.js" "$dest/mathjax/"
cp -r "$mj/es5/output/chtml/fonts/woff-v2" "$dest/mathjax/output/chtml/fonts/"
cp -r "$mj/es5/input/tex/extensions" "$dest/mathjax/input/tex/"   # loaded on demand by \require / autoload
cp "$mj/LICENSE" "$dest/mathjax/LICENSE"
# the ES-module API, its WebAssembly glue and the single WebAssembly binary they load (env.wasm.wasmPaths)
ort="onnxruntime-web-$ONNXRUNTIME_WEB_VERSION/package/dist"
cp "$ort/ort.wasm.min.mjs" "$ort/ort-wasm-simd-threaded.mjs" "$ort/ort-wasm-simd-threaded.wasm" "$dest/onnxruntime-web/"
# the locale file as npm has it, inside a function: it declares a global `var locale`, which a page's other scripts
# may have declared already (sphinx-copybutton's `let locale`: a SyntaxError, and no Chinese toolbar)
{ echo "(function () {"; cat "plotly.js-$PLOTLY_JS_VERSION/package/dist/plotly-locale-zh-cn.js"; echo; echo "})();"; } \
    > "$dest/plotly/plotly-locale-zh-cn.js"
cp "plotly.js-$PLOTLY_JS_VERSION/package/LICENSE" "$dest/plotly/"
axe="$root/tests/vendor/axe-core"
rm -rf "$axe" && mkdir -p "$axe"
cp "axe-core-$AXE_CORE_VERSION/package/axe.min.js" "axe-core-$AXE_CORE_VERSION/package/LICENSE" "$axe/"
echo "axe-core@$AXE_CORE_VERSION (MPL-2.0): axe.min.js, injected by the browser tests only (tests/site_checks.py)" \
    > "$axe/VERSION.txt"
(cd "$axe" && sha256sum axe.min.js LICENSE > SHA256SUMS)

cat > "$dest/VERSIONS.txt" <<TXT
requirejs@$REQUIREJS_VERSION (MIT) -> require.js
@jupyter-widgets/html-manager@$HTML_MANAGER_VERSION (BSD-3-Clause) -> ipywidgets/embed-amd.js and its Font Awesome fonts (SIL OFL 1.1)
mathjax@$MATHJAX_VERSION (Apache-2.0) -> mathjax/ (es5/tex-mml-chtml.js, CHTML woff-v2 fonts, TeX extensions)
onnxruntime-web@$ONNXRUNTIME_WEB_VERSION (MIT) -> onnxruntime-web/ (dist/ort.wasm.min.mjs, ort-wasm-simd-threaded.mjs and .wasm)
plotly.js@$PLOTLY_JS_VERSION (MIT) -> plotly/ (dist/plotly-locale-zh-cn.js, wrapped in a function: the toolbar's words on the Chinese pages)
Refresh with: bash scripts/vendor_js.sh
TXT
(cd "$dest" && find . -type f | sort | xargs sha256sum > "$work/SHA256SUMS" && mv "$work/SHA256SUMS" .)
du -sh "$dest"
