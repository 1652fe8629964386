/* The classification dashboard's "read the unparseable replies again with the verbal rules" button: POST
   /api/audits/{id}/extractions/ {"mode": "rules"}, then poll the extraction until a worker has finished it, and
   show the metrics with it (?outcomes=extraction:<id>). Requests go through the dashboard's own helper
   (window.AuditDashboard.request, audit_dashboard.js). */
(function () {
  "use strict";
  var box = document.getElementById("rules-extraction");
  if (!box || !window.AuditDashboard) { return; }
  var request = window.AuditDashboard.request;
  var button = document.getElementById("rules-extraction-button");
  var note = document.getElementById("rules-extraction-message");
  var POLL_MS = 2000;

  function say(text, kind) {
    note.textContent = text;
    note.className = "message" + (kind ? " " + kind : "");
    note.hidden = !text;
  }

  function watch(id) {
    request(box.getAttribute("data-url")).then(function (extractions) {
      var extraction = extractions.filter(function (e) { return e.id === id; })[0];
      if (!extraction) { throw new Error("the extraction is gone"); }
      if (extraction.status === "completed") {
        say("Done: " + extraction.coverage + ". Showing the metrics with it…", "ok");
        var url = new URL(window.location.href);
        url.searchParams.set("outcomes", "extraction:" + id);
        window.location.assign(url.toString());
      } else if (extraction.status === "failed") {
        say("The extraction " + extraction.status + ": " + extraction.status_reason, "error");
        button.disabled = false;
      } else {
        say("A worker is reading the replies (" + extraction.coverage + ")…", "");
        window.setTimeout(function () { watch(id); }, POLL_MS);
      }
    }).catch(function (error) { say(error.message, "error"); button.disabled = false; });
  }

  button.addEventListener("click", function () {
    button.disabled = true;
    say("Asking a worker…", "");
    request(box.getAttribute("data-url"), {method: "POST", json: {mode: "rules"}})
      .then(function (extraction) { watch(extraction.id); })
      .catch(function (error) { say(error.message, "error"); button.disabled = false; });
  });
}());
