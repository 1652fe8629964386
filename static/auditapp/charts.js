/* What the chart scripts share (the audit dashboards' classification_dashboard.js, bits_dashboard.js,
   self_report_dashboard.js, counterfactual_dashboard.js, implicit_bias_dashboard.js, robustness.js; the study
   dashboard's; the coding round's): plotly's configuration, the palette, the helpers every chart needs, and the
   downloads.
   plotlyText escapes a string to entities, because plotly reads pseudo-HTML (<b>, <br>, <a>) in its labels and
   model, group and task names are researcher-entered: every string given to plotly goes through it.
   Downloads: every chart drawn has two buttons beside it, SVG (vector, for a paper) and PNG (twice the size on
   screen, for slides), and the page one button that downloads all its figures as one ZIP file, each figure in both
   formats, named after its section and title and numbered in page order: what a researcher puts in a paper or a
   talk is the figures one by one, so the ZIP keeps them as separate files. This script must come before the chart
   scripts (frameChart). */
window.AuditCharts = (function () {
  "use strict";
  var PNG_SCALE = 2;

  // A file name from a figure's name: lower case, words joined by hyphens, at most 80 characters.
  function slug(text) {
    var name = String(text).toLowerCase().normalize("NFKD").replace(/[\u0300-\u036f]/g, "")
      .replace(/[^a-z0-9]+/g, "-").replace(/^-+|-+$/g, "").slice(0, 80).replace(/-+$/, "");
    return name || "figure";
  }

  // A chart's name: the heading of its section, then its own title when it has one (as drawn: entities decoded).
  function chartName(node) {
    var section = node.closest("section, details");
    var heading = section && section.querySelector("h2, h3, summary");
    var title = node.querySelector(".gtitle");
    var parts = [heading && heading.textContent.trim(), title && title.textContent.trim()].filter(Boolean);
    return parts.length ? parts.join(" — ") : (node.getAttribute("aria-label") || node.id || "figure");
  }

  function drawn(node) { return node.classList.contains("js-plotly-plot"); }

  function downloadChart(node, format) {
    if (!drawn(node)) { return; }
    Plotly.downloadImage(node, { format: format, scale: format === "png" ? PNG_SCALE : 1,
                                 filename: slug(chartName(node)) });
  }

  function button(text, onClick) {
    var control = document.createElement("button");
    control.type = "button";
    control.className = "chart-download";
    control.textContent = text;
    control.addEventListener("click", onClick);
    return control;
  }

  // Each chart box (.chart) is put in a frame beside a column of its two buttons, when this script runs: before the
  // chart scripts draw, so that plotly sizes each chart to what is left of its row. The frame takes the chart's place
  // in the page (a grid of charts keeps one cell per chart) and adds no height. The buttons show once the page has
  // loaded, beside the charts that were drawn (not beside a box that says why it has no chart).
  function frameChart(node) {
    var frame = document.createElement("div");
    frame.className = "chart-frame";
    node.parentNode.insertBefore(frame, node);
    frame.appendChild(node);
    var column = document.createElement("div");
    column.className = "chart-downloads";
    column.style.visibility = "hidden";  // its room kept: the chart is drawn to the width it keeps
    column.appendChild(button("SVG", function () { downloadChart(node, "svg"); }));
    column.appendChild(button("PNG", function () { downloadChart(node, "png"); }));
    frame.appendChild(column);
  }

  function showChartDownloads(node) {
    var frame = node.parentNode;
    if (!frame.classList.contains("chart-frame")) { return; }  // a chart drawn outside a .chart box has none
    var column = frame.querySelector(":scope > .chart-downloads");
    var name = chartName(node);
    Array.prototype.forEach.call(column.querySelectorAll("button"), function (control) {
      control.setAttribute("aria-label", "Download " + name + " as " + control.textContent);
      control.title = control.getAttribute("aria-label");
    });
    column.style.visibility = "";
  }

  // ZIP (stored, not compressed: PNG is compressed already, and the SVGs are small) of {name, bytes} files.
  var CRC_TABLE = (function () {
    var table = [];
    for (var n = 0; n < 256; n++) {
      var c = n;
      for (var k = 0; k < 8; k++) { c = c & 1 ? 0xEDB88320 ^ (c >>> 1) : c >>> 1; }
      table.push(c >>> 0);
    }
    return table;
  }());

  function crc32(bytes) {
    var crc = 0xFFFFFFFF;
    for (var i = 0; i < bytes.length; i++) { crc = CRC_TABLE[(crc ^ bytes[i]) & 0xFF] ^ (crc >>> 8); }
    return (crc ^ 0xFFFFFFFF) >>> 0;
  }

  // The ZIP format's little-endian headers (PKWARE APPNOTE 4.3.7, 4.3.12, 4.3.16): names in UTF-8 (flag bit 11),
  // each file's time the time of the download.
  function zip(files) {
    var encoder = new TextEncoder(), parts = [], central = [], offset = 0, now = new Date();
    var dosTime = (now.getHours() << 11) | (now.getMinutes() << 5) | (now.getSeconds() >> 1);
    var dosDate = ((now.getFullYear() - 1980) << 9) | ((now.getMonth() + 1) << 5) | now.getDate();
    function fields(size) { return new DataView(new ArrayBuffer(size)); }
    files.forEach(function (file) {
      var name = encoder.encode(file.name), crc = crc32(file.bytes), size = file.bytes.length;
      var local = fields(30);
      local.setUint32(0, 0x04034b50, true); local.setUint16(4, 20, true); local.setUint16(6, 0x0800, true);
      local.setUint16(10, dosTime, true); local.setUint16(12, dosDate, true);
      local.setUint32(14, crc, true); local.setUint32(18, size, true); local.setUint32(22, size, true);
      local.setUint16(26, name.length, true);
      parts.push(local.buffer, name, file.bytes);
      var entry = fields(46);
      entry.setUint32(0, 0x02014b50, true); entry.setUint16(4, 20, true); entry.setUint16(6, 20, true);
      entry.setUint16(8, 0x0800, true); entry.setUint16(12, dosTime, true); entry.setUint16(14, dosDate, true);
      entry.setUint32(16, crc, true); entry.setUint32(20, size, true);
      entry.setUint32(24, size, true); entry.setUint16(28, name.length, true); entry.setUint32(42, offset, true);
      central.push(entry.buffer, name);
      offset += 30 + name.length + size;
    });
    var centralSize = central.reduce(function (sum, part) { return sum + part.byteLength; }, 0);
    var end = fields(22);
    end.setUint32(0, 0x06054b50, true); end.setUint16(8, files.length, true); end.setUint16(10, files.length, true);
    end.setUint32(12, centralSize, true); end.setUint32(16, offset, true);
    return new Blob(parts.concat(central, [end.buffer]), { type: "application/zip" });
  }

  function base64Bytes(data) {
    var text = atob(data.slice(data.indexOf(",") + 1));
    var bytes = new Uint8Array(text.length);
    for (var i = 0; i < text.length; i++) { bytes[i] = text.charCodeAt(i); }
    return bytes;
  }

  function save(blob, filename) {
    var link = document.createElement("a");
    link.href = URL.createObjectURL(blob);
    link.download = filename;
    document.body.appendChild(link);
    link.click();
    link.remove();
    window.setTimeout(function () { URL.revokeObjectURL(link.href); }, 60000);
  }

  function downloadAll(control) {
    var charts = Array.prototype.filter.call(document.querySelectorAll(".js-plotly-plot"), drawn);
    var width = String(charts.length).length;
    control.disabled = true;
    var encoder = new TextEncoder();
    Promise.all(charts.map(function (node, index) {
      var stem = String(index + 1).padStart(Math.max(2, width), "0") + "-" + slug(chartName(node));
      return Promise.all([Plotly.toImage(node, { format: "svg", imageDataOnly: true }),
                          Plotly.toImage(node, { format: "png", scale: PNG_SCALE })]).then(function (images) {
        return [{ name: stem + ".svg", bytes: encoder.encode(images[0]) },
                { name: stem + ".png", bytes: base64Bytes(images[1]) }];
      });
    })).then(function (pairs) {
      save(zip([].concat.apply([], pairs)), slug(document.title) + "-figures.zip");
    }).finally(function () { control.disabled = false; });
  }

  // The page's button: where the page keeps a place for it ([data-figure-downloads]) or in its header's exports
  // line, else before the first chart's section.
  function addPageDownload(charts) {
    var control = button("Download all " + charts.length + " figures (ZIP of SVG and PNG)",
                         function () { downloadAll(control); });
    control.id = "download-figures";
    var place = document.querySelector("[data-figure-downloads]") || document.querySelector(".exports");
    if (place) {
      place.appendChild(document.createTextNode(" "));
      place.appendChild(control);
      return;
    }
    var first = charts[0].closest("section") || charts[0];
    var line = document.createElement("p");
    line.className = "figure-downloads";
    line.appendChild(control);
    first.parentNode.insertBefore(line, first);
  }

  Array.prototype.forEach.call(document.querySelectorAll(".chart"), frameChart);
  window.addEventListener("load", function () {
    if (typeof Plotly === "undefined") { return; }
    var charts = Array.prototype.filter.call(document.querySelectorAll(".js-plotly-plot"), drawn);
    if (!charts.length) { return; }
    charts.forEach(showChartDownloads);
    addPageDownload(charts);
  });

  return {
    // The modebar's camera saves a PNG at twice the size on screen, as the download buttons do.
    config: { displaylogo: false, responsive: true, modeBarButtonsToRemove: ["select2d", "lasso2d"],
              toImageButtonOptions: { scale: PNG_SCALE } },
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
