"""transformer_lib: the Transformer of "Attention Is All You Need", written to be read and run.

Every chapter of the book imports it as ``import transformer_lib as tl``. Four parts:

* The Transformer itself (this package's top level), bottom up: ``validation`` (argument checks), ``device``,
  ``tokenization`` (text -> ids), ``embeddings`` (ids -> vectors, positions), ``masks``, ``attention`` (the
  kernel and multi-head attention), ``kv_cache`` (what decoding keeps between steps), ``layers``
  (encoder/decoder blocks and stacks), ``interop`` (PyTorch's modules converted into ours), ``models`` (the
  three families), ``decoding`` (greedy, beam, sampling), ``training``, ``data`` (offline toy tasks),
  ``checkpoints``, ``distributed`` (data-parallel training).
* ``transformer_lib.book``: what only the book's pages need (figures, diagrams, the chapters' measurements).
* ``transformer_lib.site``: what only the website's build needs (the Sphinx extensions, the two languages, the
  notebooks' execution).
* ``transformer_lib.classroom``: what only a class needs (checks, assignments, the grader).

``import transformer_lib`` loads the core alone: no plotly, matplotlib or Jupyter module.
"""

from . import (
    attention,
    bleu,
    checkpoints,
    data,
    decoding,
    device,
    embeddings,
    interop,
    kv_cache,
    layers,
    masks,
    models,
    tokenization,
    training,
    validation,
)
from .attention import MultiHeadAttention, scaled_dot_product_attention
from .checkpoints import CheckpointError, average_state_dicts, load_checkpoint, save_checkpoint
from .decoding import Hypothesis, beam_search, greedy_decode, sample, sampling_distribution
from .device import get_device, seed_everything
from .embeddings import (
    InputEmbedding,
    LearnedPositionalEmbedding,
    SinusoidalPositionalEncoding,
    TokenEmbedding,
    sinusoidal_encoding,
)
from .interop import from_torch
from .kv_cache import DecodingState, KVCache, LayerCache
from .layers import Decoder, DecoderLayer, Encoder, EncoderLayer, EncoderOutput, FeedForward, Residual
from .masks import causal_mask, combine_masks, decoder_mask, padding_mask
from .models import DecoderOnlyModel, EncoderOnlyModel, Transformer, TransformerConfig
from .tokenization import BPETokenizer, CharTokenizer, Vocab, WordTokenizer, pad_batch
from .training import History, evaluate, noam_lr, noam_schedule, sequence_loss, token_accuracy, train

__version__ = "0.1.0"

# The public API, grouped as the docstring above groups it (the API reference page follows this order).
__all__ = [
    # modules
    "validation",
    "device",
    "tokenization",
    "embeddings",
    "masks",
    "attention",
    "kv_cache",
    "layers",
    "interop",
    "models",
    "decoding",
    "training",
    "bleu",
    "data",
    "checkpoints",
    # device
    "get_device",
    "seed_everything",
    # tokenization
    "Vocab",
    "CharTokenizer",
    "WordTokenizer",
    "BPETokenizer",
    "pad_batch",
    # embeddings
    "TokenEmbedding",
    "InputEmbedding",
    "sinusoidal_encoding",
    "SinusoidalPositionalEncoding",
    "LearnedPositionalEmbedding",
    # masks
    "padding_mask",
    "causal_mask",
    "decoder_mask",
    "combine_masks",
    # attention
    "scaled_dot_product_attention",
    "MultiHeadAttention",
    # kv_cache
    "KVCache",
    "LayerCache",
    "DecodingState",
    # layers
    "FeedForward",
    "Residual",
    "EncoderLayer",
    "DecoderLayer",
    "Encoder",
    "EncoderOutput",
    "Decoder",
    # interop
    "from_torch",
    # models
    "TransformerConfig",
    "Transformer",
    "EncoderOnlyModel",
    "DecoderOnlyModel",
    # decoding
    "greedy_decode",
    "beam_search",
    "Hypothesis",
    "sample",
    "sampling_distribution",
    # training
    "noam_lr",
    "noam_schedule",
    "sequence_loss",
    "token_accuracy",
    "train",
    "evaluate",
    "History",
    # checkpoints
    "save_checkpoint",
    "load_checkpoint",
    "average_state_dicts",
    "CheckpointError",
    "__version__",
]
