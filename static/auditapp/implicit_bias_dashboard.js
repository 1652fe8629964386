/* The seed 003 dashboards' figures, drawn with the vendored plotly from the page's data (#audit-data, data.analysis
   as auditapp.paradigms.implicit_bias.services.analyse stored it):
   - word association, Figure 3: one radar per model (.radar-panel), an axis per social group, a trace per
     dimension, the radius the mean bias score (−1 to +1, so the centre is −1), and a dashed reference trace at 0
     (no bias) so that a reader sees which side of it each dimension falls;
   - affective attribution, Figure 4: one chart per model (.bars-panel), a bar per social group stacked from its
     comedy, tragedy and neutral shares.
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

  function radar(node, model) {
    var rows = (tables.radar || []).filter(function (row) { return row.model === model; });
    if (!rows.some(function (row) { return known(row.mean); })) { empty(node, "No bias score for this model yet."); return; }
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
      title: { text: plotlyText(model) }, margin: { l: 40, r: 40, t: 50, b: 30 },
      polar: { radialaxis: { range: [-1, 1], title: { text: "mean bias score" } } },
      legend: { orientation: "h", y: -0.1 }
    }, config);
  }

  function stackedBars(node, model) {
    var rows = (tables.bars || []).filter(function (row) { return row.model === model; });
    if (!rows.some(function (row) { return known(row.share); })) { empty(node, "No answer for this model yet."); return; }
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
