// Questionnaire autosave: each answer is posted as it is given, with the time spent on the item (since
// the page was shown or the previous answer). An answer is kept until the server acknowledges it: on a
// network error or a 5xx it is sent again with backoff, and it is kept in localStorage so that a closed
// tab sends it when the page is opened again; the submit carries the time of an answer still unacknowledged.
// The form's own submit still works without JavaScript.
// A submit with statements unanswered stays on the page: a summary links each one and the first takes the
// focus (without JavaScript the server answers with the same summary, keeping every answer given).
// On a narrow screen the statements are cards, one at a time, with Back and Next and a progress bar; a first
// answer moves on to the next card after a moment. The time sent with an answer is then the time since its card
// was shown (on a wide screen, since the page was shown or the previous answer).
(function () {
  "use strict";
  const form = document.getElementById("questionnaire");
  if (!form) return;
  const url = form.dataset.answerUrl;
  const csrf = form.querySelector("input[name=csrfmiddlewaretoken]").value;
  const counter = document.getElementById("answered-count");
  const storageKey = "pending-answers:" + url;
  let last = performance.now();
  const pending = load();  // item number → the latest unacknowledged answer to it
  // This load of the page and how many answers it has given: the server keeps a later answer of this page when an
  // earlier one reaches it last (a request given up here may still be delivered).
  const writer = (window.crypto && crypto.randomUUID) ? crypto.randomUUID() : String(Math.random()).slice(2);
  let given = 0;

  function load() {
    try { return JSON.parse(localStorage.getItem(storageKey) || "{}"); } catch (error) { return {}; }
  }
  function store() {
    try {
      if (Object.keys(pending).length) localStorage.setItem(storageKey, JSON.stringify(pending));
      else localStorage.removeItem(storageKey);
    } catch (error) { /* private mode: the answers are still retried while the page is open */ }
  }

  const items = [...form.querySelectorAll("li.item")];
  const answeredCount = () => items.filter((li) => li.querySelector("input:checked")).length;
  function updateCount() {
    counter.textContent = answeredCount() + " of " + items.length + " answered";
    if (cards) cards.update();
  }

  // Cards: built once, shown while the screen is narrow (a phone held either way may cross the width).
  const NARROW = window.matchMedia("(max-width: 600px)");
  const ADVANCE_MS = 350;
  let cards = null;
  function buildCards() {
    const submit = document.getElementById("questionnaire-submit");
    const nav = document.createElement("div");
    nav.className = "card-nav";
    const place = document.createElement("p");
    place.className = "card-place";
    place.id = "card-place";
    const bar = document.createElement("progress");
    bar.id = "card-progress";
    bar.max = items.length;
    bar.setAttribute("aria-labelledby", "answered-count");
    const back = document.createElement("button");
    back.type = "button";
    back.id = "card-back";
    back.className = "secondary";
    back.textContent = "← Back";
    const next = document.createElement("button");
    next.type = "button";
    next.id = "card-next";
    next.textContent = "Next →";
    nav.append(back, next);
    form.querySelector("ol.items").before(place, bar);
    counter.before(nav);
    let current = 0;
    let advancing = null;
    const state = {
      get current() { return current; },
      show(index, focus) {
        clearTimeout(advancing);
        current = Math.max(0, Math.min(items.length - 1, index));
        items.forEach((li, n) => { li.hidden = n !== current; });
        last = performance.now();
        state.update();
        if (focus) {
          const chosen = items[current].querySelector("input:checked") || items[current].querySelector("input");
          chosen.focus();
        }
      },
      advanceSoon(from) {
        clearTimeout(advancing);
        advancing = setTimeout(() => { if (current === from && from < items.length - 1) state.show(from + 1, true); },
                               ADVANCE_MS);
      },
      update() {
        place.textContent = "Statement " + (current + 1) + " of " + items.length;
        bar.value = answeredCount();
        back.disabled = current === 0;
        const atEnd = current === items.length - 1;
        next.hidden = atEnd;
        submit.hidden = !atEnd && answeredCount() < items.length;
      },
      on() {
        form.classList.add("cards");
        nav.hidden = place.hidden = bar.hidden = false;
        const firstOpen = items.findIndex((li) => li.classList.contains("missing") || !li.querySelector("input:checked"));
        state.show(firstOpen < 0 ? items.length - 1 : firstOpen, false);
      },
      off() {
        clearTimeout(advancing);
        form.classList.remove("cards");
        nav.hidden = place.hidden = bar.hidden = true;
        items.forEach((li) => { li.hidden = false; });
        submit.hidden = false;
      },
    };
    back.addEventListener("click", () => state.show(current - 1, true));
    next.addEventListener("click", () => state.show(current + 1, true));
    // A link of the unanswered summary opens its card.
    document.addEventListener("click", (event) => {
      const link = event.target.closest('a[href^="#statement-"]');
      if (!link || !form.classList.contains("cards")) return;
      const index = items.findIndex((li) => "#" + li.id === link.getAttribute("href"));
      if (index < 0) return;
      event.preventDefault();
      state.show(index, true);
    });
    return state;
  }
  function fitToScreen() {
    if (NARROW.matches) {
      cards = cards || buildCards();
      cards.on();
    } else if (cards) {
      cards.off();
    }
  }

  // Each answer is sent at once (answers to other items do not wait for each other) and again until
  // acknowledged. One sender per item: a changed answer waits for the request on its way, so an item's answers
  // reach the server in the order they were given (two requests at once may arrive in either order), and a
  // newer answer cuts short the backoff of a failed one (keeping its level: the server is evidently unwell).
  // A request unanswered after SEND_TIMEOUT_MS is given up as a network error, so that a stalled connection does
  // not hold back the item's later answers.
  const SEND_TIMEOUT_MS = 15000;
  const sending = {};  // item number → its sender is running
  const wake = {};     // item number → ends that sender's current backoff
  async function send(item) {
    if (sending[item]) {
      if (wake[item]) wake[item]();
      return;
    }
    sending[item] = true;
    try {
      for (let attempt = 0; pending[item]; attempt++) {
        const body = pending[item];
        const abort = new AbortController();
        const timer = setTimeout(() => abort.abort(), SEND_TIMEOUT_MS);
        try {
          const response = await fetch(url, {
            method: "POST", credentials: "same-origin", signal: abort.signal,
            headers: { "Content-Type": "application/json", "X-CSRFToken": csrf },
            body: JSON.stringify(body),
          });
          if (response.status === 410) { window.location.reload(); return; }
          // Acknowledged, or refused with a 4xx that sending again will not change (the form's submit still
          // carries the answer).
          if (response.status < 500) {
            if (pending[item] === body) delete pending[item];  // a newer answer meanwhile is sent next
            store();
            attempt = -1;
            continue;
          }
        } catch (error) {
          /* network, or given up: send again */
        } finally {
          clearTimeout(timer);
        }
        await new Promise((resolve) => {
          wake[item] = resolve;
          setTimeout(resolve, Math.min(8000, 500 * 2 ** attempt));
        });
        delete wake[item];
      }
    } finally {
      sending[item] = false;
    }
  }

  form.addEventListener("change", (event) => {
    const input = event.target;
    if (input.type !== "radio") return;
    const li = input.closest("li.item");
    const now = performance.now();
    const firstAnswer = !pending[li.dataset.item] && li.dataset.answered !== "yes";
    li.dataset.answered = "yes";
    li.classList.remove("missing");
    const itemError = li.querySelector(".item-error");
    if (itemError) itemError.remove();
    given += 1;
    const body = { item: Number(li.dataset.item), response: Number(input.value), rt_ms: Math.round(now - last),
                   writer: writer, seq: given };
    pending[body.item] = body;
    last = now;
    store();
    updateCount();
    send(body.item);
    if (cards && form.classList.contains("cards") && firstAnswer) cards.advanceSoon(items.indexOf(li));
  });

  // Answers a closed tab did not get acknowledged: show them and send them now.
  for (const body of Object.values(pending)) {
    const input = form.querySelector('input[name="item-' + body.item + '"][value="' + body.response + '"]');
    if (input) input.checked = true;
  }
  if (Object.keys(pending).length) updateCount();
  Object.values(pending).forEach((body) => send(body.item));

  function showUnanswered(unanswered) {
    let summary = document.getElementById("error-summary");
    if (!summary) {
      summary = document.createElement("div");
      summary.id = "error-summary";
      summary.className = "error-summary";
      summary.setAttribute("role", "alert");
      summary.tabIndex = -1;
      form.before(summary);
    }
    const heading = document.createElement("h2");
    heading.textContent = unanswered.length + (unanswered.length === 1 ? " statement" : " statements") +
      " not answered yet";
    const list = document.createElement("p");
    list.textContent = "Your other answers are saved. Please answer: ";
    for (const li of unanswered) {
      li.classList.add("missing");
      const link = document.createElement("a");
      link.href = "#" + li.id;
      link.textContent = "statement " + (Number(li.dataset.position) + 1);
      list.append(link, " ");
    }
    // textContent and append, not replaceChildren: Safari before 14 has no replaceChildren.
    summary.textContent = "";
    summary.append(heading, list);
    if (cards && form.classList.contains("cards")) cards.show(items.indexOf(unanswered[0]), false);
    unanswered[0].querySelector("input").focus();
  }

  const unansweredItems = () => [...form.querySelectorAll("li.item")].filter((li) => !li.querySelector("input:checked"));
  // The submit is held back only once the summary is shown: should a browser fail to build it, the form goes
  // to the server, which answers with the same summary, instead of a Continue button that does nothing.
  form.addEventListener("submit", (event) => {
    const unanswered = unansweredItems();
    if (!unanswered.length) {
      carryUnacknowledgedTimes();
      return;
    }
    showUnanswered(unanswered);
    event.preventDefault();
  });

  // The form carries each answer, but not the time spent on it: an answer whose autosave is still waiting for
  // the server (an outage, a slow network) would reach it without its time once the page is left. Its time
  // goes with the form instead, as rt-<item>.
  function carryUnacknowledgedTimes() {
    form.querySelectorAll("input.unacknowledged-time").forEach((input) => input.remove());
    for (const body of Object.values(pending)) {
      const ticked = form.querySelector('input[name="item-' + body.item + '"]:checked');
      if (!ticked || Number(ticked.value) !== body.response) continue;  // not the answer the form carries
      const input = document.createElement("input");
      input.type = "hidden";
      input.className = "unacknowledged-time";
      input.name = "rt-" + body.item;
      input.value = String(body.rt_ms);
      form.append(input);
    }
  }
  items.forEach((li) => { if (li.querySelector("input:checked")) li.dataset.answered = "yes"; });
  fitToScreen();
  NARROW.addEventListener("change", fitToScreen);
  const markedByServer = form.querySelector("li.item.missing input");
  if (markedByServer) markedByServer.focus();
})();
