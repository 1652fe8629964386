// The IAT in the browser: seven blocks designed on the server, run here without any network request
// inside a block. Each trial records the first response and its latency, and the latency to the correct
// response (after an error a red X shows until the correct one is given), both measured from the moment
// the stimulus is painted, with performance.now() and the input event's timestamp (same clock).
// Responses are the E and I keys or, on a touch screen, a tap on the left or right half (as Project
// Implicit's mobile IATs): the tap is timed at its pointerdown, like a key at its keydown. Every finger's
// touch counts, not only the primary pointer's: with two thumbs the second one touches while the first still
// rests, and ignoring it would add its time to the latency (more so in the harder blocks, biasing D). A touch
// gives one pointerdown, and each response is taken by one listener that is then removed, so a touch answers
// once. Each trial records which input answered it ("keyboard" or "touch"): tap latencies are longer than
// key latencies.
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
  const SIDE_KEYS = { left: "e", right: "i" };
  const INTER_TRIAL_MS = 250;
  // Taps are offered where a touch screen is present; their wording is used where touch is the main pointer.
  const touchOffered = config.touch_allowed && window.matchMedia("(any-pointer: coarse)").matches;
  const touchFirst = touchOffered && window.matchMedia("(pointer: coarse)").matches;
  if (touchOffered) root.classList.add("touch");
  const STIMULUS_GAP_PX = 16;

  // On a touch screen each category label is the top of its response area, and a combined block's label takes up
  // to four lines on a phone: the word (and the instructions' box) go below the lower of the two labels, or they
  // would be drawn over them and neither could be read (a slower, more error-prone response is what D measures).
  // Placed again whenever a label changes or the screen is resized or turned.
  function placeStimulus() {
    const top = root.getBoundingClientRect().top;
    let lowest = top;
    for (const label of [left, right]) {
      if (!label.textContent) continue;
      const text = document.createRange();
      text.selectNodeContents(label);
      lowest = Math.max(lowest, text.getBoundingClientRect().bottom);
    }
    const below = Math.ceil(lowest - top + STIMULUS_GAP_PX) + "px";
    stimulus.style.marginTop = below;
    message.style.top = below;
  }
  if (touchOffered) {
    const labelsChanged = new MutationObserver(placeStimulus);
    for (const label of [left, right]) {
      labelsChanged.observe(label, { childList: true, characterData: true, subtree: true });
    }
    window.addEventListener("resize", placeStimulus);
    placeStimulus();
    message.tabIndex = 0;  // a box that scrolls can be reached without a pointer too
  }

  // Targets and attributes differ in colour and in style (attributes in italics), so the two kinds stay apart for
  // a colour-blind participant too; a word takes the look of its category's label.
  const kindOf = new Map(config.categories.map((category) => [category.label, category.kind]));

  function labelNodes(labels) {
    const nodes = [];
    labels.forEach((label, n) => {
      if (n > 0) nodes.push(document.createTextNode("\nor\n"));
      const span = document.createElement("span");
      span.className = kindOf.get(label) || "";
      span.textContent = label;
      nodes.push(span);
    });
    return nodes;
  }

  function showLabels(block) {
    left.replaceChildren(...labelNodes(block.left_labels));
    right.replaceChildren(...labelNodes(block.right_labels));
  }

  // Before block 1, every category's words (as Project Implicit lists them before its IATs), above the block's
  // instructions.
  function preview() {
    const list = document.createElement("dl");
    list.id = "iat-preview";
    for (const category of config.categories) {
      const term = document.createElement("dt");
      term.className = category.kind;
      term.textContent = category.label;
      const words = document.createElement("dd");
      words.textContent = category.words.join(", ");
      list.append(term, words);
    }
    const heading = document.createElement("p");
    heading.textContent = "You will sort these words into their categories:";
    return [heading, list];
  }

  // Block 5 moves the target categories to the other sides: said before it starts, as Project Implicit does.
  function switchNotice(block) {
    const notice = document.createElement("p");
    notice.id = "iat-switch-notice";
    notice.textContent = "Watch out: the categories have switched sides. " +
      block.left_labels.join(" and ") + " is now on the left, " + block.right_labels.join(" and ") +
      " on the right.";
    return [notice];
  }

  // Resolves with the first accepted response: {key, timeStamp, modality}. A tap gives the key of the half
  // it landed on ("start" on a whole tap anywhere when waiting to start a block).
  function waitForResponse(accept) {
    return new Promise((resolve) => {
      function finish(event, key, modality) {
        event.preventDefault();
        document.removeEventListener("keydown", onKey);
        root.removeEventListener("pointerdown", onPointer);
        root.removeEventListener("click", onTapToStart);
        resolve({ key: key, timeStamp: event.timeStamp, modality: modality });
      }
      function onKey(event) {
        const key = event.key.toLowerCase();
        if (event.repeat || !accept(key)) return;
        finish(event, key, "keyboard");
      }
      // A block starts on a finished tap (a click), not on a finger coming down: a participant scrolling through
      // the instructions on a small screen touches the page without meaning to start. The tap must also have begun
      // after the prompt: a thumb still resting from the last trial lifts into a click too.
      let touchedSincePrompt = false;
      function onPointer(event) {
        if (!touchOffered || event.pointerType === "mouse") return;
        if (accept("start")) {
          touchedSincePrompt = true;
          return;
        }
        const half = event.target.closest("[data-side]");
        const key = half && SIDE_KEYS[half.dataset.side];
        if (!key || !accept(key)) return;
        finish(event, key, "touch");
      }
      function onTapToStart(event) {
        if (!touchOffered || event.pointerType === "mouse" || !accept("start") || !touchedSincePrompt) return;
        finish(event, "start", "touch");
      }
      document.addEventListener("keydown", onKey);
      root.addEventListener("pointerdown", onPointer);
      root.addEventListener("click", onTapToStart);
    });
  }

  function painted() {
    // Resolves just after the next frame is painted: the stimulus is then on screen.
    return new Promise((resolve) => requestAnimationFrame(() => setTimeout(() => resolve(performance.now()), 0)));
  }

  const KEY_INSTRUCTIONS =
    "Put your left finger on E for items that belong to the category on the left,\n" +
    "and your right finger on I for items that belong to the category on the right.\n" +
    "If you make an error, a red ✖ appears: press the other key to continue.\n" +
    "Go as fast as you can while making as few errors as possible.\n\nPress the space bar to begin.";
  const TAP_INSTRUCTIONS =
    "Tap the left side for items that belong to the category on the left,\n" +
    "and the right side for items that belong to the category on the right.\n" +
    "If you make an error, a red ✖ appears: tap the other side to continue.\n" +
    "Go as fast as you can while making as few errors as possible.\n\nTap anywhere to begin.";

  const sleep = (ms) => new Promise((resolve) => setTimeout(resolve, ms));

  async function runTrial(trial) {
    errorMark.hidden = true;
    stimulus.className = trial.stimulus_category.startsWith("target") ? "target" : "attribute";
    stimulus.textContent = trial.stimulus;
    // Listen from the moment the word is set, so a key pressed before the paint is not lost
    // (it is recorded as 0 ms, an anticipation, which the D-score rules screen).
    const firstResponse = waitForResponse((key) => key in KEYS);
    const onset = await painted();
    const record = { index: trial.index, stimulus: trial.stimulus, first_key: null, modality: null,
                     latency_first_ms: null, latency_correct_ms: null };
    for (let pending = firstResponse; ; pending = waitForResponse((key) => key in KEYS)) {
      const response = await pending;
      const key = response.key;
      const latency = Math.max(0, response.timeStamp - onset);
      if (record.first_key === null) {
        record.first_key = key;
        record.modality = response.modality;
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
    if (!config.touch_allowed && window.matchMedia("(pointer: coarse)").matches &&
        !window.matchMedia("(any-pointer: fine)").matches) {
      // Reached only without the consent page's check (e.g. consent given with scripts off): say what to do
      // rather than wait for keys that cannot come. Nothing of the IAT is stored until a block is posted.
      message.textContent = "This study needs a keyboard for this task. Your answers so far are saved: " +
        "open this same link on a computer with a keyboard to go on.";
      return;
    }
    for (const block of config.blocks) {
      if (block.number < config.start_block) continue;
      showLabels(block);
      stimulus.textContent = "";
      const blockName = "Block " + block.number + " of " + config.blocks.length;
      progress.textContent = blockName + " · " + block.trials.length + " trials";
      const orientation = block.number === 1 ? preview()
        : block.kind === "reversed_target_practice" ? switchNotice(block) : [];
      message.replaceChildren(...orientation, "Block " + block.number + " of " + config.blocks.length + "\n\n" +
        (touchFirst ? TAP_INSTRUCTIONS : KEY_INSTRUCTIONS));
      root.classList.add("waiting");
      await waitForResponse((key) => key === " " || key === "start");
      root.classList.remove("waiting");
      message.textContent = "";
      // Instructions read further down the page leave it scrolled: the labels and the word must be in view.
      if (root.getBoundingClientRect().top < 0) root.scrollIntoView();
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
