// A study's admin page: the "Copy the link" button beside the open link. The button is hidden without script (the
// link is then selected and copied by hand); the clipboard API needs a secure page (https or localhost), so
// elsewhere the link is selected and copied the older way, and if that fails too the status says what to do.
(function () {
  "use strict";
  // The admin puts a page's scripts in its head: wait for the page.
  if (document.readyState === "loading") {
    document.addEventListener("DOMContentLoaded", start);
  } else {
    start();
  }
  function start() {
    document.querySelectorAll("button[data-copy]").forEach((button) => {
      const field = document.getElementById(button.dataset.copy);
      const status = document.getElementById(button.id + "-status");
      button.hidden = false;
      button.addEventListener("click", async () => {
        let copied = false;
        try {
          await navigator.clipboard.writeText(field.value);
          copied = true;
        } catch (error) {
          field.select();
          copied = document.execCommand("copy");
        }
        status.textContent = copied ? "Copied." : "Copying is blocked here: the link is selected, press Ctrl+C (⌘C).";
        if (!copied) field.select();
      });
    });
  }
})();
