"""Which pages the Chinese site has in Chinese, and what a page says while it waits for its translation.

The translation rule, stated once (CONTRIBUTING.md and ``scripts/i18n.py`` point here):

* every page of the book has a catalog, ``locale/zh_CN/LC_MESSAGES/<page>.po`` (``scripts/i18n.py update`` makes
  it, with every message empty);
* a new page may land in English first: until it is listed in :data:`TRANSLATED` it is *pending translation*. The
  Chinese site shows it in English (a message its catalog already translates shows in Chinese) under a notice in
  Chinese at the top of the page (:func:`untranslated_notice`, its words from the site's catalog, ``site.po``), and
  ``tests/test_i18n.py`` lists it as pending with a warning (``scripts/i18n.py pending`` prints the same list);
* a page listed in :data:`TRANSLATED` has a complete catalog: every message translated, none fuzzy. The catalog
  test fails otherwise, and a changed English sentence on such a page needs its translation in the same change.

Every translated message, on any page, keeps the numbers, formulas, code, roles and links of its English and
uses the glossary's Chinese terms (``tests/test_i18n.py``).
"""

from __future__ import annotations

import html
from collections.abc import Container
from pathlib import Path

__all__ = ["TRANSLATED", "NOTICE", "pending_pages", "untranslated_notice"]

# The pages whose Chinese catalog is complete (every message translated, none fuzzy): tests/test_i18n.py holds them
# to it. A page not listed here is pending translation; list it here once its catalog is complete.
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

# The notice at the top of a page pending translation, in English: a msgid of the site's catalog (site.po), whose
# translation the Chinese site shows (English needs none)
NOTICE = "This page is not translated yet; it is shown in English."
_HTML_LANG = {"zh_CN": "zh-CN"}


def pending_pages(locale_dir: str | Path, language: str = "zh_CN") -> list[str]:
    """The pages pending translation: each page with a catalog under ``locale_dir`` (the repository's ``locale/``)
    that :data:`TRANSLATED` does not list, by page name (``book/99_new``). The catalogs beside the pages' folder
    (Sphinx's and the theme's words, the figures' labels) are no pages."""
    folder = Path(locale_dir) / language / "LC_MESSAGES"
    pages = {p.relative_to(folder).with_suffix("").as_posix() for p in folder.rglob("*.po") if p.parent != folder}
    return sorted(pages - set(TRANSLATED))


def untranslated_notice(pagename: str, docnames: Container[str], language: str, text: str) -> str:
    """The HTML of the notice at the top of ``pagename`` in ``language``, saying ``text`` (:data:`NOTICE` as the
    site's catalog translates it), or "" where none is due: only on a site in another language than English, on a
    page of the book (one of ``docnames``, Sphinx's ``env.found_docs``; not the search or index pages) that
    :data:`TRANSLATED` does not list.

    >>> print(untranslated_notice("book/99_new", {"book/99_new"}, "zh_CN", "尚未译成中文。").replace("<p>", "\\n<p>"))
    <div class="admonition note tl-untranslated" role="note" lang="zh-CN">
    <p>尚未译成中文。</p></div>
    >>> [untranslated_notice(p, {p}, lang, NOTICE) for p, lang in [("book/intro", "zh_CN"), ("book/99_new", "en")]]
    ['', '']
    """
    if language not in _HTML_LANG or pagename in TRANSLATED or pagename not in docnames:
        return ""
    return (
        f'<div class="admonition note tl-untranslated" role="note" lang="{_HTML_LANG[language]}">'
        f"<p>{html.escape(text)}</p></div>"
    )
