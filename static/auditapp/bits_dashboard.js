/* A BITS audit's charts (seed 001 Figure 1 and the score distributions), drawn with the vendored plotly from
   the page's data (#audit-data, data.analysis from auditapp.paradigms.bits.analysis.dashboard_payload).
   Scorer and group names are researcher-entered, and plotly reads pseudo-HTML (<b>, <br>, <a>) in its labels:
   every string given to plotly is escaped to entities first, so it shows as typed. */
(function () {
  "use strict";
  var source = document.getElementById("audit-data");
  if (!source || typeof Plotly === "undefined") { return; }
  var analysis = JSON.parse(source.textContent).analysis || {};
  var charts = window.AuditCharts;
  var config = charts.config, palette = charts.palette, plotlyText = charts.plotlyText, known = charts.known,
      empty = charts.empty;

  function heatmap(node, heat) {
    if (!heat || !heat.scorers || !heat.scorers.length) { empty(node, "No scores to draw."); return; }
    var labels = heat.scorers.map(function (name, i) {
      return plotlyText(name) + (heat.imported[i] ? " (imported)" : "");
    });
    var text = heat.z.map(function (row) {
      return row.map(function (value) {
        if (!known(value)) { return "—"; }
        var text = value.toFixed(2);
        return Number(text) === 0 ? "0.00" : text;  // a mean that rounds to zero reads 0.00, not -0.00
      });
    });
    // A diverging scale centred on 0, red below and blue above: below 0 a sentiment scorer rates the group
    // negatively. Symmetric, so equal distances from 0 have equal colours.
    var extent = 0;
    heat.z.forEach(function (row) {
      row.forEach(function (value) { if (known(value)) { extent = Math.max(extent, Math.abs(value)); } });
    });
    extent = extent || 1;
    Plotly.newPlot(node, [{
      type: "heatmap", x: heat.groups.map(plotlyText), y: labels, z: heat.z, text: text,
      texttemplate: "%{text}", zmin: -extent, zmax: extent, zmid: 0,
      colorscale: [[0, "#b2182b"], [0.5, "#f7f7f7"], [1, "#2166ac"]],
      customdata: heat.n, hovertemplate: "%{y} · %{x}<br>mean %{text} over %{customdata} sentences<extra></extra>",
      colorbar: { title: { text: "mean score" } }, hoverongaps: false
    }], {
      margin: { l: 140, r: 20, t: 20, b: 60 },
      xaxis: { type: "category", automargin: true },
      yaxis: { type: "category", automargin: true, autorange: "reversed" }
    }, config);
  }

  function distribution(node, scorer) {
    var groups = (scorer.groups || []).filter(function (g) { return g.n > 0; });
    if (!groups.length) { empty(node, "No scores to draw."); return; }
    Plotly.newPlot(node, [{
      type: "box", name: plotlyText(scorer.scorer),
      x: groups.map(function (g) { return plotlyText(g.group); }),
      q1: groups.map(function (g) { return g.q1; }),
      median: groups.map(function (g) { return g.median; }),
      q3: groups.map(function (g) { return g.q3; }),
      lowerfence: groups.map(function (g) { return g.min; }),
      upperfence: groups.map(function (g) { return g.max; }),
      marker: { color: palette[0] }, line: { color: palette[0] }, fillcolor: "rgba(47, 93, 124, 0.25)",
      customdata: groups.map(function (g) { return [g.n, g.n_missing]; }),
      hovertemplate: "%{x}: %{customdata[0]} scored, %{customdata[1]} missing<extra></extra>"
    }], {
      margin: { l: 60, r: 15, t: 20, b: 50 }, showlegend: false,
      xaxis: { type: "category", automargin: true },
      yaxis: { title: { text: "score" }, range: [scorer.scale[0] - 0.05, scorer.scale[1] + 0.05], zeroline: true,
               zerolinecolor: "#888" }
    }, config);
  }

  var heatNode = document.getElementById("bits-heatmap");
  if (heatNode) { heatmap(heatNode, analysis.heatmap); }
  Array.prototype.forEach.call(document.querySelectorAll(".distribution[data-index]"), function (node) {
    var scorer = (analysis.distributions || [])[Number(node.getAttribute("data-index"))];
    if (scorer) { distribution(node, scorer); }
  });
}());
