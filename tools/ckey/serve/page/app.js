/* ckey serve: the review page. Plain script, no libraries, nothing loaded from elsewhere.
 *
 * The server does the pixels: /api/frame (a plate or hint before keying), /api/key (keys a frame with the
 * page's settings and answers its id and timings), /api/view (a keyed frame's view as an 8-bit PNG, composited
 * over the background in linear light), /api/pixel (the stored values at one pixel), /api/render and its event
 * stream (`ckey key --json`'s events). This file only draws those PNGs on canvases, unscaled pixels at 1:1
 * (no smoothing when zoomed), and keeps the controls and the state.
 */
'use strict';

const $ = (id) => document.getElementById(id);
const VIEWS = [['plate', 'plate'], ['hint', 'hint'], ['matte', 'matte'], ['fg', 'foreground'],
               ['processed', 'processed'], ['comp', 'comp']];
const KEYED_VIEWS = new Set(['matte', 'fg', 'processed', 'comp']);

const st = {
  info: null, shot: 0, frame: 0,
  settings: {},            // what the next key uses
  keyed: null,             // the last key of the current shot and frame: the server's answer
  layout: 'single', views: ['comp', 'plate'], bg: 'checker', colour: '202020',
  zoom: 0, cx: 0, cy: 0,   // zoom 0: fit; else device pixels per image pixel, (cx, cy) the image point centred
  wipe: 0.5,
  images: [null, null],    // what each pane shows
  keying: false, again: false, renderFollowing: false,
};

/* ---- requests ---- */

function settingsQuery() {
  const s = st.settings;
  return {size: s.size, tile: s.tile, overlap: s.tile ? s.overlap : 0, precision: s.precision,
          despill: s.despill, despeckle: s.despeckle ? 1 : 0, despeckle_size: s.despeckle_size,
          refiner_scale: s.refiner_scale};
}

async function api(method, path, params) {
  const url = path + (params ? '?' + new URLSearchParams(params) : '');
  const r = await fetch(url, {method, credentials: 'same-origin'});
  const text = await r.text();
  let body = null;
  try { body = JSON.parse(text); } catch (e) { body = {error: text}; }
  if (!r.ok) throw new Error(body.error || r.status + ' ' + r.statusText);
  return body;
}

const imageCache = new Map();
function loadImage(url) {
  if (imageCache.has(url)) return imageCache.get(url);
  const p = new Promise((resolve, reject) => {
    const img = new Image();
    img.onload = () => resolve(img);
    img.onerror = () => { imageCache.delete(url); reject(new Error('cannot load ' + url)); };
    img.src = url;
  });
  imageCache.set(url, p);
  if (imageCache.size > 32) imageCache.delete(imageCache.keys().next().value);
  return p;
}

function viewUrl(view) {
  const k = st.keyed;
  const bg = view === 'fg' || view === 'processed' ? (st.bg === 'colour' ? st.colour : st.bg) : null;
  if (k) return '/api/view?' + new URLSearchParams({id: k.id, view, ...(bg ? {bg} : {})});
  if (KEYED_VIEWS.has(view)) return null;
  return '/api/frame?' + new URLSearchParams({shot: st.shot, frame: st.frame, view});
}

/* ---- drawing ---- */

const panes = [$('pane-a'), $('pane-b')];

function transform(canvas, img) {
  const cw = canvas.width, ch = canvas.height, iw = img.naturalWidth, ih = img.naturalHeight;
  const z = st.zoom || Math.min(cw / iw, ch / ih);
  const cx = st.zoom ? st.cx : iw / 2, cy = st.zoom ? st.cy : ih / 2;
  // integer offsets: at 1:1 every image pixel lands on one canvas pixel
  return {z, x: Math.round(cw / 2 - cx * z), y: Math.round(ch / 2 - cy * z), w: iw * z, h: ih * z};
}

function sizeCanvas(canvas) {
  const dpr = window.devicePixelRatio || 1;
  const w = Math.round(canvas.clientWidth * dpr), h = Math.round(canvas.clientHeight * dpr);
  if (canvas.width !== w || canvas.height !== h) { canvas.width = w; canvas.height = h; }
}

function drawImageAt(ctx, img, t) {
  ctx.imageSmoothingEnabled = t.z < 1; // magnified pixels stay square; reduced views are filtered
  ctx.drawImage(img, t.x, t.y, t.w, t.h);
}

function draw() {
  const wipe = st.layout === 'wipe', side = st.layout === 'side';
  panes[1].hidden = !side;
  $('wipe-handle').hidden = !wipe;
  for (let i = 0; i < (side ? 2 : 1); i++) {
    const canvas = panes[i].querySelector('canvas'), ctx = canvas.getContext('2d');
    sizeCanvas(canvas);
    ctx.fillStyle = '#111';
    ctx.fillRect(0, 0, canvas.width, canvas.height);
    const img = st.images[i];
    let tag = label(st.views[i]);
    if (img) drawImageAt(ctx, img, transform(canvas, img));
    if (wipe && st.images[1]) { // B to the right of the line
      const x = Math.round(st.wipe * canvas.width);
      ctx.save();
      ctx.beginPath();
      ctx.rect(x, 0, canvas.width - x, canvas.height);
      ctx.clip();
      drawImageAt(ctx, st.images[1], transform(canvas, st.images[1]));
      ctx.restore();
      tag += '  |  ' + label(st.views[1]);
    }
    if (!img && KEYED_VIEWS.has(st.views[i]) && !st.keyed) tag += ' — not keyed yet (K)';
    panes[i].querySelector('.tag').textContent = tag;
  }
  $('wipe-handle').style.left = (st.wipe * 100) + '%';
  const first = st.images[0];
  $('zoom-label').textContent = first ? Math.round(transform(panes[0].querySelector('canvas'), first).z * 100) + '%' : '';
}

function label(view) { return VIEWS.find((v) => v[0] === view)[1]; }

async function refreshImages() {
  const want = [st.views[0], st.views[1]];
  const urls = want.map(viewUrl);
  const imgs = await Promise.all(urls.map((u) => (u ? loadImage(u).catch((e) => { setStatus(e.message, true); return null; })
                                                      : Promise.resolve(null))));
  if (want[0] !== st.views[0] || want[1] !== st.views[1] || urls[0] !== viewUrl(want[0])) return; // superseded
  st.images = imgs;
  draw();
  document.body.dataset.shown = urls.map((u) => u || '').join(' ');
}

/* ---- keying ---- */

function setStatus(text, error) {
  const s = $('status');
  s.textContent = text;
  s.classList.toggle('error', !!error);
}

async function key() {
  if (st.keying) { st.again = true; return; }
  st.keying = true;
  $('status').dataset.busy = '1';
  const shot = st.shot, frame = st.frame;
  setStatus('keying frame ' + frame + ' …');
  try {
    const k = await api('POST', '/api/key', {shot, frame, ...settingsQuery()});
    if (shot === st.shot && frame === st.frame) {
      st.keyed = k;
      const ms = k.ms;
      setStatus(`frame ${frame} keyed in ${ms.total.toFixed(1)} ms (network + post ${ms.key.toFixed(1)} ms` +
                (ms.read ? `, read ${ms.read.toFixed(1)}` : '') + (ms.load ? `, model load ${ms.load.toFixed(0)}` : '') +
                `) · ${k.settings.tile ? 'tiles ' + k.settings.tile : k.settings.size} · ${k.keyer.device} · ` +
                `${k.keyer.precision}${k.hint === 'automatic' ? ' · automatic hint' : ''}`);
      $('status').dataset.keyId = String(k.id);
      showPasses(k);
      await refreshImages();
    }
  } catch (e) {
    setStatus('key failed: ' + e.message, true);
  } finally {
    st.keying = false;
    $('status').dataset.busy = '0';
    if (st.again) { st.again = false; key(); }
  }
}

/* the keyed frame's passes as `ckey key` writes them (EXR halves, the comp PNG), to open elsewhere */
function showPasses(k) {
  const box = $('passes');
  box.replaceChildren('files of this key: ');
  for (const pass of ['matte', 'fg', 'processed', 'comp']) {
    const a = document.createElement('a');
    a.href = '/api/pass?' + new URLSearchParams({id: k.id, pass});
    a.textContent = pass;
    a.id = 'pass-' + pass;
    box.append(a);
  }
}

let autoTimer = 0;
function settingsChanged() {
  readSettings();
  if (st.keyed) setStatus($('status').textContent.replace(/ · settings changed.*$/, '') + ' · settings changed: K keys again');
  if ($('autokey').checked) { clearTimeout(autoTimer); autoTimer = setTimeout(key, 250); }
}

function readSettings() {
  const s = st.settings;
  s.size = +$('s-size').value;
  s.tile = +$('s-tile').value;
  s.overlap = +$('s-overlap').value;
  s.precision = $('s-precision').value;
  s.refiner_scale = +$('s-refiner').value;
  s.despill = +$('s-despill').value;
  s.despeckle = $('s-despeckle').checked;
  s.despeckle_size = +$('s-despeckle-size').value;
}

function writeSettings(d) {
  $('s-size').value = d.size;
  const tile = $('s-tile');
  if (![...tile.options].some((o) => +o.value === d.tile)) tile.add(new Option(String(d.tile), String(d.tile)));
  tile.value = String(d.tile);
  $('s-overlap').value = d.tile ? d.overlap : 64;
  $('s-precision').value = d.precision;
  $('s-refiner').value = d.refiner_scale;
  $('s-despill').value = $('s-despill-range').value = d.despill;
  $('s-despeckle').checked = !!d.despeckle;
  $('s-despeckle-size').value = d.despeckle_size;
  readSettings();
}

/* ---- frames ---- */

function setFrame(f) {
  const n = st.info.shots[st.shot].frames.length;
  f = Math.max(0, Math.min(n - 1, f));
  if (f === st.frame && st.images[0]) return;
  st.frame = f;
  st.keyed = null;
  $('passes').replaceChildren();
  $('scrub').value = f;
  $('frame-label').textContent = `${f} / ${n - 1}  ${st.info.shots[st.shot].frames[f]}`;
  document.body.dataset.frame = String(f);
  refreshImages();
  if ($('autokey').checked) key();
}

function setShot(i) {
  st.shot = i;
  const sh = st.info.shots[i];
  $('scrub').max = sh.frames.length - 1;
  st.frame = -1;
  setFrame(0);
}

/* ---- pixels ---- */

function imagePoint(ev) {
  const canvas = ev.currentTarget, img = st.images[0];
  if (!img) return null;
  const dpr = window.devicePixelRatio || 1, r = canvas.getBoundingClientRect();
  const t = transform(canvas, img);
  const px = (ev.clientX - r.left) * dpr, py = (ev.clientY - r.top) * dpr;
  const x = Math.floor((px - t.x) / t.z), y = Math.floor((py - t.y) / t.z);
  if (x < 0 || y < 0 || x >= img.naturalWidth || y >= img.naturalHeight) return null;
  return {x, y, px: Math.floor(px), py: Math.floor(py), canvas};
}

function hover(ev) {
  const p = imagePoint(ev);
  if (!p) return;
  const d = p.canvas.getContext('2d').getImageData(p.px, p.py, 1, 1).data;
  $('pixel').textContent = `x ${p.x}  y ${p.y}   shown ${d[0]} ${d[1]} ${d[2]}`;
}

async function inspect(p) {
  if (!st.keyed) { $('pixel').textContent = `x ${p.x}  y ${p.y}: key the frame for its values`; return; }
  try {
    const v = await api('GET', '/api/pixel', {id: st.keyed.id, x: p.x, y: p.y});
    const f = (a) => (Array.isArray(a) ? a : [a]).map((x) => (typeof x === 'number' ? +x.toPrecision(6) : x)).join('  ');
    const rows = [['plate', v.plate], ['hint', v.hint], ['matte', v.matte], ['FG', v.fg], ['processed', v.processed],
                  ['comp', v.comp]].filter((r) => r[1] !== undefined);
    const tbl = document.createElement('table');
    for (const [name, val] of rows) {
      const tr = tbl.insertRow();
      tr.insertCell().textContent = name;
      tr.insertCell().textContent = f(val);
    }
    $('pixel').replaceChildren(`x ${v.x}  y ${v.y} (stored values)`, tbl);
  } catch (e) { $('pixel').textContent = e.message; }
}

/* ---- zoom and pan ---- */

function currentZoom() {
  const img = st.images[0];
  return img ? transform(panes[0].querySelector('canvas'), img) : null;
}

function setZoom(z, ax, ay) { // keep the canvas point (ax, ay) on the same image point
  const img = st.images[0], canvas = panes[0].querySelector('canvas');
  if (!img) return;
  const t = transform(canvas, img);
  if (ax === undefined) { ax = canvas.width / 2; ay = canvas.height / 2; }
  const ix = (ax - t.x) / t.z, iy = (ay - t.y) / t.z;
  z = Math.max(1 / 64, Math.min(64, z));
  st.zoom = z;
  st.cx = ix - (ax - canvas.width / 2) / z;
  st.cy = iy - (ay - canvas.height / 2) / z;
  draw();
}

function wireViewer() {
  for (const pane of panes) {
    const canvas = pane.querySelector('canvas');
    let drag = null;
    canvas.addEventListener('wheel', (ev) => {
      ev.preventDefault();
      const t = currentZoom(), r = canvas.getBoundingClientRect(), dpr = window.devicePixelRatio || 1;
      if (t) setZoom(t.z * (ev.deltaY < 0 ? 1.25 : 0.8), (ev.clientX - r.left) * dpr, (ev.clientY - r.top) * dpr);
    }, {passive: false});
    canvas.addEventListener('mousedown', (ev) => { drag = {x: ev.clientX, y: ev.clientY, moved: false}; });
    canvas.addEventListener('mousemove', (ev) => {
      hover(ev);
      if (!drag || !(ev.buttons & 1)) return;
      const t = currentZoom(), dpr = window.devicePixelRatio || 1;
      if (!t) return;
      if (!st.zoom) { st.zoom = t.z; st.cx = st.images[0].naturalWidth / 2; st.cy = st.images[0].naturalHeight / 2; }
      st.cx -= (ev.clientX - drag.x) * dpr / st.zoom;
      st.cy -= (ev.clientY - drag.y) * dpr / st.zoom;
      drag.moved = drag.moved || Math.abs(ev.clientX - drag.x) + Math.abs(ev.clientY - drag.y) > 0;
      drag.x = ev.clientX; drag.y = ev.clientY;
      draw();
    });
    canvas.addEventListener('mouseup', (ev) => {
      if (drag && !drag.moved) { const p = imagePoint(ev); if (p) inspect(p); }
      drag = null;
    });
  }
  const handle = $('wipe-handle');
  handle.addEventListener('mousedown', (ev) => {
    ev.preventDefault();
    const move = (e) => {
      const r = $('viewer').getBoundingClientRect();
      st.wipe = Math.max(0, Math.min(1, (e.clientX - r.left) / r.width));
      draw();
    };
    const up = () => { window.removeEventListener('mousemove', move); window.removeEventListener('mouseup', up); };
    window.addEventListener('mousemove', move);
    window.addEventListener('mouseup', up);
  });
  window.addEventListener('resize', draw);
}

/* ---- render ---- */

function renderState(state, text) {
  const s = $('render-status');
  s.dataset.state = state;
  s.textContent = text;
  const busy = state === 'running';
  $('render').disabled = busy;
  $('cancel').disabled = !busy;
}

async function render() {
  try {
    await api('POST', '/api/render', {shot: st.shot, ...settingsQuery()});
    $('render-out').textContent = '';
    followRender();
  } catch (e) { renderState('failed', e.message); }
}

async function followRender() {
  if (st.renderFollowing) return;
  st.renderFollowing = true;
  renderState('running', 'starting …');
  const run = {total: 0, out: '', paths: null, shot: st.shot};
  try {
    const r = await fetch('/api/render/events', {credentials: 'same-origin'});
    const reader = r.body.getReader(), dec = new TextDecoder();
    let buf = '';
    for (;;) {
      const {value, done} = await reader.read();
      if (done) break;
      buf += dec.decode(value, {stream: true});
      let cut;
      while ((cut = buf.indexOf('\n\n')) >= 0) {
        const block = buf.slice(0, cut);
        buf = buf.slice(cut + 2);
        for (const line of block.split('\n'))
          if (line.startsWith('data: ')) renderEvent(JSON.parse(line.slice(6)), run);
      }
    }
  } catch (e) { renderState('failed', 'lost the render\'s events: ' + e.message); }
  st.renderFollowing = false;
}

function renderEvent(e, run) {
  const bar = $('render-progress');
  switch (e.event) {
    case 'render':
      run.out = e.out; run.shot = e.shot;
      $('render-out').textContent = e.argv.map((a) => (/[\s"']/.test(a) ? JSON.stringify(a) : a)).join(' ');
      break;
    case 'started':
      run.total = e.frames; bar.max = e.frames; bar.value = 0;
      renderState('running', `${e.frames} frames at ${e.size} on ${e.device}`);
      break;
    case 'progress':
      bar.value = e.done;
      renderState('running', `${e.done} / ${e.total}  ${e.fps.toFixed(2)} fps  ETA ${e.eta_s.toFixed(0)} s`);
      break;
    case 'frame_written': run.paths = e.paths; break;
    case 'warning': break;
    case 'completed':
      renderState('completed', `completed: ${e.frames_written} frames in ${e.seconds.toFixed(1)} s ` +
                  `(${e.fps.toFixed(2)} fps)${e.skipped ? ', ' + e.skipped + ' skipped' : ''}`);
      break;
    case 'cancelled': renderState('cancelled', `cancelled: ${e.frames_written} frames written`); break;
    case 'failed': renderState('failed', 'failed: ' + e.message); break;
    case 'exited':
      if ($('render-status').dataset.state === 'running')
        renderState(e.exit_code === 0 ? 'completed' : 'failed', `exit ${e.exit_code}${e.message ? ': ' + e.message : ''}`);
      $('render').disabled = false; $('cancel').disabled = true;
      showOutputs(run);
      break;
  }
}

function showOutputs(run) {
  const box = $('render-out'), sh = st.info.shots[run.shot];
  const list = document.createElement('div');
  list.append('outputs in ' + run.out);
  for (const [pass, path] of Object.entries(run.paths || {})) {
    const row = document.createElement('div');
    const dir = path.slice(0, path.lastIndexOf('/') + 1);
    row.append(`${pass}: ${dir} `);
    if (path.startsWith(sh.root + '/')) {
      const a = document.createElement('a');
      a.href = `/files/${run.shot}/` + path.slice(sh.root.length + 1).split('/').map(encodeURIComponent).join('/');
      a.textContent = path.slice(dir.length);
      row.append(a);
    }
    list.append(row);
  }
  box.append(list);
  document.body.dataset.renderPaths = JSON.stringify(run.paths || {});
}

/* ---- start ---- */

async function start() {
  try {
    st.info = await api('GET', '/api/info');
  } catch (e) { setStatus('cannot reach ckey serve: ' + e.message, true); return; }
  const info = st.info;
  for (const sh of info.shots) $('shot').add(new Option(`${sh.name} (${sh.frames.length})`, String(sh.index)));
  $('shot').hidden = info.shots.length < 2;
  for (const sel of document.querySelectorAll('.view-select'))
    for (const [v, name] of VIEWS) sel.add(new Option(name, v));
  $('view-a').value = st.views[0]; $('view-b').value = st.views[1];
  writeSettings(info.defaults);
  $('about').textContent = `ckey ${info.version} · ${info.checkpoint} · device ${info.device}`;

  $('shot').onchange = () => setShot(+$('shot').value);
  $('scrub').oninput = () => setFrame(+$('scrub').value);
  $('prev').onclick = () => setFrame(st.frame - 1);
  $('next').onclick = () => setFrame(st.frame + 1);
  $('key').onclick = key;
  $('autokey').onchange = () => { if ($('autokey').checked) key(); };
  for (const id of ['s-size', 's-tile', 's-overlap', 's-precision', 's-refiner', 's-despill', 's-despeckle',
                    's-despeckle-size'])
    $(id).addEventListener('change', settingsChanged);
  $('s-despill-range').oninput = () => { $('s-despill').value = $('s-despill-range').value; settingsChanged(); };
  $('s-despill').addEventListener('input', () => { $('s-despill-range').value = $('s-despill').value; });
  $('s-reset').onclick = () => { writeSettings(info.defaults); settingsChanged(); };
  $('layout').onchange = () => { st.layout = $('layout').value; draw(); };
  $('view-a').onchange = () => { st.views[0] = $('view-a').value; refreshImages(); };
  $('view-b').onchange = () => { st.views[1] = $('view-b').value; refreshImages(); };
  $('bg').onchange = () => { st.bg = $('bg').value; refreshImages(); };
  $('bg-colour').oninput = () => { st.colour = $('bg-colour').value.slice(1); st.bg = 'colour'; $('bg').value = 'colour';
                                   refreshImages(); };
  $('z-fit').onclick = () => { st.zoom = 0; draw(); };
  $('z-1').onclick = () => { const t = currentZoom(); if (t) setZoom(window.devicePixelRatio || 1); };
  $('z-in').onclick = () => { const t = currentZoom(); if (t) setZoom(t.z * 2); };
  $('z-out').onclick = () => { const t = currentZoom(); if (t) setZoom(t.z / 2); };
  $('render').onclick = render;
  $('cancel').onclick = () => api('POST', '/api/render/cancel').catch((e) => renderState('failed', e.message));
  document.addEventListener('keydown', (ev) => {
    if (ev.target.tagName === 'INPUT' || ev.target.tagName === 'SELECT') return;
    const k = {ArrowLeft: () => setFrame(st.frame - 1), ArrowRight: () => setFrame(st.frame + 1), k: key, K: key,
               f: () => $('z-fit').click(), 1: () => $('z-1').click(), '+': () => $('z-in').click(),
               '-': () => $('z-out').click()}[ev.key];
    if (k) { ev.preventDefault(); k(); }
  });
  wireViewer();
  setShot(0);
  if (info.render.running) followRender();
  document.body.dataset.state = 'ready';
}

/* for tests and the console: the state, and where a pane's image lies on its canvas (device pixels) */
window.ckey = {
  state: st,
  viewRect(pane) {
    const canvas = panes[pane].querySelector('canvas'), img = st.images[pane];
    return img ? transform(canvas, img) : null;
  },
};

start();
