// Tally's plotly.js bundle: the core (scatter included) and exactly the traces the
// dashboard draws. dashboard/charts.py builds the figures with plotly.py 7.1.0, which
// matches plotly.js 4.1.1: keep the two in step (see README.md).
'use strict';

var Plotly = require('plotly.js/lib/core');

Plotly.register([
    require('plotly.js/lib/scatter'), // visitors, actives, a page's own chart
    require('plotly.js/lib/bar'), // pageviews, top pages
    require('plotly.js/lib/heatmap'), // retention cohorts
    require('plotly.js/lib/choropleth') // the world map of visitors
]);

module.exports = Plotly;
