// The IAT categories and words of a study's admin page (templates/admin/widgets/iat_stimuli.html): as the words are
// typed, each category's count and, before the form is sent, a word in two categories or a category with too few
// words. The server checks the same (psychometrics.iat.iat_stimuli_problems) and its errors are the ones that count;
// these hints only come sooner. With the defaults chosen, the categories below show them as a start, and an edit chooses the study's own.
(function () {
  "use strict";
  // The admin puts a page's scripts in its head: wait for the page.
  if (document.readyState === "loading") {
    document.addEventListener("DOMContentLoaded", start);
  } else {
    start();
  }
  function start() {
    document.querySelectorAll(".iat-stimuli-editor").forEach((editor) => {
      const minWords = Number(editor.dataset.minWords);
      const categories = [...editor.querySelectorAll(".iat-category")];
      const hints = editor.querySelector("[data-role=hints]");
      const grid = editor.querySelector(".iat-stimuli-categories");
      const custom = editor.querySelector("input[type=radio][value=custom]");

      const wordsOf = (category) => {
        const seen = new Map();  // trimmed, case-folded word → the word as typed (the server compares the same way)
        category.querySelector("textarea").value.split("\n").map((w) => w.trim()).filter(Boolean)
          .forEach((word) => { if (!seen.has(word.toLowerCase())) seen.set(word.toLowerCase(), word); });
        return seen;
      };
      const nameOf = (category) =>
        category.querySelector("[data-role=label]").value.trim() || category.querySelector("legend").textContent;

      function update() {
        const owner = new Map();  // word → the first category that has it
        const problems = [];
        categories.forEach((category) => {
          const words = wordsOf(category);
          const count = words.size;
          category.querySelector(".iat-word-count").textContent =
            count + (count === 1 ? " word" : " words") + " (at least " + minWords + ")";
          category.classList.toggle("too-few", count < minWords);
          let repeated = false;
          words.forEach((word, key) => {
            if (owner.has(key)) {
              repeated = true;
              problems.push("\u201c" + word + "\u201d is in both " + nameOf(owner.get(key)) + " and " + nameOf(category));
            } else {
              owner.set(key, category);
            }
          });
          category.querySelector("textarea").classList.toggle("has-repeat", repeated);
        });
        const showing = custom.checked;
        hints.replaceChildren(...(showing ? problems : []).map((text) => {
          const item = document.createElement("li");
          item.textContent = text;
          return item;
        }));
        hints.hidden = !showing || problems.length === 0;
      }

      editor.addEventListener("input", update);
      editor.addEventListener("change", update);
      // Editing a category means this study's own words: no need to also pick the radio button.
      grid.addEventListener("input", () => { if (!custom.checked) { custom.checked = true; update(); } });
      update();
    });
  }
})();
