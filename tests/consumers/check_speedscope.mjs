// speedscope (from npm) importing `hvprof report`'s folded stacks, pprof and perf-script files
// of the demo guest (tests/consumers/record.sh) in Debian's headless Chromium, driven by
// playwright-core; what its Sandwich view lists is compared with `hvprof report --format top`
// (docs/report.md, "Checked with"):
//   folded       each listed function's self samples equal hvprof's (summed over binaries:
//                folded stacks carry names only)
//   pprof        the same in milliseconds at 1 ms a sample, a name two binaries share listed
//                once per binary ("_start (workload.elf)")
//   perf-script  one profile per guest thread in the file, none dropped, and every function
//                with 1 % or more of hvprof's self samples listed in some thread's profile
//   svg          hvprof's flame graph opens scrolled to its roots
//   diff svg     hvprof diff's flame graph renders, red where the new recording has more and
//                blue where less, and opens on its roots
//
// usage: node check_speedscope.mjs REPORT_DIR NODE_MODULES CHROMIUM
import fs from 'node:fs';
import http from 'node:http';
import path from 'node:path';
import { createRequire } from 'node:module';

const [reportDir, modules, chromiumPath] = process.argv.slice(2);
const require = createRequire(path.join(path.resolve(modules), 'index.js'));
const { chromium } = require('playwright-core');
const speedscopeDir = path.join(path.dirname(require.resolve('speedscope/package.json')),
                                'dist', 'release');

const failures = [];
function check(ok, what) {
  console.log((ok ? 'ok   ' : 'FAIL ') + what);
  if (!ok) failures.push(what);
}

// hvprof's own table: self samples per (object, symbol), in report/report_top.c's layout.
const self = new Map(), objectsOf = new Map();
let section = 'functions', total = 0;
for (const line of fs.readFileSync(path.join(reportDir, 'top.txt'), 'utf8').split('\n')) {
  const m = line.match(/^# hvprof report: (\d+) samples/);
  if (m) total = Number(m[1]);
  if (line.startsWith('# Per ')) section = 'other';
  if (line.startsWith('#') || !line.trim() || section !== 'functions') continue;
  const cols = line.trim().split(/\s+/);
  const obj = cols[3], sym = cols.slice(5).join(' ');
  self.set(`${obj}\t${sym}`, Number(cols[2]));
  if (!objectsOf.has(sym)) objectsOf.set(sym, new Set());
  objectsOf.get(sym).add(obj);
}
check(total > 500, `top.txt: ${total} samples`);
const selfByName = new Map();
for (const [key, n] of self) {
  const sym = key.split('\t')[1];
  selfByName.set(sym, (selfByName.get(sym) || 0) + n);
}
const pprofName = (obj, sym) => (objectsOf.get(sym).size > 1 ? `${sym} (${obj})` : sym);
const selfByPprofName = new Map();
for (const [key, n] of self) {
  const [obj, sym] = key.split('\t');
  selfByPprofName.set(pprofName(obj, sym), n);
}

// The pages and the files, from one loopback server.
const server = http.createServer((req, res) => {
  const url = decodeURIComponent(req.url.split('?')[0]);
  for (const [prefix, dir] of [['/speedscope/', speedscopeDir], ['/data/', reportDir]]) {
    if (!url.startsWith(prefix)) continue;
    const file = path.join(dir, path.normalize(url.slice(prefix.length)));
    if (file.startsWith(dir) && fs.existsSync(file) && fs.statSync(file).isFile()) {
      res.writeHead(200);
      res.end(fs.readFileSync(file));
      return;
    }
  }
  res.writeHead(404);
  res.end();
});
await new Promise((resolve) => server.listen(0, '127.0.0.1', resolve));
const base = `http://127.0.0.1:${server.address().port}`;
// The flags Chromium needs as root on a machine without network or GPU.
const browser = await chromium.launch({
  executablePath: chromiumPath,
  args: ['--no-sandbox', '--disable-gpu', '--disable-background-networking',
         '--disable-component-update', '--disable-sync', '--no-first-run'],
});

// Open one file in the Sandwich view; returns the page once its table is there. speedscope's
// table renders only the rows in view, so the window is tall enough for every row of a profile.
async function open(file) {
  const page = await browser.newPage({viewport: {width: 1280, height: 12000}});
  const errors = [];
  page.on('pageerror', (e) => errors.push(String(e)));
  page.on('console', (m) => { if (m.type() === 'error') errors.push(m.text()); });
  const profileURL = encodeURIComponent(`${base}/data/${file}`);
  await page.goto(`${base}/speedscope/index.html#profileURL=${profileURL}&view=sandwich`);
  try {
    await page.waitForSelector('text=Symbol Name', { timeout: 60000 });
  } catch (e) {
    check(false, `${file}: speedscope showed no table (${errors.join('; ') || e.message})`);
    return null;
  }
  return page;
}

// The Sandwich table as rendered: title line, then rows of total, self, name. Values are
// counts ("255 (15%)") or times ("255.00ms (15%)", "1.01s (99%)").
async function table(page) {
  const lines = (await page.evaluate(() => document.body.innerText)).split('\n')
    .map((s) => s.trim()).filter((s) => s);
  const head = lines.findIndex((s) => /^Total\s+Self\s+Symbol Name$/.test(s));
  // speedscope picks the unit by magnitude: a thread with a second or more of samples shows
  // "1.01s", a rare function "501.00µs". Times are returned in milliseconds.
  const unit = { '': 1, ns: 1e-6, 'µs': 1e-3, ms: 1, s: 1000 };
  const value = (s) => {
    const m = s.match(/^([\d.]+)(ns|µs|ms|s)? \(/);
    return m ? Number(m[1]) * unit[m[2] || ''] : NaN;
  };
  const rows = [];
  for (let i = head + 1; i + 2 < lines.length + 1 && head >= 0; i += 3) {
    if (Number.isNaN(value(lines[i])) || Number.isNaN(value(lines[i + 1]))) break;
    rows.push({ total: value(lines[i]), self: value(lines[i + 1]), name: lines[i + 2] });
  }
  return { title: lines[1] || '', rows };
}

function compare(file, rows, want, scale) {
  let compared = 0;
  const wrong = [];
  for (const r of rows) {
    if (!want.has(r.name)) continue;
    compared++;
    if (Math.abs(r.self / scale - want.get(r.name)) > 0.01)
      wrong.push(`${r.name}: speedscope ${r.self}, hvprof ${want.get(r.name)}`);
  }
  check(compared >= 10 && wrong.length === 0,
        `${file}: self samples of the ${compared} listed functions equal hvprof's` +
        (wrong.length ? `: ${wrong.slice(0, 6).join('; ')}` : ''));
}

try {
  let page = await open('stacks.folded');
  if (page) {
    const t = await table(page);
    compare('stacks.folded', t.rows, selfByName, 1);
    check(t.rows.some((r) => r.name === 'hot_leaf' && r.self === selfByName.get('hot_leaf')),
          `stacks.folded: hot_leaf listed with ${selfByName.get('hot_leaf')} samples`);
    await page.close();
  }

  page = await open('profile.pb.gz');
  if (page) {
    const t = await table(page);
    compare('profile.pb.gz', t.rows, selfByPprofName, 1.0 /* ms at 1 kHz */);
    await page.close();
  }

  // perf-script: one profile per thread (comm pid/tid at the start of each sample's line).
  const script = fs.readFileSync(path.join(reportDir, 'perf-script.txt'), 'utf8');
  const threads = new Set(script.split('\n').filter((l) => / cpu-clock:/.test(l))
    .map((l) => l.split(/\s+/).slice(0, 2).join(' ')));
  page = await open('perf-script.txt');
  if (page) {
    const seen = new Set(), listed = new Set();
    let count = 0;
    for (let i = 0; i < threads.size + 1; i++) {
      const t = await table(page);
      const m = t.title.match(/^(.*) pid: (\d+) tid: (\d+) \((\d+)\/(\d+)\)$/);
      if (!m) {
        check(false, `perf-script.txt: no profile title in "${t.title}"`);
        break;
      }
      count = Number(m[5]);
      seen.add(`${m[1]} ${m[2]}/${m[3]}`);
      for (const r of t.rows) listed.add(r.name);
      // speedscope: next profile in the file. Wait for its title to show (a loaded machine
      // re-renders late): reading the table before would see the last profile again.
      await page.keyboard.press('n');
      for (let w = 0; w < 100 && (await table(page)).title === t.title; w++)
        await page.waitForTimeout(100);
      // ...and for its rows to settle: the title can show before the table re-renders.
      for (let w = 0, last = ''; w < 50; w++) {
        const now = JSON.stringify(await table(page));
        if (now === last) break;
        last = now;
        await page.waitForTimeout(100);
      }
    }
    check(count === threads.size && seen.size === threads.size,
          `perf-script.txt: ${count} profiles, ${seen.size} threads seen, ${threads.size} in the file`);
    const big = [...selfByName].filter(([n, c]) => c * 100 >= total && !n.startsWith('0x'))
      .map(([n]) => n);
    const missing = big.filter((n) => !listed.has(n));
    check(big.length >= 5 && missing.length === 0,
          `perf-script.txt: the ${big.length} functions with >= 1 % self samples listed` +
          (missing.length ? `; missing: ${missing.join(', ')}` : ''));
    await page.close();
  }
  // hvprof's own flame graph in the same browser: taller than the window (the demo's recursion),
  // it opens scrolled to its roots, the bottom frame ("all") in view.
  {
    const page = await browser.newPage({viewport: {width: 1200, height: 700}});
    await page.goto(`${base}/data/flamegraph.svg`);
    await page.waitForFunction(() => document.getElementById('frames') !== null);
    const at = await page.evaluate(() => {
      const all = [...document.querySelectorAll('g.f')].find((g) => g.getAttribute('data-n') === 'all');
      const r = all.querySelector('rect').getBoundingClientRect();
      return {scrollY: window.scrollY, height: document.documentElement.getBoundingClientRect().height,
              allTop: r.top, allBottom: r.bottom, inner: window.innerHeight};
    });
    check(at.height <= at.inner || (at.scrollY > 0 && at.allTop >= 0 && at.allBottom <= at.inner),
          `flamegraph.svg: ${at.height} px tall opens at scrollY ${at.scrollY}, its root ` +
          `frame at ${Math.round(at.allTop)}-${Math.round(at.allBottom)} of ${at.inner}`);
    // The controls in view wherever the page is scrolled, and the graph as wide as the window.
    const controls = async () => page.evaluate(() => {
      const box = (id) => document.getElementById(id).getBoundingClientRect();
      const all = [...document.querySelectorAll('g.f')].find((g) => g.getAttribute('data-n') === 'all');
      return {title: box('title'), search: box('search'), inner: window.innerHeight,
              innerW: window.innerWidth, allW: all.querySelector('rect').getBoundingClientRect().width,
              scrollY: window.scrollY};
    });
    const inView = (c) => c.title.top >= 0 && c.title.bottom <= c.inner && c.search.top >= 0 &&
      c.search.right <= c.innerW;
    let c = await controls();
    await page.screenshot({path: `${reportDir}/flamegraph-view.png`});
    check(inView(c), `flamegraph.svg: title and Search in view at the roots (title at ` +
          `${Math.round(c.title.top)}, scrollY ${c.scrollY}; screenshot flamegraph-view.png)`);
    await page.evaluate(() => window.scrollTo(0, 0));
    await page.waitForTimeout(200);
    c = await controls();
    check(inView(c), `flamegraph.svg: title and Search still in view scrolled to the top ` +
          `(title at ${Math.round(c.title.top)})`);
    await page.setViewportSize({width: 1600, height: 700});
    await page.waitForTimeout(300);
    c = await controls();
    check(c.allW > 1550 && inView(c), `flamegraph.svg: at 1600 px the root frame is ` +
          `${Math.round(c.allW)} px wide, the controls in view`);
    await page.setViewportSize({width: 900, height: 700});
    await page.waitForTimeout(300);
    c = await controls();
    check(c.allW < 900 && c.allW > 850 && inView(c), `flamegraph.svg: at 900 px the root ` +
          `frame is ${Math.round(c.allW)} px wide, the controls in view`);
    await page.close();
  }
  // hvprof diff's flame graph (record.sh: the workload alone as the base): it renders, with
  // frames that grew in red and frames that shrank in blue, and opens on its roots too.
  {
    const page = await browser.newPage({viewport: {width: 1200, height: 700}});
    await page.goto(`${base}/data/diff/diff.svg`);
    await page.waitForFunction(() => document.getElementById('frames') !== null);
    const seen = await page.evaluate(() => {
      const fills = [...document.querySelectorAll('g.f rect')].map((r) => r.getAttribute('fill'));
      const all = [...document.querySelectorAll('g.f')].find((g) => g.getAttribute('data-n') === 'all');
      const r = all.querySelector('rect').getBoundingClientRect();
      return {red: fills.filter((f) => /^rgb\(255,(\d+),\1\)$/.test(f) && f !== 'rgb(255,255,255)').length,
              blue: fills.filter((f) => /^rgb\((\d+),\1,255\)$/.test(f)).length,
              frames: fills.length, allTop: r.top, allBottom: r.bottom, inner: window.innerHeight,
              title: document.getElementById('title').textContent,
              legend: (document.getElementById('legendtext') || {}).textContent || ''};
    });
    check(seen.frames > 20 && seen.red > 0 && seen.blue > 0 && seen.allTop >= 0 &&
          seen.allBottom <= seen.inner && seen.title.includes('red: more, blue: less') &&
          seen.legend.includes('gone from NEW: drawn at its BASE width'),
          `diff.svg: ${seen.frames} frames, ${seen.red} red (more), ${seen.blue} blue (less), ` +
          `root at ${Math.round(seen.allTop)}-${Math.round(seen.allBottom)} of ${seen.inner}`);
    await page.close();
  }
} finally {
  await browser.close();
  server.close();
}
if (failures.length) {
  console.log(`\n${failures.length} check(s) failed`);
  process.exit(1);
}
console.log('\nall speedscope checks passed');
