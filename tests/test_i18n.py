"""The Chinese edition's catalogs (locale/zh_CN/LC_MESSAGES): in step with the English pages, complete for the pages
declared translated, keeping every number, formula, code span, role and link of the English, and using the
glossary's Chinese for each term. The Chinese build itself runs with -W in scripts/build_book.sh."""

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
    for path in [*CATALOGS, FIGURES]:
        with open(path, "rb") as f:
            for message in read_po(f):
                if message.id and message.string:
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


def incomplete(page_messages: set[str], catalog) -> list[str]:
    """What keeps a page's catalog from being complete: messages of the page missing, empty or fuzzy."""
    problems = []
    for msgid in sorted(page_messages):
        message = catalog.get(msgid)
        if message is None or not message.string:
            problems.append(f"untranslated: {msgid[:70]!r}")
        elif message.fuzzy:
            problems.append(f"fuzzy (the English changed): {msgid[:70]!r}")
    return problems


# --------------------------------------------------------------------------------------------------------------
# The translation rule (transformer_lib/site/translated.py): every page has a catalog; a page listed in TRANSLATED
# has a complete one; any other page is pending translation, shown in English under a notice and listed here
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
    """A page of the book that the Chinese site shows in English, under a notice, until its catalog is complete."""


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
    return lambda page, body: (
        handlers["html-page-context"](app, page, "page.html", context := {"body": body, "content_root": "../"}, None),
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


@pytest.mark.slow
def test_every_page_has_a_catalog(templates):
    pages = {p.relative_to(templates).with_suffix("").as_posix() for p in templates.rglob("*.pot")}
    assert pages == {p.relative_to(LOCALE).with_suffix("").as_posix() for p in CATALOGS}, (
        "run `.venv/bin/python scripts/i18n.py update` and commit locale/"
    )
    # a page listed as translated is a page of the book; the others are pending (test_pages_pending_translation_...)
    assert set(i18n.TRANSLATED) <= pages, sorted(set(i18n.TRANSLATED) - pages)


@pytest.mark.parametrize("page", i18n.TRANSLATED)
def test_a_translated_page_has_every_message_translated_and_none_fuzzy(templates, page):
    with open(templates / f"{page}.pot", "rb") as f:
        messages = {m.id for m in read_po(f) if m.id}
    problems = incomplete(messages, _catalog(page))
    assert not problems, (
        f"{page}: {len(problems)} of {len(messages)} messages; run scripts/i18n.py update and translate them",
        problems[:10],
    )


def test_translations_keep_numbers_math_code_roles_and_links():
    """A page's messages are Markdown; figures.po's labels are plain text (a label may start with "+ ")."""
    problems = [
        f"{page}: {message.id[:60]!r}: {'; '.join(found)}"
        for page, message in _translated_messages()
        if (found := message_problems(message.id, message.string, markdown=page != "figures"))
    ]
    assert not problems, problems


def test_the_checks_fail_on_a_planted_fault(templates):
    """An untranslated message, a fuzzy one, and a translation that changed a number, a formula, a code span, a
    role's target or a link are each caught."""
    catalog = _catalog("book/intro")
    with open(templates / "book/intro.pot", "rb") as f:
        messages = {m.id for m in read_po(f) if m.id}
    planted = "A sentence the English page gained after its translation."
    assert incomplete(messages | {planted}, catalog) == [f"untranslated: {planted[:70]!r}"]
    first = next(iter(sorted(messages)))
    catalog[first].flags.add("fuzzy")
    assert incomplete(messages, catalog) == [f"fuzzy (the English changed): {first[:70]!r}"]
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
def glossary_terms() -> dict[str, list[str]]:
    """English term -> its accepted Chinese renderings: the Chinese column of book/glossary.md (never the notes'
    column), as :func:`transformer_lib.site.glossary.read_glossary` reads it."""
    from transformer_lib.site.glossary import read_glossary

    terms = {}
    for row in read_glossary():
        options = [o for o in row.chinese if re.search(r"[\u4e00-\u9fff]", o)]
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


def test_each_glossary_term_is_rendered_as_the_glossary_says():
    """A translated message whose English uses a glossary term (as a word) uses one of the glossary's Chinese
    renderings of it (or keeps the English word, as the glossary does for LayerNorm or softmax)."""
    terms = {t: options for t, options in glossary_terms().items() if t not in _ORDINARY}
    problems = []
    for page, message in _translated_messages():
        if page == "book/glossary":
            continue
        english = re.sub(r"`[^`]*`|\$[^$]*\$|\{[\w:-]+\}|\]\([^)]*\)", " ", message.id)
        for term, options in terms.items():
            if re.search(rf"(?<![\w-]){re.escape(term)}s?(?![\w-])", english, re.IGNORECASE):
                if not any(o in message.string for o in options) and term.lower() not in message.string.lower():
                    problems.append(f"{page}: {term!r} should read {' / '.join(options)}: {message.string[:50]!r}")
    assert not problems, problems


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
