"""Chapter 7's translation model, exported to run in the reader's browser (ONNX + onnxruntime-web).

The website cannot run Python, so this module turns the trained checkpoint into files a page can use:

* ``encoder.onnx``: source ids -> memory and every encoder self-attention map;
* ``decoder.onnx``: decoder input, memory and the source's padding mask -> logits at every position, and every
  decoder self- and cross-attention map (per layer and head);
* ``translator.json``: the two vocabularies, the special ids, the config and a few held-out sentences.

Both graphs are the library's own modules traced by ``torch.onnx`` with dynamic batch and lengths: no
re-implementation. The decoder graph has no KV cache: each step re-reads the whole prefix, which is the
``use_cache=False`` branch of ``Transformer.decode_step`` and gives the same tokens (chapter 7b, §7.7). The decoding
loops (greedy, beam search, sampling) are JavaScript in ``book/_static/translator/decoding.js``, written to mirror
:mod:`transformer_lib.decoding` step for step; :class:`OnnxTranslator` lets the Python loops drive the same
graphs. :func:`page_html` is the snippet chapter 7 displays.

Regenerate the shipped files (``tests/test_live_translator.py`` checks they match a fresh export)::

    python -m transformer_lib.book.live_translator --out book/_static/translator/model

Shape legend: ``B`` batch, ``S`` source length, ``T`` decoder input length, ``C`` d_model, ``V`` target
vocabulary, ``L`` layers, ``H`` heads.
"""

from __future__ import annotations

import argparse
import hashlib
import html
import json
import sys
from dataclasses import dataclass
from pathlib import Path

import torch
from torch import Tensor, nn

from ..kv_cache import DecodingState
from ..models import Transformer, TransformerConfig
from ..optional import require
from ..tokenization import BOS_ID, EOS_ID, PAD_ID, SPACE_MARK, UNK_ID
from . import recipes
from .labels import translate

__all__ = [
    "EncoderGraph",
    "DecoderGraph",
    "OnnxTranslator",
    "TranslatorFiles",
    "export_translator",
    "translator_metadata",
    "page_html",
    "main",
]

CHECKPOINT = Path("book/checkpoints/translation.safetensors")
COMMAND = "python -m transformer_lib.book.live_translator --out book/_static/translator/model"
FORMAT = "transformer_lib/live-translator/1"
MAX_NEW_TOKENS = 20  # as in chapter 7's calls to tl.greedy_decode and tl.beam_search
N_EXAMPLES = 20
OPSET = 20  # onnxruntime-web 1.30 runs opsets up to 23


class EncoderGraph(nn.Module):
    """What ``encoder.onnx`` computes: ``Transformer.encode`` plus the encoder's attention maps.

    Shape:
        src: (B, S) int64 -> memory (B, S, C), encoder_attention (L, B, H, S, S)
    """

    def __init__(self, model: Transformer) -> None:
        super().__init__()
        self.model = model

    def forward(self, src: Tensor) -> tuple[Tensor, Tensor]:
        m = self.model
        out = m.encoder.run(m.src_embed(src), m.src_mask(src), need_weights=True)
        if out.attentions is None:
            raise RuntimeError("Encoder.run(need_weights=True) returned no attention weights")
        return out.last_hidden_state, torch.stack(out.attentions)  # (B, S, C), (L, B, H, S, S)


class DecoderGraph(nn.Module):
    """What ``decoder.onnx`` computes: the decoder over a whole prefix (no cache), the output layer, and the
    self- and cross-attention maps of every layer. ``src_keep`` marks the real (non-padding) source positions.

    Shape:
        tgt: (B, T) int64, memory: (B, S, C), src_keep: (B, S) bool
        -> logits (B, T, V), self_attention (L, B, H, T, T), cross_attention (L, B, H, T, S)
    """

    def __init__(self, model: Transformer) -> None:
        super().__init__()
        self.model = model

    def forward(self, tgt: Tensor, memory: Tensor, src_keep: Tensor) -> tuple[Tensor, Tensor, Tensor]:
        src_mask = src_keep[:, None, None, :]  # (B, 1, 1, S), the layout of Transformer.src_mask
        h, self_w, cross_w = self.model.decode(tgt, memory, src_mask=src_mask, need_weights=True)
        return self.model.lm_head(h), torch.stack(self_w), torch.stack(cross_w)


class OnnxTranslator(nn.Module):
    """The exported graphs run by onnxruntime behind the library's decoding interface (``start_decoding`` and
    ``decode_step``), so that ``tl.greedy_decode``, ``tl.beam_search`` and ``tl.sample`` drive them unchanged.

    ``decode_step`` re-reads the whole prefix, as the browser does. Needs the ``onnxruntime`` package (the
    ``[export]`` extra).
    """

    def __init__(self, directory: str | Path) -> None:
        super().__init__()
        onnxruntime = require("onnxruntime", extra="export", purpose="OnnxTranslator (running the exported graphs)")

        directory = Path(directory)
        self.metadata = json.loads((directory / "translator.json").read_text(encoding="utf-8"))
        c = self.metadata["config"]
        self.config = TransformerConfig(
            c["src_vocab_size"],
            c["tgt_vocab_size"],
            d_model=c["d_model"],
            n_heads=c["n_heads"],
            n_encoder_layers=c["n_encoder_layers"],
            n_decoder_layers=c["n_decoder_layers"],
            d_ff=c["d_ff"],
            max_len=c["max_len"],
            pad_id=self.metadata["special_ids"]["pad"],
        )
        options = onnxruntime.SessionOptions()
        options.intra_op_num_threads = 1  # tiny graphs: one thread is as fast, and fair to a shared machine
        self.sessions = {
            name: onnxruntime.InferenceSession(
                str(directory / graph["file"]), options, providers=["CPUExecutionProvider"]
            )
            for name, graph in self.metadata["graphs"].items()
        }

    def encode(self, src: Tensor) -> tuple[Tensor, Tensor]:
        """Shape: src (B, S) -> memory (B, S, C), encoder attention (L, B, H, S, S)."""
        memory, attention = self.sessions["encoder"].run(None, {"src": src.cpu().numpy()})
        return torch.from_numpy(memory), torch.from_numpy(attention)

    def decode(self, tgt: Tensor, memory: Tensor, src_keep: Tensor) -> tuple[Tensor, Tensor, Tensor]:
        """Shape: see :class:`DecoderGraph`."""
        feeds = {"tgt": tgt.cpu().numpy(), "memory": memory.cpu().numpy(), "src_keep": src_keep.cpu().numpy()}
        logits, self_w, cross_w = (torch.from_numpy(x) for x in self.sessions["decoder"].run(None, feeds))
        return logits, self_w, cross_w

    def start_decoding(self, src: Tensor, bos_id: int, max_new_tokens: int, use_cache: bool = True) -> DecodingState:
        """Encode once; the state's ``memory_mask`` (B, 1, 1, S) follows the beams when beam search reorders."""
        memory, _ = self.encode(src)
        tokens = torch.full((src.shape[0], 1), bos_id, dtype=torch.long)
        return DecodingState(tokens, memory, (src != self.config.pad_id)[:, None, None, :].cpu())

    def decode_step(self, state: DecodingState) -> Tensor:
        """Logits for the next token. Shape: -> (B, V)."""
        if state.memory is None or state.memory_mask is None:
            raise ValueError("state: expected the encoder output and its mask (made by start_decoding)")
        keep = state.memory_mask.expand(state.tokens.shape[0], 1, 1, -1)[:, 0, 0]  # (B, S)
        return self.decode(state.tokens, state.memory, keep)[0][:, -1]  # (B, V)


@dataclass
class TranslatorFiles:
    """Paths of one export: the two graphs and the JSON metadata."""

    encoder: Path
    decoder: Path
    metadata: Path


def _export_graph(
    module: nn.Module,
    args: tuple[Tensor, ...],
    names: tuple[list[str], list[str]],
    dynamic: dict[str, dict[int, torch.export.Dim]],
    path: Path,
) -> Path:
    """Trace ``module`` with torch.export and write it as one self-contained .onnx file, without the exporter's
    debugging metadata (stack traces name local paths, so two machines would write different bytes). Needs the
    ``onnx`` and ``onnxscript`` packages (torch.onnx imports them; the ``[export]`` extra)."""
    # strict (TorchDynamo) tracing: the library's argument checks step aside while compiling (validation.py)
    exported = torch.export.export(module.eval(), args, dynamic_shapes=dynamic, strict=True)
    program = torch.onnx.export(
        exported,
        input_names=names[0],
        output_names=names[1],
        opset_version=OPSET,
        dynamo=True,
        external_data=False,
        verbose=False,
    )
    if program is None:
        raise RuntimeError(f"torch.onnx.export returned no program for {path.name}")
    proto = program.model_proto
    for node in proto.graph.node:
        node.doc_string = ""
        del node.metadata_props[:]
    del proto.graph.value_info[:]  # intermediate shapes: onnxruntime infers them again
    del proto.metadata_props[:]
    path.write_bytes(proto.SerializeToString())
    return path


def translator_metadata(model: Transformer, corpus: recipes.TranslationData, checkpoint: Path) -> dict:
    """Everything the page needs besides the graphs: vocabularies, special ids, sizes, example sentences."""
    c = model.config
    test_sources = [s for s, _ in corpus.test]
    example = "the big mouse likes this black table"  # chapter 7's running example, a held-out sentence
    examples = ([example] if example in test_sources else []) + [s for s in test_sources if s != example]
    return {
        "format": FORMAT,
        "command": COMMAND,
        "checkpoint": checkpoint.name,
        "checkpoint_sha256": hashlib.sha256(checkpoint.read_bytes()).hexdigest(),
        "config": {
            k: getattr(c, k)
            for k in (
                "d_model",
                "n_heads",
                "n_encoder_layers",
                "n_decoder_layers",
                "d_ff",
                "max_len",
                "src_vocab_size",
                "tgt_vocab_size",
            )
        },
        "special_ids": {"pad": PAD_ID, "bos": BOS_ID, "eos": EOS_ID, "unk": UNK_ID},
        "space_mark": SPACE_MARK,
        "src_tokens": corpus.src_tokenizer.vocab.tokens,
        "tgt_tokens": corpus.tgt_tokenizer.vocab.tokens,
        "decoding": {"max_new_tokens": MAX_NEW_TOKENS, "beam_size": 4, "length_penalty": 0.6},
        "examples": examples[:N_EXAMPLES],
        "graphs": {
            "encoder": {"file": "encoder.onnx", "inputs": ["src"], "outputs": ["memory", "encoder_attention"]},
            "decoder": {
                "file": "decoder.onnx",
                "inputs": ["tgt", "memory", "src_keep"],
                "outputs": ["logits", "self_attention", "cross_attention"],
            },
        },
    }


def export_translator(out_dir: str | Path, checkpoint: str | Path = CHECKPOINT) -> TranslatorFiles:
    """Export the chapter 7 checkpoint to ``out_dir`` (created if needed): two ONNX graphs and their JSON.

    The graphs accept any batch size and lengths up to the model's ``max_len``.
    """
    for package in ("onnx", "onnxscript"):  # before any work: torch.onnx's own error does not say how to install them
        require(package, extra="export", purpose="exporting the translator to ONNX")
    checkpoint, out_dir = Path(checkpoint), Path(out_dir)
    model, corpus = recipes.load_translation(checkpoint, "cpu")
    model.eval()
    out_dir.mkdir(parents=True, exist_ok=True)
    max_len = model.config.max_len
    B = torch.export.Dim("B", max=64)
    S = torch.export.Dim("S", max=max_len)
    T = torch.export.Dim("T", max=max_len)
    # example inputs with batch 2 and lengths > 1, so that no dimension is specialised to a constant
    src = corpus.src_tokenizer.encode_batch([s for s, _ in corpus.test[:2]], add_special_tokens=False)  # (2, S)
    tgt = corpus.tgt_tokenizer.encode_batch([t for _, t in corpus.test[:2]], add_special_tokens=True)[:, :-1]
    with torch.no_grad():
        memory = model.encode(src)  # (2, S, C)
    encoder = _export_graph(
        EncoderGraph(model),
        (src,),
        (["src"], ["memory", "encoder_attention"]),
        {"src": {0: B, 1: S}},
        out_dir / "encoder.onnx",
    )
    decoder = _export_graph(
        DecoderGraph(model),
        (tgt, memory, src != model.config.pad_id),
        (["tgt", "memory", "src_keep"], ["logits", "self_attention", "cross_attention"]),
        {"tgt": {0: B, 1: T}, "memory": {0: B, 1: S}, "src_keep": {0: B, 1: S}},
        out_dir / "decoder.onnx",
    )
    metadata = out_dir / "translator.json"
    metadata.write_text(
        json.dumps(translator_metadata(model, corpus, checkpoint), ensure_ascii=False, indent=1) + "\n",
        encoding="utf-8",
    )
    return TranslatorFiles(encoder, decoder, metadata)


# The placeholder's English (the figures' catalog, locale/zh_CN/LC_MESSAGES/figures.po, has its Chinese)
_PLACEHOLDER = {
    "placeholder": "The live translator runs on the book's website, in the browser, with no kernel: "
    "open this chapter there to translate your own sentences.",
    "failed": " (It could not start here: {error})",
}


def page_html(static: str = "../_static", element_id: str = "live-translator") -> str:
    """The HTML a chapter displays to embed the live translator.

    It holds a placeholder and a small loader; ``translator.js`` (and, at the first translation, the runtime
    and the model) come from the site's shared ``_static`` folder, found from the page's own ``plotly-theme.js``
    (which loads plotly.js for the page's figures) or ``plotly.min.js`` (else ``documentation_options.js``) script,
    else from ``static``. In Jupyter, where that folder is not served,
    the placeholder's text stays and says so.
    """
    eid = html.escape(element_id, quote=True)
    fallback = json.dumps(static)
    # the placeholder's words in both languages, from the label catalog: the Chinese site (<html lang="zh-CN">)
    # shows its own, as translator.js does for the rest (a notebook's output is the same in both builds)
    words = {lang: {key: translate(text, lang) for key, text in _PLACEHOLDER.items()} for lang in ("en", "zh")}
    return f"""<div id="{eid}" class="tl-live-translator">
<p class="tl-lt-placeholder"><em>{html.escape(_PLACEHOLDER["placeholder"])}</em></p>
</div>
<script type="module">
const el = document.getElementById({json.dumps(element_id)});
const words = {json.dumps(words, ensure_ascii=False)}[document.documentElement.lang === "zh-CN" ? "zh" : "en"];
el.querySelector(".tl-lt-placeholder em").textContent = words.placeholder;
// the site's _static folder, relative to this page: taken from a script the page already loads, plotly's first
// (the Chinese pages load them, and the translator, from the English site's _static: scripts/i18n.py share-static)
const sources = [...document.scripts].map(s => s.getAttribute("src") || "");
const known = sources.find(src => /(^|\\/)_static\\/plotly(-theme|\\.min)\\.js/.test(src))
  || sources.find(src => /(^|\\/)_static\\/documentation_options\\.js/.test(src));
const root = known ? known.replace(/\\/(plotly-theme|plotly\\.min|documentation_options)\\.js.*$/, "") : {fallback};
const base = new URL(root + "/", document.baseURI).href;
import(base + "translator/translator.js")
  .then(m => m.mount(el, base))
  .catch(err => {{ el.dataset.state = "error"; el.querySelector(".tl-lt-placeholder").insertAdjacentText(
    "beforeend", words.failed.replace("{{error}}", err.message)); }});
</script>"""


def main(argv: list[str] | None = None) -> None:
    """``python -m transformer_lib.book.live_translator --out DIR``: export the translator's files."""
    parser = argparse.ArgumentParser(prog="python -m transformer_lib.book.live_translator", description=main.__doc__)
    parser.add_argument("--out", type=Path, default=Path("book/_static/translator/model"))
    parser.add_argument("--checkpoint", type=Path, default=CHECKPOINT)
    args = parser.parse_args(sys.argv[1:] if argv is None else argv)
    files = export_translator(args.out, args.checkpoint)
    for path in (files.encoder, files.decoder, files.metadata):
        print(f"{path}: {path.stat().st_size / 1024:.0f} KB")


if __name__ == "__main__":
    torch.set_num_threads(1)
    main()
