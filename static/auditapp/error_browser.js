/* The error browser of a classification audit (templates/auditapp/_error_browser.html): fetches
   GET /api/audits/{id}/judged-replies/ with the form's filters, shows 50 rows a page, keeps the CSV link and the
   "start a round" link in step with the filters (requests through window.AuditDashboard.request,
   audit_dashboard.js). Model output is only ever set as textContent. */
(function () {
  "use strict";
  var section = document.getElementById("error-browser");
  if (!section || !window.AuditDashboard) { return; }
  var request = window.AuditDashboard.request;
  var form = document.getElementById("error-filters");
  var body = document.querySelector("#error-table tbody");
  var count = document.getElementById("error-count");
  var previous = document.getElementById("error-previous");
  var next = document.getElementById("error-next");
  var PAGE_SIZE = 50;
  var page = 1;
  var serial = 0;

  function filters() {
    var params = new URLSearchParams();
    Array.prototype.forEach.call(form.elements, function (field) {
      if (field.name && field.value) { params.set(field.name, field.value); }
    });
    return params;
  }

  function cell(tr, text, className) {
    var td = document.createElement("td");
    td.textContent = text === null || text === undefined || text === "" ? "—" : String(text);
    if (className) { td.className = className; }
    tr.appendChild(td);
    return td;
  }

  function row(reply) {
    var tr = document.createElement("tr");
    tr.setAttribute("data-request", reply.request_id);
    if (reply.correct === false) { tr.className = "wrong"; }
    cell(tr, reply.item);
    var sentence = cell(tr, reply.text, "text");
    if (reply.preceding || reply.following) {
      sentence.title = [reply.preceding, reply.text, reply.following].filter(Boolean).join(" ");
    }
    cell(tr, reply.model_label);
    cell(tr, reply.condition);
    cell(tr, reply.weighted_label, "num");
    cell(tr, reply.majority_label, "num");
    cell(tr, reply.label, "num");
    var right = cell(tr, reply.correct === true ? "✓ right" : reply.correct === false ? "✗ wrong" : "—", "correct");
    right.setAttribute("data-correct", String(reply.correct));
    cell(tr, reply.explanation, "note");
    cell(tr, reply.outcome + (reply.parse_reason && reply.outcome !== "label" ? ": " + reply.parse_reason : ""));
    return tr;
  }

  function links(params) {
    var exported = new URLSearchParams(params);
    exported.delete("page");
    exported.set("format", "csv");
    document.getElementById("error-export").href = section.getAttribute("data-url") + "?" + exported.toString();
    var round = document.getElementById("error-round");
    if (!round) { return; }
    var drawn = new URLSearchParams(section.getAttribute("data-round-url").split("?")[1]);
    if (params.get("disagrees") === "weighted") { drawn.set("eligible", "disagree"); }
    if (params.get("model")) { drawn.set("models_included", params.get("model")); }
    if (params.get("condition")) { drawn.set("conditions_included", params.get("condition")); }
    round.href = section.getAttribute("data-round-url").split("?")[0] + "?" + drawn.toString();
  }

  function load() {
    var params = filters();
    links(params);
    params.set("page", page);
    params.set("page_size", PAGE_SIZE);
    var mine = ++serial;
    previous.disabled = next.disabled = true;
    request(section.getAttribute("data-url") + "?" + params.toString())
      .then(function (payload) {
        if (mine !== serial) { return; }
        body.textContent = "";
        payload.results.forEach(function (reply) { body.appendChild(row(reply)); });
        if (!payload.results.length) {
          var empty = cell(document.createElement("tr"), "No reply matches these filters.", "empty");
          empty.colSpan = 10;
          body.appendChild(empty.parentNode);
        }
        var first = (page - 1) * PAGE_SIZE + 1;
        count.textContent = payload.count ? payload.count + " repl" + (payload.count === 1 ? "y" : "ies") +
          " match; showing " + first + "–" + (first + payload.results.length - 1) + "." : "";
        previous.disabled = page <= 1;
        next.disabled = !payload.next;
      }, function (error) {
        if (mine !== serial) { return; }
        count.textContent = "The replies could not be loaded: " + error.message;
      });
  }

  form.addEventListener("submit", function (event) { event.preventDefault(); page = 1; load(); });
  Array.prototype.forEach.call(form.querySelectorAll("select"), function (select) {
    select.addEventListener("change", function () { page = 1; load(); });
  });
  previous.addEventListener("click", function () { page -= 1; load(); });
  next.addEventListener("click", function () { page += 1; load(); });
  load();
}());
