"""Chapter 7's live translator in a real browser: headless Chromium, offline, against transformer_lib.

The page is the snippet chapter 7 displays (``live_translator.page_html``) in a minimal harness that serves
the same ``_static`` files as the site (translator/, vendor/onnxruntime-web/, plotly.min.js) from 127.0.0.1.
Asserts: on held-out sentences the page writes exactly the tokens of ``tl.greedy_decode`` and
``tl.beam_search``; its cross-attention heatmap shows Python's weights within 1e-4; its sampling distribution
is ``tl.sampling_distribution``; the controls change the output; an unknown word gets a clear message; no
request leaves the machine and no JavaScript error occurs. Prints the in-browser time per translation and
takes screenshots at 1280 and 390 px (with ``TL_SCREENSHOTS=1``). When a built site exists, chapter 7's own
page is checked too. Run: ``pytest tests/test_browser_translator.py -m browser -s``.
"""

from __future__ import annotations

import json
import shutil
import statistics
from pathlib import Path

import pytest
import torch
from site_browser import SITE, Visit, screenshot, serve

import transformer_lib as tl
from transformer_lib.book import live_translator, recipes
from transformer_lib.tokenization import BOS_ID, EOS_ID

pytestmark = [pytest.mark.browser, pytest.mark.xdist_group("translator")]  # one worker loads the model and the page

ROOT = Path(__file__).resolve().parents[1]
STATIC = ROOT / "book" / "_static"
N_SENTENCES = 30
TOL = 1e-4
TIMEOUT_MS = 60_000
EL = "document.getElementById('live-translator')"


@pytest.fixture(scope="module")
def library():
    torch.set_num_threads(1)
    model, corpus = recipes.load_translation(ROOT / "book" / "checkpoints" / "translation.safetensors")
    return model, corpus


@pytest.fixture(scope="module")
def harness_url(tmp_path_factory):
    """A page holding only the chapter's snippet, next to a copy of the site's _static files it uses."""
    import plotly

    root = tmp_path_factory.mktemp("translator-site")
    shutil.copytree(STATIC / "translator", root / "_static" / "translator")
    shutil.copytree(STATIC / "vendor" / "onnxruntime-web", root / "_static" / "vendor" / "onnxruntime-web")
    shutil.copyfile(Path(plotly.__file__).parent / "package_data" / "plotly.min.js", root / "_static" / "plotly.min.js")
    (root / "book").mkdir()
    for name, lang in [("chapter.html", "en"), ("chapter-zh.html", "zh-CN")]:  # the Chinese site says <html lang=zh-CN>
        (root / "book" / name).write_text(
            f'<!doctype html><html lang="{lang}"><head><meta charset="utf-8"><link rel="icon" href="data:,">'
            '<meta name="viewport" content="width=device-width, initial-scale=1">'
            '<script src="../_static/plotly.min.js"></script></head>'
            '<body><main style="max-width: 860px; margin: auto; padding: 8px">'
            f"{live_translator.page_html()}</main></body></html>",
            encoding="utf-8",
        )
    server, url = serve(root)
    yield url + "book/chapter.html"
    server.shutdown()


@pytest.fixture(scope="module")
def visit(browser, harness_url):
    """One page for the whole module (the runtime and the model load once), checked offline at the end."""
    v = Visit(browser, harness_url)
    v.page.wait_for_selector("#live-translator [name=go]", timeout=TIMEOUT_MS)
    yield v
    try:
        assert not v.blocked, f"requests left the machine: {v.blocked}"
        assert not v.failed, f"local files failed to load: {v.failed}"
        assert not v.errors, f"JavaScript errors: {v.errors}"
    finally:
        v.close()


def translate(page, text: str, method: str = "greedy", options: dict | None = None) -> dict:
    """The page's own translate function (what the button calls), returning tokens, attention and time."""
    return page.evaluate(
        f"([t, m, o]) => {EL}.translator.translate(t, m, o).then(r => "
        "({tokens: r.tokens, cross: r.cross, ms: r.ms, text: r.text, unknown: r.unknown}))",
        [text, method, options or {}],
    )


def run_ui(page) -> None:
    """Press Translate and wait for the page to finish."""
    runs = page.evaluate(f"() => Number({EL}.dataset.runs)")
    page.click("#live-translator [name=go]")
    page.wait_for_function(f"() => Number({EL}.dataset.runs) > {runs}", timeout=TIMEOUT_MS)
    # controls re-run the translation after 120 ms of quiet: let every scheduled run finish
    page.evaluate(f"() => new Promise(r => setTimeout(r, 250)).then(() => {EL}.running)")


def test_same_tokens_as_python_on_held_out_sentences(visit, library, capsys) -> None:
    model, corpus = library
    sentences = [s for s, _ in corpus.test[:N_SENTENCES]]
    run_ui(visit.page)  # loads the runtime and the model
    times: dict[str, list[float]] = {}
    for method, options in [
        ("greedy", {}),
        ("beam", {"beamSize": 4, "lengthPenalty": 0.6}),
        ("beam", {"beamSize": 2, "lengthPenalty": 0.0}),
        ("beam", {"beamSize": 8, "lengthPenalty": 1.0}),
    ]:
        for sentence in sentences:
            src = torch.tensor([corpus.src_tokenizer.encode(sentence)])
            if method == "greedy":
                expected = tl.greedy_decode(model, src, 20, BOS_ID, EOS_ID)[0].tolist()
            else:
                expected = tl.beam_search(
                    model,
                    src,
                    20,
                    BOS_ID,
                    EOS_ID,
                    beam_size=options["beamSize"],
                    length_penalty=options["lengthPenalty"],
                )[0][0].tokens.tolist()
            result = translate(visit.page, sentence, method, options)
            assert result["tokens"] == expected, (method, options, sentence)
            assert result["text"] == corpus.tgt_tokenizer.decode(expected)
            name = f"beam search, k={options['beamSize']}, α={options['lengthPenalty']}" if options else method
            times.setdefault(name, []).append(result["ms"])
    with capsys.disabled():
        print(f"\nin-browser time per translation (Chromium, WebAssembly, 1 thread), {N_SENTENCES} held-out sentences:")
        for name, ms in times.items():
            print(f"  {name:28s} median {statistics.median(ms):6.1f} ms, max {max(ms):6.1f} ms")


def test_same_tokens_when_the_length_limit_cuts_the_search(visit, library) -> None:
    """With 3 new tokens no hypothesis reaches <eos>: beam search then ranks its live beams (the end of
    tl.beam_search), and greedy stops without <eos>."""
    model, corpus = library
    for sentence in [s for s, _ in corpus.test[:10]]:
        src = torch.tensor([corpus.src_tokenizer.encode(sentence)])
        for k, alpha in [(4, 0.6), (3, 0.0)]:
            best = tl.beam_search(model, src, 3, BOS_ID, EOS_ID, beam_size=k, length_penalty=alpha)[0][0]
            got = translate(visit.page, sentence, "beam", {"beamSize": k, "lengthPenalty": alpha, "maxNewTokens": 3})
            assert got["tokens"] == best.tokens.tolist() and EOS_ID not in got["tokens"], sentence
        greedy = translate(visit.page, sentence, "greedy", {"maxNewTokens": 3})
        assert greedy["tokens"] == tl.greedy_decode(model, src, 3, BOS_ID, EOS_ID)[0].tolist()


def test_heatmap_shows_pythons_cross_attention(visit, library) -> None:
    model, corpus = library
    page = visit.page
    sentence = "the big mouse likes this black table"
    page.fill("#live-translator [name=text]", sentence)
    page.select_option("#live-translator [name=method]", value="greedy")
    run_ui(page)
    src = torch.tensor([corpus.src_tokenizer.encode(sentence)])
    out = tl.greedy_decode(model, src, 20, BOS_ID, EOS_ID)
    cross = model.attention_maps(src, out[:, :-1])["cross"][:, 0]  # (L, H, T, S)
    assert page.inner_text("#live-translator .tl-lt-sentence") == corpus.tgt_tokenizer.decode(out[0])
    L, H = cross.shape[:2]
    plot = f"{EL}.querySelector('.tl-lt-heatmap')"
    for layer in range(L):
        for head in [*range(H), "mean"]:
            page.select_option("#live-translator [name=layer]", value=str(layer))
            page.select_option("#live-translator [name=head]", value=str(head))
            title = f"layer {layer + 1}, " + ("mean of heads" if head == "mean" else f"head {head + 1}")
            page.wait_for_function(f"() => {plot}.layout.title.text.endsWith({json.dumps(title)})")
            z = torch.tensor(page.evaluate(f"() => {plot}.data[0].z"))
            expected = cross[layer].mean(0) if head == "mean" else cross[layer, head]
            assert z.shape == expected.shape and (z - expected).abs().max() < TOL, (layer, head)


def test_sampling_distribution_is_pythons(visit, harness_url) -> None:
    logits = torch.randn(2, 30, generator=torch.Generator().manual_seed(0)) * 3
    url = harness_url.replace("book/chapter.html", "_static/translator/decoding.js")
    for options in [
        dict(temperature=1.0),
        dict(temperature=0.5, top_k=3),
        dict(temperature=2.0, top_p=0.9),
        dict(temperature=1.5, top_k=10, top_p=0.5),
        dict(top_k=1),
    ]:
        js = dict(temperature=options.get("temperature", 1.0), topK=options.get("top_k"), topP=options.get("top_p"))
        for row in logits:
            got = visit.page.evaluate(
                "([url, row, o]) => import(url).then(d => Array.from(d.samplingDistribution(row, o)))",
                [url, row.tolist(), js],
            )
            expected = tl.sampling_distribution(row, **options)
            assert (torch.tensor(got) - expected).abs().max() < 1e-6, options
            assert ((torch.tensor(got) > 0) == (expected > 0)).all(), options


def test_controls_change_the_output(visit) -> None:
    page = visit.page
    page.fill("#live-translator [name=text]", "the big mouse likes this black table")
    page.select_option("#live-translator [name=method]", value="greedy")
    run_ui(page)
    greedy = page.inner_text("#live-translator .tl-lt-sentence")
    assert not page.is_visible("#live-translator [name=temperature]")  # sampling controls hidden for greedy
    page.select_option("#live-translator [name=method]", value="sample")
    page.fill("#live-translator [name=temperature]", "3")
    run_ui(page)
    hot = page.inner_text("#live-translator .tl-lt-sentence")
    assert hot != greedy  # T = 3 flattens the distribution: the sample strays from the arg-max
    run_ui(page)
    assert page.inner_text("#live-translator .tl-lt-sentence") == hot  # same seed, same sample
    page.fill("#live-translator [name=seed]", "1")
    run_ui(page)
    assert page.inner_text("#live-translator .tl-lt-sentence") != hot
    page.fill("#live-translator [name=text]", "the small cat does not see the red dogs")
    page.select_option("#live-translator [name=method]", value="beam")
    run_ui(page)
    steps = page.inner_text("#live-translator .tl-lt-steps")
    assert "✔" in steps  # the beam view marks the hypotheses that ended with <eos>
    assert "ne" in page.inner_text("#live-translator .tl-lt-sentence").split()


def test_the_translator_speaks_chinese_on_the_chinese_site(browser, harness_url) -> None:
    """On a page in Chinese the controls, the timing and the messages for input the model cannot read are Chinese;
    the sentence it writes is the same model's."""
    v = Visit(browser, harness_url.replace("chapter.html", "chapter-zh.html"))
    try:
        page = v.page
        page.wait_for_selector("#live-translator [name=go]", timeout=TIMEOUT_MS)
        controls = page.inner_text("#live-translator")
        assert "翻译" in controls and "方法" in controls and "Translate" not in controls, controls
        page.select_option("#live-translator [name=method]", value="greedy")
        page.fill("#live-translator [name=text]", "the cat sees the dog")
        run_ui(page)
        assert page.evaluate(f"() => {EL}.dataset.state") == "done"
        assert "翻译用时" in page.inner_text("#live-translator .tl-lt-timing")
        for text, words in [("", "请先输入"), (" ".join(["cat"] * 40), "最多读取 max_len = 32")]:
            page.fill("#live-translator [name=text]", text)
            run_ui(page)
            message = page.inner_text("#live-translator .tl-lt-message")
            assert words in message and "model" not in message, message
        assert not v.blocked and not v.failed and not v.errors, (v.blocked, v.failed, v.errors)
    finally:
        v.close()


def test_unknown_word_and_bad_input_give_messages(visit, library) -> None:
    model, corpus = library
    page = visit.page
    page.select_option("#live-translator [name=method]", value="greedy")
    page.fill("#live-translator [name=text]", "the zebra sees a red cat")
    run_ui(page)
    message = page.inner_text("#live-translator .tl-lt-message")
    assert "zebra" in message and "<unk>" in message and "vocabulary" in message
    src = torch.tensor([corpus.src_tokenizer.encode("the zebra sees a red cat")])  # Python reads <unk> too
    expected = corpus.tgt_tokenizer.decode(tl.greedy_decode(model, src, 20, BOS_ID, EOS_ID)[0])
    assert page.inner_text("#live-translator .tl-lt-sentence") == expected
    for text, words in [("", "Type"), (" ".join(["cat"] * 40), "max_len = 32")]:
        page.fill("#live-translator [name=text]", text)
        run_ui(page)
        assert words in page.inner_text("#live-translator .tl-lt-message")
        assert page.evaluate(f"() => {EL}.dataset.state") == "error"
    page.fill("#live-translator [name=text]", "the cat sees the dog")
    run_ui(page)  # recovers after an error
    assert page.evaluate(f"() => {EL}.dataset.state") == "done"
    assert page.inner_text("#live-translator .tl-lt-message") == ""


@pytest.mark.parametrize("width", [1280, 390])
def test_the_translator_fits_the_screen_at_two_widths(visit, width: int) -> None:
    """The translator's layout is CSS only (no script reads the width), so the module's page, resized, shows what a
    phone or a laptop opening it shows: after a beam search it fits the screen (a fresh page per width loaded the
    runtime and the model again, 10 s each under load)."""
    page = visit.page
    page.set_viewport_size({"width": width, "height": 900})
    try:
        page.select_option("#live-translator [name=method]", value="beam")
        run_ui(page)
        box = page.locator("#live-translator").bounding_box()
        assert box["x"] >= 0 and box["x"] + box["width"] <= width  # the translator fits the screen
        assert page.evaluate("() => document.documentElement.scrollWidth") <= width  # and the page does not scroll
        screenshot(page, f"live_translator_{width}", full_page=True)
    finally:
        page.set_viewport_size({"width": 1280, "height": 900})


def test_chapter_7_on_the_built_site(browser, library) -> None:
    pages = [p for p in sorted((SITE / "book").glob("07*.html")) if "live-translator" in p.read_text(encoding="utf-8")]
    if not pages:
        pytest.skip("no built chapter 7 with the live translator: run `bash scripts/build_book.sh` first")
    model, corpus = library
    server, url = serve(SITE)
    v = Visit(browser, url + pages[0].relative_to(SITE).as_posix())
    try:
        v.page.wait_for_selector("#live-translator [name=go]", timeout=TIMEOUT_MS)
        sentence = corpus.test[1][0]
        v.page.fill("#live-translator [name=text]", sentence)
        run_ui(v.page)
        src = torch.tensor([corpus.src_tokenizer.encode(sentence)])
        expected = corpus.tgt_tokenizer.decode(tl.greedy_decode(model, src, 20, BOS_ID, EOS_ID)[0])
        assert v.page.inner_text("#live-translator .tl-lt-sentence") == expected
        assert not v.blocked and not v.failed and not v.errors, (v.blocked, v.failed, v.errors)
    finally:
        v.close()
        server.shutdown()


def test_irregular_input_is_read_as_python_reads_it(visit, library) -> None:
    """Capitals, punctuation, odd spacing: the page's normalizeSentence is data.normalize_sentence, token for token."""
    model, corpus = library
    page = visit.page
    for text in [
        "The big mouse likes this black table.",
        "the  big   mouse likes\tthis black table",
        "  THE CAT, sees the dog!!  ",
        "the cats do not see...a red house?",
        "the ｃａｔ sees the dog",  # full-width letters are letters to both
    ]:
        expected_text = tl.data.normalize_sentence(text)
        src = recipes.source_ids(corpus, text)
        expected = tl.greedy_decode(model, src, 20, BOS_ID, EOS_ID)[0].tolist()
        got = page.evaluate(
            f"t => {EL}.translator.translate(t, 'greedy', {{}}).then(r => ({{normalized: r.normalized, "
            "srcIds: r.srcIds, tokens: r.tokens}))",
            text,
        )
        assert got["normalized"] == expected_text, text
        assert got["srcIds"] == src[0].tolist(), text
        assert got["tokens"] == expected, text
    page.select_option("#live-translator [name=method]", value="greedy")
    page.fill("#live-translator [name=text]", "The big mouse likes this black table.")
    run_ui(page)
    assert "Read as “the big mouse likes this black table”" in page.inner_text("#live-translator .tl-lt-message")
    assert "<unk>" not in page.inner_text("#live-translator .tl-lt-message")
    page.fill("#live-translator [name=text]", "the zebra sees a gnu")
    run_ui(page)
    assert "reads them as <unk>" in page.inner_text("#live-translator .tl-lt-message")  # two words: plural
    page.fill("#live-translator [name=text]", "!!!")
    run_ui(page)
    assert page.inner_text("#live-translator .tl-lt-timing") == ""  # no stale "Translated in ... ms" after an error
