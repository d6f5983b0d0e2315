// prefcpu dashboard.  Reads /api/v1 every period and draws on canvas
// (no chart library: nothing to fetch, nothing to install).
// Every string from the API (domain names, guest-reported texts) reaches
// the page through textContent only, never as markup.
'use strict';

const HISTORY_SECONDS = 600;
// Beyond this many VMs the per-VM charts would be unreadable (and their
// history heavy to fetch): the table and the host chart remain.
const MAX_CHART_VMS = 24;
const COLORS = ['#2563eb', '#dc2626', '#059669', '#d97706', '#7c3aed',
  '#db2777', '#0891b2', '#65a30d', '#9333ea', '#ea580c'];

const state = {
  periodMs: 1000,
  periods: [],        // oldest first, as /api/v1/history returns them
  lastSeq: 0,
  perVM: true,
  timer: null,
};

// Bidi controls and line/paragraph separators would reorder or break
// what is around them (a name that shows another name): shown as \uXXXX.
const INVISIBLE = /[\u061c\u200e\u200f\u202a-\u202e\u2066-\u2069\u2028\u2029]/g;

function visible(text) {
  return String(text).replace(INVISIBLE, (c) =>
    '\\u' + c.charCodeAt(0).toString(16).padStart(4, '0'));
}

function el(tag, cls, text) {
  const e = document.createElement(tag);
  if (cls) e.className = cls;
  if (text !== undefined && text !== null) e.textContent = visible(text);
  return e;
}

function fmt(v, digits) {
  if (v === null || v === undefined || Number.isNaN(v)) return '–';
  return Number(v).toFixed(digits === undefined ? 2 : digits);
}

async function getJSON(path) {
  const r = await fetch(path, { cache: 'no-store' });
  if (!r.ok) {
    let msg = r.status + ' ' + r.statusText;
    try { msg = (await r.json()).error || msg; } catch (e) { /* not JSON */ }
    throw new Error(path + ': ' + msg);
  }
  return r.json();
}

function renderSummary(h) {
  document.getElementById('hostname').textContent = visible(h.hostname);
  const cards = [
    ['mode', h.mode],
    ['period', fmt(h.period_ms / 1000, 1) + ' s'],
    ['host CPUs', h.pcpus],
    ['usable CPUs', h.usable_pcpus],
    ['capacity', fmt(h.capacity)],
    ['demand', fmt(h.demand)],
    ['vCPUs', h.vcpus],
    ['preferred vCPUs', h.preferred_vcpus],
    ['over-commit', h.overcommit === null ? '–' : fmt(h.overcommit) + '×'],
    ['run delay', fmt(h.run_delay_cpus) + ' CPUs'],
    ['CPU pressure', h.cpu_pressure_some_avg10 === null ? '–' :
      fmt(h.cpu_pressure_some_avg10, 1) + ' %'],
    ['contended', h.contended ? 'yes' : 'no'],
    ['decisions', h.decisions],
  ];
  const box = document.getElementById('summary');
  box.replaceChildren();
  for (const [k, v] of cards) {
    const c = el('div', 'card');
    c.dataset.key = k;
    c.append(el('div', 'k', k), el('div', 'v', v));
    box.append(c);
  }
}

function renderVMs(list) {
  const body = document.querySelector('#vms tbody');
  body.replaceChildren();
  body.dataset.period = list.period_seq;
  for (const d of list.domains) {
    const tr = el('tr');
    tr.dataset.uuid = d.uuid;
    const dec = d.decision;
    const cells = [
      ['name', d.name],
      ['num vcpus', d.vcpus],
      ['num preferred', d.target.vcpus ? d.target.preferred + ' (' +
        d.target.vcpus + ')' : (dec ? dec.preferred + ' (' + dec.vcpus + ')' : '–')],
      ['num applied', d.applied.cpus !== null ?
        d.applied.cpus + ' (' + d.applied.vcpus + ')' :
        (d.applied.error !== null ? 'error: ' + d.applied.error : '–')],
      ['num weight', d.policy.weight],
      ['num share', dec ? fmt(dec.share) : '–'],
      ['num demand', dec ? fmt(dec.demand) : '–'],
      ['num delay', fmt(d.usage.run_delay_pct, 1)],
      ['agent agent-' + d.agent.state, d.agent.state +
        (d.agent.agent ? ' · ' + d.agent.agent : '')],
      ['reason', dec ? dec.reason : '–'],
      ['why', dec ? dec.why : ''],
    ];
    for (const [cls, text] of cells) tr.append(el('td', cls, text));
    body.append(tr);
  }
}

function renderDecisions(res) {
  const ol = document.getElementById('decisions');
  ol.replaceChildren();
  for (const d of res.decisions) {
    const li = el('li');
    const t = el('time', null, new Date(d.time_ms).toLocaleTimeString());
    li.append(t, el('span', 'name', d.name),
      el('span', null, ': ' + (d.from === null ? 'none' : d.from) + ' → ' +
        d.to + ' (' + d.reason + ') ' + d.why));
    ol.append(li);
  }
}

// One series: {label, color, points: [[time_ms, value], ...]}.
function drawChart(id, legendId, series, unit) {
  const cv = document.getElementById(id);
  const ratio = window.devicePixelRatio || 1;
  const w = cv.clientWidth || cv.width, h = cv.clientHeight || cv.height;
  cv.width = w * ratio;
  cv.height = h * ratio;
  const g = cv.getContext('2d');
  g.scale(ratio, ratio);
  g.clearRect(0, 0, w, h);
  const padL = 44, padR = 8, padT = 8, padB = 20;
  let t0 = Infinity, t1 = -Infinity, vmax = 0;
  for (const s of series) {
    for (const [t, v] of s.points) {
      t0 = Math.min(t0, t); t1 = Math.max(t1, t);
      if (v !== null) vmax = Math.max(vmax, v);
    }
  }
  if (!Number.isFinite(t0)) { t0 = Date.now() - 1000; t1 = Date.now(); }
  if (t1 <= t0) t1 = t0 + 1000;
  vmax = vmax > 0 ? vmax * 1.1 : 1;
  const x = (t) => padL + (t - t0) / (t1 - t0) * (w - padL - padR);
  const y = (v) => h - padB - v / vmax * (h - padT - padB);
  g.strokeStyle = '#e3e5ea'; g.fillStyle = '#6b7280';
  g.font = '11px system-ui, sans-serif'; g.lineWidth = 1;
  for (let i = 0; i <= 4; i++) {
    const v = vmax * i / 4;
    g.beginPath(); g.moveTo(padL, y(v)); g.lineTo(w - padR, y(v)); g.stroke();
    g.fillText(fmt(v, v < 10 ? 1 : 0) + (unit || ''), 2, y(v) + 4);
  }
  g.fillText(new Date(t0).toLocaleTimeString(), padL, h - 4);
  const end = new Date(t1).toLocaleTimeString();
  g.fillText(end, w - padR - g.measureText(end).width, h - 4);
  g.lineWidth = 1.6;
  for (const s of series) {
    g.strokeStyle = s.color;
    g.beginPath();
    let pen = false;
    for (const [t, v] of s.points) {
      if (v === null) { pen = false; continue; }
      if (pen) g.lineTo(x(t), y(v)); else g.moveTo(x(t), y(v));
      pen = true;
    }
    g.stroke();
  }
  const legend = document.getElementById(legendId);
  legend.replaceChildren();
  for (const s of series) {
    const span = el('span', null, s.label);
    span.style.setProperty('--c', s.color);
    legend.append(span);
  }
}

function perVM(field) {
  const byName = new Map();
  for (const p of state.periods) {
    for (const d of p.domains) {
      if (!byName.has(d.name)) byName.set(d.name, []);
      byName.get(d.name).push([p.time_ms, d[field]]);
    }
  }
  let i = 0;
  return [...byName].map(([name, points]) =>
    ({ label: visible(name), color: COLORS[i++ % COLORS.length], points }));
}

function chartNote(legendId, text) {
  const legend = document.getElementById(legendId);
  legend.replaceChildren(el('span', 'note', text));
}

function renderCharts() {
  const P = state.periods;
  drawChart('chart-host', 'legend-host', [
    { label: 'capacity', color: '#059669',
      points: P.map((p) => [p.time_ms, p.capacity]) },
    { label: 'total demand', color: '#dc2626',
      points: P.map((p) => [p.time_ms, p.demand]) },
    { label: 'preferred vCPUs', color: '#2563eb',
      points: P.map((p) => [p.time_ms, p.preferred_vcpus]) },
  ]);
  if (state.perVM) {
    drawChart('chart-preferred', 'legend-preferred', perVM('preferred_vcpus'));
    drawChart('chart-delay', 'legend-delay', perVM('run_delay_pct'), '%');
  } else {
    const n = P.length ? P[P.length - 1].ndomains : 0;
    for (const [id, leg] of [['chart-preferred', 'legend-preferred'],
      ['chart-delay', 'legend-delay']]) {
      drawChart(id, leg, []);
      chartNote(leg, n + ' VMs: too many to chart one by one; see the table');
    }
  }
}

async function refresh() {
  const status = document.getElementById('status');
  try {
    const [host, vms, dec] = await Promise.all([
      getJSON('/api/v1/host'),
      getJSON('/api/v1/domains'),
      getJSON('/api/v1/decisions?limit=30'),
    ]);
    const perVM = vms.domains.length <= MAX_CHART_VMS;
    if (perVM !== state.perVM) {
      state.perVM = perVM;
      state.periods = [];
      state.lastSeq = 0;
    }
    const since = state.lastSeq ? '&since=' + state.lastSeq : '';
    const hist = await getJSON('/api/v1/history?seconds=' + HISTORY_SECONDS +
      since + (perVM ? '' : '&domains=0'));
    state.periodMs = Math.max(250, host.period_ms || 1000);
    for (const p of hist.periods) {
      if (p.seq > state.lastSeq) { state.periods.push(p); state.lastSeq = p.seq; }
    }
    const cut = Date.now() - HISTORY_SECONDS * 1000;
    while (state.periods.length && state.periods[0].time_ms < cut &&
      state.periods.length > 2) state.periods.shift();
    renderSummary(host);
    renderVMs(vms);
    renderDecisions(dec);
    renderCharts();
    status.textContent = 'period ' + host.period_seq + ' · updated ' +
      new Date().toLocaleTimeString();
    status.classList.remove('error');
    document.body.dataset.ready = '1';
  } catch (e) {
    status.textContent = String(e.message || e);
    status.classList.add('error');
  }
  state.timer = setTimeout(refresh, state.periodMs);
}

document.addEventListener('DOMContentLoaded', refresh);
