// Answer boxes (see _ext/answer_boxes.py): check a by-hand answer in the page, with no kernel.
// The answer, tolerance, number syntax and messages are rl4llm.exercises.answer_key()'s, so the
// verdict is the one check() prints in a notebook. A hashed key (the student edition's) holds no
// number and no message in clear: the reader's number, rounded to the key's grid, is hashed with its
// salt and looked up among the digests of the answer's band and of each mistake's; a hit unwraps the
// key of that outcome's message, which is then decrypted.
(function () {
  "use strict";
  // "−" (and other dashes a keypad may give) reads as "-"; a decimal comma, in a number with no point, as "."
  function normalise(text) {
    text = String(text).replace(/[\u2212\u2012\u2013\uFE63\uFF0D]/g, "-");
    return text.indexOf(".") === -1 ? text.replace(/,/g, ".") : text;
  }
  function parse(text, pattern) {
    const match = new RegExp("^(?:" + pattern + ")$").exec(normalise(text));
    if (match === null) return null;
    let value = parseFloat(match[1]);
    if (match[2] !== undefined) {
      const denominator = parseFloat(match[2]);
      value = denominator !== 0 ? value / denominator : NaN;
    }
    return Number.isFinite(value) ? value : null;
  }
  // SHA-256 of an ASCII string (FIPS 180-4), hex: small and synchronous, so it works on file:// and http.
  const K = [];
  (function () {
    let n = 2;
    while (K.length < 64) {
      let prime = true;
      for (let d = 2; d * d <= n; d++) if (n % d === 0) { prime = false; break; }
      if (prime) K.push((Math.cbrt(n) % 1) * 4294967296 | 0);
      n++;
    }
  })();
  function sha256(ascii) {
    const bytes = [];
    for (let i = 0; i < ascii.length; i++) bytes.push(ascii.charCodeAt(i) & 0xff);
    const bits = bytes.length * 8;
    bytes.push(0x80);
    while (bytes.length % 64 !== 56) bytes.push(0);
    for (let i = 7; i >= 0; i--) bytes.push(i > 3 ? 0 : (bits >>> (8 * i)) & 0xff);
    const h = [0x6a09e667, 0xbb67ae85, 0x3c6ef372, 0xa54ff53a, 0x510e527f, 0x9b05688c, 0x1f83d9ab, 0x5be0cd19];
    const w = new Array(64);
    const rotr = (x, n) => (x >>> n) | (x << (32 - n));
    for (let offset = 0; offset < bytes.length; offset += 64) {
      for (let t = 0; t < 16; t++) {
        const j = offset + 4 * t;
        w[t] = (bytes[j] << 24) | (bytes[j + 1] << 16) | (bytes[j + 2] << 8) | bytes[j + 3];
      }
      for (let t = 16; t < 64; t++) {
        const s0 = rotr(w[t - 15], 7) ^ rotr(w[t - 15], 18) ^ (w[t - 15] >>> 3);
        const s1 = rotr(w[t - 2], 17) ^ rotr(w[t - 2], 19) ^ (w[t - 2] >>> 10);
        w[t] = (w[t - 16] + s0 + w[t - 7] + s1) | 0;
      }
      let [a, b, c, d, e, f, g, k] = h;
      for (let t = 0; t < 64; t++) {
        const t1 = (k + (rotr(e, 6) ^ rotr(e, 11) ^ rotr(e, 25)) + ((e & f) ^ (~e & g)) + K[t] + w[t]) | 0;
        const t2 = ((rotr(a, 2) ^ rotr(a, 13) ^ rotr(a, 22)) + ((a & b) ^ (a & c) ^ (b & c))) | 0;
        k = g; g = f; f = e; e = (d + t1) | 0; d = c; c = b; b = a; a = (t1 + t2) | 0;
      }
      [a, b, c, d, e, f, g, k].forEach((x, i) => { h[i] = (h[i] + x) | 0; });
    }
    return h.map((x) => (x >>> 0).toString(16).padStart(8, "0")).join("");
  }
  const bytes = (hex) => hex.match(/../g).map((pair) => parseInt(pair, 16));
  // An outcome [band, ciphertext] of answer_boxes.py's sealed(): the message, if the number is on the band.
  function unseal(key, index, [band, ciphertext]) {
    const point = key.salt + ":" + index;
    const wrapped = band[sha256(point).slice(0, 16)];
    if (wrapped === undefined) return null;
    const pad = bytes(sha256(point + ":key"));
    const secret = bytes(wrapped).map((b, i) => (b ^ pad[i]).toString(16).padStart(2, "0")).join("");
    const data = bytes(ciphertext);
    let stream = [];
    for (let i = 0; stream.length < data.length; i++) stream = stream.concat(bytes(sha256(secret + ":" + i)));
    return new TextDecoder().decode(new Uint8Array(data.map((b, i) => b ^ stream[i])));
  }
  function verdict(key, text) {
    const value = parse(text, key.pattern);
    if (value === null) return ["malformed", key.malformed];
    if (key.accept !== undefined) {
      const index = Math.floor(value / key.step + 0.5).toFixed(0);      // answer_boxes.py's grid_index
      const correct = unseal(key, index, key.accept);
      if (correct !== null) return ["correct", correct];
      for (const outcome of key.mistakes) {
        const message = unseal(key, index, outcome);
        if (message !== null) return ["mistake", message];
      }
      return ["wrong", key.wrong];
    }
    if (Math.abs(value - key.value) <= key.tolerance) return ["correct", key.correct];
    for (const [wrong, message] of key.mistakes) {
      if (Math.abs(value - wrong) <= key.tolerance) return ["mistake", message];
    }
    return ["wrong", key.wrong];
  }
  function attach(form) {
    const key = JSON.parse(form.dataset.key);
    const input = form.querySelector("input");
    const feedback = form.querySelector(".answer-feedback");
    form.addEventListener("submit", function (event) {
      event.preventDefault();
      const [kind, message] = verdict(key, input.value);
      feedback.textContent = message;
      feedback.dataset.verdict = kind;
      input.setAttribute("aria-invalid", kind === "correct" ? "false" : "true");
    });
  }
  if (typeof module !== "undefined") { module.exports = { normalise, parse, sha256, verdict }; return; }
  function init() { document.querySelectorAll("form.answer-box").forEach(attach); }
  if (document.readyState === "loading") document.addEventListener("DOMContentLoaded", init);
  else init();
})();
