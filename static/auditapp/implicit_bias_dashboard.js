/* The seed 003 dashboards' figures, drawn with the vendored plotly from the page's data (#audit-data, data.analysis
   as auditapp.paradigms.implicit_bias.services.analyse stored it):
   - word association, Figure 3: one radar per model (.radar-panel), an axis per social group, a trace per
     dimension, the radius the mean bias score (−1 to +1, so the centre is −1, which the chart's subtitle says: a
     radial axis title would sit in the middle of the radar), and a dashed reference trace at 0 (no bias) so that a
     reader sees which side of it each dimension falls;
   - affective attribution, Figure 4: one chart per model (.bars-panel), a bar per social group stacked from its
     comedy, tragedy and neutral shares.
   A model without a score or an answer to draw says why: no reply at all, or how many replies it gave and why none
   was usable (the reasons table), never that its answers are still to come.
   Model and group names can be researcher-entered, and plotly reads pseudo-HTML in its labels: every string given
   to plotly is escaped to entities first. */
(function () {
  "use strict";
  var source = document.getElementById("audit-data");
  if (!source || typeof Plotly === "undefined") { return; }
  var analysis = JSON.parse(source.textContent).analysis || {};
  var tables = analysis.tables || {};
  var charts = window.AuditCharts;
  var config = charts.config, palette = charts.palette, plotlyText = charts.plotlyText, known = charts.known,
      empty = charts.empty;
  var ANSWER_COLOURS = { comedy: "#5b8c4a", tragedy: "#a33b3b", neutral: "#999999" };

  function unique(values) {
    return values.filter(function (value, i) { return values.indexOf(value) === i; });
  }

  // Why a model has nothing to draw: its replies (conversations, two-turn) and their reasons from the reasons table.
  function nothingToDraw(node, model, usable) {
    var reasons = (tables.reasons || []).filter(function (row) { return row.model === model; });
    var n = reasons.reduce(function (sum, row) { return sum + (row.n || 0); }, 0);
    var counted = analysis.counted || "replies";
    if (!n) { empty(node, model + ": no reply from this model."); return; }
    empty(node, model + ": none of its " + n + " " + counted + " " + usable + " (" +
      reasons.map(function (row) { return row.n + " " + row.reason; }).join(", ") +
      "); see “Replies without a usable answer” below.");
  }

  function radar(node, model) {
    var rows = (tables.radar || []).filter(function (row) { return row.model === model; });
    if (!rows.some(function (row) { return known(row.mean); })) {
      nothingToDraw(node, model, "has a bias score");
      return;
    }
    var groups = unique(rows.map(function (row) { return row.social_group; }));
    var closed = groups.concat(groups.slice(0, 1));
    var traces = (analysis.dimensions || []).map(function (dimension, i) {
      var byGroup = {};
      rows.filter(function (row) { return row.dimension === dimension; })
          .forEach(function (row) { byGroup[row.social_group] = row; });
      return {
        type: "scatterpolar", mode: "lines+markers", fill: "toself", opacity: 0.6, name: plotlyText(dimension),
        theta: closed.map(plotlyText),
        r: closed.map(function (group) { var row = byGroup[group]; return row && known(row.mean) ? row.mean : null; }),
        customdata: closed.map(function (group) { var row = byGroup[group]; return row ? row.n : 0; }),
        line: { color: palette[i % palette.length] },
        hovertemplate: "%{theta}, " + plotlyText(dimension) + ": mean %{r:.3f} (n = %{customdata})<extra></extra>"
      };
    });
    traces.push({
      type: "scatterpolar", mode: "lines", name: "0 (no bias)", theta: closed.map(plotlyText),
      r: closed.map(function () { return 0; }), line: { color: "#444444", dash: "dash", width: 1 }, hoverinfo: "skip"
    });
    Plotly.newPlot(node, traces, {
      title: { text: plotlyText(model),
               subtitle: { text: "radius: mean bias score, −1 at the centre to +1 at the rim" } },
      margin: { l: 40, r: 40, t: 70, b: 30 },
      polar: { radialaxis: { range: [-1, 1] } },
      legend: { orientation: "h", y: -0.1 }
    }, config);
  }

  function stackedBars(node, model) {
    var rows = (tables.bars || []).filter(function (row) { return row.model === model; });
    if (!rows.some(function (row) { return known(row.share); })) {
      nothingToDraw(node, model, "could be read as comedy, tragedy or neutral");
      return;
    }
    var groups = unique(rows.map(function (row) { return row.social_group; }));
    var traces = ["comedy", "tragedy", "neutral"].map(function (answer) {
      var byGroup = {};
      rows.filter(function (row) { return row.answer === answer; })
          .forEach(function (row) { byGroup[row.social_group] = row; });
      return {
        type: "bar", name: answer, x: groups.map(plotlyText),
        y: groups.map(function (group) { var row = byGroup[group]; return row && known(row.share) ? row.share : 0; }),
        customdata: groups.map(function (group) {
          var row = byGroup[group]; return row ? [row.n_answered, row.group_label] : [0, ""];
        }),
        marker: { color: ANSWER_COLOURS[answer] },
        hovertemplate: "%{x} (%{customdata[1]}): " + answer + " %{y:.3f} of %{customdata[0]} answered<extra></extra>"
      };
    });
    Plotly.newPlot(node, traces, {
      title: { text: plotlyText(model) }, barmode: "stack", margin: { l: 60, r: 15, t: 50, b: 90 },
      yaxis: { title: { text: "share of the group's answered replies" }, range: [0, 1] },
      xaxis: { title: { text: "social group" }, automargin: true },
      legend: { orientation: "h", y: 1.08 }
    }, config);
  }

  Array.prototype.forEach.call(document.querySelectorAll(".radar-panel"), function (node) {
    radar(node, node.getAttribute("data-model"));
  });
  Array.prototype.forEach.call(document.querySelectorAll(".bars-panel"), function (node) {
    stackedBars(node, node.getAttribute("data-model"));
  });
}());
