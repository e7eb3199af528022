"""What only the website's build needs, kept apart from the pages' figures and experiments (:mod:`transformer_lib.book`,
which never imports this package; the site imports the book's figure labels to draw them in either language).

* ``figures``: plotly's MIME type drawn on the website (a myst-nb plugin) with one shared ``plotly.min.js`` (a
  Sphinx extension), each figure labelled in the page's language and named for assistive technology.
* ``pages``: what the build does to every page's HTML (scripts once, a plain bibliography, names and focus that
  axe checks with ``reader.js`` blocked).
* ``i18n``: the two editions from one source (Sphinx's gettext catalogs, the language switch, the theme's words,
  the Chinese search dictionary); ``translated`` (which pages are translated, the rule for the others);
  ``messages`` (what a translated message must keep); ``citations`` (作者 等（年份） on the Chinese site);
  ``glossary`` (book/glossary.md as data: the terms' Chinese, for the search dictionary and the term tests);
  ``templates`` (theme components).
* ``execution``: the kernel client that executes the notebooks for the build and the tests.

Sphinx loads ``figures``, ``pages`` and ``i18n`` as extensions (``_config.yml``); this package imports nothing itself.
"""
