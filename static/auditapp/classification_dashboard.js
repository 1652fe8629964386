/* A classification audit's charts (seed 000 Tables 1–2 and Figure 1), loaded by audit_dashboard.html only,
   after audit_dashboard.js (the shared progress, controls and drill-down), the vendored plotly and charts.js:
   the colours of the heatmap tables (a cell opens its replies), Figure 1's mean Δκ per model and recall vs
   precision per model × condition (a point opens its replies). The page passes its data with json_script
   (#audit-data). Model names are researcher-entered and plotly reads pseudo-HTML in its labels: every string
   given to plotly goes through plotlyText. */
(function () {
  "use strict";
  var source = document.getElementById("audit-data");
  var dashboard = window.AuditDashboard;
  if (!source || !dashboard) { return; }
  var data = JSON.parse(source.textContent);
  var charts = window.AuditCharts;
  var config = charts.config, palette = charts.palette, plotlyText = charts.plotlyText, known = charts.known;
  var openDrilldown = dashboard.openDrilldown;
  var modelNames = {};
  (data.models || []).forEach(function (m) { modelNames[m.id] = m.label; });

  function emptyChart(id, text) { charts.empty(document.getElementById(id), text); }

  // ------------------------------------------------------------------------------------------ heatmaps

  function colour(value) {
    var t = Math.max(0, Math.min(1, value));
    var light = [247, 251, 255], dark = [8, 69, 148];
    var rgb = light.map(function (l, i) { return Math.round(l + (dark[i] - l) * t); });
    // The text is white or black, whichever contrasts more with the cell (WCAG relative luminance): the
    // better of the two is at least 4.6:1 on every shade of this scale, where a fixed cut at the middle left
    // some cells at 3.4:1 (and the page's #1d1d1d would leave the middle shades at 4.1:1).
    var luminance = relativeLuminance(rgb);
    var onWhite = 1.05 / (luminance + 0.05), onBlack = (luminance + 0.05) / 0.05;
    return { background: "rgb(" + rgb.join(",") + ")", text: onWhite > onBlack ? "#fff" : "#000" };
  }

  function relativeLuminance(rgb) {
    var linear = rgb.map(function (channel) {
      var c = channel / 255;
      return c <= 0.03928 ? c / 12.92 : Math.pow((c + 0.055) / 1.055, 2.4);
    });
    return 0.2126 * linear[0] + 0.7152 * linear[1] + 0.0722 * linear[2];
  }

  Array.prototype.forEach.call(document.querySelectorAll("table.heatmap td[data-value]"), function (td) {
    var value = parseFloat(td.getAttribute("data-value"));
    if (!isFinite(value)) { return; }
    var c = colour(value);
    td.style.backgroundColor = c.background;
    td.style.color = c.text;
  });

  Array.prototype.forEach.call(document.querySelectorAll("table.heatmap td.cell[data-condition]"), function (td) {
    var model = td.parentNode.getAttribute("data-model");
    var condition = td.getAttribute("data-condition");
    td.tabIndex = 0;
    td.classList.add("clickable");
    td.addEventListener("click", function () { openDrilldown(model, condition); });
    td.addEventListener("keydown", function (event) {
      if (event.key === "Enter" || event.key === " ") { event.preventDefault(); openDrilldown(model, condition); }
    });
  });

  // ------------------------------------------------------------------------------------------- charts

  function figureOne() {
    if (!document.getElementById("figure-1")) { return; }
    var means = (data.model_means || []).filter(function (m) { return known(m.delta_kappa); });
    if (!means.length) { emptyChart("figure-1", "No Δκ: no model has a cell with κ against both references."); return; }
    var deltas = means.map(function (m) { return m.delta_kappa; });
    Plotly.newPlot("figure-1", [{
      type: "bar", x: means.map(function (m) { return plotlyText(m.model); }), y: deltas,
      marker: { color: deltas.map(function (d) { return d >= 0 ? "#2f5d7c" : "#c0792a"; }) },
      text: deltas.map(function (d) { return d.toFixed(3); }), textposition: "outside", cliponaxis: false,
      hovertemplate: "%{x}: mean Δκ = %{y:.3f}<extra></extra>"
    }], {
      margin: { l: 70, r: 15, t: 30, b: 60 },
      xaxis: { type: "category", automargin: true },
      yaxis: { title: { text: "mean Δκ = κ(majority) − κ(weighted)" }, zeroline: true, zerolinecolor: "#888" }
    }, config);
  }

  // Points within this distance of each other on both axes (of 0–1) draw their labels over each other.
  var TIE_DISTANCE = 0.02;

  // Points that share a spot (ties, or nearly): for each point, the points at its spot, in the order they come. Only
  // the first of them is labelled, "(+k)" saying how many more are there; hovering any of them lists them all.
  function spots(points) {
    var found = [];
    return new Map(points.map(function (p) {
      var spot = found.filter(function (s) {
        return Math.abs(s[0].recall - p.recall) <= TIE_DISTANCE && Math.abs(s[0].precision - p.precision) <= TIE_DISTANCE;
      })[0];
      if (!spot) { spot = []; found.push(spot); }
      spot.push(p);
      return [p, spot];
    }));
  }

  function pointName(p) { return p.model + " · " + p.condition; }

  function scatterTraces(reference) {
    var points = (data.scatter || []).filter(function (p) {
      return p.reference === reference && known(p.recall) && known(p.precision);
    });
    var spotOf = spots(points);
    function label(p) {
      var spot = spotOf.get(p);
      if (spot[0] !== p) { return ""; }
      return plotlyText(pointName(p)) + (spot.length > 1 ? " (+" + (spot.length - 1) + ")" : "");
    }
    function hover(p) {
      var spot = spotOf.get(p);
      if (spot.length === 1) { return plotlyText(pointName(p)); }
      return plotlyText(pointName(p)) + "<br>at the same spot: " + spot.map(function (q) {
        return plotlyText(pointName(q));
      }).join(", ");
    }
    var byModel = {}, order = [];
    points.forEach(function (p) {
      if (!byModel[p.model_id]) { byModel[p.model_id] = []; order.push(p.model_id); }
      byModel[p.model_id].push(p);
    });
    return order.map(function (modelId, index) {
      var rows = byModel[modelId];
      return {
        type: "scatter", mode: "markers+text", name: plotlyText(modelNames[modelId] || rows[0].model),
        x: rows.map(function (p) { return p.recall; }), y: rows.map(function (p) { return p.precision; }),
        text: rows.map(label), textposition: "top center",
        textfont: { size: 11 },
        customdata: rows.map(function (p) {
          return [p.model_id, p.condition, known(p.f1) ? Number(p.f1).toFixed(3) : "— (undefined)", p.n, hover(p)];
        }),
        marker: { size: 11, color: palette[index % palette.length] },
        hovertemplate: "%{customdata[4]}<br>recall %{x:.3f}, precision %{y:.3f}<br>F1 %{customdata[2]}, " +
                       "n = %{customdata[3]}<extra></extra>"
      };
    });
  }

  var scatterDrawn = false;

  function scatter(reference) {
    var node = document.getElementById("chart-scatter");
    if (!node) { return; }
    var traces = scatterTraces(reference);
    if (!traces.length) {
      if (scatterDrawn) { Plotly.purge(node); scatterDrawn = false; }
      emptyChart("chart-scatter", "No cell has both recall and precision against the " + reference + " reference.");
      return;
    }
    if (!scatterDrawn) { node.textContent = ""; }
    Plotly.react(node, traces, {
      margin: { l: 60, r: 15, t: 20, b: 50 }, hovermode: "closest",
      xaxis: { title: { text: "recall (" + reference + ")" }, range: [-0.05, 1.08] },
      yaxis: { title: { text: "precision (" + reference + ")" }, range: [-0.05, 1.12] },
      legend: { orientation: "h", y: -0.2 }
    }, config);
    if (!scatterDrawn) {
      node.on("plotly_click", function (event) {
        var point = event.points && event.points[0];
        if (point && point.customdata) { openDrilldown(point.customdata[0], point.customdata[1]); }
      });
      scatterDrawn = true;
    }
  }

  if (typeof Plotly !== "undefined") {
    figureOne();
    scatter("weighted");
    Array.prototype.forEach.call(document.querySelectorAll("input[name=scatter-reference]"), function (input) {
      input.addEventListener("change", function () { if (input.checked) { scatter(input.value); } });
    });
  }
}());
