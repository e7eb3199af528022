"""What only the book needs, kept apart from the Transformer itself (the core never imports this package).

* ``viz``: the figures every chapter draws (imports plotly and matplotlib); ``style``: their colours, template and
  input checks; ``diagrams``: architecture drawn by code (boxes and arrows, Figure 1); ``attention_diagrams``
  (Figure 2, projections, cross-attention) and ``flow_diagrams`` (residual stream, KV cache), each from a live module.
* ``site``: the build-time plumbing that draws plotly figures on the website (myst-nb plugin, Sphinx extension).
* The measurements the chapters make: ``recurrent`` (chapter 1's RNN/LSTM baselines), ``probes`` (attention
  probes of chapters 4-6), ``diagnostics`` (chapters 5-7's experiments), ``recipes`` (the reproducible training
  runs behind the shipped checkpoints), ``pretrained`` (all-MiniLM-L6-v2 loaded into our own encoder).
* ``timing``: the one timing helper of the chapters and ``benchmarks/`` (device-synchronised, interleaved).
* ``execution``: the kernel client the build executes notebooks with (see its docstring for the stall it avoids).
* ``live_translator``: chapter 7's translation model exported to ONNX for the website's live translator.

Import the module you need (``from transformer_lib.book import viz``); this package imports nothing itself.
"""
