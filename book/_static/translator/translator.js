// The live translator of chapter 7: the book's trained English -> Frenchy model, run in the browser.
//
// mount(el, base) draws the page into `el`; `base` is the site's _static/ URL. Nothing heavy loads until the
// first translation (model.js). The decoding loops are in decoding.js, which mirrors
// transformer_lib/decoding.py; this file is only the page: controls, output, heatmap, step-by-step view.
import { Model } from "./model.js";

// plotly.py's "Blues", the book's SEQUENTIAL scale (plotly.js's own "Blues" runs the other way)
const HEATMAP_COLORS = [
  [0, "rgb(247,251,255)"], [0.125, "rgb(222,235,247)"], [0.25, "rgb(198,219,239)"], [0.375, "rgb(158,202,225)"],
  [0.5, "rgb(107,174,214)"], [0.625, "rgb(66,146,198)"], [0.75, "rgb(33,113,181)"], [0.875, "rgb(8,81,156)"],
  [1, "rgb(8,48,107)"]];
const RERUN_DELAY_MS = 120; // a moved slider re-translates once it has been still this long

// The page's words in the site's language (the Chinese site sets <html lang="zh-CN">; transformer_lib/site/i18n.py)
const WORDS = {
  en: {
    english: "English", translate: "Translate", method: "method", greedy: "greedy", beam: "beam search",
    sample: "sampling", beamSize: "beam size", lengthPenalty: "length penalty α", temperature: "temperature",
    seed: "seed", crossOf: "cross-attention of", layer: "layer", head: "head", meanOfHeads: "mean of heads",
    stepsSummary: "Step by step: the top candidates at each step",
    firstLoad: "The first translation loads the runtime and the model (once); after that everything runs here, offline.",
    loading: "Loading the runtime and the model …",
    readAs: text => `Read as “${text}” (the toy grammar's form: lower case, no punctuation, single spaces). `,
    unknown: (n, words, known) => `Not in the model's vocabulary: ${words}. The model reads ${n === 1 ? "it" : "them"} ` +
      `as <unk>, so ${n === 1 ? "that part" : "those parts"} cannot be translated right. It knows ${known} English ` +
      "words: try one of the examples.",
    timing: (ms, calls) => `Translated in ${ms} ms in this browser (encoder once, decoder ${calls} times)`,
    loadTook: ms => `; loading the runtime and the model took ${ms} ms.`,
    heatmapTitle: (layer, which) => `Cross-attention, layer ${layer}, ${which}`, headN: n => `head ${n}`,
    source: "source (English)", written: "written",
    hover: "writes %{customdata[0]}<br>reads %{customdata[1]}<br>weight %{z:.3f}<extra></extra>",
    step: "step", reads: "reads", writes: "writes", top: "top candidates (probability)",
    beamHeader: "the best 2k extensions: a beam's last token + a new token, log-probability (✔ ended with &lt;eos&gt;)",
    failed: message => message,
  },
  zh: {
    english: "英语", translate: "翻译", method: "方法", greedy: "贪心搜索", beam: "束搜索", sample: "采样",
    beamSize: "束宽", lengthPenalty: "长度惩罚 α", temperature: "温度", seed: "随机种子",
    crossOf: "交叉注意力：", layer: "层", head: "头", meanOfHeads: "各头平均",
    stepsSummary: "逐步查看：每一步的最佳候选",
    firstLoad: "第一次翻译时加载运行时和模型（只加载一次）；之后一切都在这里离线运行。",
    loading: "正在加载运行时和模型……",
    readAs: text => `按“${text}”读取（玩具语法的形式：小写、无标点、单个空格）。`,
    unknown: (n, words, known) => `不在模型词表中：${words}。模型把${n === 1 ? "它" : "它们"}读作 <unk>，` +
      `所以这${n === 1 ? "一" : "些"}部分无法正确翻译。模型认识 ${known} 个英语单词：试试其中一个例句。`,
    timing: (ms, calls) => `在这个浏览器中翻译用时 ${ms} ms（编码器 1 次，解码器 ${calls} 次）`,
    loadTook: ms => `；加载运行时和模型用时 ${ms} ms。`,
    heatmapTitle: (layer, which) => `交叉注意力，第 ${layer} 层，${which}`, headN: n => `头 ${n}`,
    source: "源句（英语）", written: "已写出",
    hover: "写出 %{customdata[0]}<br>读取 %{customdata[1]}<br>权重 %{z:.3f}<extra></extra>",
    step: "步", reads: "读取", writes: "写出", top: "最佳候选（概率）",
    beamHeader: "最好的 2k 个扩展：某条束的最后一个词元 + 一个新词元，对数概率（✔ 以 &lt;eos&gt; 结束）",
    empty: () => "请先输入一句符合玩具语法的英语句子。",
    tooLong: d => `这句话有 ${d.tokens} 个词元；模型最多读取 max_len = ${d.max} 个。`,
    failed: message => `翻译器无法运行：${message}`,
  },
};
const W = document.documentElement.lang === "zh-CN" ? WORDS.zh : WORDS.en;

const CONTROLS = `
<div class="tl-lt-row">
  <label class="tl-lt-text">${W.english}
    <input type="text" name="text" list="LIST" autocomplete="off" spellcheck="false"></label>
  <button type="button" name="go">${W.translate}</button>
</div>
<datalist id="LIST"></datalist>
<div class="tl-lt-row">
  <label>${W.method} <select name="method">
    <option value="greedy">${W.greedy}</option>
    <option value="beam">${W.beam}</option>
    <option value="sample">${W.sample}</option>
  </select></label>
  <label data-for="beam">${W.beamSize}
    <input type="range" name="beamSize" min="1" max="8" step="1" value="4"><output></output></label>
  <label data-for="beam">${W.lengthPenalty}
    <input type="range" name="lengthPenalty" min="0" max="2" step="0.1" value="0.6"><output></output></label>
  <label data-for="sample">${W.temperature}
    <input type="range" name="temperature" min="0.1" max="3" step="0.1" value="1"><output></output></label>
  <label data-for="sample">top-k
    <input type="range" name="topK" min="0" max="20" step="1" value="0"><output></output></label>
  <label data-for="sample">top-p
    <input type="range" name="topP" min="0.05" max="1" step="0.05" value="1"><output></output></label>
  <label data-for="sample">${W.seed} <input type="number" name="seed" min="0" max="99999" step="1" value="0"></label>
</div>
<p class="tl-lt-message" role="status"></p>
<p class="tl-lt-output" aria-live="polite"></p>
<p class="tl-lt-timing"></p>
<div class="tl-lt-row">
  <label>${W.crossOf} <select name="layer" aria-label="${W.layer}"></select></label>
  <select name="head" aria-label="${W.head}"></select>
</div>
<div class="tl-lt-heatmap"></div>
<details class="tl-lt-steps-box" open><summary>${W.stepsSummary}</summary>
  <div class="tl-lt-steps"></div></details>`;

const ENTITIES = { "&": "&amp;", "<": "&lt;", ">": "&gt;", '"': "&quot;", "'": "&#39;" };
const escapeHtml = s => String(s).replace(/[&<>"']/g, c => ENTITIES[c]);

/** The site's plotly.js: through the page's own loader where it has one (plotly-theme.js, which fetches it once for
 * the page's figures too), else from _static. */
async function ensurePlotly(base) {
  if (!window.Plotly && window.tlLoadPlotly) {
    await window.tlLoadPlotly(null, true);
  }
  if (!window.Plotly) {
    await new Promise((resolve, reject) => document.head.append(Object.assign(
      document.createElement("script"), { src: base + "plotly.min.js", onload: resolve, onerror: reject })));
  }
  return window.Plotly;
}

/** The decoding options the controls describe: {method, options} for Model.translate. */
function readOptions(control) {
  const num = name => Number(control(name).value);
  const method = control("method").value;
  if (method === "beam") return { method, options: { beamSize: num("beamSize"), lengthPenalty: num("lengthPenalty") } };
  if (method === "sample") {
    return { method, options: { temperature: num("temperature"), topK: num("topK") || null, // 0 = off
                                topP: num("topP") < 1 ? num("topP") : null, seed: num("seed") } };
  }
  return { method, options: {} };
}

/** The figure of one layer's cross-attention (one head, or the mean of the heads). */
function heatmapFigure(result, meta, layer, head) {
  const maps = result.cross[layer]; // [head][row][source]
  const mean = (t, s) => maps.reduce((acc, m) => acc + m[t][s], 0) / maps.length;
  const z = head === "mean" ? maps[0].map((row, t) => row.map((_, s) => mean(t, s))) : maps[Number(head)];
  const plain = token => token.replaceAll(meta.space_mark, "");
  const src = result.pieces.map(plain);
  const written = result.tokens.slice(1).map(id => plain(meta.tgt_tokens[id]));
  const which = head === "mean" ? W.meanOfHeads : W.headN(Number(head) + 1);
  // numeric axes with tick labels: a word that occurs twice keeps two columns (categories would merge them)
  const axis = labels => ({ tickmode: "array", tickvals: labels.map((_, i) => i), ticktext: labels });
  const data = [{
    type: "heatmap", z, zmin: 0, zmax: 1, colorscale: HEATMAP_COLORS,
    customdata: z.map((row, t) => row.map((_, s) => [written[t], src[s]])),
    hovertemplate: W.hover,
  }];
  const layout = {
    title: { text: W.heatmapTitle(layer + 1, which), font: { size: 14 } },
    height: 130 + 24 * z.length, margin: { l: 80, r: 10, t: 40, b: 90 },
    xaxis: { ...axis(src), title: { text: W.source }, tickangle: -45 },
    yaxis: { ...axis(written), title: { text: W.written }, autorange: "reversed" },
  };
  return { data, layout };
}

/** The step-by-step table: top candidates per step (greedy, sampling) or the extensions beam search weighed. */
function stepsTable(result, meta) {
  const tok = id => escapeHtml(meta.tgt_tokens[id].replaceAll(meta.space_mark, "␣")); // as the book's figures
  const lastOf = prefix => tok(prefix[prefix.length - 1]);
  if (result.method === "beam") {
    const rows = result.steps.map((s, t) => {
      const cells = s.candidates.map(c => `<span class="tl-lt-${c.fate}">…${lastOf(c.prefix)} + ` +
        `<b>${tok(c.tok)}</b> ${c.score.toFixed(2)}${c.fate === "finished" ? " ✔" : ""}</span>`);
      return `<tr><td>${t + 1}</td><td>${cells.join(" ")}</td></tr>`;
    });
    return `<table><tr><th>${W.step}</th><th>${W.beamHeader}</th></tr>` + rows.join("") + "</table>";
  }
  const rows = result.steps.map((s, t) => {
    const cells = s.candidates.map(c => `<span class="${c.id === s.chosen ? "tl-lt-chosen" : ""}">${tok(c.id)} ` +
      `<span class="tl-lt-bar" style="width:${(60 * c.p).toFixed(0)}px"></span>${c.p.toFixed(3)}</span>`);
    return `<tr><td>${t + 1}</td><td>${lastOf(s.prefix)}</td><td><b>${tok(s.chosen)}</b></td>` +
      `<td>${cells.join(" ")}</td></tr>`;
  });
  return `<table><tr><th>${W.step}</th><th>${W.reads}</th><th>${W.writes}</th><th>${W.top}</th></tr>` +
    rows.join("") + "</table>";
}

/** Draw the translator into `el`; returns its controller (also kept as el.translator, for tests). */
export async function mount(el, base) {
  document.head.append(Object.assign(document.createElement("link"),
    { rel: "stylesheet", href: base + "translator/translator.css" }));
  const meta = await (await fetch(base + "translator/model/translator.json")).json();
  const model = new Model(base, meta);
  const listId = el.id + "-examples";
  el.innerHTML = CONTROLS.replaceAll("LIST", listId);
  Object.assign(el.dataset, { state: "idle", runs: "0" });
  const $ = selector => el.querySelector(selector);
  const control = name => el.querySelector(`[name="${name}"]`);

  $(`#${CSS.escape(listId)}`).innerHTML = meta.examples.map(s => `<option value="${escapeHtml(s)}">`).join("");
  control("text").value = meta.examples[0];
  control("beamSize").value = meta.decoding.beam_size;
  control("lengthPenalty").value = meta.decoding.length_penalty;
  const { n_decoder_layers: L, n_heads: H } = meta.config;
  const options = (n, label) => Array.from({ length: n }, (_, i) => `<option value="${i}">${label} ${i + 1}</option>`);
  control("layer").innerHTML = options(L, W.layer).join("");
  control("layer").value = String(L - 1); // the last layer, as in the chapter's figure
  control("head").innerHTML = `<option value="mean">${W.meanOfHeads}</option>` + options(H, W.head).join("");
  $(".tl-lt-timing").textContent = W.firstLoad;

  let last = null; // the latest successful translation
  const showControls = () => {
    const method = control("method").value;
    for (const label of el.querySelectorAll("label[data-for]")) {
      label.hidden = label.dataset.for !== method;
      const out = label.querySelector("output");
      if (out) out.textContent = label.querySelector("input").value;
    }
  };

  let drawing = Promise.resolve();
  const drawHeatmap = () => { // one draw at a time, each reading the pickers when it starts
    drawing = drawing.then(async () => {
      if (!last) return;
      const Plotly = await ensurePlotly(base);
      const { data, layout } = heatmapFigure(last, meta, Number(control("layer").value), control("head").value);
      await Plotly.react($(".tl-lt-heatmap"), data, layout, { responsive: true, displayModeBar: false });
    });
    return drawing;
  };

  async function run() {
    showControls();
    const { method, options: opts } = readOptions(control);
    el.dataset.state = "busy";
    const firstLoad = !model.encoder;
    if (firstLoad) $(".tl-lt-timing").textContent = W.loading;
    const t0 = performance.now();
    try {
      last = el.lastResult = await model.translate(control("text").value, method, opts);
      $(".tl-lt-output").innerHTML = '<span class="tl-lt-label">Frenchy</span> ' +
        `<span class="tl-lt-sentence">${escapeHtml(last.text)}</span>`;
      const typed = control("text").value.trim();
      const readAs = last.normalized !== typed ? W.readAs(last.normalized) : "";
      const n = last.unknown.length, unknown = last.unknown.map(w => `“${w}”`).join(", ");
      $(".tl-lt-message").textContent = readAs + (n ? W.unknown(n, unknown, meta.src_tokens.length - 4) : "");
      $(".tl-lt-message").classList.toggle("tl-lt-warning", n > 0);
      $(".tl-lt-timing").textContent = W.timing(last.ms.toFixed(1), last.steps.length + 1) + (firstLoad
        ? W.loadTook((performance.now() - t0 - last.ms).toFixed(0)) : (W === WORDS.zh ? "。" : "."));
      await drawHeatmap();
      $(".tl-lt-steps").innerHTML = stepsTable(last, meta);
      el.dataset.state = "done";
    } catch (err) { // unusable input (or a failed load): say why, and show no stale result
      last = el.lastResult = null;
      $(".tl-lt-output").textContent = "";
      $(".tl-lt-timing").textContent = ""; // no time of an earlier translation next to the error
      $(".tl-lt-steps").innerHTML = "";
      if (window.Plotly) window.Plotly.purge($(".tl-lt-heatmap"));
      // unreadable input: model.js words it in English, the Chinese page in Chinese; anything else as it came,
      // after the page's words for a failure
      $(".tl-lt-message").textContent = W[err.reason] ? W[err.reason](err.details) : W.failed(err.message);
      $(".tl-lt-message").classList.add("tl-lt-warning");
      el.dataset.state = "error";
    }
    el.dataset.runs = String(Number(el.dataset.runs) + 1);
  }

  let pending = null;
  const schedule = () => { // once the controls settle; runs queue up, one at a time
    clearTimeout(pending);
    pending = setTimeout(() => { el.running = (el.running || Promise.resolve()).then(run); }, RERUN_DELAY_MS);
  };
  control("go").addEventListener("click", schedule);
  control("text").addEventListener("keydown", e => { if (e.key === "Enter") schedule(); });
  for (const name of ["method", "beamSize", "lengthPenalty", "temperature", "topK", "topP", "seed"]) {
    control(name).addEventListener("input", () => { showControls(); if (model.encoder) schedule(); });
  }
  for (const name of ["layer", "head"]) control(name).addEventListener("change", drawHeatmap);
  showControls();
  el.translator = { model, run, translate: (text, method, opts) => model.translate(text, method, opts) };
  return el.translator;
}
