// The coder's excerpt page: every tick and the memo are saved at once, keyboard shortcuts, and nothing lost on
// a closed tab.
//
// Each save posts the excerpt's full state (codes and memo) as JSON to the form's save URL, one request at a
// time; a change made meanwhile is sent after it, so the last state wins. A network error or a 5xx is shown and
// sent again with backoff (with the newest state); the state is kept in localStorage until the server has
// acknowledged it, so a tab closed while the server was away sends it when the excerpt is opened again (a tab
// still open keeps its own: tabs ask each other on a BroadcastChannel before one takes a kept change over). On
// pagehide an unsaved state is sent with keepalive. Each save carries the revision it changes: when another
// device or tab saved the excerpt since (409 with "conflict"), the page shows what is stored and names the change
// it could not save, so nothing is overwritten and nothing is lost without a word. Another 409 (the round was
// closed) or 4xx is shown and not retried, except when the browser's session is not the page's (401 ended, 403
// another account or a CSRF refusal): that is shown and sent again until the coder has logged in. Without JavaScript the form posts as usual and the server saves and moves on.
(function () {
  "use strict";
  const form = document.getElementById("coding-form");
  if (!form) return;
  const saveUrl = form.dataset.saveUrl;
  const previousUrl = form.dataset.previousUrl;
  const nextUrl = form.dataset.nextUrl;
  const pageCsrfToken = form.querySelector("input[name=csrfmiddlewaretoken]").value;
  const memo = document.getElementById("memo");
  const status = document.getElementById("save-status");
  const codedCount = document.getElementById("coded-count");
  const codes = document.getElementById("codes");
  const help = document.getElementById("keys-help");
  const checkboxes = Array.from(form.querySelectorAll("input[name=code]"));
  // Per coder: two researchers coding the same round in one browser share the save URL of their account's pages.
  const coderId = Number(form.dataset.coder);
  const storageKey = "coding-pending:" + coderId + ":" + saveUrl;
  const MEMO_DELAY_MS = 700;

  let acknowledged = JSON.stringify(currentState());
  let revision = Number(form.dataset.revision || 0);
  // This load of the page, and the number of its saves: the server keeps this page's later state when an earlier
  // save of the same page arrives after it (a keepalive overtaking a save in flight).
  let writer = (window.crypto && crypto.randomUUID) ? crypto.randomUUID() : String(Math.random()).slice(2);
  let seq = 0;
  let confirmWanted = false;
  let leaveTo = null;
  let leaving = false;
  let running = false;
  let closed = false;
  let memoTimer = null;
  let restoring = true;  // until a change kept from an earlier load is put back (restorePending)

  const sleep = (ms) => new Promise((resolve) => setTimeout(resolve, ms));

  function currentState() {
    return {
      codes: checkboxes.filter((box) => box.checked).map((box) => Number(box.value)).sort((a, b) => a - b),
      memo: memo.value,
    };
  }
  function remember(state) {
    // The revision the change was made on: sent again later, it cannot overwrite a newer save.
    const kept = { codes: state.codes, memo: state.memo, revision: revision, writer: writer, seq: seq + 1 };
    try { localStorage.setItem(storageKey, JSON.stringify(kept)); } catch (error) { /* private mode */ }
  }
  function forget() {
    try { localStorage.removeItem(storageKey); } catch (error) { /* private mode */ }
  }
  function remembered() {
    try { return JSON.parse(localStorage.getItem(storageKey) || "null"); } catch (error) { return null; }
  }
  function show(text, failed) {
    status.textContent = text;
    status.classList.toggle("failed", Boolean(failed));
  }
  // Read at each save: logging in again (after a session ended) gives the browser a new CSRF token, which the
  // form's copy from this page's load no longer matches.
  function csrfToken() {
    const cookie = document.cookie.split("; ").find((part) => part.startsWith("csrftoken="));
    return cookie ? decodeURIComponent(cookie.slice("csrftoken=".length)) : pageCsrfToken;
  }
  function post(state, confirm, keepalive) {
    seq += 1;
    const body = { codes: state.codes, memo: state.memo, confirm: confirm, revision: revision, writer: writer,
                   seq: seq, coder: coderId };
    return fetch(saveUrl, {
      method: "POST", credentials: "same-origin", keepalive: Boolean(keepalive), body: JSON.stringify(body),
      headers: { "Content-Type": "application/json", "Accept": "application/json", "X-CSRFToken": csrfToken() },
    });
  }
  function closeDown(message) {
    closed = true;
    forget();
    show(message, true);
    form.querySelectorAll("input, textarea, button").forEach((control) => { control.disabled = true; });
  }

  async function answerData(response) {
    try { return await response.json(); } catch (error) { return null; }
  }

  // Send one state until the server answers it: the answer's data, or null when it was refused.
  async function send(confirm) {
    for (let attempt = 0; ; attempt++) {
      const state = currentState();
      remember(state);
      let response = null;
      try { response = await post(state, confirm, false); } catch (error) { /* network */ }
      // The answer's JSON, read once (null: none, or not JSON).
      const answer = response && !response.redirected ? await answerData(response) : null;
      const data = response && response.ok ? answer : null;
      if (data && Number.isInteger(data.revision)) {
        // Superseded: a later save of this page was stored first; what is stored is what this page has
        // acknowledged, and drain() sends the page's state again if it differs.
        acknowledged = JSON.stringify(data.superseded ? { codes: data.stored.codes, memo: data.stored.memo } : state);
        revision = data.revision;
        if (JSON.stringify(currentState()) === acknowledged) forget();
        codedCount.textContent = data.progress.confirmed + " of " + data.progress.total + " coded";
        show("Saved.");
        return data;
      }
      // The browser's session is not this page's (it ended: 401; another account logged in: 403 "wrong_coder";
      // a CSRF refusal, a 403 page that is not JSON): kept and sent again once the coder has logged in.
      if (response && (response.status === 401 || (response.status === 403 && (!answer || answer.wrong_coder)))) {
        show((answer && answer.error) || "Not saved yet: this browser's session does not match this page (log " +
             "in again, or reload the page). Your change is kept here and sent again…", true);
        await sleep(Math.min(8000, 500 * 2 ** attempt));
        if (closed) return null;
        continue;
      }
      if (response && response.status === 409) {
        if (answer && answer.conflict) showStored(answer, state);
        else closeDown((answer && answer.error) || response.statusText);
        return null;
      }
      if (response && response.status >= 400 && response.status < 500) {
        show("Not saved: " + ((answer && answer.error) || response.statusText), true);
        return null;
      }
      show("Not saved yet: the server did not answer as expected. Your codes are kept on this page and sent " +
           "again…", true);
      await sleep(Math.min(8000, 500 * 2 ** attempt));
      if (closed) return null;
    }
  }

  function codeNames(ids) {
    return checkboxes.filter((box) => ids.includes(Number(box.value)))
      .map((box) => box.labels[0].textContent.replace(box.dataset.key || "", "").trim());
  }
  // Another device or tab saved this excerpt since this page's revision: show what is stored, and the change
  // this page could not save, in words the coder can act on.
  function showStored(data, unsaved) {
    const stored = data.stored;
    checkboxes.forEach((box) => { box.checked = stored.codes.includes(Number(box.value)); });
    memo.value = stored.memo;
    revision = stored.revision;
    acknowledged = JSON.stringify(currentState());
    forget();
    const codesText = codeNames(unsaved.codes).join(", ") || "none";
    show("Changed on another device or tab: this page now shows what is saved there. Your change was not saved " +
         "(codes: " + codesText + (unsaved.memo ? "; memo: " + unsaved.memo : "") + ").", true);
  }

  async function drain() {
    while (!closed) {
      const confirm = confirmWanted;
      if (!confirm && JSON.stringify(currentState()) === acknowledged) break;
      confirmWanted = false;
      const data = await send(confirm);
      if (!data) return false;
      if (confirm) leaveTo = data.next_url;
    }
    if (leaveTo && !closed) window.location.assign(leaveTo);
    return true;
  }
  function schedule() {
    if (running || closed) return;
    running = true;
    // A refused save, or anything unexpected, leaves the page usable: the keys and buttons work again.
    drain().catch(() => {
      show("Not saved: something went wrong on this page. Your change is kept here; reload the page to send it.",
           true);
      return false;
    }).then((went) => {
      if (!went) {
        leaveTo = null;
        leaving = false;
      }
    }).finally(() => { running = false; });
  }
  function flushMemo() {
    clearTimeout(memoTimer);
    memoTimer = null;
    schedule();
  }
  function leave(url) {
    if (!url || leaving || closed) return;
    leaving = true;
    leaveTo = url;
    clearTimeout(memoTimer);
    if (running) return;  // the running save goes there when it is done
    schedule();
  }
  function confirmAndNext() {
    if (leaving || closed) return;
    leaving = true;
    confirmWanted = true;
    clearTimeout(memoTimer);
    schedule();
  }

  checkboxes.forEach((box) => box.addEventListener("change", schedule));
  memo.addEventListener("input", () => {
    clearTimeout(memoTimer);
    memoTimer = setTimeout(flushMemo, MEMO_DELAY_MS);
  });
  memo.addEventListener("blur", flushMemo);

  // A closed tab or a phone putting the page away: send what the server has not acknowledged, without waiting.
  function sendBeforeLeaving() {
    if (closed || JSON.stringify(currentState()) === acknowledged) return;
    const state = currentState();
    remember(state);
    try { post(state, false, true); } catch (error) { /* kept in localStorage */ }
  }
  window.addEventListener("pagehide", sendBeforeLeaving);
  document.addEventListener("visibilitychange", () => {
    if (document.visibilityState === "hidden") sendBeforeLeaving();
  });

  form.addEventListener("submit", (event) => {
    event.preventDefault();
    const go = event.submitter ? event.submitter.value : "confirm";
    if (go === "previous") leave(previousUrl);
    else if (go === "next") leave(nextUrl);
    else confirmAndNext();
  });

  document.addEventListener("keydown", (event) => {
    if (event.ctrlKey || event.metaKey || event.altKey) return;
    const target = event.target;
    if (target === memo) {
      if (event.key === "Escape") {
        event.preventDefault();
        memo.blur();
        codes.focus();
      }
      return;  // typing in the memo: keys are text
    }
    if (target.isContentEditable || target.tagName === "TEXTAREA" || target.tagName === "SELECT" ||
        (target.tagName === "INPUT" && target.type !== "checkbox")) return;
    if (event.key === "Enter" && (target.tagName === "BUTTON" || target.tagName === "A" || target.tagName === "SUMMARY")) {
      return;  // the focused control's own action
    }
    if (event.repeat || leaving || closed || restoring) return;
    if (event.key === "?" || (event.key === "Escape" && help.open)) {
      event.preventDefault();
      help.open = event.key === "?" && !help.open;
      if (help.open) help.querySelector("summary").focus();
      else codes.focus();  // back where Enter confirms
      return;
    }
    if (event.key === "Enter") {
      event.preventDefault();
      confirmAndNext();
      return;
    }
    if (event.key === "p" || event.key === "n") {
      event.preventDefault();
      leave(event.key === "p" ? previousUrl : nextUrl);
      return;
    }
    if (event.key === "m") {
      event.preventDefault();
      memo.focus();
      return;
    }
    const box = checkboxes.find((candidate) => candidate.dataset.key === event.key);
    if (box) {
      event.preventDefault();
      box.checked = !box.checked;
      box.dispatchEvent(new Event("change"));
    }
  });

  // The tabs of this excerpt talk on a channel: a page still open answers for the change it keeps, so a tab
  // opened meanwhile leaves that change to it instead of taking it over (and both saving as one page).
  const channel = "BroadcastChannel" in window ? new BroadcastChannel(storageKey) : null;
  if (channel) {
    channel.addEventListener("message", (event) => {
      if (event.data && event.data.ask === writer && !closed) channel.postMessage({ alive: writer });
    });
  }
  function stillOpen(owner) {
    if (!channel) return Promise.resolve(false);
    return new Promise((resolve) => {
      const timer = setTimeout(() => done(false), 300);
      function listen(event) { if (event.data && event.data.alive === owner) done(true); }
      function done(alive) {
        clearTimeout(timer);
        channel.removeEventListener("message", listen);
        resolve(alive);
      }
      channel.addEventListener("message", listen);
      channel.postMessage({ ask: owner });
    });
  }

  // An answer the server never acknowledged (the tab was closed while it was away): put it back and send it,
  // unless the tab that made it is still open and sending it.
  async function restorePending() {
    const pending = remembered();
    const pendingState = pending && JSON.stringify({ codes: pending.codes, memo: pending.memo });
    if (!pending || pendingState === acknowledged || !Array.isArray(pending.codes)) {
      if (pending) forget();
      return;
    }
    const owned = typeof pending.writer === "string" && Number.isInteger(pending.seq);
    if (owned && await stillOpen(pending.writer)) {
      show("Another tab of this excerpt is still sending a change; this one shows what is saved.");
      return;
    }
    checkboxes.forEach((box) => { box.checked = pending.codes.includes(Number(box.value)); });
    memo.value = typeof pending.memo === "string" ? pending.memo : memo.value;
    if (Number.isInteger(pending.revision)) revision = pending.revision;  // what the change was made on
    // Sent again as the page that made it: its own later saves, if any landed, are not overwritten.
    if (owned) {
      writer = pending.writer;
      seq = pending.seq - 1;
    }
    schedule();
  }
  restorePending().finally(() => {
    restoring = false;
    form.dataset.ready = "true";  // for tests: the keys are listened to from here on
  });
})();
