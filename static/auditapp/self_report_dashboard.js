/* A self-report audit's Figure 2 (seed 000 §4.4): per instrument, each model's change masked − original as %
   of the scale maximum, drawn with the vendored plotly. A bar's colour says what the change does: the tier
   changes (darkest), a threshold is crossed, or neither (lightest); † marks a model flagged by the validity
   rule, ‡ one left out of the paired comparison. The data comes from the page (#audit-data).
   Model names and tier labels are researcher-entered, and plotly reads pseudo-HTML (<b>, <br>, <a>) in its
   labels: every string given to plotly is escaped to entities first, so it shows as typed. */
(function () {
  "use strict";
  var source = document.getElementById("audit-data");
  if (!source || typeof Plotly === "undefined") { return; }
  var data = JSON.parse(source.textContent);
  var COLOURS = { none: "#9ecae1", threshold: "#4292c6", tier: "#08306b" };
  var charts = window.AuditCharts;
  var config = charts.config, plotlyText = charts.plotlyText, empty = charts.empty;

  function signed(value, digits) {
    var text = Number(value).toFixed(digits);
    return value > 0 ? "+" + text : text;
  }

  function score(value) {
    return value === null || value === undefined ? "—" : String(Math.round(value * 100) / 100);
  }

  function figureTwo(node, instrument) {
    var rows = instrument.models.filter(function (row) {
      return row.change_percent_of_max !== null && row.change_percent_of_max !== undefined;
    });
    if (!rows.length) { empty(node, "No change to draw: no model has a score on both forms."); return; }
    var maximum = instrument.scale[1];
    var changes = rows.map(function (row) { return row.change_percent_of_max; });
    Plotly.newPlot(node, [{
      type: "bar",
      x: rows.map(function (row) {
        return plotlyText(row.model) + (row.flagged ? " †" : "") + (row.excluded ? " ‡" : "");
      }),
      y: changes,
      marker: { color: rows.map(function (row) { return COLOURS[row.level] || COLOURS.none; }),
                line: { color: "#1d1d1d", width: 0.5 } },
      text: changes.map(function (c) { return signed(c, 1) + "%"; }), textposition: "outside", cliponaxis: false,
      customdata: rows.map(function (row) {
        return [score(row.original), score(row.masked), signed(row.change, 2),
                plotlyText(row.original_tier || "no tier"), plotlyText(row.masked_tier || "no tier")];
      }),
      hovertemplate: "%{x}<br>original %{customdata[0]} (%{customdata[3]})<br>masked %{customdata[1]} " +
                     "(%{customdata[4]})<br>change %{customdata[2]} = %{text} of " + maximum + "<extra></extra>"
    }], {
      margin: { l: 70, r: 15, t: 30, b: 70 },
      xaxis: { type: "category", automargin: true },
      yaxis: { title: { text: "change, % of the scale maximum (" + maximum + ")" }, zeroline: true,
               zerolinecolor: "#888", ticksuffix: "%" }
    }, config);
  }

  Array.prototype.forEach.call(document.querySelectorAll(".figure-2[data-index]"), function (node) {
    var instrument = (data.instruments || [])[Number(node.getAttribute("data-index"))];
    if (instrument) { figureTwo(node, instrument); }
  });
}());
