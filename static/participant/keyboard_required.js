// A study that needs a keyboard: a device whose every pointer is coarse (a phone or tablet with no mouse or
// trackpad, hence as a rule no keyboard) is told so and cannot consent, so no participant is stranded at the
// IAT. The server makes no guess of its own: without this script the notice above still says what is needed.
(function () {
  "use strict";
  const touchOnly = window.matchMedia("(pointer: coarse)").matches &&
    !window.matchMedia("(any-pointer: fine)").matches;
  if (!touchOnly) return;
  document.getElementById("no-keyboard").hidden = false;
  document.getElementById("consent-form").hidden = true;
  document.getElementById("consent-button").disabled = true;
})();
