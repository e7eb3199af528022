"""The three model families built from one set of layers (paper §3; the notes' encoder-only / decoder-only /
encoder-decoder).

Shape legend: ``B`` batch, ``S`` source length, ``T`` target length, ``C`` d_model, ``V`` vocabulary size.

* :class:`Transformer` — encoder-decoder, the paper's model (translation): padding mask on the source, causal +
  padding mask on the target, cross-attention from target to source.
* :class:`EncoderOnlyModel` — BERT-style: bidirectional self-attention with a padding mask only.
* :class:`DecoderOnlyModel` — GPT-style: causal self-attention, no encoder, no cross-attention.
"""

from __future__ import annotations

from dataclasses import asdict, dataclass
from typing import Literal, get_args, overload

import torch
from torch import Tensor, nn

from .attention import AttentionImpl
from .embeddings import InputEmbedding
from .kv_cache import DecodingState, cached_step, new_caches
from .layers import Decoder, DecoderLayer, Encoder, EncoderLayer, EncoderOutput
from .masks import decoder_mask, padding_mask
from .tokenization.vocab import PAD_ID
from .validation import check_choice, check_positive, check_token_ids

__all__ = ["TransformerConfig", "Transformer", "EncoderOnlyModel", "DecoderOnlyModel"]


@dataclass(frozen=True)
class TransformerConfig:
    """Hyper-parameters of a model; the defaults are the paper's base model (Table 3, "base").

    The paper shares one 37,000-token BPE vocabulary and one embedding matrix between source, target and the
    output layer (§3.4): ``tie_embeddings`` ties the target embedding and the output layer, and
    ``share_src_embedding`` also shares the source embedding (it needs equal vocabulary sizes).
    The BERT-style options (``positional="learned"``, ``scale_embeddings=False``, ``n_token_types``,
    ``embedding_norm``, ``activation="gelu"``, ``layer_norm_eps=1e-12``) let the encoder-only model load
    pretrained BERT-family weights.
    """

    src_vocab_size: int = 37000
    tgt_vocab_size: int = 37000
    d_model: int = 512
    n_heads: int = 8
    n_encoder_layers: int = 6
    n_decoder_layers: int = 6
    d_ff: int = 2048
    dropout: float = 0.1
    max_len: int = 512
    norm_first: bool = False
    activation: str = "relu"
    pad_id: int = PAD_ID
    tie_embeddings: bool = True
    share_src_embedding: bool = False
    positional: str = "sinusoidal"
    scale_embeddings: bool = True
    n_token_types: int = 0
    embedding_norm: bool = False
    layer_norm_eps: float = 1e-5
    bias: bool = True
    attn_impl: AttentionImpl = "sdpa"

    def __post_init__(self) -> None:
        for name in ("src_vocab_size", "tgt_vocab_size", "d_model", "n_heads", "d_ff", "max_len"):
            check_positive(name, getattr(self, name))
        for name in ("n_encoder_layers", "n_decoder_layers", "n_token_types", "pad_id"):
            check_positive(name, getattr(self, name), allow_zero=True)
        if self.d_model % self.n_heads:
            raise ValueError(
                f"d_model: must be divisible by n_heads so each head gets d_model / n_heads dimensions; "
                f"got d_model={self.d_model}, n_heads={self.n_heads}"
            )
        if not 0.0 <= self.dropout < 1.0:
            raise ValueError(f"dropout: expected a probability in [0, 1), got {self.dropout}")
        check_choice("activation", self.activation, ("relu", "gelu"))
        check_choice("positional", self.positional, ("sinusoidal", "learned"))
        check_choice("attn_impl", self.attn_impl, get_args(AttentionImpl))
        if self.positional == "sinusoidal" and self.d_model % 2:
            raise ValueError(f"d_model: the sinusoidal encoding needs an even d_model, got {self.d_model}")
        if self.pad_id >= min(self.src_vocab_size, self.tgt_vocab_size):
            raise ValueError(f"pad_id: must be a valid id in both vocabularies, got {self.pad_id}")
        if self.share_src_embedding and self.src_vocab_size != self.tgt_vocab_size:
            raise ValueError(
                "share_src_embedding: sharing one embedding needs src_vocab_size == tgt_vocab_size, got "
                f"{self.src_vocab_size} and {self.tgt_vocab_size}; set share_src_embedding=False"
            )
        if self.layer_norm_eps <= 0:
            raise ValueError(f"layer_norm_eps: expected a value > 0, got {self.layer_norm_eps}")

    @property
    def d_head(self) -> int:
        return self.d_model // self.n_heads

    def to_dict(self) -> dict:
        return asdict(self)

    def layer_kwargs(self) -> dict:
        return dict(
            d_model=self.d_model,
            n_heads=self.n_heads,
            d_ff=self.d_ff,
            dropout=self.dropout,
            activation=self.activation,
            norm_first=self.norm_first,
            layer_norm_eps=self.layer_norm_eps,
            bias=self.bias,
            attn_impl=self.attn_impl,
        )

    def embedding(self, vocab_size: int) -> InputEmbedding:
        return InputEmbedding(
            vocab_size,
            self.d_model,
            self.max_len,
            positional=self.positional,
            dropout=self.dropout,
            scale=self.scale_embeddings,
            n_token_types=self.n_token_types,
            norm=self.embedding_norm,
            layer_norm_eps=self.layer_norm_eps,
        )

    def final_norm(self) -> nn.LayerNorm | None:
        # pre-LN leaves the residual stream un-normalised, so the stack ends with one LayerNorm
        return nn.LayerNorm(self.d_model, eps=self.layer_norm_eps, bias=self.bias) if self.norm_first else None


def _check_config(config: object) -> TransformerConfig:
    if not isinstance(config, TransformerConfig):
        raise TypeError(f"config: expected a TransformerConfig, got {type(config).__name__}")
    return config


def _init_weights(module: nn.Module) -> None:
    """Xavier-uniform for every projection matrix (as the Annotated Transformer and nn.Transformer do)."""
    for m in module.modules():
        if isinstance(m, nn.Linear):
            nn.init.xavier_uniform_(m.weight)


class Transformer(nn.Module):
    """The encoder-decoder Transformer of the paper.

    ``forward(src, tgt)`` takes token ids, builds the padding and causal masks itself and returns logits.
    ``tgt`` is the decoder input (``<bos>`` + target, teacher forcing); the loss compares the logits with the
    target shifted by one (target + ``<eos>``).

    Shape:
        src: (B, S) int64, tgt: (B, T) int64 -> logits (B, T, V_tgt)

    Example (a tiny model; the paper's base model is ``TransformerConfig(src_vocab_size, tgt_vocab_size)``):

    >>> config = TransformerConfig(src_vocab_size=20, tgt_vocab_size=20, d_model=16, n_heads=2,
    ...                            n_encoder_layers=1, n_decoder_layers=1, d_ff=32, max_len=16)
    >>> model = Transformer(config)
    >>> src, tgt = torch.tensor([[4, 5, 6]]), torch.tensor([[1, 7]])  # (B, S), (B, T)
    >>> tuple(model(src, tgt).shape)  # next-token logits at every target position: (B, T, V)
    (1, 2, 20)
    """

    def __init__(self, config: TransformerConfig) -> None:
        super().__init__()
        self.config = c = _check_config(config)
        if c.n_encoder_layers < 1 or c.n_decoder_layers < 1:
            raise ValueError("config: an encoder-decoder model needs n_encoder_layers >= 1 and n_decoder_layers >= 1")
        self.src_embed = c.embedding(c.src_vocab_size)
        self.tgt_embed = c.embedding(c.tgt_vocab_size)
        self.encoder = Encoder([EncoderLayer(**c.layer_kwargs()) for _ in range(c.n_encoder_layers)], c.final_norm())
        self.decoder = Decoder([DecoderLayer(**c.layer_kwargs()) for _ in range(c.n_decoder_layers)], c.final_norm())
        self.lm_head = nn.Linear(c.d_model, c.tgt_vocab_size, bias=False)  # the "word selector" before softmax
        _init_weights(self)
        if c.share_src_embedding:
            self.tgt_embed.token = self.src_embed.token
        if c.tie_embeddings:
            self.lm_head.weight = self.tgt_embed.token.weight  # §3.4: one matrix for embedding and output

    def src_mask(self, src: Tensor) -> Tensor:
        """Padding mask of the source. Shape: (B, S) -> (B, 1, 1, S)."""
        return padding_mask(src, self.config.pad_id)

    def tgt_mask(self, tgt: Tensor) -> Tensor:
        """Causal AND padding mask of the decoder input. Shape: (B, T) -> (B, 1, T, T)."""
        return decoder_mask(tgt, self.config.pad_id)

    def encode(self, src: Tensor, src_mask: Tensor | None = None) -> Tensor:
        """Embed and encode the source. Shape: (B, S) -> memory (B, S, C)."""
        check_token_ids("src", src, self.config.src_vocab_size, self.config.max_len)
        mask = self.src_mask(src) if src_mask is None else src_mask
        return self.encoder(self.src_embed(src), mask)

    @overload
    def decode(
        self,
        tgt: Tensor,
        memory: Tensor,
        src: Tensor | None = None,
        *,
        src_mask: Tensor | None = None,
        need_weights: Literal[False] = False,
    ) -> Tensor: ...
    @overload
    def decode(
        self,
        tgt: Tensor,
        memory: Tensor,
        src: Tensor | None = None,
        *,
        src_mask: Tensor | None = None,
        need_weights: Literal[True],
    ) -> tuple[Tensor, list[Tensor], list[Tensor]]: ...
    def decode(
        self,
        tgt: Tensor,
        memory: Tensor,
        src: Tensor | None = None,
        *,
        src_mask: Tensor | None = None,
        need_weights: bool = False,
    ) -> Tensor | tuple[Tensor, list[Tensor], list[Tensor]]:
        """Run the decoder over ``tgt`` attending to ``memory``; the source padding mask comes from ``src`` ids
        or is given as ``src_mask``. Returns hidden states (B, T, C), and with ``need_weights`` also the
        per-layer self- and cross-attention weights."""
        check_token_ids("tgt", tgt, self.config.tgt_vocab_size, self.config.max_len)
        if src_mask is None and src is not None:  # cross-attention sees the source's real tokens only (6.12)
            src_mask = self.src_mask(src)
        y = self.tgt_embed(tgt)  # (B, T, C)
        h, self_w, cross_w = self.decoder.run(y, memory, self.tgt_mask(tgt), src_mask, need_weights=need_weights)
        return h if self_w is None or cross_w is None else (h, self_w, cross_w)  # the weights exactly when asked

    def forward(self, src: Tensor, tgt: Tensor) -> Tensor:
        memory = self.encode(src)
        return self.lm_head(self.decode(tgt, memory, src))  # (B, T, V)

    @torch.no_grad()
    def attention_maps(self, src: Tensor, tgt: Tensor) -> dict[str, Tensor]:
        """Every attention map of one forward pass, stacked per kind: ``encoder`` (L, B, H, S, S),
        ``decoder_self`` (L, B, H, T, T) and ``cross`` (L, B, H, T, S)."""
        mask = self.src_mask(src)
        enc = self.encoder.run(self.src_embed(src), mask, need_weights=True)
        _, self_w, cross_w = self.decode(tgt, enc.last_hidden_state, src_mask=mask, need_weights=True)
        if enc.attentions is None:
            raise RuntimeError("Encoder.run(need_weights=True) returned no attention weights")
        return {
            "encoder": torch.stack(enc.attentions),
            "decoder_self": torch.stack(self_w),
            "cross": torch.stack(cross_w),
        }

    # -- incremental decoding (used by transformer_lib.decoding) ------------------------------------------------
    def start_decoding(self, src: Tensor, bos_id: int, max_new_tokens: int, use_cache: bool = True) -> DecodingState:
        """Encode ``src`` once and prepare the state whose first input is ``<bos>``."""
        mask = self.src_mask(src)
        memory = self.encode(src, mask)
        tokens = torch.full((src.shape[0], 1), bos_id, dtype=torch.long, device=src.device)
        caches = new_caches(len(self.decoder.layers), max_new_tokens + 1) if use_cache else None
        return DecodingState(tokens, memory, mask, caches)

    def decode_step(self, state: DecodingState) -> Tensor:
        """Logits for the next token after ``state.tokens``. Shape: -> (B, V)."""
        if state.caches is not None:  # feed only the tokens the caches have not seen (transformer_lib.kv_cache)
            return cached_step(state, self.tgt_embed, self.decoder, self.lm_head)
        if state.memory is None:
            raise ValueError("state: expected the encoder output in state.memory (made by Transformer.start_decoding)")
        h = self.decode(state.tokens, state.memory, src_mask=state.memory_mask)  # recompute the whole prefix
        return self.lm_head(h[:, -1])  # (B, V)


class EncoderOnlyModel(nn.Module):
    """BERT-style encoder: embeddings, an encoder stack with a padding mask only, and an output layer applied to
    every position (to the vocabulary, or to ``n_outputs`` classes, e.g. a tag per token).

    Uses ``src_vocab_size`` and ``n_encoder_layers`` of the config.

    Shape:
        ids: (B, S) int64 -> logits (B, S, n_outputs or V)

    Example:

    >>> config = TransformerConfig(src_vocab_size=20, tgt_vocab_size=20, d_model=16, n_heads=2,
    ...                            n_encoder_layers=1, n_decoder_layers=1, d_ff=32, max_len=16)
    >>> tuple(EncoderOnlyModel(config)(torch.tensor([[4, 5, 6]])).shape)  # logits per token: (B, S, V)
    (1, 3, 20)
    """

    def __init__(self, config: TransformerConfig, n_outputs: int | None = None) -> None:
        super().__init__()
        self.config = c = _check_config(config)
        check_positive("config.n_encoder_layers", c.n_encoder_layers)
        if n_outputs is not None:
            check_positive("n_outputs", n_outputs)
        self.n_outputs = n_outputs
        self.embed = c.embedding(c.src_vocab_size)
        self.encoder = Encoder([EncoderLayer(**c.layer_kwargs()) for _ in range(c.n_encoder_layers)], c.final_norm())
        self.head = nn.Linear(c.d_model, n_outputs or c.src_vocab_size, bias=n_outputs is not None)
        _init_weights(self)
        if n_outputs is None and c.tie_embeddings:
            self.head.weight = self.embed.token.weight

    def encode(
        self,
        ids: Tensor,
        token_type_ids: Tensor | None = None,
        attention_mask: Tensor | None = None,
        *,
        need_weights: bool = False,
        output_hidden_states: bool = False,
    ) -> EncoderOutput:
        """Hidden states of every position. ``attention_mask`` (B, S) bool/int, 1 = real token, overrides the
        mask built from ``pad_id``."""
        check_token_ids("ids", ids, self.config.src_vocab_size, self.config.max_len)
        keep = (
            padding_mask(ids, self.config.pad_id) if attention_mask is None else attention_mask.bool()[:, None, None, :]
        )
        return self.encoder.run(
            self.embed(ids, token_type_ids), keep, need_weights=need_weights, output_hidden_states=output_hidden_states
        )

    def forward(self, ids: Tensor, token_type_ids: Tensor | None = None) -> Tensor:
        return self.head(self.encode(ids, token_type_ids).last_hidden_state)


class DecoderOnlyModel(nn.Module):
    """GPT-style decoder: embeddings, a stack of masked self-attention blocks (no cross-attention) and an output
    layer; each position predicts the next token. Uses ``tgt_vocab_size`` and ``n_decoder_layers``.

    Shape:
        ids: (B, T) int64 -> logits (B, T, V)

    Example:

    >>> config = TransformerConfig(src_vocab_size=20, tgt_vocab_size=20, d_model=16, n_heads=2,
    ...                            n_encoder_layers=1, n_decoder_layers=1, d_ff=32, max_len=16)
    >>> tuple(DecoderOnlyModel(config)(torch.tensor([[1, 4, 5]])).shape)  # next-token logits: (B, T, V)
    (1, 3, 20)
    """

    def __init__(self, config: TransformerConfig) -> None:
        super().__init__()
        self.config = c = _check_config(config)
        check_positive("config.n_decoder_layers", c.n_decoder_layers)
        self.embed = c.embedding(c.tgt_vocab_size)
        self.decoder = Decoder(
            [DecoderLayer(**c.layer_kwargs(), cross_attention=False) for _ in range(c.n_decoder_layers)], c.final_norm()
        )
        self.lm_head = nn.Linear(c.d_model, c.tgt_vocab_size, bias=False)
        _init_weights(self)
        if c.tie_embeddings:
            self.lm_head.weight = self.embed.token.weight

    def mask(self, ids: Tensor) -> Tensor:
        """Causal AND padding mask. Shape: (B, T) -> (B, 1, T, T)."""
        return decoder_mask(ids, self.config.pad_id)

    @overload
    def forward(self, ids: Tensor, *, need_weights: Literal[False] = False) -> Tensor: ...
    @overload
    def forward(self, ids: Tensor, *, need_weights: Literal[True]) -> tuple[Tensor, list[Tensor]]: ...
    def forward(self, ids: Tensor, *, need_weights: bool = False) -> Tensor | tuple[Tensor, list[Tensor]]:
        check_token_ids("ids", ids, self.config.tgt_vocab_size, self.config.max_len)
        h, self_w, _ = self.decoder.run(self.embed(ids), None, self.mask(ids), need_weights=need_weights)
        logits: Tensor = self.lm_head(h)
        return logits if self_w is None else (logits, self_w)

    def start_decoding(self, prompt: Tensor, bos_id: int, max_new_tokens: int, use_cache: bool = True) -> DecodingState:
        """The prompt (B, P), which must contain no padding, is the first input (``bos_id`` is not added)."""
        check_token_ids("prompt", prompt, self.config.tgt_vocab_size, self.config.max_len)
        if (prompt == self.config.pad_id).any():
            raise ValueError(
                "prompt: padded prompts are not supported for decoder-only generation; "
                "generate for equal-length prompts or one prompt at a time"
            )
        caches = new_caches(len(self.decoder.layers), prompt.shape[1] + max_new_tokens) if use_cache else None
        return DecodingState(prompt.clone(), caches=caches)

    def decode_step(self, state: DecodingState) -> Tensor:
        """Logits for the next token after ``state.tokens``. Shape: -> (B, V)."""
        if state.caches is not None:
            return cached_step(state, self.embed, self.decoder, self.lm_head)
        return self(state.tokens)[:, -1]
