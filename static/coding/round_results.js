/* A coding round's results page: a plotly heatmap of each coder's co-occurrence matrix (the table beside it holds
   the same counts), from the analysis in the page's "round-data" JSON. Code and coder names are researcher-entered:
   every one goes through AuditCharts.plotlyText. */
(function () {
  "use strict";
  var data = JSON.parse(document.getElementById("round-data").textContent);
  if (typeof Plotly === "undefined") { return; }
  var charts = window.AuditCharts;
  document.querySelectorAll(".cooccurrence-chart").forEach(function (node) {
    var lens = data.lenses.find(function (l) { return String(l.number) === node.dataset.lens; });
    var coder = lens && lens.coders.find(function (c) { return c.coder === node.dataset.coder; });
    if (!coder || !coder.cooccurrence.codes.length) { node.hidden = true; return; }
    var names = coder.cooccurrence.codes.map(charts.plotlyText);
    Plotly.newPlot(node, [{
      type: "heatmap", x: names, y: names, z: coder.cooccurrence.matrix, colorscale: "Blues",
      hovertemplate: "%{y} + %{x}: %{z} excerpts<extra></extra>"
    }], { margin: { t: 10, r: 10, b: 110, l: 140 }, yaxis: { autorange: "reversed" } }, charts.config);
  });
}());
