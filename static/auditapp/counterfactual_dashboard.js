/* A counterfactual audit's figures (seed 002), drawn with the vendored plotly from the page's data (#audit-data,
   data.analysis as the names or dialect design stored it):
   - names, Figure 1: one panel per minority group (.figure-1-panel), tasks ordered by the cross-model mean gap,
     a point per model, the mean with ±1 SD;
   - dialect, Figure 2: one panel per task (.figure-2-panel, laid out in a grid), each model's gap with its
     approximate 95% CI in the same model order everywhere, the cross-model mean as a line, and one x scale for every
     panel (figureTwoRange) so that panels compare at a glance.
   A model's point (names) or bar (dialect) opens the page again with its error browser preset to that model × task
   (and group), through the dashboard's query (pairs_model, pairs_task, pairs_group).
   Model, group and task names can be researcher-entered, and plotly reads pseudo-HTML in its labels: every string
   given to plotly is escaped to entities first. */
(function () {
  "use strict";
  var source = document.getElementById("audit-data");
  if (!source || typeof Plotly === "undefined") { return; }
  var data = JSON.parse(source.textContent);
  var analysis = data.analysis || {};
  var tables = analysis.tables || {};
  var charts = window.AuditCharts;
  var config = charts.config, palette = charts.palette, plotlyText = charts.plotlyText, known = charts.known,
      empty = charts.empty;

  function colourOf(models) {
    var colours = {};
    models.forEach(function (model, i) { colours[model] = palette[i % palette.length]; });
    return colours;
  }

  function browsePairs(model, task, group) {
    var entry = (data.models || []).filter(function (m) { return m.label === model; })[0];
    if (!entry) { return; }
    var query = new URLSearchParams({pairs_model: entry.id, pairs_task: task});
    if (group) { query.set("pairs_group", group); }
    window.location.assign(window.location.pathname + "?" + query.toString() + "#pair-browser");
  }

  function figureOne(node, group) {
    var summary = (tables.summary || []).filter(function (row) { return row.group === group && known(row.mean); });
    if (!summary.length) { empty(node, "No gap for this group yet."); return; }
    summary.sort(function (a, b) { return a.mean - b.mean; });
    var order = summary.map(function (row) { return row.task; });
    var colours = colourOf(analysis.models || []);
    var traces = (analysis.models || []).map(function (model) {
      var rows = (tables.cells || []).filter(function (c) {
        return c.group === group && c.model === model && known(c.mean_gap) && order.indexOf(c.task) >= 0;
      });
      return {
        type: "scatter", mode: "markers", name: plotlyText(model), meta: model,
        x: rows.map(function (c) { return c.mean_gap; }), y: rows.map(function (c) { return plotlyText(c.task); }),
        customdata: rows.map(function (c) { return [c.n_pairs, c.q, c.significant ? "FDR-significant" : "", c.task]; }),
        marker: { size: 7, color: colours[model], opacity: 0.75 },
        hovertemplate: plotlyText(model) + ": %{x:.3f} (%{customdata[0]} pairs, q = %{customdata[1]:.3g}) " +
                       "%{customdata[2]}; click for its pairs<extra></extra>"
      };
    });
    traces.push({
      type: "scatter", mode: "markers", name: "cross-model mean ± 1 SD",
      x: summary.map(function (row) { return row.mean; }), y: summary.map(function (row) { return plotlyText(row.task); }),
      error_x: { type: "data", array: summary.map(function (row) { return known(row.sd) ? row.sd : 0; }),
                 thickness: 6, width: 0, color: "rgba(60,60,60,0.25)" },
      marker: { symbol: "line-ns", size: 16, line: { width: 4, color: "#222" } },
      customdata: summary.map(function (row) { return [row.consistency_text, row.n_significant]; }),
      hovertemplate: "mean %{x:.3f}; %{customdata[0]} models share its sign; %{customdata[1]} FDR-significant" +
                     "<extra></extra>"
    });
    node.style.height = Math.max(320, 22 * order.length + 90) + "px";
    Plotly.newPlot(node, traces, {
      title: { text: plotlyText(group) }, margin: { l: 170, r: 15, t: 40, b: 45 }, hovermode: "closest",
      xaxis: { title: { text: "gap (" + plotlyText(group) + " − " +
                              plotlyText((analysis.settings || {}).reference_group || "reference") + " yes-rate)" },
               zeroline: true, zerolinecolor: "#888" },
      yaxis: { type: "category", categoryorder: "array", categoryarray: order.map(plotlyText), automargin: true },
      legend: { orientation: "h", y: -0.12 }
    }, config);
    node.on("plotly_click", function (event) {
      var point = event.points[0];
      if (point.data.meta !== undefined) { browsePairs(point.data.meta, point.customdata[3], group); }
    });
  }

  // The x range every Figure 2 panel shares: all gaps, CI ends and means, 0 included, with a margin.
  function figureTwoRange() {
    var ends = [0];
    (tables.cells || []).forEach(function (c) { ends.push(c.gap, c.ci_low, c.ci_high); });
    (tables.summary || []).forEach(function (row) { ends.push(row.mean); });
    ends = ends.filter(known);
    var low = Math.min.apply(null, ends), high = Math.max.apply(null, ends);
    var pad = Math.max(0.02, 0.06 * (high - low));
    return [low - pad, high + pad];
  }

  function figureTwo(node, task, name, range) {
    var summary = (tables.summary || []).filter(function (row) { return row.task === task; })[0];
    var rows = (tables.cells || []).filter(function (c) { return c.task === task && known(c.gap); });
    if (!rows.length) { empty(node, "No gap for this task yet."); return; }
    var models = analysis.models || [];
    var byModel = {};
    rows.forEach(function (c) { byModel[c.model] = c; });
    var shown = models.filter(function (m) { return byModel[m]; });
    var colours = colourOf(models);
    var trace = {
      type: "bar", orientation: "h", y: shown.map(plotlyText),
      x: shown.map(function (m) { return byModel[m].gap; }),
      error_x: { type: "data", symmetric: false,
                 array: shown.map(function (m) { var c = byModel[m]; return known(c.ci_high) ? c.ci_high - c.gap : 0; }),
                 arrayminus: shown.map(function (m) { var c = byModel[m]; return known(c.ci_low) ? c.gap - c.ci_low : 0; }) },
      marker: { color: shown.map(function (m) { return colours[m]; }) },
      customdata: shown.map(function (m) { var c = byModel[m]; return [c.yes_sae, c.yes_aave, c.q, m]; }),
      hovertemplate: "%{y}: %{x:.3f} (SAE %{customdata[0]:.3f}, AAVE %{customdata[1]:.3f}, q = %{customdata[2]:.3g});" +
                     " click for its pairs<extra></extra>"
    };
    var shapes = [];
    if (summary && known(summary.mean)) {
      shapes.push({ type: "line", xref: "x", yref: "paper", x0: summary.mean, x1: summary.mean, y0: 0, y1: 1,
                    line: { color: "#222", width: 3 } });
    }
    node.style.height = Math.max(260, 24 * models.length + 110) + "px";
    Plotly.newPlot(node, [trace], {
      title: { text: plotlyText(name) + (summary && known(summary.mean) ? " (μ = " + summary.mean.toFixed(2) + ")" : ""),
               font: { size: 14 } },
      margin: { l: 140, r: 15, t: 40, b: 45 }, shapes: shapes, showlegend: false,
      xaxis: { title: { text: "AAVE − SAE yes-rate" }, range: range, zeroline: true, zerolinecolor: "#888",
               zerolinewidth: 1 },
      yaxis: { type: "category", categoryorder: "array", categoryarray: models.map(plotlyText).reverse(),
               automargin: true }
    }, config);
    node.on("plotly_click", function (event) { browsePairs(event.points[0].customdata[3], task); });
  }

  Array.prototype.forEach.call(document.querySelectorAll(".figure-1-panel"), function (node) {
    figureOne(node, node.getAttribute("data-group"));
  });
  var sharedRange = figureTwoRange();
  Array.prototype.forEach.call(document.querySelectorAll(".figure-2-panel"), function (node) {
    figureTwo(node, node.getAttribute("data-task"), node.getAttribute("data-name"), sharedRange);
  });
}());
