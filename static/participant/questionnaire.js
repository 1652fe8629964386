// Questionnaire autosave: each answer is posted as it is given, with the time spent on the item
// (since the page was shown or the previous answer). The form's own submit still works without it.
(function () {
  "use strict";
  const form = document.getElementById("questionnaire");
  if (!form) return;
  const url = form.dataset.answerUrl;
  const csrf = form.querySelector("input[name=csrfmiddlewaretoken]").value;
  const counter = document.getElementById("answered-count");
  let last = performance.now();

  function updateCount() {
    const items = form.querySelectorAll("li.item");
    const answered = [...items].filter((li) => li.querySelector("input:checked")).length;
    counter.textContent = answered + " of " + items.length + " answered";
  }

  async function save(body, attempt) {
    try {
      const response = await fetch(url, {
        method: "POST", credentials: "same-origin",
        headers: { "Content-Type": "application/json", "X-CSRFToken": csrf },
        body: JSON.stringify(body),
      });
      if (response.status >= 500) throw new Error("server " + response.status);
    } catch (error) {
      if (attempt < 5) setTimeout(() => save(body, attempt + 1), 500 * 2 ** attempt);
    }
  }

  form.addEventListener("change", (event) => {
    const input = event.target;
    if (input.type !== "radio") return;
    const li = input.closest("li.item");
    const now = performance.now();
    li.classList.remove("missing");
    save({ item: Number(li.dataset.item), response: Number(input.value), rt_ms: Math.round(now - last) }, 0);
    last = now;
    updateCount();
  });
})();
