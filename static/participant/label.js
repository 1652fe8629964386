// The label page: keyboard shortcuts (0, 1, u; ignored while typing), and an answer (a label, a changed label,
// a skip; a flag with either) that is kept until the server has acknowledged it. The form is posted with
// fetch; on a network error or a 5xx (the server or its database is down) it is sent again with backoff, and
// it is kept in localStorage so that a closed tab sends it when the page is opened again. Once stored, the page
// goes where the server would have sent it (the form's data-after-url). Without JavaScript the form posts as
// usual.
(function () {
  "use strict";
  const form = document.getElementById("label-form");
  if (!form) return;
  const item = form.querySelector("input[name=item]").value;
  const storageKey = "pending-label:" + window.location.pathname;
  const status = document.createElement("p");
  status.id = "label-status";
  status.setAttribute("role", "status");
  form.after(status);
  let sending = false;

  const sleep = (ms) => new Promise((resolve) => setTimeout(resolve, ms));

  function remember(fields) {
    try { localStorage.setItem(storageKey, JSON.stringify(fields)); } catch (error) { /* private mode */ }
  }
  function forget() {
    try { localStorage.removeItem(storageKey); } catch (error) { /* private mode */ }
  }
  function remembered() {
    try { return JSON.parse(localStorage.getItem(storageKey) || "null"); } catch (error) { return null; }
  }

  // The answer as the form would post it: every field, and the button that sent it.
  function answerOf(button) {
    const entries = [];
    new FormData(form).forEach((value, name) => {
      if (name !== "csrfmiddlewaretoken") entries.push([name, String(value)]);
    });
    entries.push([button.name, button.value]);
    return { item: item, url: window.location.pathname + window.location.search, after: form.dataset.afterUrl,
             entries: entries };
  }

  function postTheFormWithoutScript(answer) {
    // The server's own answer to a refused post (e.g. a skip without a reason) is a page: show it.
    answer.entries.forEach(([name, value]) => {
      const field = form.querySelector('[name="' + name + '"]:not(button)');
      if (field) {
        field.value = value;
      } else {
        const hidden = document.createElement("input");
        hidden.type = "hidden";
        hidden.name = name;
        hidden.value = value;
        form.appendChild(hidden);
      }
    });
    form.submit();
  }

  function moveOn(answer) {
    forget();
    if (answer.after && answer.after !== window.location.pathname + window.location.search) {
      window.location.assign(answer.after);
    } else {
      window.location.reload();
    }
  }

  // Post an answer until the server has decided on it: "stored", "withdrawn" or "refused" (a 4xx page).
  async function deliver(answer) {
    for (let attempt = 0; ; attempt++) {
      const body = new FormData();
      body.append("csrfmiddlewaretoken", form.querySelector("input[name=csrfmiddlewaretoken]").value);
      answer.entries.forEach(([name, value]) => body.append(name, value));
      try {
        const response = await fetch(answer.url || window.location.href, {
          method: "POST", credentials: "same-origin", body: body, redirect: "manual",
        });
        // Stored: the server redirects to the participant's next page.
        if (response.type === "opaqueredirect" || (response.status >= 300 && response.status < 400)) {
          return "stored";
        }
        if (response.status === 410) return "withdrawn";  // nothing more is stored
        if (response.status >= 400 && response.status < 500) return "refused";
      } catch (error) { /* network: send again */ }
      status.textContent = "Saving… the study's server has a problem. Your answer is kept and will be " +
        "sent when it is back; you can leave this page open.";
      await sleep(Math.min(8000, 500 * 2 ** attempt));
    }
  }

  async function send(answer) {
    sending = true;
    form.querySelectorAll("button").forEach((button) => { button.disabled = true; });
    remember(answer);
    const outcome = await deliver(answer);
    forget();
    if (outcome === "stored") moveOn(answer);
    else if (outcome === "withdrawn") window.location.reload();
    else postTheFormWithoutScript(answer);
  }

  // An answer kept from a closed tab about another sentence than this page's (e.g. a changed label of an
  // earlier one): sent without leaving this page. A first label sent twice is stored once by the server.
  async function sendBehind(answer) {
    await deliver(answer);
    status.textContent = "";
    try {
      if (JSON.stringify(remembered()) === JSON.stringify(answer)) forget();
    } catch (error) { /* private mode */ }
  }

  form.addEventListener("submit", (event) => {
    event.preventDefault();
    if (sending) return;
    const button = event.submitter;
    if (!button) return;
    if (button.name === "action" && button.value === "skip") {
      const reason = form.querySelector("input[name=skip_reason]");
      if (!reason.value.trim()) {
        status.textContent = "Please say why you skip this sentence.";
        reason.focus();
        return;
      }
    } else if (button.name !== "value") {
      return;
    }
    send(answerOf(button));
  });

  document.addEventListener("keydown", (event) => {
    if (sending || event.repeat || event.ctrlKey || event.metaKey || event.altKey) return;
    if (event.target.tagName === "TEXTAREA" || event.target.tagName === "INPUT") return;
    const button = form.querySelector('button[data-key="' + event.key.toLowerCase() + '"]');
    if (button) {
      event.preventDefault();
      form.requestSubmit(button);
    }
  });

  let pending = remembered();
  if (pending && !Array.isArray(pending.entries) && pending.value !== undefined) {
    // Kept by the page's earlier version: a first label.
    pending = { item: pending.item, entries: [["item", pending.item], ["value", pending.value],
                                              ["rationale", pending.rationale || ""]] };
  }
  if (pending && Array.isArray(pending.entries)) {
    if (pending.item === item) send(pending);
    else sendBehind(pending);
  }
})();
