"""The Chinese edition's catalogs (locale/zh_CN/LC_MESSAGES): one per page, their pending messages listed (translation
follows, it does not block: transformer_lib/site/translated.py), every translation keeping each number, formula,
code span, role and link of the English and using the glossary's Chinese for each term. The Chinese build itself
runs with -W in scripts/build_book.sh."""

from __future__ import annotations

import re
import subprocess
import sys
import types
import warnings
from pathlib import Path

import pytest
from babel.messages.pofile import read_po

from transformer_lib.book import labels
from transformer_lib.book.labels import catalog, translate, translate_figure
from transformer_lib.site import i18n, translated
from transformer_lib.site.messages import message_problems

ROOT = Path(__file__).resolve().parents[1]
LOCALE = ROOT / "locale" / "zh_CN" / "LC_MESSAGES"
# one catalog per page (under book/); sphinx.po and booktheme.po beside them: the theme's words; figures.po: the
# figures' labels (transformer_lib/book/labels.py reads it), checked like a page's catalog
FIGURES = LOCALE / "figures.po"
CATALOGS = sorted(p for p in LOCALE.rglob("*.po") if p.parent != LOCALE)


def _catalog(page: str):
    with open(LOCALE / f"{page}.po", "rb") as f:
        return read_po(f)


def _translated_messages():
    """Every translated message, of every catalog: a fuzzy one is pending (its Chinese is of the English before it
    changed, and Sphinx never shows it), not a translation to check."""
    for path in [*CATALOGS, FIGURES]:
        with open(path, "rb") as f:
            for message in read_po(f):
                if message.id and not translated.is_pending(message):
                    yield path.relative_to(LOCALE).with_suffix("").as_posix(), message


@pytest.fixture(scope="module")
def templates(tmp_path_factory) -> Path:
    """The messages of the pages as they are now (Sphinx's gettext builder; no notebook runs)."""
    out = tmp_path_factory.mktemp("i18n") / "gettext"
    done = subprocess.run(
        [
            sys.executable,
            "-c",
            f"import sys; sys.path.insert(0, 'scripts'); import i18n; sys.exit(i18n.extract({str(out)!r}))",
        ],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=600,
    )
    assert done.returncode == 0, done.stdout[-2000:] + done.stderr[-3000:]
    return out


def _pending_in(templates: Path) -> dict[str, list[str]]:
    """Per page, the messages of the page now that its catalog has no Chinese for (scripts/i18n.py pending)."""
    sys.path.insert(0, str(ROOT / "scripts"))
    try:
        import i18n as script
    finally:
        sys.path.remove(str(ROOT / "scripts"))
    return script.pending(templates)


# --------------------------------------------------------------------------------------------------------------
# The translation rule (transformer_lib/site/translated.py): every page has a catalog; a message it has no Chinese
# for is pending, shown in English under a notice and listed here; a page not in TRANSLATED is pending as a whole
# --------------------------------------------------------------------------------------------------------------
def _toc_pages() -> set[str]:
    import yaml

    def walk(entries: list[dict]) -> list[str]:
        return [
            f
            for e in entries
            for f in ([e["file"]] if "file" in e else []) + walk(e.get("chapters", [])) + walk(e.get("sections", []))
        ]

    toc = yaml.safe_load((ROOT / "_toc.yml").read_text(encoding="utf-8"))
    return {toc["root"], *walk(toc.get("parts", [])), *walk(toc.get("chapters", []))}


class PendingTranslation(UserWarning):
    """Messages (or whole pages) of the book that the Chinese site shows in English, under a notice, until their
    catalog has their Chinese."""


def test_every_page_has_a_catalog_and_every_translated_page_is_in_the_book():
    """Fast, from _toc.yml: a new page has its catalog (``scripts/i18n.py update`` writes it), and TRANSLATED names
    only pages the book has."""
    catalogs = {p.relative_to(LOCALE).with_suffix("").as_posix() for p in CATALOGS}
    pages = _toc_pages()
    assert not pages - catalogs, f"pages without a catalog: {sorted(pages - catalogs)}: run scripts/i18n.py update"
    assert not catalogs - pages, f"catalogs of no page: {sorted(catalogs - pages)}: remove them"
    assert not set(i18n.TRANSLATED) - pages, f"TRANSLATED lists pages the book lacks: {set(i18n.TRANSLATED) - pages}"


def test_pages_pending_translation_are_listed():
    """A page not in TRANSLATED may land in English first: not a failure, but listed in the test output (a
    PendingTranslation warning in pytest's warnings summary) until its catalog is done and it joins TRANSLATED."""
    pending = translated.pending_pages(ROOT / "locale")
    assert pending == sorted(
        set(p.relative_to(LOCALE).with_suffix("").as_posix() for p in CATALOGS) - set(i18n.TRANSLATED)
    )
    if pending:
        warnings.warn(
            PendingTranslation(f"pending translation (shown in English on the Chinese site): {pending}"), stacklevel=1
        )


def test_scripts_pending_names_pages_counts_and_messages(capsys):
    """``scripts/i18n.py pending``: a line per page with its count (a translated page's changed messages, or a page
    not translated yet), the messages with ``--messages``, and the sum."""
    sys.path.insert(0, str(ROOT / "scripts"))
    try:
        import i18n as script
    finally:
        sys.path.remove(str(ROOT / "scripts"))
    found = {"book/intro": ["Changed.", "New."], "book/99_new": ["A.", "B.", "C."]}
    text = script.pending_report(found, {"book/intro": 120, "book/99_new": 3}, show_messages=True)
    assert text.splitlines() == [
        "book/intro: 2 of 120 messages pending (changed or new, shown in English)",
        "    'Changed.'",
        "    'New.'",
        "book/99_new: 3 of 3 messages pending (page not translated yet, shown in English)",
        "    'A.'",
        "    'B.'",
        "    'C.'",
        "5 messages pending on 2 pages",
    ]
    assert script.main(["pending", "--messages", "book/intro"]) == 0
    last = capsys.readouterr().out.splitlines()[-1]  # one page asked for: its sum, whatever the catalog holds today
    assert re.fullmatch(r"\d+ messages pending on [01] pages", last), last


def _page_context_hook(language: str):
    """The html-page-context handler that i18n.setup connects, with an app as Sphinx would pass it (two pages)."""
    handlers = {}
    app = types.SimpleNamespace(
        connect=lambda event, handler, priority=500: handlers.setdefault(event, handler),
        add_transform=lambda transform: None,
        add_post_transform=lambda transform: None,
        config=types.SimpleNamespace(language=language),
        builder=types.SimpleNamespace(format="html", get_target_uri=lambda page: page + ".html"),
        env=types.SimpleNamespace(found_docs={"book/intro", "book/99_new"}),
    )
    i18n.setup(app)
    return lambda page, body, doctree=None: (
        handlers["html-page-context"](
            app, page, "page.html", context := {"body": body, "content_root": "../"}, doctree
        ),
        context["body"],
    )[1]


def test_a_page_pending_translation_opens_with_a_notice_on_the_chinese_site():
    """The notice is in the HTML the build writes (the body Sphinx puts in the page), before the page's title: on
    the Chinese site, on a page the book has and TRANSLATED lacks; never on a translated page, on the search page
    or on the English site. Its words are site.po's."""
    from test_zh_theme import project_catalogs

    body = '<section id="new"><h1>99. New</h1><p>Text.</p></section>'
    chinese = _page_context_hook("zh_CN")
    with project_catalogs():
        shown = chinese("book/99_new", body)
        assert chinese("book/intro", body) == body  # translated
        assert chinese("search", body) == body  # not a page of the book
    notice = (
        '<div class="admonition note tl-untranslated" role="note" lang="zh-CN">'
        + "<p>本页尚未译成中文，先显示英文原文。"
    )
    assert shown.startswith(notice) and shown.endswith(body), shown
    assert _page_context_hook("en")("book/99_new", body) == body
    # a translated page with paragraphs pending (counted by translated.pending_transform) says so above them
    with project_catalogs():
        partly = chinese("book/intro", body, {"tl_pending": 2})
    assert partly.startswith('<div class="admonition note tl-untranslated tl-pending-notice"') and body in partly
    # site.po's words (English until site.po translates them)
    assert translated.PENDING_NOTICE in partly or "尚未译" in partly, partly
    assert _page_context_hook("en")("book/intro", body, {"tl_pending": 2}) == body


def _tiny_translated_site(tmp_path: Path, language: str) -> str:
    """A two-page Sphinx build whose page ``book/intro`` (a page of TRANSLATED) has three paragraphs, and a catalog
    for it (planted) that translates the first, holds the second as fuzzy (its English changed; the Chinese of the
    old sentence stays beside it, as sphinx-intl keeps it) and lacks the third (new): the page as it reads after
    an English contributor changed one sentence and added one."""
    from sphinx.application import Sphinx

    src = tmp_path / "src"
    (src / "book").mkdir(parents=True, exist_ok=True)
    (src / "conf.py").write_text(
        "extensions = ['transformer_lib.site.i18n']\nhtml_theme = 'basic'\ngettext_compact = False\n"
        "locale_dirs = ['locale']\nhtml_search_language = 'en'\n",
        encoding="utf-8",
    )
    (src / "index.rst").write_text("Book\n====\n\n.. toctree::\n\n   book/intro\n", encoding="utf-8")
    (src / "book" / "intro.rst").write_text(
        "Intro\n=====\n\nThe first paragraph.\n\nThe second paragraph, changed.\n\nA third paragraph.\n",
        encoding="utf-8",
    )
    po = src / "locale" / "zh_CN" / "LC_MESSAGES" / "book" / "intro.po"
    po.parent.mkdir(parents=True, exist_ok=True)
    po.write_text(
        'msgid ""\nmsgstr ""\n"Content-Type: text/plain; charset=UTF-8\\n"\n\n'
        'msgid "Intro"\nmsgstr "导言"\n\nmsgid "The first paragraph."\nmsgstr "第一段。"\n\n'
        '#, fuzzy\nmsgid "The second paragraph, changed."\nmsgstr "第二段（改前的译文）。"\n',
        encoding="utf-8",
    )
    out = tmp_path / f"html-{language}"
    app = Sphinx(str(src), str(src), str(out), str(tmp_path / f"doctrees-{language}"), "html",
                 confoverrides={"language": language}, status=None, warning=None, freshenv=True)  # fmt: skip
    app.build()
    return (out / "book" / "intro.html").read_text(encoding="utf-8")


def test_a_changed_english_sentence_on_a_translated_page_is_shown_in_english_under_the_notice(tmp_path, request):
    """Built: the translated paragraph in Chinese; the changed one (fuzzy: Sphinx ignores a fuzzy translation, so
    the Chinese of the old sentence never shows) and the new one in English, each marked ``tl-pending``, under the
    notice at the top of the page; the English site unmarked."""
    from sphinx import locale

    saved = dict(locale.translators)
    request.addfinalizer(lambda: (locale.translators.clear(), locale.translators.update(saved)))
    english = _tiny_translated_site(tmp_path, "en")
    assert "tl-pending" not in english and "The second paragraph, changed." in english
    page = _tiny_translated_site(tmp_path, "zh_CN")
    assert "第一段。" in page and "The first paragraph." not in page
    assert "改前的译文" not in page  # the fuzzy entry's stale Chinese
    pending = re.findall(r'<p class="([^"]*)">([^<]*)</p>', page)
    assert [text for classes, text in pending if translated.PENDING_CLASS in classes.split()] == [
        "The second paragraph, changed.",
        "A third paragraph.",
    ], pending
    assert page.count("tl-pending-notice") == 1 and page.index("tl-pending-notice") < page.index("第一段。")


@pytest.mark.slow
def test_every_page_has_a_catalog(templates):
    pages = {p.relative_to(templates).with_suffix("").as_posix() for p in templates.rglob("*.pot")}
    assert pages == {p.relative_to(LOCALE).with_suffix("").as_posix() for p in CATALOGS}, (
        "run `.venv/bin/python scripts/i18n.py update` and commit locale/"
    )
    # a page listed as translated is a page of the book; the others are pending (test_pages_pending_translation_...)
    assert set(i18n.TRANSLATED) <= pages, sorted(set(i18n.TRANSLATED) - pages)


def test_pending_messages_are_listed_not_failed(templates):
    """A message a page has now and its catalog has no Chinese for (new, changed: fuzzy, or not yet in the catalog)
    is pending: the Chinese site shows it in English, and this lists it (a PendingTranslation warning with the count
    per page, as ``scripts/i18n.py pending`` prints it). Only a page's catalog missing altogether fails."""
    pending = _pending_in(templates)
    for pot in sorted(templates.rglob("*.pot")):
        page = pot.relative_to(templates).with_suffix("").as_posix()
        assert (LOCALE / f"{page}.po").is_file(), f"{page}: no catalog; run scripts/i18n.py update"
        with open(pot, "rb") as f:
            messages = {m.id for m in read_po(f) if m.id}
        assert pending.get(page, []) == translated.pending_messages(_catalog(page), messages), page
    on_translated = {page: len(m) for page, m in pending.items() if page in translated.TRANSLATED}
    if on_translated:
        warnings.warn(
            PendingTranslation(
                f"{sum(on_translated.values())} messages pending on translated pages (shown in English on the "
                f"Chinese site; scripts/i18n.py pending --messages names them): {on_translated}"
            ),
            stacklevel=1,
        )


def test_translations_keep_numbers_math_code_roles_and_links():
    """A page's messages are Markdown; figures.po's labels are plain text (a label may start with "+ ")."""
    problems = [
        f"{page}: {message.id[:60]!r}: {'; '.join(found)}"
        for page, message in _translated_messages()
        if (found := message_problems(message.id, message.string, markdown=page != "figures"))
    ]
    assert not problems, problems


def test_an_english_change_on_a_translated_page_is_pending_and_a_broken_translation_fails(templates):
    """Planted on a copy of a translated page's catalog, updated as ``scripts/i18n.py update`` does (sphinx-intl):
    a changed English sentence (fuzzy) and a new one (empty) are pending, and no check fails on them; a translation
    that changed a number, a formula, a code span, a role's target or a link fails."""
    from sphinx_intl.catalog import update_with_fuzzy

    catalog = _catalog("book/intro")
    with open(templates / "book/intro.pot", "rb") as f:
        template = read_po(f)
    messages = sorted(m.id for m in template if m.id)
    assert translated.pending_messages(catalog, messages) == [], "book/intro has pending messages: plant elsewhere"
    changed = next(m for m in messages if " the " in m and len(m) > 80)  # an English sentence, edited
    edited = changed.replace(" the ", " the whole ", 1)
    added = "A sentence the English page gained after its translation."
    template.delete(changed)
    template.add(edited)
    template.add(added)
    update_with_fuzzy(catalog, template)
    assert catalog[edited].fuzzy and catalog[edited].string == _catalog("book/intro")[changed].string
    now = [m for m in messages if m != changed] + [edited, added]  # the page's messages after the edit
    assert translated.pending_messages(catalog, now) == sorted([edited, added]) == translated.pending_messages(catalog)
    kept = [m for m in catalog if m.id and not translated.is_pending(m)]
    assert len(kept) == len(messages) - 1 and not [m.id for m in kept if message_problems(m.id, m.string)]
    # a broken number in one of the page's real translations fails
    numbered = next(m for m in kept if re.search(r"(?<![\w.])[1-8](?![\w.])", m.string))
    broken = re.sub(r"(?<![\w.])([1-8])(?![\w.])", lambda d: str(int(d[1]) + 1), numbered.string, count=1)
    assert [p.split(":")[0] for p in message_problems(numbered.id, broken)] == ["number"], (numbered.id, broken)
    english = "5 tokens have 15 of their 25 pairs open, see $d_k$, `tl.causal_mask`, {doc}`5 <05_masks>` and [x](a.md)"
    good = "5 个词元的 25 对中有 15 对开放，见 $d_k$、`tl.causal_mask`、{doc}`第 5 章 <05_masks>` 和 [x](a.md)"
    assert message_problems(english, good) == []
    for wrong, kind in [
        (good.replace("15 对", "16 对"), "number"),
        (good.replace("$d_k$", "$d_v$"), "math"),
        (good.replace("`tl.causal_mask`", "`tl.padding_mask`"), "code"),
        (good.replace("<05_masks>", "<04_attention>"), "role"),
        (good.replace("(a.md)", "(b.md)"), "link"),
        ("- " + good, "list"),  # like "1. 标题", read as a list item: Sphinx would keep the English text
    ]:
        assert [p.split(":")[0] for p in message_problems(english, wrong)] == [kind], wrong


def test_a_docstring_role_is_translated_as_the_myst_role():
    english = ":class:`Vocab` maps tokens to ids, see :func:`~tl.pad_batch`"
    assert message_problems(english, "{class}`Vocab` 把词元映射为 id，见 {func}`~tl.pad_batch`") == []
    as_rst = ":class:`Vocab` 把词元映射为 id，见 :func:`~tl.pad_batch`"  # plain text once Sphinx parses it as Markdown
    assert [p.split(":")[0] for p in message_problems(english, as_rst)] == ["role", "code"]


# --------------------------------------------------------------------------------------------------------------
# Terms: the glossary is the one source of each term's Chinese
# --------------------------------------------------------------------------------------------------------------
def glossary_terms(established: bool | None = None, glossary=None) -> dict[str, list[str]]:
    """English term -> its accepted Chinese renderings: the Chinese column of book/glossary.md (never the notes'
    column), as :func:`transformer_lib.site.glossary.read_glossary` reads it. ``established`` True: only the terms
    whose row the glossary page's catalog translates (its meaning); False: only the others, the terms a contributor
    added since, pending with their row. ``glossary``: the glossary page's catalog (default: the repository's)."""
    from transformer_lib.site.glossary import read_glossary

    glossary = _catalog("book/glossary") if glossary is None else glossary
    terms = {}
    for row in read_glossary():
        options = [o for o in row.chinese if re.search(r"[\u4e00-\u9fff]", o)]
        pending = translated.is_pending(glossary.get(row.meaning))
        if established is not None and established == pending:
            continue
        for name in row.english:
            if options:
                terms[name] = options
    return terms


# Terms too common in ordinary English to demand their Chinese in every sentence that uses the word
_ORDINARY = {"stack", "head", "batch", "alignment", "vocabulary", "value", "key", "query", "step", "memory"}


def test_the_glossary_gives_a_chinese_term_for_its_rows():
    terms = glossary_terms()
    assert len(terms) >= 60, len(terms)
    assert terms["token"][0] == "词元" and "填充掩码" in terms["padding mask"] and "自注意力" in terms["self-attention"]


def term_problems(terms: dict[str, list[str]]) -> list[str]:
    """Each translated message whose English uses one of ``terms`` (as a word) without one of its Chinese renderings
    (or the English word itself, as the glossary keeps LayerNorm or softmax)."""
    terms = {t: options for t, options in terms.items() if t not in _ORDINARY}
    problems = []
    for page, message in _translated_messages():
        if page == "book/glossary":
            continue
        english = re.sub(r"`[^`]*`|\$[^$]*\$|\{[\w:-]+\}|\]\([^)]*\)", " ", message.id)
        for term, options in terms.items():
            if re.search(rf"(?<![\w-]){re.escape(term)}s?(?![\w-])", english, re.IGNORECASE):
                if not any(o in message.string for o in options) and term.lower() not in message.string.lower():
                    problems.append(f"{page}: {term!r} should read {' / '.join(options)}: {message.string[:50]!r}")
    return problems


def test_each_glossary_term_is_rendered_as_the_glossary_says():
    """A translated message uses the glossary's Chinese for each term its English uses. A term whose glossary row is
    itself pending translation (a contributor added it in English) is pending on the other pages too: listed with a
    PendingTranslation warning, not failed, until the row is translated; from then on it fails like any other."""
    problems = term_problems(glossary_terms(established=True))
    assert not problems, problems
    pending = term_problems(glossary_terms(established=False))
    if pending:
        warnings.warn(
            PendingTranslation(f"{len(pending)} messages pending a new glossary term: {pending}"), stacklevel=1
        )


def test_a_new_glossary_term_is_pending_on_other_pages_until_its_row_is_translated():
    """Planted: the glossary's catalog without the Chinese of "token"'s row (as if a contributor had just added the
    row): "token" moves from the established terms to the pending ones. A rendering the translations do not use
    (planted) is caught by the same check."""
    from transformer_lib.site.glossary import read_glossary

    assert "token" in glossary_terms(established=True) and "token" not in glossary_terms(established=False)
    planted = _catalog("book/glossary")
    row = next(r for r in read_glossary() if "token" in r.english)
    planted[row.meaning].string = ""
    assert "token" in glossary_terms(established=False, glossary=planted)
    assert "token" not in glossary_terms(established=True, glossary=planted)
    assert term_problems({"token": glossary_terms()["token"]}) == []
    assert len(term_problems({"token": ["令牌"]})) > 10  # as if the glossary said otherwise than the translations do


# --------------------------------------------------------------------------------------------------------------
# Figures: one label catalog
# --------------------------------------------------------------------------------------------------------------
def test_figure_labels_come_from_the_catalog_and_leave_data_alone():
    figure = {
        "data": [{"type": "heatmap", "name": "self-attention", "x": ["key", "the"], "z": [[1, 2]]}],
        "layout": {
            "title": {"text": "layer 2, head 1"},
            "xaxis": {"title": {"text": "key"}},
            "annotations": [{"text": "N = 6 ×"}, {"text": "Add & Norm"}],
        },
    }
    zh = translate_figure(figure, "zh")
    assert zh["data"][0]["name"] == "自注意力" and zh["data"][0]["x"] == ["key", "the"]  # token strings stay
    assert zh["layout"]["title"]["text"] == "第 2 层，第 1 个头"
    assert zh["layout"]["xaxis"]["title"]["text"] == "键"
    assert [a["text"] for a in zh["layout"]["annotations"]] == ["N = 6 ×", catalog("zh")["Add & Norm"]]
    assert figure["layout"]["title"]["text"] == "layer 2, head 1"  # the original is untouched
    assert translate_figure(figure, "en") is figure
    with pytest.raises(ValueError, match="lang: expected 'en' or one of"):
        translate("attention", "fr")


def test_the_figures_catalog_is_the_one_translate_reads_and_is_complete():
    """Every label of figures.po has its Chinese (an empty or fuzzy entry would leave its label English without a
    word), and translate reads exactly that file; its header is no label."""
    assert labels.CATALOGS["zh"] == FIGURES
    with open(FIGURES, "rb") as f:
        messages = [m for m in read_po(f) if m.id]
    problems = [m.id for m in messages if not m.string or m.fuzzy]
    assert not problems, f"figures.po: untranslated or fuzzy labels: {problems}"
    assert dict(catalog("zh")) == {m.id: m.string for m in messages} and len(messages) >= 200
    assert translate("", "zh") == "" and translate("%{text}<extra></extra>", "zh") == "%{text}<extra></extra>"


# Words that stay English in a Chinese label: code names, the model's name and the notes' spelling of operations
_KEPT_WORDS = {
    "softmax",
    "linear",
    "layernorm",
    "qkv_proj",
    "d_model",
    "d_k",
    "relu",
    "sup",
    "transformer",
    "post",
    "pre",
    # the code and math that the diagrams' hover text quotes (issue 37: the hovers are translated too)
    "inf",
    "d_head",
    "d_v",
    "q_i",
    "k_i",
    "v_i",
    "o_proj",
    "weight",
    "view",
    "transpose",
    "dropout",
}


def _diagram_figures() -> list[dict]:
    """Every diagram the book draws from a live module (diagrams, flow_diagrams, attention_diagrams), as JSON."""
    import json

    import torch

    import transformer_lib as tl
    from transformer_lib.book import attention_diagrams, diagrams, flow_diagrams

    config = tl.TransformerConfig()
    mha = tl.MultiHeadAttention(64, 4)
    figures = [
        diagrams.transformer_diagram(config),
        diagrams.transformer_diagram(config, compact=True),
        diagrams.transformer_diagram(tl.Transformer(config)),
        attention_diagrams.scaled_dot_product_diagram(mha),
        attention_diagrams.projection_diagram(mha, batch=2, length=5),
        attention_diagrams.multi_head_diagram(mha),
        attention_diagrams.cross_attention_diagram(mha, tgt_len=5, src_len=7),
        attention_diagrams.notes_flowchart(tl.MultiHeadAttention(64, 1)),
        flow_diagrams.residual_diagram(tl.EncoderLayer(64, 4, 256)),
        flow_diagrams.residual_diagram(tl.EncoderLayer(64, 4, 256, norm_first=True)),
        flow_diagrams.kv_cache_diagram(tl.Transformer(config).eval(), torch.tensor([[3, 4, 5, 6]]), steps=3),
    ]
    return [json.loads(figure.to_json()) for figure in figures]


def test_every_diagram_label_has_its_chinese_and_keeps_its_numbers():
    """The label catalog covers each words-bearing label of the diagrams; what stays is math, shapes and code."""
    from transformer_lib.book.labels import figure_texts

    untranslated, changed = set(), set()
    for figure in _diagram_figures():
        for label in figure_texts(figure):
            if re.fullmatch(r"[a-z0-9_]+|[A-Za-z0-9]+_\w+", label) and label not in catalog("zh"):
                continue  # a box's internal name (plotly's "name" of a shape), never shown
            if label.startswith(labels.QUOTE):
                continue  # an English term quoted on purpose (appendix D's flowchart: the paper's over the notes')
            chinese = translate(label, "zh")
            words = {w.lower() for w in re.findall(r"[A-Za-z_]{3,}", re.sub(r"<[^>]+>", " ", chinese))}
            if words - _KEPT_WORDS:
                untranslated.add(label)
            if message_problems(label, chinese, markdown=False):
                changed.add(label)
    assert not untranslated, f"diagram labels missing from figures.po/PATTERNS: {sorted(untranslated)}"
    assert not changed, f"translated diagram labels that changed a number or formula: {sorted(changed)}"
