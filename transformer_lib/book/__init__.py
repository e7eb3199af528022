"""What only the book's pages need, kept apart from the Transformer itself (the core never imports this package, and
this package never imports the website's build, :mod:`transformer_lib.site`).

* Figures: ``viz`` (the chapters' one import: ``heatmaps``, ``attention_grids``, ``token_strips``, ``curves``,
  ``descriptions``), ``style`` (colours, template, input checks), ``toolbar`` (the figures' toolbar), ``labels`` and
  ``label_patterns`` (the figures' words in Chinese, from one gettext catalog).
* Diagrams drawn from a live model: ``diagrams`` (``block_diagrams``, ``transformer_diagram``: Figure 1),
  ``attention_diagrams`` (Figure 2, projections, cross-attention), ``flow_diagrams`` (residual stream, KV cache).
* Controls that work without a kernel: ``controls`` (``precomputed_controls``), ``attention_explorer`` (appendix A).
* The chapters' experiments: ``sequence_layers`` and ``recall`` (chapter 1), ``recurrent`` (RNN baselines),
  ``probes`` and ``diagnostics`` (chapters 4-7), ``translation_recipe``, ``model_families`` and ``recipes`` (the
  training runs behind the shipped checkpoints), ``ablation`` and ``ablation_results`` (chapter 8), ``pretrained``
  (all-MiniLM-L6-v2 in our own encoder), ``live_translator`` (chapter 7's model in ONNX for the website).
* ``source`` (show the library's source on a page) and ``timing`` (the one timing helper of the chapters and
  ``benchmarks/``).

Import the module you need (``from transformer_lib.book import viz``); this package imports nothing itself.
"""
