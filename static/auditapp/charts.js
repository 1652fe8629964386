/* What the paradigms' chart scripts share (classification_dashboard.js, bits_dashboard.js,
   self_report_dashboard.js, counterfactual_dashboard.js, implicit_bias_dashboard.js): plotly's configuration,
   the palette, and the helpers every chart needs.
   plotlyText escapes a string to entities, because plotly reads pseudo-HTML (<b>, <br>, <a>) in its labels and
   model, group and task names are researcher-entered: every string given to plotly goes through it. */
window.AuditCharts = (function () {
  "use strict";
  return {
    config: { displaylogo: false, responsive: true, modeBarButtonsToRemove: ["select2d", "lasso2d"] },
    palette: ["#2f5d7c", "#c0792a", "#5b8c4a", "#7a4f8c", "#a33b3b", "#3b8c8c", "#8c7a3b", "#555555"],
    plotlyText: function (value) {
      return String(value).replace(/&/g, "&amp;").replace(/</g, "&lt;").replace(/>/g, "&gt;");
    },
    known: function (value) { return value !== null && value !== undefined && isFinite(value); },
    empty: function (node, text) {
      node.textContent = "";
      var p = document.createElement("p");
      p.className = "chart-empty";
      p.textContent = text;
      node.appendChild(p);
    }
  };
}());
