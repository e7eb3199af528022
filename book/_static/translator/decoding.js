// Decoding loops of the live translator: transformer_lib/decoding.py, one sentence at a time, in JavaScript.
//
// Every function takes `step`, an async function that runs the decoder on a batch of prefixes (arrays of
// token ids, all of one length, each starting with <bos>) and returns one row of next-token logits per prefix
// (the `decode_step` of the Python library). The loops below mirror the Python ones line by line:
//   greedyDecode  <->  tl.greedy_decode      (arg-max until <eos> or maxNewTokens)
//   beamSearch    <->  tl.beam_search        (same candidate order, length penalty and stopping rule)
//   sample        <->  tl.sample             (draws from samplingDistribution with a seeded generator)
//   samplingDistribution <-> tl.sampling_distribution (temperature, then top-k, then top-p)
// Each also records, for the page, the top candidates of every step (`steps`).

/** Index of the largest value; the first one on ties, as torch.argmax. */
export function argmax(row) {
  let best = 0;
  for (let i = 1; i < row.length; i++) if (row[i] > row[best]) best = i;
  return best;
}

/** log softmax of one row of logits, in float64. */
export function logSoftmax(row) {
  let max = -Infinity;
  for (const x of row) max = Math.max(max, x);
  let sum = 0;
  for (const x of row) sum += Math.exp(x - max);
  const logZ = max + Math.log(sum);
  return Array.from(row, x => x - logZ);
}

/** softmax of one row of logits (entries of -Infinity get probability 0). */
export function softmax(row) {
  return logSoftmax(row).map(Math.exp);
}

/** The `k` most probable tokens of a probability row, best first: [{id, p}]. */
export function topCandidates(probs, k = 5) {
  return Array.from(probs, (p, id) => ({ id, p })).sort((a, b) => b.p - a.p || a.id - b.id).slice(0, k);
}

/** ((5 + n) / 6) ** alpha: the length penalty of Wu et al. (2016), as decoding._length_penalty. */
export function lengthPenalty(length, alpha) {
  return ((5 + length) / 6) ** alpha;
}

/**
 * The distribution `sample` draws from (tl.sampling_distribution): softmax(logits / temperature); top-k keeps
 * the tokens whose logit is at least the k-th largest; top-p keeps the most probable tokens until the mass
 * before a token reaches p (the first is always kept); the rest is renormalised. Returns a Float64Array.
 */
export function samplingDistribution(logits, { temperature = 1.0, topK = null, topP = null } = {}) {
  if (!(temperature > 0)) throw new Error(`temperature: expected a number > 0, got ${temperature}`);
  let z = Array.from(logits, x => x / temperature);
  if (topK !== null && topK < z.length) {
    const kth = [...z].sort((a, b) => b - a)[topK - 1];
    z = z.map(x => (x < kth ? -Infinity : x));
  }
  let probs = Float64Array.from(softmax(z));
  if (topP !== null && topP < 1.0) {
    const order = Array.from(probs, (p, id) => id).sort((a, b) => probs[b] - probs[a] || a - b);
    let before = 0; // probability mass strictly before this token in sorted order
    const kept = new Float64Array(probs.length);
    for (const id of order) {
      if (before < topP) kept[id] = probs[id];
      before += probs[id];
    }
    const total = kept.reduce((a, b) => a + b, 0);
    probs = kept.map(p => p / total);
  }
  return probs;
}

/** A small seeded generator of uniform numbers in [0, 1) (mulberry32): the same seed, the same draws. */
export function seededRandom(seed) {
  let a = seed >>> 0;
  return function next() {
    a = (a + 0x6d2b79f5) >>> 0;
    let t = a;
    t = Math.imul(t ^ (t >>> 15), t | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
}

/** Draw one id from a probability row with a uniform number u in [0, 1) (inverse of the cumulative sum). */
export function drawFrom(probs, u) {
  let cum = 0, last = 0;
  for (let id = 0; id < probs.length; id++) {
    if (probs[id] <= 0) continue;
    cum += probs[id];
    last = id;
    if (u < cum) return id;
  }
  return last; // u fell in the rounding gap at the very end
}

/** Greedy decoding (tl.greedy_decode for one sentence): returns {tokens, steps}; tokens start with <bos>. */
export async function greedyDecode(step, maxNewTokens, bosId, eosId, { nTop = 5 } = {}) {
  const tokens = [bosId];
  const steps = [];
  for (let t = 0; t < maxNewTokens; t++) {
    const [logits] = await step([tokens]);
    const next = argmax(logits);
    steps.push({ prefix: [...tokens], chosen: next, candidates: topCandidates(softmax(logits), nTop) });
    tokens.push(next);
    if (next === eosId) break;
  }
  return { tokens, steps };
}

/** Sampling (tl.sample for one sentence), from samplingDistribution, with a generator seeded by `seed`. */
export async function sample(step, maxNewTokens, bosId, eosId,
                             { temperature = 1.0, topK = null, topP = null, seed = 0, nTop = 5 } = {}) {
  const random = seededRandom(seed);
  const tokens = [bosId];
  const steps = [];
  for (let t = 0; t < maxNewTokens; t++) {
    const [logits] = await step([tokens]);
    const probs = samplingDistribution(logits, { temperature, topK, topP });
    const next = drawFrom(probs, random());
    steps.push({ prefix: [...tokens], chosen: next, candidates: topCandidates(probs, nTop) });
    tokens.push(next);
    if (next === eosId) break;
  }
  return { tokens, steps };
}

/**
 * Beam search (tl.beam_search for one sentence, decoding._beam_one). Keeps `beamSize` live prefixes; at each
 * step ranks all (beam, token) extensions by summed log-probability, walks down the best 2k of them: an
 * extension ending in <eos> becomes a finished hypothesis scored logP / lengthPenalty(step, alpha), the others
 * fill the next beam until it has k. Stops once k hypotheses have finished, no beam is left, or after
 * maxNewTokens; then live beams are ranked with the finished ones only if fewer than nBest finished.
 * Returns {hypotheses: [{tokens, score, logProb}] best first (nBest of them), steps}.
 */
export async function beamSearch(step, maxNewTokens, bosId, eosId,
                                 { beamSize = 4, lengthPenalty: alpha = 0.6, nBest = 1 } = {}) {
  const k = beamSize;
  let beams = Array.from({ length: k }, () => [bosId]);
  let scores = Array.from({ length: k }, (_, i) => (i === 0 ? 0 : -Infinity)); // expand only the first beam
  const finished = [];
  const steps = [];
  let t = 0; // the last step taken (Python's loop variable `step` after the loop)
  for (let s = 1; s <= maxNewTokens; s++) {
    t = s;
    const logits = await step(beams); // (k, V)
    const cand = []; // every (beam, token) extension with its summed log-probability
    logits.forEach((row, beam) => logSoftmax(row).forEach((lp, tok) => {
      cand.push({ beam, tok, score: scores[beam] + lp });
    }));
    cand.sort((a, b) => b.score - a.score || a.beam - b.beam || a.tok - b.tok); // ties: flat index order
    const keep = [];
    const record = []; // what the page shows for this step
    for (const c of cand.slice(0, 2 * k)) {
      if (c.score === -Infinity) break;
      const prefix = beams[c.beam];
      if (c.tok === eosId) {
        finished.push({ tokens: [...prefix, eosId], score: c.score / lengthPenalty(s, alpha), logProb: c.score });
      } else {
        keep.push(c);
      }
      record.push({ ...c, prefix, fate: c.tok === eosId ? "finished" : "kept" });
      if (keep.length === k) break;
    }
    steps.push({ candidates: record });
    if (finished.length >= k || keep.length === 0) break;
    beams = keep.map(c => [...beams[c.beam], c.tok]);
    scores = keep.map(c => c.score);
    while (beams.length < k) { // fewer live beams than slots: pad with dead copies
      beams.push([...beams[0]]);
      scores.push(-Infinity);
    }
  }
  const alive = beams.map((tokens, i) => ({ tokens, score: scores[i] / lengthPenalty(t, alpha), logProb: scores[i] }))
    .filter(h => h.logProb !== -Infinity);
  const byScore = (a, b) => b.score - a.score; // Array.sort is stable, like Python's sorted
  let ranked = [...finished].sort(byScore);
  if (ranked.length < nBest) ranked = [...finished, ...alive].sort(byScore); // rank live beams with them
  return { hypotheses: ranked.slice(0, nBest), steps };
}
