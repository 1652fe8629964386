// The plotly our dashboards load: its core (which has scatter) and only the other trace types their charts draw. A
// chart script that draws a new type must register it here and rebuild (tests/test_plotly_bundle.py checks both).
'use strict';

var Plotly = require('plotly.js/lib/core');

Plotly.register([
    require('plotly.js/lib/bar'),
    require('plotly.js/lib/box'),
    require('plotly.js/lib/heatmap'),
    require('plotly.js/lib/histogram'),
    require('plotly.js/lib/scatterpolar')
]);

module.exports = Plotly;
