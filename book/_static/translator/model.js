// The model side of the live translator: tokenizer, onnxruntime-web sessions and one `translate` call.
//
// The two graphs come from `python -m transformer_lib.book.live_translator` (model/encoder.onnx,
// model/decoder.onnx, model/translator.json); onnxruntime-web (../vendor/onnxruntime-web/, WebAssembly, one
// thread) is imported only when the first translation needs it. The decoding loops are in decoding.js.
import * as decoding from "./decoding.js";

/**
 * The toy task's form of a sentence, as transformer_lib.data.normalize_sentence: lower case, every run of
 * characters that are neither word characters nor white space turned into a space, white space collapsed to one
 * space and trimmed.
 */
export function normalizeSentence(text) {
  return text.toLowerCase().replace(/[^\p{L}\p{N}_\s]+/gu, " ").split(/\s+/u).filter(Boolean).join(" ");
}

/** Split text into word pieces as transformer_lib.tokenization.pre_tokenize: " ?\w+| ?[^\w\s]+|\s". */
export function preTokenize(text, spaceMark) {
  const pieces = text.match(/ ?[\p{L}\p{N}_]+| ?[^\p{L}\p{N}_\s]+|\s/gu) || [];
  return pieces.map(p => p.replaceAll(" ", spaceMark));
}

/** The model: vocabularies from translator.json, two onnxruntime sessions created on first use. */
/**
 * An Error for input the model cannot read: its message in English, plus ``reason`` and ``details`` so that the page
 * can say the same in the site's language (translator.js).
 */
export function inputError(reason, message, details) {
  return Object.assign(new Error(message), { reason, details });
}

export class Model {
  constructor(base, meta) {
    this.base = base;
    this.meta = meta;
    this.srcIndex = new Map(meta.src_tokens.map((t, i) => [t, i]));
    this.ids = meta.special_ids;
  }

  /** Load the runtime and both graphs (once). */
  async load() {
    if (!this.loading) this.loading = this._load();
    return this.loading;
  }

  async _load() {
    const ortDir = this.base + "vendor/onnxruntime-web/";
    const ort = await import(ortDir + "ort.wasm.min.mjs");
    ort.env.wasm.wasmPaths = ortDir; // the .wasm next to it, never a CDN
    ort.env.wasm.numThreads = 1; // the site is not cross-origin isolated, so no SharedArrayBuffer threads
    ort.env.wasm.proxy = false;
    ort.env.logLevel = "error";
    const options = { executionProviders: ["wasm"], graphOptimizationLevel: "all" };
    const modelDir = this.base + "translator/model/";
    this.ort = ort;
    this.encoder = await ort.InferenceSession.create(modelDir + this.meta.graphs.encoder.file, options);
    this.decoder = await ort.InferenceSession.create(modelDir + this.meta.graphs.decoder.file, options);
  }

  /**
   * Source text -> {normalized, ids, pieces, unknown}: the text in the task's form (normalizeSentence), then its
   * word pieces; throws an Error with a readable message for unusable input.
   */
  tokenize(text) {
    const clean = normalizeSentence(text);
    if (!clean) throw inputError("empty", "Type an English sentence of the toy grammar first.", {});
    const pieces = preTokenize(clean, this.meta.space_mark);
    const max = this.meta.config.max_len;
    if (pieces.length > max) {
      throw inputError("tooLong", `That is ${pieces.length} tokens; the model reads at most max_len = ${max}.`,
        { tokens: pieces.length, max });
    }
    const ids = pieces.map(p => this.srcIndex.get(p) ?? this.ids.unk);
    const unknown = pieces.filter(p => !this.srcIndex.has(p)).map(p => p.replaceAll(this.meta.space_mark, ""));
    return { normalized: clean, ids, pieces, unknown };
  }

  /** Target ids -> text, dropping <pad>/<bos>/<eos> (Tokenizer.decode). */
  detokenize(ids) {
    const skip = new Set([this.ids.pad, this.ids.bos, this.ids.eos]);
    return ids.filter(i => !skip.has(i)).map(i => this.meta.tgt_tokens[i]).join("")
      .replaceAll(this.meta.space_mark, " ");
  }

  int64(values, dims) {
    return new this.ort.Tensor("int64", BigInt64Array.from(values, v => BigInt(v)), dims);
  }

  /** Run the encoder once: the memory the decoder reads at every step. */
  async encode(srcIds) {
    const out = await this.encoder.run({ src: this.int64(srcIds, [1, srcIds.length]) });
    return { srcIds, memory: out.memory.data };
  }

  /** The decoder over whole prefixes (B of them, one length T), tiled memory; returns the raw outputs. */
  async decode(encoded, prefixes) {
    const B = prefixes.length, T = prefixes[0].length;
    const S = encoded.srcIds.length, C = this.meta.config.d_model;
    const memory = new Float32Array(B * S * C);
    for (let b = 0; b < B; b++) memory.set(encoded.memory, b * S * C); // every beam reads the same source
    return this.decoder.run({
      tgt: this.int64(prefixes.flat(), [B, T]),
      memory: new this.ort.Tensor("float32", memory, [B, S, C]),
      src_keep: new this.ort.Tensor("bool", new Uint8Array(B * S).fill(1), [B, S]), // one sentence: no padding
    });
  }

  /** A `step` function for decoding.js: the logits at the last position of each prefix (decode_step). */
  stepper(encoded) {
    const V = this.meta.config.tgt_vocab_size;
    return async prefixes => {
      const out = await this.decode(encoded, prefixes);
      const T = prefixes[0].length, logits = out.logits.data; // (B, T, V)
      return prefixes.map((_, b) => logits.subarray((b * T + T - 1) * V, (b * T + T) * V));
    };
  }

  /**
   * Cross-attention while writing `tokens` (<bos> ... <eos>), as nested arrays [layer][head][row][source]:
   * row t belongs to the decoder position that reads tokens[t] and writes tokens[t + 1].
   */
  async crossAttention(encoded, tokens) {
    const out = await this.decode(encoded, [tokens.slice(0, -1)]); // what the decoder reads: all but the last
    const [L, , H, T, S] = out.cross_attention.dims; // (L, 1, H, T, S)
    const w = out.cross_attention.data;
    const row = (l, h, t) => Array.from(w.subarray(((l * H + h) * T + t) * S, ((l * H + h) * T + t + 1) * S));
    return Array.from({ length: L }, (_, l) =>
      Array.from({ length: H }, (_, h) => Array.from({ length: T }, (_, t) => row(l, h, t))));
  }

  /**
   * Translate `text` with `method` ("greedy" | "beam" | "sample") and its options (those of decoding.js, and
   * `maxNewTokens`, by default the chapter's 20).
   */
  async translate(text, method = "greedy", options = {}) {
    const { normalized, ids, pieces, unknown } = this.tokenize(text);
    await this.load();
    const start = performance.now();
    const encoded = await this.encode(ids);
    const step = this.stepper(encoded);
    const { bos, eos } = this.ids, n = options.maxNewTokens ?? this.meta.decoding.max_new_tokens;
    let tokens, steps;
    if (method === "beam") {
      const res = await decoding.beamSearch(step, n, bos, eos, options);
      ({ tokens } = res.hypotheses[0]);
      steps = res.steps;
    } else if (method === "sample") {
      ({ tokens, steps } = await decoding.sample(step, n, bos, eos, options));
    } else {
      ({ tokens, steps } = await decoding.greedyDecode(step, n, bos, eos));
    }
    const cross = await this.crossAttention(encoded, tokens);
    const ms = performance.now() - start;
    return { method, options, normalized, srcIds: ids, pieces, unknown, tokens, steps, cross, ms,
             text: this.detokenize(tokens) };
  }
}
