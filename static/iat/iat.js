// The IAT in the browser: seven blocks designed on the server, run here without any network request
// inside a block. Each trial records the first key pressed and its latency, and the latency to the
// correct key (after an error a red X shows until the correct key is pressed), both measured from the
// moment the stimulus is painted, with performance.now() and the key event's timestamp (same clock).
// A finished block is posted, retried until the server acknowledges it; a reload restarts the
// interrupted block, since only acknowledged blocks are stored.
(function () {
  "use strict";
  const config = JSON.parse(document.getElementById("iat-config").textContent);
  const csrf = document.querySelector("input[name=csrfmiddlewaretoken]").value;
  const root = document.getElementById("iat");
  const left = document.getElementById("iat-left");
  const right = document.getElementById("iat-right");
  const stimulus = document.getElementById("iat-stimulus");
  const errorMark = document.getElementById("iat-error");
  const message = document.getElementById("iat-message");
  const progress = document.getElementById("iat-progress");
  const KEYS = { e: "left", i: "right" };
  const INTER_TRIAL_MS = 250;

  function showLabels(block) {
    left.textContent = block.left_labels.join("\nor\n");
    right.textContent = block.right_labels.join("\nor\n");
  }

  function waitForKey(accept) {
    return new Promise((resolve) => {
      function onKey(event) {
        if (event.repeat || !accept(event.key.toLowerCase())) return;
        event.preventDefault();
        document.removeEventListener("keydown", onKey);
        resolve(event);
      }
      document.addEventListener("keydown", onKey);
    });
  }

  function painted() {
    // Resolves just after the next frame is painted: the stimulus is then on screen.
    return new Promise((resolve) => requestAnimationFrame(() => setTimeout(() => resolve(performance.now()), 0)));
  }

  const sleep = (ms) => new Promise((resolve) => setTimeout(resolve, ms));

  async function runTrial(trial) {
    errorMark.hidden = true;
    stimulus.textContent = trial.stimulus;
    // Listen from the moment the word is set, so a key pressed before the paint is not lost
    // (it is recorded as 0 ms, an anticipation, which the D-score rules screen).
    const firstKey = waitForKey((key) => key in KEYS);
    const onset = await painted();
    const record = { index: trial.index, stimulus: trial.stimulus, first_key: null,
                     latency_first_ms: null, latency_correct_ms: null };
    for (let pending = firstKey; ; pending = waitForKey((key) => key in KEYS)) {
      const event = await pending;
      const key = event.key.toLowerCase();
      const latency = Math.max(0, event.timeStamp - onset);
      if (record.first_key === null) {
        record.first_key = key;
        record.latency_first_ms = latency;
      }
      if (KEYS[key] === trial.correct_side) {
        record.latency_correct_ms = latency;
        break;
      }
      errorMark.hidden = false;
    }
    errorMark.hidden = true;
    stimulus.textContent = "";
    return record;
  }

  async function postBlock(number, trials) {
    const body = JSON.stringify({ block: number, trials: trials });
    for (let attempt = 0; ; attempt++) {
      try {
        const response = await fetch(config.post_url, {
          method: "POST", credentials: "same-origin",
          headers: { "Content-Type": "application/json", "X-CSRFToken": csrf }, body: body,
        });
        if (response.ok) return response.json();
        if (response.status === 409 || response.status === 400 || response.status === 410) {
          // The server holds a different state (another tab finished this block, or the participant
          // withdrew): start again from it.
          window.location.reload();
          return new Promise(() => {});
        }
      } catch (error) { /* network: retry */ }
      message.textContent = "Saving… (please keep this page open)";
      await sleep(Math.min(8000, 500 * 2 ** attempt));
    }
  }

  async function run() {
    root.focus();
    for (const block of config.blocks) {
      if (block.number < config.start_block) continue;
      showLabels(block);
      stimulus.textContent = "";
      const blockName = "Block " + block.number + " of " + config.blocks.length;
      progress.textContent = blockName + " · " + block.trials.length + " trials";
      message.textContent = "Block " + block.number + " of " + config.blocks.length + "\n\n" +
        "Put your left finger on E for items that belong to the category on the left,\n" +
        "and your right finger on I for items that belong to the category on the right.\n" +
        "If you make an error, a red ✖ appears: press the other key to continue.\n" +
        "Go as fast as you can while making as few errors as possible.\n\nPress the space bar to begin.";
      await waitForKey((key) => key === " ");
      message.textContent = "";
      await sleep(INTER_TRIAL_MS);
      const records = [];
      for (const [position, trial] of block.trials.entries()) {
        progress.textContent = blockName + " · trial " + (position + 1) + " of " + block.trials.length;
        records.push(await runTrial(trial));
        await sleep(INTER_TRIAL_MS);
      }
      await postBlock(block.number, records);
      message.textContent = "";
    }
    left.textContent = right.textContent = progress.textContent = "";
    message.textContent = "Done. Continuing…";
    window.location.assign(config.next_url);
  }

  run();
})();
