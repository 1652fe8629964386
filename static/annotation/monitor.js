/* The study dashboard's live parts: the completion-time histogram of the study monitor (plotly, from the page's
   #dashboard-data "times"), and the refresh after "Recompute". While the analysis waits for a worker or runs, or
   its alternative ground truths are being computed, the page asks the run bar's data-status-url every POLL_MS
   and reloads itself once they are done, so the new results show without the researcher reloading. */
(function () {
  "use strict";
  var POLL_MS = 2000;
  var PENDING = ["queued", "running"];
  var STATES = {
    queued: "A recomputation is waiting for a worker; this page refreshes itself when it is done.",
    running: "A recomputation is running; this page refreshes itself when it is done."
  };

  function drawTimes() {
    var source = document.getElementById("dashboard-data");
    var target = document.getElementById("chart-times");
    if (!source || !target || typeof Plotly === "undefined") { return; }
    var times = JSON.parse(source.textContent).times || {};
    var bins = times.bins || [];
    if (!bins.length) { return; }
    var most = Math.max.apply(null, bins.map(function (b) { return b.n; }));
    var shapes = [];
    if (times.median_minutes !== null && times.median_minutes !== undefined) {
      shapes.push({ type: "line", x0: times.median_minutes, x1: times.median_minutes, y0: 0, y1: 1, yref: "paper",
                    line: { color: "#a4342a", width: 2, dash: "dot" } });
    }
    Plotly.newPlot(target, [{
      type: "bar", x: bins.map(function (b) { return (b.start + b.end) / 2; }),
      width: bins.map(function (b) { return b.end - b.start; }), y: bins.map(function (b) { return b.n; }),
      customdata: bins.map(function (b) { return [b.start, b.end]; }),
      marker: { color: "#2f5d7c", line: { color: "#fff", width: 1 } },
      hovertemplate: "%{customdata[0]}–%{customdata[1]} min: %{y} participant(s)<extra></extra>"
    }], {
      margin: { l: 45, r: 10, t: 8, b: 38 }, bargap: 0, shapes: shapes, showlegend: false,
      // Ticks on the bins' edges (whole minutes), unless there are too many bins to label each.
      xaxis: { title: { text: "minutes from consent to completion (dotted: median)", font: { size: 11 } },
               tick0: bins[0].start, dtick: bins.length <= 12 ? bins[0].end - bins[0].start : null },
      // Counts of people: whole-number ticks only, however few there are.
      yaxis: { title: { text: "participants", font: { size: 11 } }, rangemode: "tozero", tickformat: "d",
               dtick: most <= 10 ? 1 : null }
    }, { displaylogo: false, responsive: true, displayModeBar: false });
  }

  function poll(bar) {
    var url = bar.getAttribute("data-status-url");
    var state = bar.getAttribute("data-state");
    var alternatives = bar.getAttribute("data-alternatives");
    if (PENDING.indexOf(state) < 0 && alternatives !== "computing") { return; }
    var line = document.getElementById("analysis-state");

    function ask() {
      fetch(url, { credentials: "same-origin", headers: { "Accept": "application/json" } }).then(function (response) {
        if (!response.ok) { throw new Error("HTTP " + response.status); }
        return response.json();
      }).then(function (status) {
        if (PENDING.indexOf(status.state) >= 0) {
          if (line && STATES[status.state]) { line.textContent = STATES[status.state]; }
          window.setTimeout(ask, POLL_MS);
        } else if (PENDING.indexOf(state) < 0 && status.alternatives === "computing") {
          window.setTimeout(ask, POLL_MS);  // the page shows this analysis already; its alternatives are still to come
        } else {
          window.location.reload();  // the recomputation (or the alternatives) finished: show what it stored
        }
      }).catch(function (error) {
        if (line) { line.textContent = "The state of the recomputation is not available (" + error.message +
                                       "): reload this page to see it."; }
      });
    }
    window.setTimeout(ask, POLL_MS);
  }

  drawTimes();
  var bar = document.getElementById("run-bar");
  if (bar) { poll(bar); }
}());
