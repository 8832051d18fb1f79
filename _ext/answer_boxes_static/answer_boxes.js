// Answer boxes (see _ext/answer_boxes.py): check a by-hand answer in the page, with no kernel.
// The answer, tolerance, number syntax and messages are rl4llm.exercises.answer_key()'s, so the
// verdict is the one check() prints in a notebook.
(function () {
  "use strict";
  function parse(text, pattern) {
    const match = new RegExp("^(?:" + pattern + ")$").exec(text);
    if (match === null) return null;
    let value = parseFloat(match[1]);
    if (match[2] !== undefined) {
      const denominator = parseFloat(match[2]);
      value = denominator !== 0 ? value / denominator : NaN;
    }
    return Number.isFinite(value) ? value : null;
  }
  function verdict(key, text) {
    const value = parse(text, key.pattern);
    if (value === null) return ["malformed", key.malformed];
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
  function init() { document.querySelectorAll("form.answer-box").forEach(attach); }
  if (document.readyState === "loading") document.addEventListener("DOMContentLoaded", init);
  else init();
})();
