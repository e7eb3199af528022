// The live translator of chapter 7: the book's trained English -> Frenchy model, run in the browser.
//
// mount(el, base) draws the controls into `el`; `base` is the site's _static/ URL. Nothing heavy loads until
// the first translation: then onnxruntime-web (vendor/onnxruntime-web/, WebAssembly, one thread) and the two
// graphs exported by `python -m transformer_lib.book.live_translator` (translator/model/). The decoding loops
// are in decoding.js, which mirrors transformer_lib/decoding.py.
import * as decoding from "./decoding.js";

// plotly.py's "Blues", the book's SEQUENTIAL scale (plotly.js's own "Blues" runs the other way)
const HEATMAP_COLORS = [[0, "rgb(247,251,255)"], [0.125, "rgb(222,235,247)"], [0.25, "rgb(198,219,239)"],
  [0.375, "rgb(158,202,225)"], [0.5, "rgb(107,174,214)"], [0.625, "rgb(66,146,198)"], [0.75, "rgb(33,113,181)"],
  [0.875, "rgb(8,81,156)"], [1, "rgb(8,48,107)"]];

/** Split text into word pieces as transformer_lib.tokenization.pre_tokenize: " ?\w+| ?[^\w\s]+|\s". */
export function preTokenize(text, spaceMark) {
  const pieces = text.match(/ ?[\p{L}\p{N}_]+| ?[^\p{L}\p{N}_\s]+|\s/gu) || [];
  return pieces.map(p => p.replaceAll(" ", spaceMark));
}

/** The model: vocabularies from translator.json, two onnxruntime sessions created on first use. */
class Model {
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

  /** Source text -> {ids, pieces, unknown}; throws an Error with a readable message for unusable input. */
  tokenize(text) {
    const clean = text.trim().replace(/\s+/g, " ");
    if (!clean) throw new Error("Type an English sentence of the toy grammar first.");
    if (clean.includes(this.meta.space_mark)) throw new Error(`The sign ${this.meta.space_mark} marks spaces inside tokens; remove it from the text.`);
    const pieces = preTokenize(clean, this.meta.space_mark);
    const max = this.meta.config.max_len;
    if (pieces.length > max) throw new Error(`That is ${pieces.length} tokens; the model reads at most max_len = ${max}.`);
    const ids = pieces.map(p => this.srcIndex.get(p) ?? this.ids.unk);
    const unknown = pieces.filter(p => !this.srcIndex.has(p)).map(p => p.replaceAll(this.meta.space_mark, ""));
    return { ids, pieces, unknown };
  }

  /** Target ids -> text, dropping <pad>/<bos>/<eos> (Tokenizer.decode). */
  detokenize(ids) {
    const skip = new Set([this.ids.pad, this.ids.bos, this.ids.eos]);
    return ids.filter(i => !skip.has(i)).map(i => this.meta.tgt_tokens[i]).join("")
      .replaceAll(this.meta.space_mark, " ").trim();
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
    const B = prefixes.length, T = prefixes[0].length, S = encoded.srcIds.length, C = this.meta.config.d_model;
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

  /** Cross-attention while writing `tokens` (<bos> ... <eos>): [layer][head][row][source], one row per token written. */
  async crossAttention(encoded, tokens) {
    const out = await this.decode(encoded, [tokens.slice(0, -1)]); // what the decoder reads: all but the last
    const [L, , H, T, S] = out.cross_attention.dims, w = out.cross_attention.data; // (L, 1, H, T, S)
    return Array.from({ length: L }, (_, l) => Array.from({ length: H }, (_, h) => Array.from({ length: T },
      (_, t) => Array.from(w.subarray(((l * H + h) * T + t) * S, ((l * H + h) * T + t + 1) * S)))));
  }

  /** Translate `text` with `method` ("greedy" | "beam" | "sample") and its options. */
  async translate(text, method = "greedy", options = {}) {
    const { ids, pieces, unknown } = this.tokenize(text);
    await this.load();
    const start = performance.now();
    const encoded = await this.encode(ids);
    const step = this.stepper(encoded);
    const { bos, eos } = this.ids, n = this.meta.decoding.max_new_tokens;
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
    return { method, options, srcIds: ids, pieces, unknown, tokens, steps, cross, ms, text: this.detokenize(tokens) };
  }
}

// ----------------------------------------------------------------------------------------------- the page
const CONTROLS = `
<div class="tl-lt-row">
  <label class="tl-lt-text">English <input type="text" name="text" list="LIST" autocomplete="off" spellcheck="false"></label>
  <button type="button" name="go">Translate</button>
</div>
<datalist id="LIST"></datalist>
<div class="tl-lt-row">
  <label>method <select name="method">
    <option value="greedy">greedy</option><option value="beam">beam search</option><option value="sample">sampling</option>
  </select></label>
  <label data-for="beam">beam size <input type="range" name="beamSize" min="1" max="8" step="1" value="4"><output></output></label>
  <label data-for="beam">length penalty α <input type="range" name="lengthPenalty" min="0" max="2" step="0.1" value="0.6"><output></output></label>
  <label data-for="sample">temperature <input type="range" name="temperature" min="0.1" max="3" step="0.1" value="1"><output></output></label>
  <label data-for="sample">top-k <input type="range" name="topK" min="0" max="20" step="1" value="0"><output></output></label>
  <label data-for="sample">top-p <input type="range" name="topP" min="0.05" max="1" step="0.05" value="1"><output></output></label>
  <label data-for="sample">seed <input type="number" name="seed" min="0" max="99999" step="1" value="0"></label>
</div>
<p class="tl-lt-message" role="status"></p>
<p class="tl-lt-output" aria-live="polite"></p>
<p class="tl-lt-timing"></p>
<div class="tl-lt-row">
  <label>cross-attention of <select name="layer" aria-label="layer"></select></label>
  <select name="head" aria-label="head"></select>
</div>
<div class="tl-lt-heatmap"></div>
<details class="tl-lt-steps-box" open><summary>Step by step: the top candidates at each step</summary>
  <div class="tl-lt-steps"></div></details>`;

function escapeHtml(s) {
  return String(s).replace(/[&<>"']/g, c => ({ "&": "&amp;", "<": "&lt;", ">": "&gt;", '"': "&quot;", "'": "&#39;" })[c]);
}

async function ensurePlotly(base) {
  if (window.Plotly) return window.Plotly;
  await new Promise((resolve, reject) => {
    const s = Object.assign(document.createElement("script"), { src: base + "plotly.min.js", onload: resolve, onerror: reject });
    document.head.append(s);
  });
  return window.Plotly;
}

/** Draw the translator into `el`; returns the controller (also kept as el.translator for tests). */
export async function mount(el, base) {
  const css = Object.assign(document.createElement("link"), { rel: "stylesheet", href: base + "translator/translator.css" });
  document.head.append(css);
  const meta = await (await fetch(base + "translator/model/translator.json")).json();
  const model = new Model(base, meta);
  const listId = el.id + "-examples";
  el.innerHTML = CONTROLS.replaceAll("LIST", listId);
  el.dataset.state = "idle";
  el.dataset.runs = "0";
  const $ = sel => el.querySelector(sel);
  const control = name => el.querySelector(`[name="${name}"]`);
  $(`#${CSS.escape(listId)}`).innerHTML = meta.examples.map(s => `<option value="${escapeHtml(s)}">`).join("");
  control("text").value = meta.examples[0];
  control("beamSize").value = meta.decoding.beam_size;
  control("lengthPenalty").value = meta.decoding.length_penalty;
  const { n_decoder_layers: L, n_heads: H } = meta.config;
  control("layer").innerHTML = Array.from({ length: L }, (_, l) => `<option value="${l}">layer ${l + 1}</option>`).join("");
  control("layer").value = String(L - 1);
  control("head").innerHTML = `<option value="mean">mean of heads</option>` +
    Array.from({ length: H }, (_, h) => `<option value="${h}">head ${h + 1}</option>`).join("");
  $(".tl-lt-timing").textContent = "The first translation loads the runtime and the model (once); after that everything runs here, offline.";

  let last = null;
  const options = () => {
    const num = name => Number(control(name).value);
    const method = control("method").value;
    if (method === "beam") return { method, options: { beamSize: num("beamSize"), lengthPenalty: num("lengthPenalty") } };
    if (method === "sample") {
      return { method, options: { temperature: num("temperature"), topK: num("topK") || null,
                                  topP: num("topP") < 1 ? num("topP") : null, seed: num("seed") } };
    }
    return { method, options: {} };
  };
  const syncControls = () => {
    const method = control("method").value;
    el.querySelectorAll("label[data-for]").forEach(label => {
      label.hidden = label.dataset.for !== method;
      const out = label.querySelector("output");
      if (out) out.textContent = label.querySelector("input").value;
    });
  };

  let drawing = Promise.resolve();
  function drawHeatmap() { // one draw at a time, each reading the pickers when it starts
    drawing = drawing.then(drawHeatmapNow, drawHeatmapNow);
    return drawing;
  }

  async function drawHeatmapNow() {
    if (!last) return;
    const Plotly = await ensurePlotly(base);
    const layer = Number(control("layer").value), head = control("head").value;
    const maps = last.cross[layer];
    const z = head === "mean"
      ? maps[0].map((row, t) => row.map((_, s) => maps.reduce((acc, m) => acc + m[t][s], 0) / maps.length))
      : maps[Number(head)];
    const sm = meta.space_mark;
    const src = last.pieces.map(p => p.replaceAll(sm, ""));
    const written = last.tokens.slice(1).map(id => meta.tgt_tokens[id].replaceAll(sm, ""));
    const title = `Cross-attention, layer ${layer + 1}, ${head === "mean" ? "mean of heads" : "head " + (Number(head) + 1)}`;
    // numeric axes with tick labels: a word that occurs twice keeps two columns (categories would merge)
    const customdata = z.map((row, t) => row.map((_, s) => [written[t], src[s]]));
    const data = [{ type: "heatmap", z, customdata, zmin: 0, zmax: 1, colorscale: HEATMAP_COLORS,
                    hovertemplate: "writes %{customdata[0]}<br>reads %{customdata[1]}<br>weight %{z:.3f}<extra></extra>" }];
    const axis = labels => ({ tickmode: "array", tickvals: labels.map((_, i) => i), ticktext: labels });
    const layout = { title: { text: title, font: { size: 14 } }, height: 130 + 24 * z.length,
                     margin: { l: 80, r: 10, t: 40, b: 90 },
                     xaxis: { ...axis(src), title: { text: "source (English)" }, tickangle: -45 },
                     yaxis: { ...axis(written), title: { text: "written" }, autorange: "reversed" } };
    await Plotly.react($(".tl-lt-heatmap"), data, layout, { responsive: true, displaylogo: false });
  }

  function drawSteps() {
    const tok = id => escapeHtml(meta.tgt_tokens[id].replaceAll(meta.space_mark, "·"));
    const rows = last.steps.map((s, t) => {
      if (last.method === "beam") {
        const cells = s.candidates.map(c => `<span class="tl-lt-${c.fate}">…${tok(c.prefix[c.prefix.length - 1])} + <b>${tok(c.tok)}</b> ` +
          `${c.score.toFixed(2)}${c.fate === "finished" ? " ✔" : ""}</span>`).join(" ");
        return `<tr><td>${t + 1}</td><td>${cells}</td></tr>`;
      }
      const cells = s.candidates.map(c => `<span class="${c.id === s.chosen ? "tl-lt-chosen" : ""}">${tok(c.id)} ` +
        `<span class="tl-lt-bar" style="width:${(60 * c.p).toFixed(0)}px"></span>${c.p.toFixed(3)}</span>`).join(" ");
      return `<tr><td>${t + 1}</td><td>${tok(s.prefix[s.prefix.length - 1])}</td><td><b>${tok(s.chosen)}</b></td><td>${cells}</td></tr>`;
    });
    const head = last.method === "beam"
      ? "<tr><th>step</th><th>best 2k extensions (beam's last token + new token, log-probability; ✔ finished)</th></tr>"
      : "<tr><th>step</th><th>reads</th><th>writes</th><th>top candidates (probability)</th></tr>";
    $(".tl-lt-steps").innerHTML = `<table>${head}${rows.join("")}</table>`;
  }

  let pending = null;
  async function run() {
    syncControls();
    const { method, options: opts } = options();
    const text = control("text").value;
    el.dataset.state = "busy";
    try {
      if (!model.encoder) $(".tl-lt-timing").textContent = "Loading the runtime and the model …";
      const t0 = performance.now();
      const firstLoad = !model.encoder;
      const result = await model.translate(text, method, opts);
      last = result;
      el.lastResult = result;
      $(".tl-lt-output").innerHTML = `<span class="tl-lt-label">Frenchy</span> <span class="tl-lt-sentence">${escapeHtml(result.text)}</span>`;
      $(".tl-lt-message").textContent = result.unknown.length
        ? `Not in the model's vocabulary: ${result.unknown.map(w => `“${w}”`).join(", ")}. It reads each as <unk>, so the ` +
          `translation cannot be right there. The model knows ${meta.src_tokens.length - 4} English tokens, lower case; try one of the examples.`
        : "";
      $(".tl-lt-message").classList.toggle("tl-lt-warning", result.unknown.length > 0);
      const decoderRuns = result.steps.length + 1;
      $(".tl-lt-timing").textContent = `Translated in ${result.ms.toFixed(1)} ms in this browser (encoder once, decoder ${decoderRuns} times)` +
        (firstLoad ? `; loading the runtime and model took ${(performance.now() - t0 - result.ms).toFixed(0)} ms.` : ".");
      await drawHeatmap();
      drawSteps();
      el.dataset.state = "done";
    } catch (err) {
      last = null;
      el.lastResult = null;
      $(".tl-lt-output").textContent = "";
      $(".tl-lt-message").textContent = err.message;
      $(".tl-lt-message").classList.add("tl-lt-warning");
      el.dataset.state = "error";
    }
    el.dataset.runs = String(Number(el.dataset.runs) + 1);
  }
  const schedule = () => { // re-run after the controls settle; one run at a time
    clearTimeout(pending);
    pending = setTimeout(() => { el.running = (el.running || Promise.resolve()).then(run); }, 120);
  };

  control("go").addEventListener("click", schedule);
  control("text").addEventListener("keydown", e => { if (e.key === "Enter") schedule(); });
  for (const name of ["method", "beamSize", "lengthPenalty", "temperature", "topK", "topP", "seed"]) {
    control(name).addEventListener("input", () => { syncControls(); if (model.encoder) schedule(); });
  }
  for (const name of ["layer", "head"]) control(name).addEventListener("change", drawHeatmap);
  syncControls();
  el.translator = { model, translate: (text, method, opts) => model.translate(text, method, opts), run };
  return el.translator;
}
