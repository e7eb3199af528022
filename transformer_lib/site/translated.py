"""Which pages the Chinese site has in Chinese, and what a page says while it waits for its translation.

The translation rule, stated once (CONTRIBUTING.md and ``scripts/i18n.py`` point here): **translation follows, it
does not block.**

* every page of the book has a catalog, ``locale/zh_CN/LC_MESSAGES/<page>.po`` (``scripts/i18n.py update`` makes
  it, with every message empty, and keeps it in step with the English);
* a message is *pending* when its catalog has no Chinese for it: absent (the catalog was not updated), empty (a new
  English paragraph) or fuzzy (``sphinx-intl update`` marks a changed English paragraph fuzzy and keeps the old
  Chinese beside it, which Sphinx never shows: ``gettext_allow_fuzzy_translations`` is off). The Chinese site shows
  a pending message in English, and an English change never fails a test;
* a page not listed in :data:`TRANSLATED` is pending as a whole: the Chinese site shows it in English (a message its
  catalog already translates shows in Chinese) under a notice in Chinese at the top of the page
  (:func:`untranslated_notice` with :data:`NOTICE`, its words from the site's catalog, ``site.po``);
* a page listed in :data:`TRANSLATED` with pending messages shows each pending paragraph in English, marked
  (:data:`PENDING_CLASS`, :func:`pending_transform`), under a notice at the top of the page (:data:`PENDING_NOTICE`);
* ``tests/test_i18n.py`` lists both with a ``PendingTranslation`` warning (pages and message counts), and
  ``scripts/i18n.py pending`` prints them (``--messages``: the messages too).

What fails is a *broken* translation: every translated message (not fuzzy), on any page, keeps the numbers,
formulas, code, roles and links of its English (:func:`transformer_lib.site.messages.message_problems`) and uses the
glossary's Chinese terms (``tests/test_i18n.py``; a term whose own glossary row is still pending is listed, not
failed).
"""

from __future__ import annotations

import html
from collections.abc import Callable, Container, Iterable
from pathlib import Path
from typing import Any

__all__ = [
    "TRANSLATED",
    "NOTICE",
    "PENDING_NOTICE",
    "PENDING_CLASS",
    "is_pending",
    "pending_messages",
    "pending_pages",
    "read_catalog",
    "untranslated_notice",
    "pending_transform",
]

# The pages the Chinese site shows in Chinese: a page not listed here is pending translation as a whole; list it here
# once its catalog is complete. A listed page may still have pending messages (an English change since).
TRANSLATED: tuple[str, ...] = (
    "book/intro",
    "book/01_why_not_rnn",
    "book/02_tokens_and_embeddings",
    "book/03_positional_encoding",
    "book/04_attention",
    "book/05_masks",
    "book/06_multi_head_attention",
    "book/06b_encoder_block",
    "book/06c_the_whole_model",
    "book/07_cross_attention_and_decoding",
    "book/07b_kv_cache_loss_and_limits",
    "book/08_training",
    "book/appendix_pretrained",
    "book/appendix_questions",
    "book/appendix_performance",
    "book/appendix_notes_checked",
    "book/glossary",
    "book/bibliography",
    "book/api",
    "book/assignments/index",
    "book/assignments/01_tokenizer",
    "book/assignments/02_positional_encoding",
    "book/assignments/03_attention",
    "book/assignments/04_masks",
    "book/assignments/05_multi_head_attention",
    "book/assignments/06_decoder",
)

# The notices, in English: msgids of the site's catalog (site.po), whose translation the Chinese site shows
NOTICE = "This page is not translated yet; it is shown in English."  # a page not in TRANSLATED
PENDING_NOTICE = (  # a page of TRANSLATED with pending messages
    "Some paragraphs of this page changed in English and are not translated yet; they are shown in English."
)
PENDING_CLASS = "tl-pending"  # the class of a pending paragraph on a page of TRANSLATED (book/_static/i18n.css)
_HTML_LANG = {"zh_CN": "zh-CN"}


def read_catalog(path: str | Path) -> Any:
    """A ``.po`` file as babel reads it (a ``babel.messages.Catalog``)."""
    from babel.messages.pofile import read_po

    with open(path, "rb") as f:
        return read_po(f)


def is_pending(message: Any) -> bool:
    """Whether a catalog's entry for a message leaves it pending: absent (None), empty or fuzzy."""
    return message is None or not message.string or bool(message.fuzzy)


def pending_messages(catalog: Any, messages: Iterable[str] | None = None) -> list[str]:
    """The msgids pending in ``catalog`` (a ``babel.messages.Catalog``): of ``messages`` (the page's messages now,
    from Sphinx's gettext template; one the catalog lacks is pending too), or of the catalog's own messages.

    >>> from babel.messages import Catalog
    >>> catalog = Catalog()
    >>> _ = catalog.add("Old.", "旧。"), catalog.add("New.", ""), catalog.add("Changed.", "改前。", flags=["fuzzy"])
    >>> pending_messages(catalog), pending_messages(catalog, ["Old.", "Added."])
    (['Changed.', 'New.'], ['Added.'])
    """
    ids = sorted({m.id for m in catalog if m.id} if messages is None else set(messages))
    return [msgid for msgid in ids if is_pending(catalog.get(msgid))]


def pending_pages(locale_dir: str | Path, language: str = "zh_CN") -> list[str]:
    """The pages pending translation as a whole: each page with a catalog under ``locale_dir`` (the repository's
    ``locale/``) that :data:`TRANSLATED` does not list, by page name (``book/99_new``). The catalogs beside the
    pages' folder (Sphinx's and the theme's words, the figures' labels) are no pages."""
    folder = Path(locale_dir) / language / "LC_MESSAGES"
    pages = {p.relative_to(folder).with_suffix("").as_posix() for p in folder.rglob("*.po") if p.parent != folder}
    return sorted(pages - set(TRANSLATED))


def untranslated_notice(
    pagename: str, docnames: Container[str], language: str, words: Callable[[str], str | None], pending: int = 0
) -> str:
    """The HTML of the notice at the top of ``pagename`` in ``language``, or "" where none is due: only on a site in
    another language than English, on a page of the book (one of ``docnames``, Sphinx's ``env.found_docs``; not the
    search or index pages) that :data:`TRANSLATED` does not list (:data:`NOTICE`), or that it lists and that has
    ``pending`` paragraphs (:data:`PENDING_NOTICE`). ``words`` translates a notice (the site's catalog; a callable).

    >>> zh = {NOTICE: "尚未译成中文。", PENDING_NOTICE: "有几段尚未译成中文。"}.get
    >>> print(untranslated_notice("book/99_new", {"book/99_new"}, "zh_CN", zh).replace("<p>", "\\n<p>"))
    <div class="admonition note tl-untranslated" role="note" lang="zh-CN">
    <p>尚未译成中文。</p></div>
    >>> untranslated_notice("book/intro", {"book/intro"}, "zh_CN", zh, pending=2).count("有几段尚未译成中文。")
    1
    >>> [untranslated_notice(p, {p}, lang, zh) for p, lang in [("book/intro", "zh_CN"), ("book/99_new", "en")]]
    ['', '']
    """
    if language not in _HTML_LANG or pagename not in docnames:
        return ""
    if pagename not in TRANSLATED:
        notice, kind = NOTICE, "tl-untranslated"
    elif pending:
        notice, kind = PENDING_NOTICE, "tl-untranslated tl-pending-notice"
    else:
        return ""
    text = html.escape(words(notice) or notice)
    return f'<div class="admonition note {kind}" role="note" lang="{_HTML_LANG[language]}"><p>{text}</p></div>'


def pending_transform() -> type:
    """A Sphinx transform that marks each pending paragraph of a page in another language than English: an element
    whose message Sphinx left in English (``translated`` False after Sphinx's ``Locale``) and whose catalog has no
    Chinese for it (:func:`is_pending`: a message whose Chinese is the English itself, a name such as BLEU, is not
    pending). Each gets the class :data:`PENDING_CLASS` (styled as the notice is), and the document counts them in
    ``tl_pending`` (the page's notice, :func:`untranslated_notice`). Notebook outputs are no messages of the
    catalog and are left alone."""
    from docutils import nodes
    from sphinx.transforms import SphinxTransform
    from sphinx.util.i18n import docname_to_domain
    from sphinx.util.nodes import extract_messages

    class MarkPendingMessages(SphinxTransform):
        default_priority = 24  # after Sphinx's Locale (20), before its TranslationProgressTransform (25)

        def apply(self, **kwargs: Any) -> None:
            language = self.config.language or "en"
            if language not in _HTML_LANG or self.env.docname not in TRANSLATED:
                return
            domain = docname_to_domain(self.env.docname, self.config.gettext_compact)
            catalog = None
            for folder in self.config.locale_dirs:
                po = Path(self.env.srcdir, folder, language, "LC_MESSAGES", f"{domain}.po")
                if po.is_file():
                    catalog = read_catalog(po)
                    break
            if catalog is None:
                return
            count = 0
            for node, msgid in extract_messages(self.document):
                if node.get("translated", True) or not is_pending(catalog.get(msgid)):
                    continue
                if any("cell_output" in a.get("classes", ()) for a in _ancestors(node, nodes.Element)):
                    continue
                node["classes"].append(PENDING_CLASS)
                count += 1
            self.document["tl_pending"] = count

    return MarkPendingMessages


def _ancestors(node: Any, kind: type) -> Iterable[Any]:
    parent = node.parent
    while parent is not None:
        if isinstance(parent, kind):
            yield parent
        parent = parent.parent
