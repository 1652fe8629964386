/* The browsers of judged units on audit dashboards (templates/auditapp/_error_browser.html for classification,
   and each paradigm's own section of class "judged-browser"): fetches the section's data-url with its form's
   filters, shows 50 rows a page, keeps the CSV link (and a round link, where the section has one) in step with
   the filters. Requests go through window.AuditDashboard.request (audit_dashboard.js).

   The section's table head says how to show each row: every <th> has data-key (the row's field), an optional
   data-class (the cell's class; "num" right-aligns); a yes/no field has data-true and data-false (what the cell
   says) and, on the one that marks a row, data-mark (the value that shades the row, e.g. "false" for a wrong
   reply). The cell of a yes/no field carries data-<key>="true|false|null" for scripts and tests. A number field
   may have data-digits: the most decimals shown (the API and the CSV keep every one). Any other field may name in
   data-else the field that says why it is empty (shown instead of "—"). A row's
   preceding and following fields, where it has them, are the text cell's tooltip. Model output is only ever set
   as textContent. */
(function () {
  "use strict";
  if (!window.AuditDashboard) { return; }
  var request = window.AuditDashboard.request;
  var PAGE_SIZE = 50;

  function cell(tr, text, className) {
    var td = document.createElement("td");
    td.textContent = text === null || text === undefined || text === "" ? "—" : String(text);
    if (className) { td.className = className; }
    tr.appendChild(td);
    return td;
  }

  function columnsOf(section) {
    return Array.prototype.map.call(section.querySelectorAll("thead th[data-key]"), function (th) {
      return {key: th.getAttribute("data-key"), className: th.getAttribute("data-class") || "",
              yes: th.getAttribute("data-true"), no: th.getAttribute("data-false"),
              mark: th.getAttribute("data-mark"), digits: th.getAttribute("data-digits"),
              otherwise: th.getAttribute("data-else")};
    });
  }

  function rowOf(columns, unit) {
    var tr = document.createElement("tr");
    if (unit.request_id !== undefined) { tr.setAttribute("data-request", unit.request_id); }
    columns.forEach(function (column) {
      var value = unit[column.key];
      if (column.yes !== null) {
        var flag = cell(tr, value === true ? column.yes : value === false ? column.no : "—", column.className);
        flag.setAttribute("data-" + column.key, String(value === undefined ? null : value));
        if (column.mark !== null && String(value) === column.mark) { tr.className = "marked"; }
        return;
      }
      if ((value === null || value === undefined || value === "") && column.otherwise) {
        value = unit[column.otherwise];
      }
      if (column.digits !== null && typeof value === "number") {
        value = Number(value.toFixed(Number(column.digits)));
      }
      if (column.key === "outcome" && unit.parse_reason && value !== "label" && value !== "score") {
        value = value + ": " + unit.parse_reason;
      }
      var td = cell(tr, value, column.className);
      if (column.key === "text" && (unit.preceding || unit.following)) {
        td.title = [unit.preceding, unit.text, unit.following].filter(Boolean).join(" ");
      }
    });
    return tr;
  }

  function roundLink(section, params) {
    var round = section.querySelector(".judged-round");
    if (!round) { return; }
    var base = section.getAttribute("data-round-url").split("?");
    var drawn = new URLSearchParams(base[1]);
    if (params.get("disagrees") === "weighted") { drawn.set("eligible", "disagree"); }
    if (params.get("model")) { drawn.set("models_included", params.get("model")); }
    if (params.get("condition")) { drawn.set("conditions_included", params.get("condition")); }
    round.href = base[0] + "?" + drawn.toString();
  }

  function browse(section) {
    var form = section.querySelector("form.judged-filters");
    var body = section.querySelector("table.judged-table tbody");
    var count = section.querySelector(".judged-count");
    var previous = section.querySelector(".judged-previous");
    var next = section.querySelector(".judged-next");
    var columns = columnsOf(section);
    var nouns = (section.getAttribute("data-nouns") || "reply|replies").split("|");
    var page = 1;
    var serial = 0;

    function filters() {
      var params = new URLSearchParams();
      Array.prototype.forEach.call(form.elements, function (field) {
        if (field.name && field.value && !(field.type === "checkbox" && !field.checked)) {
          params.set(field.name, field.value);
        }
      });
      return params;
    }

    function load() {
      var params = filters();
      var exported = new URLSearchParams(params);
      exported.set("format", "csv");
      section.querySelector(".judged-export").href = section.getAttribute("data-url") + "?" + exported.toString();
      roundLink(section, params);
      params.set("page", page);
      params.set("page_size", PAGE_SIZE);
      var mine = ++serial;
      previous.disabled = next.disabled = true;
      request(section.getAttribute("data-url") + "?" + params.toString())
        .then(function (payload) {
          if (mine !== serial) { return; }
          body.textContent = "";
          payload.results.forEach(function (unit) { body.appendChild(rowOf(columns, unit)); });
          if (!payload.results.length) {
            var empty = cell(document.createElement("tr"), "Nothing matches these filters.", "empty");
            empty.colSpan = columns.length;
            body.appendChild(empty.parentNode);
          }
          var first = (page - 1) * PAGE_SIZE + 1;
          count.textContent = payload.count ? payload.count + " " + nouns[payload.count === 1 ? 0 : 1] +
            " match; showing " + first + "–" + (first + payload.results.length - 1) + "." : "";
          previous.disabled = page <= 1;
          next.disabled = !payload.next;
        }, function (error) {
          if (mine !== serial) { return; }
          count.textContent = "These rows could not be loaded: " + error.message;
        });
    }

    form.addEventListener("submit", function (event) { event.preventDefault(); page = 1; load(); });
    Array.prototype.forEach.call(form.querySelectorAll("select, input[type=checkbox]"), function (field) {
      field.addEventListener("change", function () { page = 1; load(); });
    });
    previous.addEventListener("click", function () { page -= 1; load(); });
    next.addEventListener("click", function () { page += 1; load(); });
    load();
  }

  Array.prototype.forEach.call(document.querySelectorAll("section.judged-browser"), browse);
}());
