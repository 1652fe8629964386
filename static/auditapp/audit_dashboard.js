/* What every audit's dashboard shares (researchers; audit_dashboard_base.html): live progress and its
   controls through the REST API (session auth, CSRF header), the worker status banner, the parse-quality report
   (polled every 5 s while the audit runs), and a drill-down from a progress or parse-quality row to its replies
   and from a reply to its whole request. A paradigm's charts are in its own script, loaded after this one, which
   opens the drill-down through window.AuditDashboard.openDrilldown (classification_dashboard.js,
   bits_dashboard.js, …). The page passes its data with json_script (#audit-data). Text from the API (replies
   are model output) is only ever set as textContent. */
(function () {
  "use strict";
  var root = document.getElementById("audit-dashboard");
  var source = document.getElementById("audit-data");
  if (!root || !source) { return; }
  var data = JSON.parse(source.textContent);
  var POLL_MS = 2000;
  var POLLED = ["queued", "running", "paused", "analysing"];
  var BUTTONS = {
    "pause": function (s) { return s === "queued" || s === "running"; },
    "resume": function (s) { return ["paused", "stopped", "failed"].indexOf(s) >= 0; },
    "cancel": function (s) { return ["queued", "running", "paused", "stopped", "failed"].indexOf(s) >= 0; },
    "retry-failed": function (s, failed) {
      return failed > 0 && ["paused", "stopped", "completed", "failed"].indexOf(s) >= 0;
    },
    "reparse": function (s) { return ["completed", "stopped", "cancelled", "paused"].indexOf(s) >= 0; }
  };
  var DONE_MESSAGES = {
    "pause": "Paused: the workers stop after the requests in flight.",
    "resume": "Resumed: only the requests still waiting are sent.",
    "cancel": "Cancelled.",
    "retry-failed": "The failed requests are sent again.",
    "reparse": "The stored replies were parsed again; a worker recomputes the metrics, and this page reloads with them."
  };

  var status = data.audit.status;
  var failedCount = 0;
  var timer = null;
  // After "Re-parse and recompute" the page polls until the results were computed again: analysed_at differs from
  // the one the page was rendered with (the progress API gives it in the same ISO 8601 form, in UTC).
  var analysedAt = root.getAttribute("data-analysed-at") || null;
  var awaitingAnalysis = false;
  var warningCount = 0;
  var statusLabels = {};
  Array.prototype.forEach.call(document.querySelectorAll("#status-labels [data-status]"), function (li) {
    statusLabels[li.getAttribute("data-status")] = li.textContent;
  });
  var conditionNames = {};
  (data.conditions || []).forEach(function (c) { conditionNames[c.code] = c.name; });
  var modelNames = {};
  (data.models || []).forEach(function (m) { modelNames[m.id] = m.label; });

  // ------------------------------------------------------------------------------------------ helpers

  function element(tag, text, className) {
    var node = document.createElement(tag);
    if (text !== undefined && text !== null) { node.textContent = String(text); }
    if (className) { node.className = className; }
    return node;
  }

  function known(value) { return value !== null && value !== undefined && isFinite(value); }

  function fixed(value, digits) { return known(value) ? Number(value).toFixed(digits) : "—"; }

  function duration(seconds) {
    if (!known(seconds)) { return "—"; }
    var s = Math.round(seconds);
    if (s < 60) { return s + " s"; }
    var m = Math.floor(s / 60);
    if (m < 60) { return m + " min " + (s % 60) + " s"; }
    var h = Math.floor(m / 60);
    if (h < 24) { return h + " h " + (m % 60) + " min"; }
    return Math.floor(h / 24) + " d " + (h % 24) + " h";
  }

  function cookie(name) {
    var found = null;
    document.cookie.split(";").forEach(function (part) {
      var pair = part.trim().split("=");
      if (pair[0] === name) { found = decodeURIComponent(pair.slice(1).join("=")); }
    });
    return found;
  }

  function csrfToken() {
    var input = document.querySelector("#controls input[name=csrfmiddlewaretoken]");
    return cookie("csrftoken") || (input ? input.value : "");
  }

  // A JSON request of the page's API with the researcher's session (a POST with the CSRF header, and ``json`` as
  // its body when given); resolves to the answer's JSON, rejects with its "detail" (or its status).
  // A 400's body names each field it refused ({"field": ["why"]}): say them all.
  function fieldProblems(body) {
    if (typeof body !== "object" || Array.isArray(body)) { return ""; }
    return Object.keys(body).map(function (field) { return field + ": " + [].concat(body[field]).join(" "); })
      .join("; ");
  }

  function request(url, options) {
    options = options || {};
    var headers = { "Accept": "application/json" };
    if (options.method === "POST") { headers["X-CSRFToken"] = csrfToken(); }
    var init = { method: options.method || "GET", credentials: "same-origin", headers: headers };
    if (options.json !== undefined) {
      headers["Content-Type"] = "application/json";
      init.body = JSON.stringify(options.json);
    }
    return fetch(url, init)
      .then(function (response) {
        return response.text().then(function (text) {
          var body = null;
          try { body = text ? JSON.parse(text) : null; } catch (ignored) { body = null; }
          if (!response.ok) {
            var error = new Error((body && (body.detail || fieldProblems(body))) || ("HTTP " + response.status));
            error.status = response.status;
            throw error;
          }
          return body;
        });
      });
  }

  function message(text, kind) {
    var node = document.getElementById("control-message");
    node.textContent = text;
    node.className = "message" + (kind ? " " + kind : "");
    node.hidden = !text;
  }

  // ------------------------------------------------------------------------------ table of contents

  // The page's sections (each a section with an id and an h2) as links in a bar that stays at the top.
  (function () {
    var toc = document.getElementById("toc");
    var headings = root.querySelectorAll("section[id]:not(#drilldown) > h2");
    if (!toc || headings.length < 2) { return; }
    var list = toc.querySelector("ul");
    Array.prototype.forEach.call(headings, function (heading) {
      var link = element("a", heading.textContent.replace(/\s+/g, " ").trim());
      link.href = "#" + heading.parentNode.id;
      list.appendChild(document.createElement("li")).appendChild(link);
    });
    toc.hidden = false;
  }());

  // ------------------------------------------------------------------------------------ status strip

  // Failed requests or a row whose replies are mostly unparseable need the researcher's attention even once the
  // audit is done: said in the status strip, above the folded tables (a completed audit's results stay first).
  function renderAttention() {
    var parts = [];
    if (failedCount) { parts.push(failedCount + " request" + (failedCount === 1 ? "" : "s") + " failed"); }
    if (warningCount) {
      parts.push(warningCount + (warningCount === 1 ? " row's replies are" : " rows' replies are") +
                 " mostly unparseable or cut off");
    }
    var node = document.getElementById("status-attention");
    var folded = !document.getElementById("status-details").open;
    node.textContent = parts.length ? "Needs attention: " + parts.join("; ") + " (" + (folded ? "unfold" : "see") +
                                      " the progress and parse quality below)." : "";
    node.hidden = !parts.length;
  }

  document.getElementById("status-details").addEventListener("toggle", renderAttention);

  // ----------------------------------------------------------------------------------------- progress

  function setStatus(next, reason) {
    var node = document.getElementById("status");
    node.textContent = statusLabels[next] || next;
    node.setAttribute("data-status", next);
    document.getElementById("status-reason").textContent = reason || "";
    var finished = next === "completed" && status !== "completed";
    status = next;
    updateButtons();
    if (finished) { window.location.reload(); }  // once: the reloaded page starts completed
  }

  function updateButtons() {
    Array.prototype.forEach.call(document.querySelectorAll("#controls button[data-action]"), function (button) {
      var rule = BUTTONS[button.getAttribute("data-action")];
      button.hidden = !(rule && rule(status, failedCount));
    });
  }

  function conditionCell(code) {
    var td = element("td", conditionNames[code] || code);
    if (conditionNames[code]) { td.appendChild(element("div", code, "code")); }
    return td;
  }

  function progressCells(tr, row) {
    [row.answered, row.failed, row.waiting, row.from_cache, row.retries, row.retrying_now].forEach(function (n) {
      tr.appendChild(element("td", n, "num"));
    });
    tr.appendChild(element("td", fixed(row.rate_per_s, 2), "num"));
    // The API gives an ETA only while the audit runs: a row that sent all it had is done whatever the status.
    var done = row.waiting === 0 && row.answered + row.failed > 0;
    tr.appendChild(element("td", done ? "done" : duration(row.eta_s), "num"));
  }

  function renderWorkerStatus(worker) {
    var banner = document.getElementById("worker-status");
    if (!banner || !worker) { return; }
    banner.textContent = worker.message;
    banner.hidden = worker.alive;
  }

  function renderProgress(progress) {
    renderWorkerStatus(progress.worker);
    var totals = progress.totals;
    failedCount = totals.failed;
    var finished = totals.answered + totals.failed;
    var bar = document.getElementById("progress-bar");
    bar.max = Math.max(progress.n_requests, 1);
    bar.value = Math.min(finished, bar.max);
    // The header's count (_request_count.html), as the bar counts: the page may predate the audit's preparation.
    Array.prototype.forEach.call(document.querySelectorAll(".request-count"), function (count) {
      count.textContent = progress.n_requests ? progress.n_requests + " request" + (progress.n_requests === 1 ? "" : "s")
                                              : "no requests built yet";
    });
    var text = document.getElementById("progress-text");
    if (!progress.n_requests) {
      text.textContent = "No requests built yet: a worker prepares the audit first.";
    } else {
      var share = Math.floor(1000 * finished / progress.n_requests) / 10;
      text.textContent = finished + " of " + progress.n_requests + " requests finished (" + share + "%): " +
        totals.answered + " answered, " + totals.failed + " failed, " + totals.waiting + " waiting.";
    }
    var body = document.querySelector("#progress-table tbody");
    body.textContent = "";
    progress.cells.forEach(function (row) {
      var tr = document.createElement("tr");
      tr.setAttribute("data-model", row.model_id);
      tr.setAttribute("data-condition", row.condition);
      tr.className = "clickable";
      tr.appendChild(element("td", row.model));
      tr.appendChild(conditionCell(row.condition));
      progressCells(tr, row);
      tr.addEventListener("click", function () { openDrilldown(row.model_id, row.condition); });
      body.appendChild(tr);
    });
    if (!progress.cells.length) {
      var empty = element("td", document.getElementById("progress-table").getAttribute("data-empty") ||
                                "No model × condition yet.", "empty");
      empty.colSpan = 10;
      body.appendChild(document.createElement("tr")).appendChild(empty);
    }
    var foot = document.querySelector("#progress-table tfoot");
    foot.textContent = "";
    var total = document.createElement("tr");
    total.className = "total";
    var label = element("th", "Total");
    label.colSpan = 2;
    total.appendChild(label);
    progressCells(total, totals);
    foot.appendChild(total);
    document.getElementById("live-workers").textContent = progress.live_workers;
    document.getElementById("last-retry-reason").textContent = progress.last_retry_reason || "none";
    var unreachable = document.getElementById("endpoint-unreachable");
    var outages = progress.unreachable_endpoints || [];
    unreachable.textContent = outages.map(function (outage) {
      return "Endpoint " + outage.endpoint + " unreachable since " + new Date(outage.since).toLocaleString() +
        " (" + outage.last_error + "): " + (progress.status === "queued"
          ? "the audit waits, and its preparation is tried again until the endpoint answers or its deadline passes."
          : "its requests wait, it is probed with backoff, and sending resumes when it answers.");
    }).join(" ");
    unreachable.hidden = !outages.length;
    setStatus(progress.status, progress.status_reason);
    renderAttention();
    if (awaitingAnalysis && (progress.analysed_at !== analysedAt || progress.status === "failed")) {
      awaitingAnalysis = false;
      if (progress.analysed_at !== analysedAt) { window.location.reload(); }
    }
  }

  // ------------------------------------------------------------------------------------ parse quality

  var PARSE_QUALITY_MS = 5000;
  var parseQualityAt = 0;
  var OUTCOME_COLUMNS = [["label", "score"], ["refusal"], ["unparseable"], ["error"], ["pending"]];

  function share(row, outcomes) {
    var n = 0, part = 0;
    outcomes.forEach(function (outcome) {
      n += row["n_" + outcome] || 0;
      part += row["share_" + outcome] || 0;
    });
    return n + (row.n_requests ? " (" + Math.round(100 * part) + "%)" : "");
  }

  function renderParseQuality(page) {
    var body = document.querySelector("#parse-quality-table tbody");
    var warnings = document.getElementById("parse-quality-warnings");
    body.textContent = "";
    warnings.textContent = "";
    page.results.forEach(function (row) {
      var tr = document.createElement("tr");
      tr.setAttribute("data-model", row.model_id);
      tr.setAttribute("data-condition", row.condition);
      if (row.warning) {
        tr.className = "warning";
        warnings.appendChild(element("li", row.model + " · " + (conditionNames[row.condition] || row.condition_name ||
                                                                  row.condition) + ": " + row.warning));
      }
      tr.appendChild(element("td", row.model));
      tr.appendChild(conditionCell(row.condition));
      tr.appendChild(element("td", row.n_requests, "num"));
      tr.appendChild(element("td", row.n_units ? row.n_units_answered + " of " + row.n_units + " (" +
                                  Math.round(100 * row.share_units_answered) + "%)" : "—", "num units-answered"));
      OUTCOME_COLUMNS.forEach(function (outcomes) {
        var td = element("td", share(row, outcomes), "num");
        td.setAttribute("data-outcome", outcomes[0]);
        tr.appendChild(td);
      });
      var reasons = element("td", null, "finish-reasons");
      row.finish_reasons.forEach(function (reason) {
        reasons.appendChild(element("div", (reason.finish_reason || "(none)") + ": " + reason.n,
                                    reason.truncated ? "truncated" : ""));
      });
      if (row.truncated_note) { reasons.appendChild(element("div", row.truncated_note, "undefined-note")); }
      tr.appendChild(reasons);
      var shapes = element("td", null, "shapes");
      if (row.unparseable_shapes.length) {
        var list = document.createElement("ol");
        row.unparseable_shapes.forEach(function (shape) {
          var item = element("li", shape.shape + " × " + shape.n);
          item.title = shape.example ? "e.g. " + shape.example : "(empty reply)";
          list.appendChild(item);
        });
        shapes.appendChild(list);
        if (row.shapes_note) { shapes.appendChild(element("div", row.shapes_note, "sub")); }
      } else {
        shapes.textContent = "—";
      }
      tr.appendChild(shapes);
      var raw = element("td");
      if (row.n_unparseable) {
        var button = element("button", "Unparseable replies");
        button.type = "button";
        button.addEventListener("click", function () { openDrilldown(row.model_id, row.condition, "unparseable"); });
        raw.appendChild(button);
      }
      tr.appendChild(raw);
      body.appendChild(tr);
    });
    if (!page.results.length) {
      var empty = element("td", "No requests yet.", "empty");
      empty.colSpan = 12;
      body.appendChild(document.createElement("tr")).appendChild(empty);
    }
    warnings.hidden = !warnings.childNodes.length;
    warningCount = warnings.childNodes.length;
    renderAttention();
  }

  function refreshParseQuality(force) {
    if (!force && Date.now() - parseQualityAt < PARSE_QUALITY_MS) { return; }
    parseQualityAt = Date.now();
    request(root.getAttribute("data-parse-quality-url") + "?page_size=10000").then(renderParseQuality,
      function (error) {
        var body = document.querySelector("#parse-quality-table tbody");
        body.textContent = "";
        var cell = element("td", "Parse quality not available: " + error.message, "empty");
        cell.colSpan = 12;
        body.appendChild(document.createElement("tr")).appendChild(cell);
      });
  }

  (function () {
    var progressHeading = document.querySelectorAll("#progress-table thead th")[1];
    var heading = document.getElementById("parse-quality-cell-heading");
    if (progressHeading && heading) { heading.textContent = progressHeading.textContent; }
  }());

  function poll() {
    timer = null;
    request(root.getAttribute("data-progress-url")).then(function (progress) {
      renderProgress(progress);
      // The last poll (the audit no longer runs) always refreshes it, so the final counts are shown.
      refreshParseQuality(POLLED.indexOf(progress.status) < 0);
      schedule();
    }, function (error) {
      document.getElementById("progress-text").textContent = "Progress not available: " + error.message;
      schedule();
    });
  }

  function schedule() {
    if (timer === null && (awaitingAnalysis || POLLED.indexOf(status) >= 0)) { timer = window.setTimeout(poll, POLL_MS); }
  }

  function refreshNow() {
    if (timer !== null) { window.clearTimeout(timer); timer = null; }
    poll();
  }

  Array.prototype.forEach.call(document.querySelectorAll("#controls button[data-action]"), function (button) {
    button.addEventListener("click", function () {
      var action = button.getAttribute("data-action");
      if (action === "cancel" && !window.confirm("Cancel this audit? A cancelled audit cannot be resumed.")) { return; }
      var buttons = document.querySelectorAll("#controls button");
      Array.prototype.forEach.call(buttons, function (b) { b.disabled = true; });
      message("", "");
      request(button.getAttribute("data-url"), { method: "POST" }).then(function (audit) {
        message(DONE_MESSAGES[action] || "Done.", "ok");
        if (action === "reparse") { awaitingAnalysis = true; }
        if (audit && audit.status) { setStatus(audit.status, audit.status_reason); }
      }, function (error) {
        message(error.message, "error");
      }).then(function () {
        Array.prototype.forEach.call(buttons, function (b) { b.disabled = false; });
        refreshNow();
      });
    });
  });

  updateButtons();
  poll();

  // --------------------------------------------------------------------------------------- drill-down

  var drill = { model: null, condition: null, outcome: "", serial: 0 };

  function repliesUrl() {
    var url = root.getAttribute("data-responses-url") + "?model=" + encodeURIComponent(drill.model) +
              "&condition=" + encodeURIComponent(drill.condition) + "&page_size=100";
    return drill.outcome ? url + "&outcome=" + encodeURIComponent(drill.outcome) : url;
  }

  function replyRow(row) {
    var tr = document.createElement("tr");
    tr.setAttribute("data-outcome", row.outcome);
    tr.appendChild(requestCell(row));
    tr.appendChild(element("td", row.replicate, "num"));
    var outcome = element("td");
    outcome.appendChild(element("span", row.outcome, "outcome outcome-" + row.outcome));
    tr.appendChild(outcome);
    tr.appendChild(element("td", row.label === null ? "—" : row.label, "num"));
    tr.appendChild(element("td", row.explanation, "text"));
    tr.appendChild(element("td", row.parse_reason, "note"));
    tr.appendChild(element("td", row.error, "note error-text"));
    var attempts = element("td", row.attempts, "num");
    if (row.from_cache) { attempts.appendChild(element("div", "from cache", "sub")); }
    tr.appendChild(attempts);
    tr.appendChild(element("td", known(row.latency_ms) ? Math.round(row.latency_ms) + " ms" : "—", "num"));
    var reply = element("td", null, "reply");
    if (row.reply === null || row.reply === undefined) {
      reply.textContent = "—";
    } else {
      var details = document.createElement("details");
      details.appendChild(element("summary", row.reply.length + " characters" +
                                  (row.finish_reason ? ", " + row.finish_reason : "")));
      details.appendChild(element("pre", row.reply));
      reply.appendChild(details);
    }
    tr.appendChild(reply);
    return tr;
  }

  // The whole request (what was sent, rebuilt and checked against its key; the reply; each judgment), fetched
  // when asked for: a counterfactual request holds 60 texts.
  function requestCell(row) {
    var td = element("td", row.item || row.unit || "");
    if (row.request_id === undefined || row.request_id === null) { return td; }
    var details = document.createElement("details");
    details.className = "request-detail";
    // Turns are numbered from 1 for people (the API's turn is 0-based); a first turn reads as a plain request.
    details.appendChild(element("summary", "request " + row.request_id + (row.turn ? ", turn " + (row.turn + 1) : "")));
    details.addEventListener("toggle", function () {
      if (!details.open || details.getAttribute("data-loaded")) { return; }
      details.setAttribute("data-loaded", "1");
      var url = root.getAttribute("data-request-url").replace(/0\/$/, row.request_id + "/");
      request(url).then(function (detail) {
        var sent = Array.isArray(detail.sent) ? detail.sent.map(function (message) {
          return message.role + ": " + message.content;
        }).join("\n\n") : JSON.stringify(detail.sent, null, 1);
        details.appendChild(element("h3", detail.key_matches ? "Sent (rebuilt; matches its key)" :
                                          "Sent (rebuilt; does NOT match its key)"));
        details.appendChild(element("pre", sent, "sent"));
        if (detail.conversation && detail.conversation.length) {
          var turns = document.createElement("ol");
          turns.className = "conversation";
          detail.conversation.forEach(function (turn) {
            turns.appendChild(element("li", "turn " + (turn.turn + 1) + " (request " + turn.request_id + "), " +
                                            turn.state + ": " + (turn.error || turn.reply || "")));
          });
          details.appendChild(element("h3", "Earlier turns of this conversation"));
          details.appendChild(turns);
        }
        var list = document.createElement("ol");
        list.className = "judgments";
        detail.judgments.forEach(function (j) {
          var value = j.label !== null ? j.label : (known(j.value) ? j.value : "missing");
          list.appendChild(element("li", j.unit + ": " + value + (j.reason ? " (" + j.reason + ")" : "")));
        });
        details.appendChild(element("h3", detail.judgments.length + " judgment" +
                                          (detail.judgments.length === 1 ? "" : "s")));
        details.appendChild(list);
      }, function (error) {
        details.appendChild(element("p", "Not available: " + error.message, "reason"));
      });
    });
    td.appendChild(details);
    return td;
  }

  function loadReplies(url, append) {
    var serial = ++drill.serial;
    var body = document.querySelector("#drill-table tbody");
    var count = document.getElementById("drill-count");
    var more = document.getElementById("drill-more");
    more.hidden = true;
    if (!append) {
      body.textContent = "";
      count.textContent = "Loading…";
    }
    request(url).then(function (page) {
      if (serial !== drill.serial) { return; }  // a newer request replaced this one
      page.results.forEach(function (row) { body.appendChild(replyRow(row)); });
      var shown = body.querySelectorAll("tr").length;
      count.textContent = page.count === 0 ? "No replies." :
        "Showing " + shown + " of " + page.count + " repl" + (page.count === 1 ? "y" : "ies") + ".";
      more.hidden = !page.next;
      more.setAttribute("data-next", page.next || "");
    }, function (error) {
      if (serial !== drill.serial) { return; }
      count.textContent = "Replies not available: " + error.message;
    });
  }

  function openDrilldown(model, condition, outcome) {
    drill.model = String(model);
    drill.condition = condition;
    drill.outcome = outcome || "";
    setFilter(drill.outcome);
    var section = document.getElementById("drilldown");
    section.hidden = false;
    document.getElementById("drill-title").textContent =
      (modelNames[model] || model) + " · " + (conditionNames[condition] || condition);
    loadReplies(repliesUrl(), false);
    section.scrollIntoView({ block: "start" });
  }

  function setFilter(outcome) {
    Array.prototype.forEach.call(document.querySelectorAll("#drill-filters button"), function (button) {
      var active = button.getAttribute("data-outcome") === outcome;
      button.classList.toggle("active", active);
      button.setAttribute("aria-pressed", active ? "true" : "false");
    });
  }

  Array.prototype.forEach.call(document.querySelectorAll("#drill-filters button"), function (button) {
    button.addEventListener("click", function () {
      if (drill.model === null) { return; }
      drill.outcome = button.getAttribute("data-outcome");
      setFilter(drill.outcome);
      loadReplies(repliesUrl(), false);
    });
  });

  document.getElementById("drill-more").addEventListener("click", function () {
    var next = this.getAttribute("data-next");
    if (next) { loadReplies(next, true); }
  });

  // A paradigm's own script (loaded after this one) opens the drill-down from its tables and charts.
  window.AuditDashboard = { openDrilldown: openDrilldown, request: request };
}());
