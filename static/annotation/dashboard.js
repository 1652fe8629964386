/* Charts of a study's dashboard, drawn with the vendored plotly from the data the page passes
   with json_script (#dashboard-data): score distributions, R components per annotator, Cohen's kappa. */
(function () {
  "use strict";
  var source = document.getElementById("dashboard-data");
  if (!source || typeof Plotly === "undefined") { return; }
  var data = JSON.parse(source.textContent);
  var annotators = data.annotators || [];
  var config = { displaylogo: false, responsive: true, modeBarButtonsToRemove: ["select2d", "lasso2d"] };
  var margin = { l: 50, r: 15, t: 40, b: 45 };
  var colours = { aq: "#2f5d7c", sata: "#c0792a", iat: "#5b8c4a", weight: "#7a4f8c" };

  function known(key) {
    return annotators.map(function (a) { return a[key]; }).filter(function (v) { return v !== null && v !== undefined; });
  }

  function empty(id, text) {
    var element = document.getElementById(id);
    element.innerHTML = "";
    var note = document.createElement("p");
    note.className = "chart-empty";
    note.textContent = text;
    element.appendChild(note);
    element.classList.add("is-empty");  // no chart: the box shrinks to its note
  }

  function histogram(id, key, title, axis, colour) {
    var values = known(key);
    if (!values.length) { empty(id, title + ": no scores."); return; }
    Plotly.newPlot(id, [{ type: "histogram", x: values, marker: { color: colour, line: { color: "#fff", width: 1 } },
                          hovertemplate: axis + " %{x}<br>%{y} annotator(s)<extra></extra>" }], {
      title: { text: title + " (n = " + values.length + ")", font: { size: 14 } },
      margin: margin, bargap: 0.05,
      xaxis: { title: { text: axis } }, yaxis: { title: { text: "annotators" }, rangemode: "tozero", tickformat: "d" }
    }, config).then(function (chart) {
      // Counts are whole annotators: plotly's own ticks on a short axis fall at 0.5 and 1.5; a tick per annotator
      // instead, while there are few enough (above 10 its ticks are whole numbers already).
      if (chart.layout.yaxis.range[1] <= 10) { Plotly.relayout(chart, { "yaxis.dtick": 1, "yaxis.tick0": 0 }); }
    });
  }

  histogram("chart-aq", "aq", "AQ", "AQ total", colours.aq);
  histogram("chart-sata", "sata", "SATA", "SATA total", colours.sata);
  histogram("chart-iat", "iat_d", "IAT D", "D (positive = more bias)", colours.iat);
  histogram("chart-weight", "weight", "Weight W", "W = R / team mean R", colours.weight);

  var withR = annotators.filter(function (a) { return a.trust_raw !== null; });
  if (!withR.length) {
    empty("chart-r", "No annotator has a trust score R.");
  } else {
    var names = withR.map(function (a) { return a.pseudonym; });
    var part = function (key, label, colour) {
      return { type: "bar", name: label, x: names, marker: { color: colour },
               y: withR.map(function (a) { return a[key] === null ? 0 : a[key]; }),
               hovertemplate: "%{x}: " + label + " = %{y:.3f}<extra></extra>" };
    };
    var totals = { type: "scatter", mode: "markers", name: "R", x: names,
                   y: withR.map(function (a) { return a.trust_raw; }),
                   marker: { symbol: "line-ew-open", size: 14, color: "#222" },
                   customdata: withR.map(function (a) { return [a.weight, a.team]; }),
                   hovertemplate: "%{x} (team %{customdata[1]}): R = %{y:.3f}, W = %{customdata[0]:.3f}<extra></extra>" };
    Plotly.newPlot("chart-r", [part("aq_part", "x̂_AQ / 3", colours.aq), part("sata_part", "x̂_SATA / 3", colours.sata),
                               part("iat_part", "x̂_IAT / 3", colours.iat), totals], {
      barmode: "stack", margin: { l: 50, r: 15, t: 30, b: 60 },
      yaxis: { title: { text: "R" }, range: [0, 1] }, xaxis: { type: "category", automargin: true },
      legend: { orientation: "h", y: 1.12, traceorder: "normal" }
    }, config);
  }

  var kappa = data.kappa || {};
  if (!kappa.annotators || kappa.annotators.length < 2) {
    empty("chart-kappa", "Cohen's kappa needs two annotators with shared 0/1 labels.");
  } else {
    Plotly.newPlot("chart-kappa", [{
      type: "heatmap", x: kappa.annotators, y: kappa.annotators, z: kappa.kappa, zmin: -1, zmax: 1,
      colorscale: "RdBu", reversescale: true, hoverongaps: false,
      texttemplate: kappa.annotators.length <= 15 ? "%{z:.2f}" : "",
      colorbar: { title: { text: "κ" } },
      hovertemplate: "%{y} × %{x}: κ = %{z:.3f}<extra></extra>"
    }], {
      margin: { l: 60, r: 15, t: 20, b: 60 },
      xaxis: { type: "category" }, yaxis: { type: "category", autorange: "reversed" }
    }, config);
    // Drawn while its section may be collapsed (many annotators): fit it to its box when it is opened.
    document.getElementById("kappa-details").addEventListener("toggle", function () {
      Plotly.Plots.resize("chart-kappa");
    });
  }
}());
