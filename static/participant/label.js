// The label page: keyboard shortcuts (0, 1, u; ignored while typing a reason), and a label that is kept
// until the server has acknowledged it. The form is posted with fetch; on a network error or a 5xx (the
// server or its database is down) it is sent again with backoff, and it is kept in localStorage so that a
// closed tab sends it when the page is opened again. Without JavaScript the form posts as usual.
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

  function postTheFormWithoutScript(fields) {
    // The server's own answer to a refused label (e.g. a reason it cannot store) is a page: show it.
    const value = document.createElement("input");
    value.type = "hidden";
    value.name = "value";
    value.value = fields.value;
    form.querySelector("textarea[name=rationale]").value = fields.rationale;
    form.appendChild(value);
    form.submit();
  }

  async function send(fields) {
    sending = true;
    form.querySelectorAll("button").forEach((button) => { button.disabled = true; });
    remember(fields);
    for (let attempt = 0; ; attempt++) {
      const body = new FormData();
      body.append("csrfmiddlewaretoken", form.querySelector("input[name=csrfmiddlewaretoken]").value);
      body.append("item", fields.item);
      body.append("value", fields.value);
      body.append("rationale", fields.rationale);
      try {
        const response = await fetch(form.action || window.location.href, {
          method: "POST", credentials: "same-origin", body: body, redirect: "manual",
        });
        // Stored: the server redirects to the participant's next step.
        if (response.type === "opaqueredirect" || (response.status >= 300 && response.status < 400)) {
          forget();
          window.location.reload();
          return;
        }
        if (response.status === 410) {  // withdrawn meanwhile: nothing more is stored
          forget();
          window.location.reload();
          return;
        }
        if (response.status >= 400 && response.status < 500) {
          forget();
          postTheFormWithoutScript(fields);
          return;
        }
      } catch (error) { /* network: send again */ }
      status.textContent = "Saving… the study's server has a problem. Your answer is kept and will be " +
        "sent when it is back; you can leave this page open.";
      await sleep(Math.min(8000, 500 * 2 ** attempt));
    }
  }

  form.addEventListener("submit", (event) => {
    event.preventDefault();
    if (sending) return;
    const button = event.submitter;
    if (!button || button.name !== "value") return;
    send({ item: item, value: button.value, rationale: form.querySelector("textarea[name=rationale]").value });
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

  const pending = remembered();
  if (pending && pending.item === item) {
    send(pending);
  } else if (pending) {
    forget();  // the server has moved on from that item: it was stored
  }
})();
