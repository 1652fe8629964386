// A study that needs a keyboard: a device whose every pointer is coarse (a phone or tablet with no mouse or
// trackpad, hence as a rule no keyboard) is told so and cannot go on (join through the open link, or consent),
// so no participant is stranded at the IAT. The forms that go on carry data-keyboard-gate: on such a device
// they are hidden and their buttons disabled; on any other they are shown (the open link's form starts
// hidden, so that without scripts nobody joins a study whose IAT cannot run). The server makes no guess of
// its own: without this script the notice still says what is needed.
(function () {
  "use strict";
  const touchOnly = window.matchMedia("(pointer: coarse)").matches &&
    !window.matchMedia("(any-pointer: fine)").matches;
  document.getElementById("no-keyboard").hidden = !touchOnly;
  for (const gate of document.querySelectorAll("[data-keyboard-gate]")) {
    gate.hidden = touchOnly;
    for (const button of gate.querySelectorAll("button")) button.disabled = touchOnly;
  }
})();
