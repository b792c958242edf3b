// Console views of the agent's neighbours and access: Peers and outbox,
// Groups and votes, Tokens.
'use strict';
(() => {
  const { $, el, api, note, denied, errText, toast, fmtAge, fmtLeft } = window.SY;
  const when = (iso) => (iso ? fmtAge(SY.now() - Date.parse(iso)) + ' ago' : 'never');

  // button makes a small button that runs fn once at a time.
  function button(text, cls, fn) {
    const b = el('button', 'small ' + (cls || ''), text);
    b.type = 'button';
    b.addEventListener('click', async () => {
      b.disabled = true;
      try { await fn(b); } finally { b.disabled = false; }
    });
    return b;
  }

  // kv appends "key value" pairs as a definition list.
  function kv(pairs) {
    const dl = el('dl', 'kv');
    for (const [k, v] of pairs) if (v !== undefined && v !== '') dl.append(el('dt', '', k), el('dd', '', v));
    return dl;
  }

  // ---------------- Peers and outbox ----------------
  let ptimer = 0;

  // outbox lists up to 1000 entries in one state.
  async function outbox(state) {
    const r = await api('GET', '/outbox?limit=1000&state=' + state);
    return r.status === 200 ? r.body.items : null;
  }

  async function peers() {
    const [pr, cr, pending, dead, m] = await Promise.all([
      api('GET', '/agents'), api('GET', '/contracts?limit=1000'), outbox('pending'), outbox('dead'), SY.metrics(),
    ]);
    if (pr.status !== 200) { note('peers', denied(pr, 'tasks:read')); return; }
    note('peers', dead === null ? 'The outbox needs an admin token: queued and dead-lettered messages are not shown.' : '');
    const count = (items, id) => (items || []).filter((x) => x.peer === id).length;
    const contracts = cr.status === 200 ? cr.body.contracts : [];
    if (m) {
      $('#p-queued').textContent = String(m.synapse_outbox_pending ?? '–');
      $('#p-dead').textContent = String(m.synapse_outbox_dead_letters ?? '–');
      const up = m.synapse_tier1_uplink_pending_batches;
      $('#p-upq').textContent = up === undefined ? 'no uplink' : up + ' batches';
      const lag = m.synapse_tier1_uplink_lag_seconds;
      $('#p-uplag').textContent = lag === undefined ? '–' : lag > 0 ? fmtAge(lag * 1000) : 'none';
    }
    const list = $('#p-list');
    list.replaceChildren();
    for (const p of pr.body.agents) {
      const card = el('article', 'card peer');
      card.dataset.id = p.agent_id;
      const head = el('div', 'row-head');
      head.append(el('h3', '', p.agent_name || p.agent_id), el('span', 'st ' + p.status, p.status || '?'));
      const c = contracts.find((x) => x.peer === p.agent_id && x.status === 'active');
      const tr = c && c.contract && c.contract.transport_method;
      const terms = c && c.contract ? [c.contract.communication_tier, tr && (tr.protocol + (tr.version ? ' ' + tr.version : '')), c.contract.security_level].filter(Boolean).join(' · ') : 'none';
      card.append(head, kv([
        ['Agent', p.agent_id],
        ['Endpoint', p.endpoint],
        ['Last seen', when(p.last_seen)],
        ['Contract', terms + (c && c.contract && c.contract.contract_expiration ? ' (until ' + new Date(c.contract.contract_expiration).toLocaleString() + ')' : '')],
        ['Tasks', p.max_tasks ? p.active_tasks + ' of ' + p.max_tasks : ''],
        ['Queued', pending ? String(count(pending, p.agent_id)) : ''],
        ['Dead letters', dead ? String(count(dead, p.agent_id)) : ''],
      ]));
      list.append(card);
    }
    if (!pr.body.agents.length) list.append(el('p', 'muted', 'No paired agents. Pair with: synapse peer add URL'));
    deadLetters(dead);
  }

  function deadLetters(dead) {
    const ul = $('#p-deadlist');
    ul.replaceChildren();
    $('#p-retry-all').hidden = !dead || !dead.length;
    if (!dead) { ul.append(el('li', 'muted', 'Needs an admin token.')); return; }
    for (const d of dead) {
      const li = el('li', 'dead');
      li.dataset.id = d.id;
      li.append(el('span', 'type', d.type), el('span', 'muted', (d.peer || d.url) + ''));
      li.append(el('span', 'sub', (d.last_error || 'no error recorded') + ' · ' + d.attempts + ' attempts · dead ' + when(d.dead_at)));
      const acts = el('span', 'acts');
      acts.append(
        button('Retry', 'retry', async () => {
          const r = await api('POST', '/outbox/' + encodeURIComponent(d.id) + '/retry');
          if (r.status === 200) { toast('Queued again: ' + d.type); li.remove(); } else toast(errText(r));
          peers();
        }),
        button('Drop', 'ghost drop', async () => {
          const r = await api('DELETE', '/outbox/' + encodeURIComponent(d.id));
          if (r.status === 204) { toast('Dropped ' + d.type); li.remove(); } else toast(errText(r));
          peers();
        }));
      li.append(acts);
      ul.append(li);
    }
    if (!dead.length) ul.append(el('li', 'muted', 'No dead letters.'));
  }

  // ---------------- Tier-1 exports (in the Peers view) ----------------
  const XWINDOW = 10 * 60 * 1000;
  const xsamples = new Map(); // export name → [{t, backlog, lag}]
  let xcharts = null;
  const bytes = (b) => (b >= 1e9 ? (b / 1e9).toFixed(1) + ' GB' : b >= 1e6 ? (b / 1e6).toFixed(1) + ' MB' : b >= 1e3 ? (b / 1e3).toFixed(1) + ' kB' : b + ' B');

  async function exportsPanel() {
    const r = await api('GET', '/tier1/exports');
    const list = $('#x-list');
    if (r.status !== 200) { list.replaceChildren(el('p', 'muted', denied(r, 'tier1:read'))); return; }
    const now = SY.now();
    list.replaceChildren();
    for (const x of r.body.exports) {
      const s = xsamples.get(x.name) || [];
      s.push({ t: now, backlog: x.backlog_frames, lag: x.lag_seconds });
      while (s.length && s[0].t < now - XWINDOW) s.shift();
      xsamples.set(x.name, s);
      const card = el('article', 'card export');
      card.dataset.name = x.name;
      const head = el('div', 'row-head');
      head.append(el('h3', '', x.name), el('span', 'st ' + (x.state === 'connected' ? 'online' : 'offline'), x.state.replace('_', ' ')));
      const eta = x.eta_seconds === null ? (x.backlog_bytes ? 'stalled' : '') : x.eta_seconds > 0 ? fmtAge(x.eta_seconds * 1000) : 'none';
      card.append(head, kv([
        ['Endpoint', x.endpoint],
        ['Priority', String(x.priority) + ' · ' + x.order.replace('_', ' ')],
        ['Backlog', x.backlog_frames.toLocaleString() + ' frames · ' + bytes(x.backlog_bytes)],
        ['Lag', x.lag_seconds > 0 ? fmtAge(x.lag_seconds * 1000) : 'none'],
        ['Rate', bytes(Math.round(x.rate_bytes_per_s)) + '/s' + (x.bandwidth_bytes_per_s ? ' of ' + bytes(x.bandwidth_bytes_per_s) + '/s' : '')],
        ['ETA', eta],
        ['Sent', x.sent_frames.toLocaleString() + ' frames'],
        ['Dropped', x.dropped_frames.toLocaleString() + ' frames'],
        ['Error', x.error || ''],
      ]));
      const act = el('div', 'acts');
      const verb = x.state === 'paused' ? 'resume' : 'pause';
      act.append(button(verb === 'pause' ? 'Pause' : 'Resume', verb, async () => {
        const pr = await api('POST', '/tier1/exports/' + encodeURIComponent(x.name) + '/' + verb, {});
        toast(pr.status === 200 ? x.name + ': ' + verb + 'd' : errText(pr));
        exportsPanel();
      }));
      card.append(act);
      list.append(card);
    }
    if (!r.body.exports.length) list.append(el('p', 'muted', 'No exports: add an "exports" list (or "uplink") to the config file.'));
    $('#x-charts').hidden = !r.body.exports.length;
    if (!r.body.exports.length) return;
    xcharts = xcharts || { backlog: SY.chart($('#x-backlog')), lag: SY.chart($('#x-lag')) };
    xdraw();
  }

  // xdraw draws the exports' backlog and lag over the last 10 minutes.
  function xdraw() {
    if (!xcharts || $('#x-charts').hidden) return;
    const now = SY.now();
    const names = [...xsamples.keys()];
    $('#x-legend').replaceChildren(...names.map((n, i) => { const sp = el('span', '', '● ' + n + '  '); sp.style.color = SY.palette[i % SY.palette.length]; return sp; }));
    for (const k of ['backlog', 'lag']) {
      xcharts[k].draw(names.map((n, i) => ({ color: SY.palette[i % SY.palette.length], pts: xsamples.get(n).map((p) => [p.t, p[k]]) })), now - XWINDOW, now);
    }
  }

  window.addEventListener('resize', xdraw);

  SY.view('peers', {
    show() {
      note('peers', '');
      peers();
      exportsPanel();
      ptimer = setInterval(() => { if (SY.visible('peers')) { peers(); exportsPanel(); } }, 3000);
    },
    hide() { clearInterval(ptimer); },
  });

  // ---------------- Groups ----------------
  let gtimer = 0;

  // tally sums the weights of the ballots per option (first choice for
  // ranked votes).
  function tally(v) {
    const w = new Map((v.voters || []).map((x) => [x.agent_id, x.weight || 1]));
    const out = new Map(v.options.map((o) => [o, 0]));
    for (const b of v.ballots || []) {
      const o = b.option || (b.ranking && b.ranking[0]);
      if (out.has(o)) out.set(o, out.get(o) + (w.get(b.voter) || 1));
    }
    return out;
  }

  function voteCard(g, v, me) {
    const card = el('div', 'vote ' + v.status);
    card.dataset.id = v.vote_id;
    const head = el('div', 'row-head');
    head.append(el('strong', '', v.title), el('span', 'st ' + (v.status === 'open' ? 'busy' : 'completed'), v.status));
    card.append(head);
    const t = tally(v);
    const total = (v.voters || []).reduce((a, x) => a + (x.weight || 1), 0) || 1;
    const bars = el('ul', 'bars');
    for (const [o, n] of t) {
      const li = el('li');
      const bar = el('span', 'fill');
      bar.style.width = Math.max(1, n / total * 100) + '%';
      const track = el('span', 'track');
      track.append(bar);
      li.append(el('span', 'k', o), track, el('span', 'n', String(n)));
      bars.append(li);
    }
    card.append(bars);
    const ballots = (v.ballots || []).length;
    const meta = v.consensus + ' · ' + ballots + ' of ' + (v.voters || []).length + ' ballots' + (v.quorum ? ' · quorum ' + v.quorum : '');
    if (v.status === 'open') {
      const left = Date.parse(v.deadline) - SY.now();
      card.append(el('p', 'meta muted', meta + ' · closes in ' + (left > 0 ? fmtLeft(left) : 'a moment') + ' (' + new Date(v.deadline).toLocaleTimeString() + ')'));
      const mine = (v.ballots || []).find((b) => b.voter === me);
      if (mine) card.append(el('p', 'meta', 'This agent voted ' + (mine.option || mine.ranking.join(' > ')) + '.'));
      else if ((v.voters || []).some((x) => x.agent_id === me)) {
        const acts = el('div', 'acts');
        for (const o of v.options) {
          acts.append(button(o, 'ballot', async () => {
            const body = v.consensus === 'ranked' ? { ranking: [o, ...v.options.filter((x) => x !== o)] } : { option: o };
            const r = await api('POST', '/group/' + encodeURIComponent(g.group_id) + '/vote/' + encodeURIComponent(v.vote_id) + '/ballot', body);
            if (r.status === 200 || r.status === 202) toast('Voted ' + o); else toast(errText(r));
            groups();
          }));
        }
        card.append(acts);
      }
    } else {
      const res = v.result || {};
      card.append(el('p', 'meta muted', meta + ' · ' + (res.outcome ? res.outcome.replace(/_/g, ' ') + (res.winner ? ': ' + res.winner : '') : 'closed') +
        (v.closed_at ? ' · ' + new Date(v.closed_at).toLocaleString() : '')));
    }
    return card;
  }

  async function groups() {
    const r = await api('GET', '/groups');
    if (r.status !== 200) { note('groups', r.status === 404 || r.status === 503 ? 'Groups are not enabled on this agent.' : denied(r, 'tasks:read')); return; }
    const id = await identity();
    const list = $('#g-list');
    const votes = await Promise.all(r.body.groups.map((g) => api('GET', '/group/' + encodeURIComponent(g.group_id) + '/votes')));
    list.replaceChildren();
    r.body.groups.forEach((g, i) => {
      const card = el('article', 'card group');
      card.dataset.id = g.group_id;
      const head = el('div', 'row-head');
      head.append(el('h3', '', g.name), el('span', 'st ' + (g.status === 'active' ? 'online' : 'offline'), g.status));
      card.append(head);
      if (g.description) card.append(el('p', 'muted', g.description));
      const members = el('ul', 'chips');
      for (const m of g.members || []) {
        const li = el('li', m.role, m.agent_id + (m.agent_id === id ? ' (this agent)' : ''));
        li.title = m.role + ', weight ' + m.weight;
        li.append(el('span', 'role', m.role));
        members.append(li);
      }
      card.append(members);
      const vs = votes[i].status === 200 ? votes[i].body.votes : [];
      const open = vs.filter((v) => v.status === 'open');
      const closed = vs.filter((v) => v.status !== 'open').slice(-3).reverse();
      card.append(el('h4', '', open.length ? 'Open votes' : 'No open votes'));
      for (const v of open) card.append(voteCard(g, v, id));
      if (closed.length) {
        const det = el('details');
        det.append(el('summary', '', 'Recent results'));
        for (const v of closed) det.append(voteCard(g, v, id));
        card.append(det);
      }
      list.append(card);
    });
    if (!r.body.groups.length) list.append(el('p', 'muted', 'This agent is in no group. Create one with: synapse group create NAME'));
  }

  let myID = '';
  async function identity() {
    if (myID) return myID;
    const r = await api('GET', '/identity');
    if (r.status === 200) myID = r.body.agent_id;
    return myID;
  }

  SY.view('groups', {
    show() {
      note('groups', '');
      groups();
      gtimer = setInterval(() => { if (SY.visible('groups') && !document.querySelector('#g-list details[open]')) groups(); }, 3000);
    },
    hide() { clearInterval(gtimer); },
  });

  // ---------------- Tokens ----------------
  const SCOPES = ['tasks:read', 'tasks:write', 'tier1:read', 'tier1:write', 'hil:l1', 'hil:l2', 'hil:l3', 'registry:write', 'admin'];

  async function tokens() {
    const r = await api('GET', '/tokens');
    const ul = $('#k-list');
    if (r.status !== 200) { note('tokens', denied(r, 'admin')); $('#k-form').hidden = true; ul.replaceChildren(); return; }
    $('#k-form').hidden = false;
    ul.replaceChildren();
    for (const t of r.body.tokens) {
      const li = el('li', 'token');
      li.dataset.id = t.token_id;
      li.append(el('span', 'type', t.name || t.token_id));
      const revoke = button('Revoke', 'ghost danger revoke', async (b) => {
        if (!b.classList.contains('confirm')) {
          b.classList.add('confirm');
          b.textContent = 'Revoke now';
          setTimeout(() => { b.classList.remove('confirm'); b.textContent = 'Revoke'; }, 4000);
          return;
        }
        const r = await api('DELETE', '/tokens/' + encodeURIComponent(t.token_id));
        if (r.status === 204) { toast('Revoked ' + (t.name || t.token_id)); tokens(); } else toast(errText(r));
      });
      li.append(revoke);
      const chips = el('span', 'sub');
      chips.append(el('span', '', t.token_id + ' · created ' + new Date(t.created_at).toLocaleString() + ' · '));
      for (const s of t.scopes || []) chips.append(el('code', 'scope', s));
      li.append(chips);
      ul.append(li);
    }
    if (!r.body.tokens.length) ul.append(el('li', 'muted', 'No tokens besides the admin token.'));
  }

  async function create(e) {
    e.preventDefault();
    const name = $('#k-name').value.trim();
    const scopes = [...document.querySelectorAll('#k-scopes input:checked')].map((x) => x.value);
    $('#k-error').textContent = '';
    if (!scopes.length) { $('#k-error').textContent = 'Pick at least one scope.'; return; }
    const r = await api('POST', '/tokens', { name, scopes });
    if (r.status !== 201) { $('#k-error').textContent = errText(r); return; }
    $('#k-value').textContent = r.body.token;
    $('#k-secret').hidden = false;
    $('#k-name').value = '';
    for (const x of document.querySelectorAll('#k-scopes input')) x.checked = false;
    tokens();
  }

  SY.view('tokens', {
    show() { note('tokens', ''); $('#k-secret').hidden = true; $('#k-value').textContent = ''; tokens(); },
    hide() { $('#k-secret').hidden = true; $('#k-value').textContent = ''; },
  });

  document.addEventListener('DOMContentLoaded', () => {
    const fs = $('#k-scopes');
    for (const s of SCOPES) {
      const lab = el('label', 'check');
      const box = el('input');
      box.type = 'checkbox';
      box.value = s;
      lab.append(box, el('span', '', s));
      fs.append(lab);
    }
    $('#k-form').addEventListener('submit', create);
    $('#p-retry-all').addEventListener('click', async () => {
      const r = await api('POST', '/outbox/retry');
      toast(r.status === 200 ? 'Queued again: ' + r.body.requeued : errText(r));
      peers();
    });
  });
})();
