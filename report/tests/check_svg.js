// Run the flame graph's own script (the SVG's inline <script>) against the SVG's frames in a
// minimal DOM, as a browser would after a user's clicks, and print what the user would read:
// the "Matched" line after searches, zooms and the case toggle, and which frames are shown.
// usage: node check_svg.js FILE.svg   (prints JSON; the C test checks it)
'use strict';
const fs = require('fs');
const svg = fs.readFileSync(process.argv[2], 'utf8');

function unescapeXml(s) {
  return s.replace(/&lt;/g, '<').replace(/&gt;/g, '>').replace(/&quot;/g, '"')
      .replace(/&apos;/g, "'").replace(/&amp;/g, '&');
}

function classList() {
  const set = new Set();
  return {
    add: (c) => set.add(c),
    remove: (c) => set.delete(c),
    contains: (c) => set.has(c),
    toggle: (c, on) => (on === undefined ? !set.has(c) : on) ? set.add(c) : set.delete(c),
  };
}

function element(attrs, text) {
  const e = {
    attrs: Object.assign({}, attrs),
    classList: classList(),
    style: {},
    listeners: {},
    firstChild: {nodeValue: text === undefined ? ' ' : text},
    textContent: '',
    getAttribute(n) { return n in this.attrs ? this.attrs[n] : null; },
    setAttribute(n, v) { this.attrs[n] = String(v); },
    addEventListener(t, f) { this.listeners[t] = f; },
  };
  return e;
}

const root = element({
  width: /<svg[^>]* width="(\d+)"/.exec(svg)[1],
  'data-pad': /data-pad="(\d+)"/.exec(svg)[1],
  'data-total': /data-total="(\d+)"/.exec(svg)[1],
});
const byId = {};
for (const m of svg.matchAll(/<text id="(\w+)"[^>]*>([^<]*)<\/text>/g))
  byId[m[1]] = element({}, m[2]);
const frames = element({});
frames.children = [];
const re = /<g class="f" data-n="([^"]*)" data-x="(\d+)" data-w="(\d+)" data-d="(\d+)"><title>([^<]*)<\/title>/g;
for (const m of svg.matchAll(re)) {
  const g = element({'data-n': unescapeXml(m[1]), 'data-x': m[2], 'data-w': m[3], 'data-d': m[4]});
  const parts = {rect: element({}), text: element({}), title: element({})};
  parts.title.textContent = unescapeXml(m[5]);
  g.querySelector = (sel) => parts[sel];
  frames.children.push(g);
}
byId.frames = frames;

let answer = null;
const sandbox = {
  document: {documentElement: root, getElementById: (id) => byId[id]},
  window: {addEventListener() {}},
  prompt: () => answer,
  alert: (e) => { throw new Error('alert: ' + e); },
};
const script = /<!\[CDATA\[([\s\S]*?)\]\]>/.exec(svg)[1];
const api = new Function(...Object.keys(sandbox),
    script + '\nreturn {init, search, zoom, unzoom, toggle_ignorecase};')(
    ...Object.values(sandbox));
api.init({});

const matched = () => byId.matched.firstChild.nodeValue;
const frame = (name) => frames.children.find((g) => g.attrs['data-n'] === name);
const shown = () => frames.children.filter((g) => g.style.display !== 'none').length;
const out = {frames: frames.children.length};
answer = process.argv[3] || 'fixture_leaf';
api.search();
out.whole = matched();
const zoomTo = frame(process.argv[4] || 'fixture_middle');
out.zoom_w = +zoomTo.attrs['data-w'];
api.zoom(zoomTo);
out.zoomed = matched();
out.zoomed_shown = shown();
api.unzoom();
out.unzoomed = matched();
answer = (process.argv[3] || 'fixture_leaf').toUpperCase();
api.search();
out.upper = matched();
api.toggle_ignorecase();
out.upper_ic = matched();
out.ic_label = byId.ignorecase.firstChild.nodeValue;
console.log(JSON.stringify(out));
