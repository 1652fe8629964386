/* The agreement matrix of a study's alternative ground truths: Cohen's κ between every pair, as a plotly
   heatmap, from the page's #dashboard-data (robustness.agreement). */
(function () {
  "use strict";
  var source = document.getElementById("dashboard-data");
  var target = document.getElementById("chart-robustness-agreement");
  if (!source || !target || typeof Plotly === "undefined") { return; }
  var robustness = JSON.parse(source.textContent).robustness || {};
  var agreement = robustness.agreement || {};
  var names = agreement.alternatives || [];
  if (!names.length) { return; }
  var labels = names.map(function (name) { return (robustness.labels || {})[name] || name; });
  var text = agreement.kappa.map(function (row) {
    return row.map(function (v) { return v === null ? "—" : v.toFixed(2); });
  });
  Plotly.newPlot(target, [{
    type: "heatmap", x: labels, y: labels, z: agreement.kappa, text: text, texttemplate: "%{text}",
    zmin: -1, zmax: 1, colorscale: "RdBu", hovertemplate: "%{y} × %{x}<br>κ = %{text}<extra></extra>"
  }], { title: "Agreement between alternatives (Cohen's κ)", margin: { l: 150, r: 15, t: 40, b: 120 },
        height: 460, yaxis: { autorange: "reversed" } },
  { displaylogo: false, responsive: true });
  // Drawn while its section is folded away: sized again when the section is opened.
  var details = document.getElementById("robustness-details");
  if (details) {
    details.addEventListener("toggle", function () { if (details.open) { Plotly.Plots.resize(target); } });
  }
}());
