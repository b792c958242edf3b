// Synapse web console: the shell (sign in, tabs, helpers shared with the
// other views through window.SY) and the decisions view: decisions waiting
// for a person (live), tasks. No framework, no build step. The token is kept
// in sessionStorage and sent as a bearer token; SSE streams are read with
// fetch because EventSource cannot send headers. chart.js, ops.js and
// net.js add the other views with SY.view(name, {show, hide}).
'use strict';
(() => {
  const API = '/api/v1/synapse';
  const KEY = 'synapse.token';
  const $ = (sel, el) => (el || document).querySelector(sel);
  let token = sessionStorage.getItem(KEY) || '';
  let skew = 0; // server clock minus this browser's, in ms
  let streamCtl = null;
  let tasksTimer = 0;
  const reqs = new Map(); // task id -> request
  const views = {}; // name -> {show, hide}
  let current = '';

  function el(tag, cls, text) {
    const e = document.createElement(tag);
    if (cls) e.className = cls;
    if (text !== undefined && text !== null) e.textContent = String(text);
    return e;
  }

  let toastTimer = 0;
  function toast(msg) {
    const t = $('#toast');
    t.textContent = msg;
    t.hidden = false;
    clearTimeout(toastTimer);
    toastTimer = setTimeout(() => { t.hidden = true; }, 3500);
  }

  // api calls the agent; it answers {status, body} and signs out on 401.
  async function api(method, path, body) {
    const opt = { method, headers: { Authorization: 'Bearer ' + token, Accept: 'application/json' }, cache: 'no-store' };
    if (body !== undefined) {
      opt.headers['Content-Type'] = 'application/json';
      opt.body = JSON.stringify(body);
    }
    const res = await fetch(API + path, opt);
    let data = null;
    try { data = await res.json(); } catch (e) { data = null; }
    if (res.status === 401 && token) signOut('The agent refused the token.');
    return { status: res.status, body: data };
  }
  const errText = (r) => (r.body && r.body.error && r.body.error.message) || ('HTTP ' + r.status);

  // ---- sign in ----
  async function signIn(e) {
    e.preventDefault();
    const t = $('#token').value.trim();
    if (!t) return;
    token = t;
    // A token that may not see decisions (403), or an agent without
    // human-in-the-loop (503), still opens the other views.
    let r = await api('GET', '/hil');
    if (r.status === 503) r = await api('GET', '/tasks?page_size=1'); // checks the token
    if (r.status === 403) r.status = 200;
    if (r.status === 401) { token = ''; $('#login-error').textContent = 'The agent refused this token.'; return; }
    if (r.status !== 200) { token = ''; $('#login-error').textContent = errText(r); return; }
    sessionStorage.setItem(KEY, token);
    $('#token').value = '';
    $('#login-error').textContent = '';
    start();
  }

  function signOut(msg) {
    token = '';
    sessionStorage.removeItem(KEY);
    if (streamCtl) streamCtl.abort();
    clearInterval(tasksTimer);
    reqs.clear();
    $('#pending').replaceChildren();
    $('#pending-empty').textContent = 'Nothing waits for a person.';
    leave();
    $('#nav').hidden = true;
    $('#logout').hidden = true;
    $('#login-view').hidden = false;
    $('#login-error').textContent = msg || '';
  }

  function start() {
    $('#login-view').hidden = true;
    $('#nav').hidden = false;
    $('#logout').hidden = false;
    stream();
    route();
    clearInterval(tasksTimer);
    tasksTimer = setInterval(() => { if (!document.hidden && current === 'decisions') loadTasks(); }, 2000);
  }

  // ---- tabs: #name in the address shows that view ----
  function leave() {
    if (current && views[current] && views[current].hide) views[current].hide();
    current = '';
    for (const v of document.querySelectorAll('.view')) v.hidden = true;
  }

  function route() {
    if (!token) return;
    let name = location.hash.slice(1);
    if (!views[name]) name = 'decisions';
    if (name === current) return;
    leave();
    current = name;
    for (const v of document.querySelectorAll('.view')) v.hidden = v.dataset.view !== name;
    for (const a of document.querySelectorAll('#nav a')) a.classList.toggle('on', a.dataset.view === name);
    views[name].show();
  }

  views.decisions = { show() { loadRecent(); loadTasks(); loadPeers(); } };

  // ---- requests ----
  async function loadPending() {
    const r = await api('GET', '/hil');
    if (r.status !== 200) return;
    if (r.body.server_time) skew = Date.parse(r.body.server_time) - Date.now();
    const seen = new Set();
    for (const q of r.body.requests) { seen.add(q.task_id); upsert(q); }
    for (const id of [...reqs.keys()]) if (!seen.has(id)) drop(id);
  }

  function onEvent(ev) {
    if (ev.state === 'pending') upsert(ev); else { drop(ev.task_id); loadRecent(); }
  }

  function upsert(q) {
    reqs.set(q.task_id, q);
    let card = cardOf(q.task_id);
    if (!card) {
      card = buildCard(q);
      $('#pending').append(card);
    }
    fillHead(card, q);
    count();
  }

  function drop(id) {
    reqs.delete(id);
    const card = cardOf(id);
    if (card) card.remove();
    count();
  }

  function cardOf(id) {
    for (const c of document.querySelectorAll('#pending .req')) if (c.dataset.id === id) return c;
    return null;
  }

  function count() {
    $('#pending-count').textContent = reqs.size;
    $('#nav-pending').textContent = reqs.size;
    $('#nav-pending').hidden = reqs.size === 0;
    $('#pending-empty').hidden = reqs.size > 0;
  }

  function fillHead(card, q) {
    $('.lvl', card).textContent = 'Level ' + q.escalation_level + '/' + q.levels + ' · ' + q.reviewers_scope;
    card.dataset.deadline = q.deadline || '';
    tick();
  }

  const show = (v) => (typeof v === 'string' ? v : JSON.stringify(v));

  function buildCard(q) {
    const card = $('#req-tpl').content.firstElementChild.cloneNode(true);
    card.dataset.id = q.task_id;
    $('.type', card).textContent = q.task_type + (q.target ? ' @ ' + q.target : '');
    $('.reason', card).textContent = (q.reason && q.reason.message) || 'Approval needed';
    $('.code', card).textContent = (q.reason && q.reason.code) || '';
    const ctx = $('.ctx', card);
    const c = q.context || {};
    for (const [k, v] of [['Summary', c.task_summary], ['Progress', c.current_progress ? c.current_progress + '%' : ''], ['Blocked', c.blocked_reason]]) {
      if (!v || (k === 'Summary' && v === q.reason.message) || (k === 'Blocked' && v === q.reason.message)) continue;
      ctx.append(el('dt', '', k), el('dd', '', v));
    }
    const opts = q.options || [];
    if (opts.length) {
      const tb = $('.opts tbody', card);
      for (const o of opts) {
        const tr = el('tr');
        const note = [o.pros_cons, o.confidence !== undefined ? o.confidence + '%' : ''].filter(Boolean).join(' · ');
        tr.append(el('td', '', o.field), el('td', '', show(o.value)), el('td', '', note));
        tb.append(tr);
      }
      $('.opts', card).hidden = false;
    }
    const rows = $('.rows', card);
    for (const o of opts) rows.append(fieldRow(o.field, JSON.stringify(o.value)));
    if (!opts.length) rows.append(fieldRow('', ''));
    $('.add', card).addEventListener('click', () => rows.append(fieldRow('', '')));
    $('.approve', card).addEventListener('click', () => decide(card, 'approve'));
    $('.modify', card).addEventListener('click', () => decide(card, 'modify'));
    $('.reject', card).addEventListener('click', () => decide(card, 'reject'));
    $('.meta', card).textContent = 'Task ' + q.task_id + ' · asked ' + new Date(q.created_at).toLocaleString();
    return card;
  }

  function fieldRow(k, v) {
    const row = el('div', 'row');
    const key = el('input', 'k');
    key.placeholder = 'field';
    key.value = k;
    key.setAttribute('aria-label', 'Field name');
    const val = el('input', 'v');
    val.placeholder = 'value (JSON or text)';
    val.value = v;
    val.setAttribute('aria-label', 'Field value');
    const rm = el('button', 'ghost', '×');
    rm.type = 'button';
    rm.setAttribute('aria-label', 'Remove field');
    rm.addEventListener('click', () => row.remove());
    row.append(key, val, rm);
    return row;
  }

  function fieldsOf(card) {
    const out = {};
    for (const row of card.querySelectorAll('.row')) {
      const k = $('.k', row).value.trim();
      if (!k) continue;
      const raw = $('.v', row).value;
      try { out[k] = JSON.parse(raw); } catch (e) { out[k] = raw; }
    }
    return out;
  }

  async function decide(card, action) {
    const id = card.dataset.id;
    const body = { action, notes: $('.notes', card).value.trim() };
    if (action === 'modify') {
      body.approved_fields = fieldsOf(card);
      if (!Object.keys(body.approved_fields).length) {
        $('.error', card).textContent = 'Add at least one field to change.';
        $('.amend', card).open = true;
        return;
      }
    }
    if (action === 'reject') body.rejection_reason = $('.why', card).value.trim();
    const buttons = card.querySelectorAll('.actions button');
    buttons.forEach((b) => { b.disabled = true; });
    $('.error', card).textContent = '';
    let r;
    try { r = await api('POST', '/hil/' + encodeURIComponent(id) + '/decision', body); } catch (e) { r = { status: 0, body: null }; }
    buttons.forEach((b) => { b.disabled = false; });
    if (r.status === 200) {
      drop(id);
      toast((action === 'reject' ? 'Rejected ' : 'Approved ') + (r.body.task_type || 'task'));
      loadRecent();
      loadTasks();
      return;
    }
    $('.error', card).textContent = r.status ? errText(r) : 'The agent did not answer.';
    if (r.status === 409) setTimeout(loadPending, 1500);
  }

  function fmtLeft(ms) {
    const s = Math.floor(Math.abs(ms) / 1000);
    const h = Math.floor(s / 3600), m = Math.floor(s / 60) % 60, ss = String(s % 60).padStart(2, '0');
    return (h ? h + ':' + String(m).padStart(2, '0') : m) + ':' + ss;
  }

  function tick() {
    const now = Date.now() + skew;
    for (const card of document.querySelectorAll('#pending .req')) {
      const cd = $('.countdown', card);
      const d = Date.parse(card.dataset.deadline);
      if (!d) { cd.textContent = ''; continue; }
      const left = d - now;
      cd.textContent = left >= 0 ? fmtLeft(left) + ' left' : 'escalating…';
      cd.classList.toggle('urgent', left >= 0 && left < 60000);
      cd.classList.toggle('over', left < 0);
    }
  }

  async function loadRecent() {
    if (!$('#recent-box').open) return;
    const r = await api('GET', '/hil?all=true&page_size=20');
    if (r.status !== 200) return;
    const ul = $('#recent');
    ul.replaceChildren();
    for (const q of r.body.requests) {
      if (q.state === 'pending') continue;
      const li = el('li');
      const d = q.decision;
      const what = d ? d.action : q.state;
      li.append(el('span', '', (q.reason && q.reason.message) || q.task_type), el('span', 'st ' + what, what));
      li.append(el('span', 'sub', d ? 'by ' + d.decided_by + ' at level ' + d.level + ', ' + new Date(d.decided_at).toLocaleString() + (d.notes ? ' · ' + d.notes : '') : q.note || ''));
      ul.append(li);
    }
    if (!ul.children.length) ul.append(el('li', 'muted', 'No decisions yet.'));
  }

  // ---- live stream ----
  async function stream() {
    if (streamCtl) streamCtl.abort();
    const ctl = new AbortController();
    streamCtl = ctl;
    let last = '';
    let delay = 1000;
    while (token && !ctl.signal.aborted) {
      try {
        const headers = { Authorization: 'Bearer ' + token, Accept: 'text/event-stream' };
        if (last) headers['Last-Event-ID'] = last;
        const res = await fetch(API + '/hil/stream', { headers, signal: ctl.signal, cache: 'no-store' });
        if (res.status === 401) { signOut('The agent refused the token.'); return; }
        if (res.status === 403 || res.status === 503) { // no decisions for this token or on this agent
          $('#pending-empty').textContent = res.status === 403 ? 'This token may not see decisions (it needs tasks:read or a hil scope).'
            : 'Human-in-the-loop is not running on this agent.';
          return;
        }
        if (!res.ok || !res.body) throw new Error('stream answered ' + res.status);
        $('#live').classList.add('on');
        delay = 1000;
        if (!last) loadPending(); // the stream is open: nothing falls between
        last = await readEvents(res.body, last);
      } catch (e) {
        if (ctl.signal.aborted) return;
      }
      $('#live').classList.remove('on');
      await new Promise((ok) => setTimeout(ok, delay));
      delay = Math.min(delay * 2, 15000);
    }
  }

  // readEvents dispatches the events of one response; it returns the last id.
  async function readEvents(body, last) {
    const reader = body.getReader();
    const dec = new TextDecoder();
    let buf = '';
    let ev = { type: '', data: [] };
    for (;;) {
      const { value, done } = await reader.read();
      if (done) return last;
      buf += dec.decode(value, { stream: true });
      let nl;
      while ((nl = buf.indexOf('\n')) >= 0) {
        const line = buf.slice(0, nl).replace(/\r$/, '');
        buf = buf.slice(nl + 1);
        if (line === '') {
          if (ev.data.length) {
            if (ev.type === 'hil') {
              try { onEvent(JSON.parse(ev.data.join('\n'))); } catch (e) { /* a bad event is skipped */ }
            } else if (ev.type === 'reset') loadPending();
          }
          ev = { type: '', data: [] };
          continue;
        }
        if (line[0] === ':') continue;
        const c = line.indexOf(':');
        const f = c < 0 ? line : line.slice(0, c);
        let v = c < 0 ? '' : line.slice(c + 1);
        if (v[0] === ' ') v = v.slice(1);
        if (f === 'event') ev.type = v;
        else if (f === 'data') ev.data.push(v);
        else if (f === 'id') last = v;
      }
    }
  }

  // ---- tasks, peers, health ----
  async function loadTasks() {
    const r = await api('GET', '/tasks?page_size=15');
    const note = $('#tasks-note');
    if (r.status !== 200) {
      note.textContent = r.status === 403 ? 'This token cannot list tasks.' : errText(r);
      note.hidden = false;
      return;
    }
    note.hidden = r.body.tasks.length > 0;
    note.textContent = 'No tasks yet.';
    const ul = $('#tasks');
    ul.replaceChildren();
    for (const t of r.body.tasks) {
      const li = el('li');
      li.append(el('span', 'type', t.task_type), el('span', 'st ' + t.status, t.status.replace('_', ' ')));
      const p = el('progress');
      p.max = 100;
      p.value = t.progress || 0;
      li.append(p, el('span', 'sub', t.task_id + ' · ' + new Date(t.updated_at).toLocaleTimeString()));
      ul.append(li);
    }
  }

  async function loadPeers() {
    const r = await api('GET', '/agents');
    if (r.status !== 200 || !r.body || !Array.isArray(r.body.agents)) { $('#peers-view').hidden = true; return; }
    $('#peers-view').hidden = false;
    const ul = $('#peers');
    ul.replaceChildren();
    for (const p of r.body.agents) {
      const li = el('li');
      li.append(el('span', '', p.agent_name || p.agent_id), el('span', 'st ' + (p.status || ''), p.status || '?'));
      li.append(el('span', 'sub', p.agent_id + ' · ' + p.endpoint));
      ul.append(li);
    }
    if (!r.body.agents.length) ul.append(el('li', 'muted', 'No paired agents.'));
  }

  async function health() {
    try {
      const res = await fetch(API + '/health', { cache: 'no-store' });
      const h = await res.json();
      const up = h.uptime_seconds;
      const text = (h.status === 'SERVING' ? '' : h.status + ' · ') + h.version + ' · up ' + (up > 3600 ? Math.floor(up / 3600) + ' h' : Math.floor(up / 60) + ' min');
      $('#health').textContent = text;
      $('#health').title = h.status + ' · ' + text;
    } catch (e) {
      $('#health').textContent = 'agent unreachable';
    }
  }

  // Helpers for the other views.
  const fmtBytes = (n) => {
    if (!(n >= 0)) return '–';
    const u = ['B', 'KiB', 'MiB', 'GiB', 'TiB'];
    let i = 0;
    while (n >= 1024 && i < u.length - 1) { n /= 1024; i++; }
    return (i ? n.toFixed(n < 10 ? 1 : 0) : n) + ' ' + u[i];
  };
  const fmtAge = (ms) => {
    const s = Math.max(0, Math.round(ms / 1000));
    if (s < 60) return s + ' s';
    if (s < 3600) return Math.floor(s / 60) + ' min';
    if (s < 172800) return Math.floor(s / 3600) + ' h ' + Math.floor(s / 60) % 60 + ' min';
    return Math.floor(s / 86400) + ' d';
  };
  // metrics reads /metrics into {name: value} (labels kept in the name).
  async function metrics() {
    const res = await fetch('/metrics', { headers: { Authorization: 'Bearer ' + token }, cache: 'no-store' });
    if (res.status === 401 && token) signOut('The agent refused the token.');
    if (!res.ok) return null;
    const out = {};
    for (const line of (await res.text()).split('\n')) {
      if (!line || line[0] === '#') continue;
      const i = line.lastIndexOf(' ');
      out[line.slice(0, i)] = Number(line.slice(i + 1));
    }
    return out;
  }
  // note shows why a view is empty (or hides the note when msg is empty).
  function note(view, msg) {
    const n = $('#v-' + view + ' .note');
    n.textContent = msg || '';
    n.hidden = !msg;
  }
  const denied = (r, scope) => (r.status === 403 ? 'This token lacks the ' + scope + ' scope.' : errText(r));
  window.SY = {
    $, el, api, errText, toast, metrics, note, denied, fmtBytes, fmtAge, fmtLeft, API,
    view(name, v) { views[name] = v; },
    visible: (name) => current === name && !document.hidden,
    token: () => token,
    now: () => Date.now() + skew,
    signOut,
  };

  document.addEventListener('DOMContentLoaded', () => {
    window.addEventListener('hashchange', route);
    $('#login').addEventListener('submit', signIn);
    $('#logout').addEventListener('click', () => signOut(''));
    $('#recent-box').addEventListener('toggle', loadRecent);
    setInterval(tick, 1000);
    setInterval(health, 10000);
    setInterval(() => { if (token && !document.hidden) loadPeers(); }, 10000);
    health();
    if (token) start(); else signOut('');
  });
})();
