// Console views of what flows through the agent: Telemetry (tier-1 frames,
// history then live) and Health (store, commits, tasks, audit chain, the
// config file and its last reload).
'use strict';
(() => {
  const { $, el, api, note, denied, fmtBytes, fmtAge, API } = window.SY;
  const WINDOW = 5 * 60 * 1000; // the chart's span
  const MAX_SERIES = 8; // devices per chart
  const MAX_CHARTS = 8;
  const MAX_POINTS = 3000; // per series

  // sse reads an SSE stream with the token, reconnecting, until signal
  // aborts: open() runs once the server's first comment arrived (it is
  // subscribed), event(type, data) for each event.
  async function sse(path, signal, open, event, status) {
    let delay = 1000;
    while (!signal.aborted && SY.token()) {
      try {
        const res = await fetch(API + path, { headers: { Authorization: 'Bearer ' + SY.token(), Accept: 'text/event-stream' }, signal, cache: 'no-store' });
        if (res.status === 401) { SY.signOut('The agent refused the token.'); return; }
        if (!res.ok || !res.body) {
          let body = null;
          try { body = await res.json(); } catch (e) { body = null; }
          status(false, { status: res.status, body });
          if (res.status === 403 || res.status === 404) return;
          throw new Error('HTTP ' + res.status);
        }
        delay = 1000;
        const reader = res.body.getReader();
        const dec = new TextDecoder();
        let buf = '', type = '', data = [], opened = false;
        for (;;) {
          const { value, done } = await reader.read();
          if (done) break;
          buf += dec.decode(value, { stream: true });
          let nl;
          while ((nl = buf.indexOf('\n')) >= 0) {
            const line = buf.slice(0, nl).replace(/\r$/, '');
            buf = buf.slice(nl + 1);
            if (line === '') {
              if (data.length) event(type, data.join('\n'));
              type = ''; data = [];
            } else if (line[0] === ':') {
              if (!opened) { opened = true; status(true); open(); }
            } else if (line.startsWith('event:')) type = line.slice(6).trim();
            else if (line.startsWith('data:')) data.push(line.slice(5).replace(/^ /, ''));
          }
        }
      } catch (e) {
        if (signal.aborted) return;
      }
      status(false);
      await new Promise((ok) => setTimeout(ok, delay));
      delay = Math.min(delay * 2, 15000);
    }
  }
  SY.sse = sse;

  // ---------------- Telemetry ----------------
  // One chart per metric (per numeric field for routines without a metric
  // field), one line per device in it.
  let routines = [];
  let rid = '';
  let shape = null; // how frames of the routine map to charts
  const charts = new Map(); // chart key -> {unit, series: Map(device -> {color, pts}), chart, legend}
  const colors = new Map(); // device -> colour, the same in every chart
  const latest = new Map(); // row key -> {dev, name, v, unit, t, frame}
  let ctl = null, timers = [], prev = null, drawQueued = false, tableQueued = false;
  let arrivals = [], since = 0; // live frames of the routine: [ms, count], for its rate

  function shapeOf(d) {
    const f = (name, types) => d.fields.find((x) => x.name === name && types.includes(x.type));
    const s = {
      ts: f('ts', ['int']) ? 'ts' : '',
      dev: f('device_id', ['str']) ? 'device_id' : '',
      metric: f('metric', ['str']) ? 'metric' : '',
      value: f('value', ['float', 'int', 'uint']) ? 'value' : '',
      unit: f('unit', ['str']) ? 'unit' : '',
      nums: d.fields.filter((x) => ['float', 'int', 'uint'].includes(x.type) && !['ts', 'seq'].includes(x.name)),
      fields: d.fields.map((x) => x.name),
    };
    s.byMetric = !!(s.metric && s.value);
    return s;
  }

  function chartOf(key, unit) {
    let c = charts.get(key);
    if (c) return c;
    if (charts.size >= MAX_CHARTS) return null;
    const card = el('div', 'card chart-card');
    const head = el('div', 'chart-head');
    head.append(el('h3', '', key), el('span', 'muted unit', unit || ''));
    const canvas = el('canvas');
    canvas.height = 180;
    canvas.setAttribute('height', '180');
    canvas.setAttribute('role', 'img');
    canvas.setAttribute('aria-label', 'Chart of ' + key + ' over the last 5 minutes');
    const legend = el('ul', 'legend');
    card.append(head, canvas, legend);
    $('#t-charts').append(card);
    c = { key, unit, series: new Map(), chart: SY.chart(canvas), legend, head };
    charts.set(key, c);
    return c;
  }

  function push(key, unit, dev, t, v) {
    if (typeof v !== 'number' || !isFinite(v)) return;
    const c = chartOf(key, unit);
    if (!c) return;
    if (unit && !c.unit) { c.unit = unit; c.head.lastChild.textContent = unit; }
    let s = c.series.get(dev);
    if (!s) {
      if (c.series.size >= MAX_SERIES) return;
      if (!colors.has(dev)) colors.set(dev, SY.palette[colors.size % SY.palette.length]);
      s = { color: colors.get(dev), pts: [] };
      c.series.set(dev, s);
      const sw = el('span', 'sw');
      sw.style.background = s.color; // CSSOM, allowed by the CSP
      const li = el('li');
      li.append(sw, el('span', '', dev || key));
      c.legend.append(li);
    }
    const p = s.pts;
    if (p.length && p[p.length - 1][0] >= t) {
      let i = p.length;
      while (i > 0 && p[i - 1][0] > t) i--;
      if (i > 0 && p[i - 1][0] === t) return; // seen (history and live overlap)
      p.splice(i, 0, [t, v]);
    } else p.push([t, v]);
    if (p.length > MAX_POINTS) p.splice(0, p.length - MAX_POINTS);
  }

  function addFrame(f, now) {
    const s = shape;
    const t = s.ts ? f.ts / 1e6 : now;
    const dev = s.dev ? String(f.device_id) : '';
    if (s.byMetric) {
      const unit = s.unit && f.unit ? f.unit : '';
      push(String(f.metric), unit, dev, t, f.value);
      const key = dev + '\u0000' + f.metric;
      const old = latest.get(key);
      if (!old || old.t <= t) latest.set(key, { dev, name: f.metric, v: f.value, unit, t });
      return;
    }
    for (const n of s.nums) push(n.name, n.unit || '', dev, t, f[n.name]);
    const key = dev || '–';
    const old = latest.get(key);
    if (!old || old.t <= t) latest.set(key, { dev, frame: f, t });
  }

  function frames(list) {
    const now = SY.now();
    for (const f of list) addFrame(f, now);
    queueDraw();
    queueTable();
  }

  function queueDraw() {
    if (drawQueued) return;
    drawQueued = true;
    requestAnimationFrame(() => { drawQueued = false; draw(); });
  }
  function queueTable() {
    if (tableQueued) return;
    tableQueued = true;
    setTimeout(() => { tableQueued = false; table(); }, 100);
  }

  function draw() {
    if ($('#v-telemetry').hidden) return;
    const now = SY.now();
    // The window ends now, or at the newest frame when a device's clock
    // (or the skew measured to the agent's) runs a little ahead.
    let end = now;
    for (const c of charts.values()) {
      for (const s of c.series.values()) {
        let i = 0;
        while (i < s.pts.length && s.pts[i][0] < now - WINDOW - 60000) i++;
        if (i) s.pts.splice(0, i);
        if (s.pts.length) end = Math.max(end, Math.min(s.pts[s.pts.length - 1][0], now + 60000));
      }
    }
    for (const c of charts.values()) c.chart.draw([...c.series.values()], end - WINDOW, end);
    $('#t-empty').hidden = charts.size > 0;
  }

  const show = (v) => (typeof v === 'number' ? (Number.isInteger(v) ? String(v) : v.toPrecision(6).replace(/\.?0+$/, '')) : v === undefined || v === null ? '' : String(v));

  function table() {
    const tb = $('#t-latest tbody');
    const th = $('#t-latest thead');
    const now = SY.now();
    const rows = [...latest.entries()].sort((a, b) => (a[0] < b[0] ? -1 : 1));
    const head = el('tr');
    if (!shape) return;
    const cols = shape.byMetric ? ['Device', 'Metric', 'Value', 'Age'] :
      (shape.dev ? ['Device'] : []).concat(shape.fields.filter((n) => n !== 'device_id' && n !== 'ts'), ['Age']);
    for (const c of cols) head.append(el('th', '', c));
    th.replaceChildren(head);
    tb.replaceChildren();
    for (const [, r] of rows) {
      const tr = el('tr');
      if (shape.byMetric) {
        tr.append(el('td', '', r.dev), el('td', '', r.name), el('td', 'num', show(r.v) + (r.unit ? ' ' + r.unit : '')));
      } else {
        if (shape.dev) tr.append(el('td', '', r.dev));
        for (const n of shape.fields) if (n !== 'device_id' && n !== 'ts') tr.append(el('td', 'num', show(r.frame[n])));
      }
      tr.append(el('td', 'muted', fmtAge(now - r.t)));
      tb.append(tr);
    }
    if (!rows.length) {
      const tr = el('tr');
      const td = el('td', 'muted', 'No frames in the last 5 minutes.');
      td.colSpan = cols.length;
      tr.append(td);
      tb.append(tr);
    }
  }

  async function history(id) {
    const since = Math.floor((SY.now() - WINDOW) * 1e6);
    let r = await api('GET', '/tier1/' + encodeURIComponent(id) + '/frames?limit=5000&since=' + since);
    if (r.status === 200 && r.body.next_page_token) {
      // A busy routine: its last 30 seconds rather than the first of 5 minutes.
      r = await api('GET', '/tier1/' + encodeURIComponent(id) + '/frames?limit=5000&since=' + Math.floor((SY.now() - 30000) * 1e6));
    }
    if (id !== rid) return;
    if (r.status !== 200) { note('telemetry', denied(r, 'tier1:read')); return; }
    frames(r.body.frames);
  }

  function liveStatus(on, r) {
    const s = $('#t-live');
    s.textContent = on ? '● live' : 'reconnecting…';
    s.classList.toggle('ok', on);
    if (r) note('telemetry', denied(r, 'tier1:read'));
  }

  function select(id) {
    rid = id;
    const d = routines.find((x) => x.capability_id === id);
    if (!d) return;
    shape = shapeOf(d);
    charts.clear();
    colors.clear();
    latest.clear();
    $('#t-charts').replaceChildren();
    table();
    if (ctl) ctl.abort();
    ctl = new AbortController();
    const c = ctl;
    sse('/tier1/' + encodeURIComponent(id) + '/frames/stream', c.signal, () => history(id), (type, data) => {
      if (type !== 'frames' || c !== ctl) return;
      let ev;
      try { ev = JSON.parse(data); } catch (e) { return; /* a bad event is skipped */ }
      arrivals.push([performance.now(), ev.frames.length + (ev.skipped || 0)]);
      frames(ev.frames);
    }, liveStatus);
    arrivals = [];
    since = performance.now();
    stored();
    draw();
  }

  function stored() {
    const d = routines.find((x) => x.capability_id === rid);
    if (!d || !d.stored) return;
    const st = d.stored;
    $('#t-frames').textContent = st.frames.toLocaleString();
    $('#t-bytes').replaceChildren(fmtBytes(st.bytes), el('small', 'muted', ' of ' + fmtBytes(st.max_bytes)));
    $('#t-meter').value = st.max_bytes ? st.bytes / st.max_bytes : 0;
    $('#t-oldest').textContent = st.oldest_ts ? fmtAge(SY.now() - st.oldest_ts / 1e6) + ' ago' : '–';
    $('#t-oldest').title = st.oldest_ts ? new Date(st.oldest_ts / 1e6).toLocaleString() : '';
  }

  async function loadRoutines() {
    const r = await api('GET', '/tier1/routines');
    if (r.status !== 200) { note('telemetry', denied(r, 'tier1:read')); return false; }
    routines = r.body.routines;
    const sel = $('#t-routine');
    if (sel.options.length !== routines.length) {
      sel.replaceChildren(...routines.map((d) => {
        const o = el('option', '', d.name ? d.name + ' (' + d.capability_id + ')' : d.capability_id);
        o.value = d.capability_id;
        return o;
      }));
    }
    if (rid) sel.value = rid;
    stored();
    return true;
  }

  async function rates() {
    const m = await SY.metrics();
    if (!m) return;
    const now = performance.now();
    const f = m.synapse_tier1_frames_total;
    if (prev && now > prev.at) $('#t-rate').textContent = Math.max(0, (f - prev.f) / ((now - prev.at) / 1000)).toFixed(1);
    $('#t-refused').textContent = String(m.synapse_tier1_refused_batches_total || 0);
    prev = { at: now, f };
    liveRate();
  }

  // liveRate is the routine's frames/s over the last 10 s of the live
  // stream (a floor if the stream missed batches).
  function liveRate() {
    const now = performance.now();
    while (arrivals.length && arrivals[0][0] < now - 10000) arrivals.shift();
    const span = Math.min(10000, now - since) / 1000;
    const n = arrivals.reduce((s, a) => s + a[1], 0);
    $('#t-rrate').textContent = span >= 1 ? (n / span).toFixed(1) : '–';
  }

  SY.view('telemetry', {
    async show() {
      note('telemetry', '');
      prev = null;
      if (!(await loadRoutines())) return;
      if (!SY.visible('telemetry')) return;
      select(rid && routines.some((x) => x.capability_id === rid) ? rid : routines[0].capability_id);
      rates();
      timers = [
        setInterval(() => { if (SY.visible('telemetry')) rates(); }, 2000),
        setInterval(() => { if (SY.visible('telemetry')) loadRoutines(); }, 5000),
        setInterval(() => { draw(); queueTable(); }, 1000),
      ];
    },
    hide() {
      timers.forEach(clearInterval);
      if (ctl) ctl.abort();
      ctl = null;
    },
  });

  // ---------------- Health ----------------
  let htimers = [], hchart = null, samples = [], hprev = null;
  const STATES = ['pending', 'running', 'info_needed', 'need_human', 'human_deciding', 'completed', 'failed', 'cancelled', 'rejected', 'timed_out'];

  async function health() {
    let h = null;
    try { h = await (await fetch(API + '/health', { cache: 'no-store' })).json(); } catch (e) { h = null; }
    $('#h-status').textContent = h ? h.status : 'unreachable';
    $('#h-status').className = 'v ' + (h && h.status === 'SERVING' ? 'good' : 'bad');
    if (h) config(h.config);
    const m = await SY.metrics();
    if (!m) { note('health', 'This token cannot read /metrics (it needs tasks:read).'); return; }
    const now = SY.now();
    const size = m.synapse_store_size_bytes;
    samples.push({ t: now, size, c: m.synapse_store_commits_total, s: m.synapse_store_commit_seconds_total, w: m.synapse_store_writes_total });
    while (samples.length > 2 && samples[0].t < now - WINDOW) samples.shift();
    $('#h-size').textContent = fmtBytes(size);
    const first = samples[0];
    const span = (now - first.t) / 60000;
    $('#h-growth').textContent = span > 0.05 ? (size >= first.size ? '+' : '−') + fmtBytes(Math.abs(size - first.size) / span) + '/min' : 'measuring…';
    $('#h-heap').textContent = fmtBytes(m.synapse_go_heap_bytes);
    const p = hprev || { c: 0, s: 0, w: 0 };
    const dc = m.synapse_store_commits_total - p.c;
    let lat = null;
    if (dc > 0) {
      lat = (m.synapse_store_commit_seconds_total - p.s) / dc * 1000;
      $('#h-commit').textContent = lat.toFixed(lat < 10 ? 2 : 1) + ' ms';
      $('#h-wpf').textContent = ((m.synapse_store_writes_total - p.w) / dc).toFixed(1);
    } else if (!hprev) {
      $('#h-commit').textContent = '–';
    }
    samples[samples.length - 1].lat = lat;
    hprev = { c: m.synapse_store_commits_total, s: m.synapse_store_commit_seconds_total, w: m.synapse_store_writes_total };
    hdraw();
  }

  // config shows the config file in force and the last reload (SIGHUP or
  // POST /admin/reload) from /health.
  function config(c) {
    const dl = $('#h-config');
    if (!c) {
      dl.replaceChildren(el('dt', '', 'File'), el('dd', 'muted', 'none: started without --config, nothing to reload'));
      return;
    }
    const rows = [['File', c.file], ['Hash', c.hash.slice(0, 16) + '…']];
    const r = c.last_reload;
    if (!r) {
      rows.push(['Last reload', 'none since start', 'muted']);
    } else {
      rows.push(['Last reload', (r.result === 'ok' ? '✓ applied' : '✗ refused, nothing changed') + ' · ' + r.trigger + ' · ' +
        new Date(r.time).toLocaleString(), r.result === 'ok' ? 'good' : 'bad']);
      if ((r.applied || []).length) rows.push(['Applied', r.applied.join(', ')]);
      if ((r.restart_required || []).length) rows.push(['Needs a restart', r.restart_required.join(', ')]);
      (r.problems || []).forEach((p, i) => rows.push([i ? '' : 'Problems', p, 'bad']));
    }
    dl.replaceChildren(...rows.flatMap(([k, v, cls]) => [el('dt', '', k), el('dd', cls || '', v)]));
    dl.children[3].title = c.hash;
  }

  function hdraw() {
    if ($('#v-health').hidden) return;
    const now = SY.now();
    hchart = hchart || SY.chart($('#h-spark'));
    hchart.draw([{ color: SY.palette[0], pts: samples.filter((x) => x.lat !== undefined && x.lat !== null).map((x) => [x.t, x.lat]) }], now - WINDOW, now);
  }

  async function tasks() {
    const r = await api('GET', '/tasks/summary');
    const ul = $('#h-tasks');
    if (r.status !== 200) { ul.replaceChildren(el('li', 'muted', denied(r, 'tasks:read'))); return; }
    const by = r.body.by_status;
    $('#h-total').textContent = r.body.total.toLocaleString() + ' stored';
    const names = STATES.filter((s) => by[s]).concat(Object.keys(by).filter((s) => !STATES.includes(s)));
    const top = Math.max(1, ...names.map((s) => by[s]));
    ul.replaceChildren(...names.map((s) => {
      const li = el('li');
      const bar = el('span', 'fill ' + s);
      bar.style.width = Math.max(2, by[s] / top * 100) + '%';
      li.append(el('span', 'k', s.replace(/_/g, ' ')), el('span', 'track'), el('span', 'n', by[s].toLocaleString()));
      li.children[1].append(bar);
      return li;
    }));
    if (!names.length) ul.append(el('li', 'muted', 'No tasks stored.'));
  }

  async function audit() {
    const p = $('#h-audit');
    p.textContent = 'Verifying…';
    const r = await api('GET', '/audit/verify');
    if (r.status !== 200) { p.textContent = denied(r, 'admin'); p.className = 'muted'; return; }
    const a = r.body;
    p.className = a.ok ? 'good' : 'bad';
    p.textContent = a.ok ? '✓ Intact: ' + a.records.toLocaleString() + (a.records === 1 ? ' record' : ' records') + ', every hash links to the one before' +
      (a.last_hash ? ' (last ' + a.last_hash.slice(0, 12) + '…)' : '') + '.'
      : '✗ Broken at record ' + a.first_bad_seq + ': ' + (a.problem || 'hash mismatch');
  }

  SY.view('health', {
    show() {
      note('health', '');
      health();
      tasks();
      audit();
      htimers = [
        setInterval(() => { if (SY.visible('health')) health(); }, 2000),
        setInterval(() => { if (SY.visible('health')) tasks(); }, 5000),
      ];
    },
    hide() { htimers.forEach(clearInterval); },
  });

  document.addEventListener('DOMContentLoaded', () => {
    $('#t-routine').addEventListener('change', (e) => select(e.target.value));
    $('#h-verify').addEventListener('click', audit);
    window.addEventListener('resize', () => { draw(); hdraw(); });
  });
})();
