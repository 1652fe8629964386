/* κ per model under each alternative ground truth, with its 95% CI, one condition at a time (a menu
   picks it), drawn with the vendored plotly from the page's #audit-data (robustness.cells). */
(function () {
  "use strict";
  var source = document.getElementById("audit-data");
  var target = document.getElementById("chart-robustness");
  if (!source || !target || typeof Plotly === "undefined") { return; }
  var robustness = JSON.parse(source.textContent).robustness || {};
  var cells = robustness.cells || [];
  if (!robustness.available || !cells.length) { return; }
  var conditions = [];
  cells.forEach(function (c) { if (conditions.indexOf(c.condition) < 0) { conditions.push(c.condition); } });
  var traces = [];
  conditions.forEach(function (condition, k) {
    robustness.alternatives.forEach(function (alternative) {
      var rows = cells.filter(function (c) { return c.condition === condition && c.alternative === alternative.name; });
      traces.push({
        type: "scatter", mode: "markers", name: alternative.label, legendgroup: alternative.name,
        showlegend: k === 0, visible: k === 0,
        x: rows.map(function (c) { return c.model; }), y: rows.map(function (c) { return c.kappa; }),
        error_y: { type: "data", symmetric: false, thickness: 1,
                   array: rows.map(function (c) { return c.kappa_high === null || c.kappa === null ? 0 : c.kappa_high - c.kappa; }),
                   arrayminus: rows.map(function (c) { return c.kappa_low === null || c.kappa === null ? 0 : c.kappa - c.kappa_low; }) },
        hovertemplate: "%{x}<br>" + alternative.label + ": κ = %{y:.3f}<extra>" + condition + "</extra>"
      });
    });
  });
  var per = robustness.alternatives.length;
  var buttons = conditions.map(function (condition, k) {
    return { label: condition, method: "update",
             args: [{ visible: traces.map(function (_, i) { return Math.floor(i / per) === k; }) }] };
  });
  Plotly.newPlot(target, traces, {
    title: "κ per model under each alternative (95% CI)", scattermode: "group", height: 420,
    margin: { l: 50, r: 15, t: 60, b: 80 }, yaxis: { title: "Cohen's κ", zeroline: true },
    updatemenus: [{ buttons: buttons, direction: "down", x: 0, xanchor: "left", y: 1.18, yanchor: "top" }]
  }, { displaylogo: false, responsive: true });
}());
