// Keyboard shortcuts for the label buttons (0, 1, u), ignored while typing a reason.
(function () {
  "use strict";
  const form = document.getElementById("label-form");
  if (!form) return;
  let sent = false;
  form.addEventListener("submit", () => { sent = true; });
  document.addEventListener("keydown", (event) => {
    if (sent || event.repeat || event.ctrlKey || event.metaKey || event.altKey) return;
    if (event.target.tagName === "TEXTAREA" || event.target.tagName === "INPUT") return;
    const button = form.querySelector('button[data-key="' + event.key.toLowerCase() + '"]');
    if (button) {
      event.preventDefault();
      sent = true;
      form.requestSubmit(button);
    }
  });
})();
