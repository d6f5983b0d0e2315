// prefcpu dashboard.  Reads /api/v1 every period and draws with Chart.js
// (Debian's libjs-chart.js, compiled into the daemon with this file: the
// page fetches nothing from elsewhere).  Every figure is the API's, as
// defined in prefcpu-hostd(8), FIGURES; nothing is recomputed here.
// Every string from the API (domain names, guest-reported texts) reaches
// the page through textContent only, never as markup.
'use strict';

// Per-VM history fetched at most this many records (VMs x periods).
const HISTORY_RECORDS = 60000;
const HISTORY_SECONDS = 600;
// The run delay chart shows this many VMs, most delayed first; all of
// them have a small multiple and a row.
const DELAY_CHART_VMS = 20;
// Kelly's colours of maximum contrast, without white and black: the
// first 20 VMs never share one.
const PALETTE = ['#0067a5', '#be0032', '#008856', '#f38400', '#875692',
  '#a1caf1', '#c2b280', '#848482', '#e68fac', '#f3c300', '#604e97',
  '#f99379', '#882d17', '#8db600', '#654522', '#e25822', '#2b3d26',
  '#b3446c', '#dcd300', '#f6a600'];
const HOST_COLORS = { capacity: '#008856', demand: '#be0032',
  preferred: '#0067a5' };

const state = {
  periodMs: 1000,
  periods: [],        // oldest first, as /api/v1/history returns them
  lastSeq: 0,
  seconds: HISTORY_SECONDS,
  colors: new Map(),  // uuid -> colour, kept while the VM lives
  charts: new Map(),  // id -> Chart
  multiples: new Map(), // uuid -> {fig, chart}
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

// Colours: the DELAY_CHART_VMS most delayed VMs never share one, and a
// VM keeps its colour while it stays among them; the others take what is
// left over, repeating.
function assignColors(doms) {
  const used = new Set();
  const need = [];
  for (const d of doms.slice(0, DELAY_CHART_VMS)) {
    const c = state.colors.get(d.uuid);
    if (c !== undefined && !used.has(c)) used.add(c);
    else need.push(d);
  }
  for (const d of need) {
    const c = PALETTE.find((p) => !used.has(p));
    state.colors.set(d.uuid, c);
    used.add(c);
  }
  doms.slice(DELAY_CHART_VMS).forEach((d, i) => {
    if (!state.colors.has(d.uuid)) {
      state.colors.set(d.uuid, PALETTE[i % PALETTE.length]);
    }
  });
  const live = new Set(doms.map((d) => d.uuid));
  for (const u of [...state.colors.keys()]) {
    if (!live.has(u)) state.colors.delete(u);
  }
}

function colorOf(uuid) {
  return state.colors.get(uuid) || PALETTE[0];
}

function renderSummary(h) {
  document.getElementById('hostname').textContent = visible(h.hostname);
  const mode = document.getElementById('mode');
  mode.textContent = h.mode === 'observe' ?
    'observe mode: decides, sends nothing' : 'enforcing';
  mode.dataset.mode = h.mode;
  const cont = document.getElementById('contended');
  cont.textContent = h.contended ? 'contended' : 'not contended';
  cont.classList.toggle('bad', !!h.contended);
  // [label, value, unit, what it is (the title)]
  const cards = [
    ['host CPUs', h.pcpus, 'CPUs', 'online host CPUs'],
    ['usable CPUs', h.usable_cpus, 'CPUs',
      'host CPUs VMs may use: ' + h.usable_pcpus],
    ['capacity', fmt(h.capacity), 'CPUs',
      'usable CPUs minus the non-VM work on them'],
    ['demand', fmt(h.demand), 'CPUs',
      'the VMs\' smoothed run time plus run delay'],
    ['vCPUs', h.vcpus, 'vCPUs', 'vCPUs of the running VMs'],
    ['preferred', h.preferred_vcpus, 'vCPUs',
      'preferred vCPUs decided for the running VMs'],
    ['over-commit', fmt(h.overcommit), 'vCPUs/CPU',
      'vCPUs per usable CPU'],
    ['run delay', fmt(h.run_delay_pct, 1), '% of vCPU time',
      fmt(h.run_delay_cpus) + ' CPUs of vCPU threads waiting for a CPU'],
    ['CPU pressure', h.cpu_pressure_some_avg10 === null ? '–' :
      fmt(h.cpu_pressure_some_avg10, 1), '%',
    'share of time some task waited for a CPU (avg10)'],
    ['period', fmt(h.period_ms / 1000, 1), 's', 'sampling period'],
    ['decisions', h.decisions, 'changes',
      'changes of a VM\'s preferred vCPUs since start'],
  ];
  const box = document.getElementById('summary');
  box.replaceChildren();
  for (const [k, v, unit, title] of cards) {
    const c = el('div', 'card');
    c.dataset.key = k;
    c.dataset.unit = unit;
    c.title = title;
    const val = el('div', 'v', v);
    val.append(el('span', 'u', ' ' + unit));
    c.append(el('div', 'k', k), val);
    box.append(c);
  }
}

function byDelay(list) {
  return [...list].sort((a, b) =>
    (b.usage.run_delay_pct - a.usage.run_delay_pct) ||
    a.name.localeCompare(b.name));
}

function renderVMs(doms, live) {
  const body = document.querySelector('#vms tbody');
  body.replaceChildren();
  for (const d of doms) {
    const tr = el('tr');
    tr.dataset.uuid = d.uuid;
    const dec = d.decision;
    const cells = [
      ['name', d.name],
      ['num vcpus', d.vcpus],
      ['preferred', d.target.vcpus ? d.target.preferred + ' (' +
        d.target.vcpus + ')' : (dec ? dec.preferred + ' (' + dec.vcpus + ')' : '–')],
      ['applied', d.applied.cpus !== null ?
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
    const sw = el('span', 'swatch');
    sw.style.setProperty('--c', colorOf(d.uuid));
    tr.firstChild.prepend(sw);
    body.append(tr);
  }
}

function renderDecisions(res) {
  const ol = document.getElementById('decisions');
  ol.replaceChildren();
  if (!res.decisions.length) {
    ol.append(el('li', 'note', 'no decision has changed a VM\'s preferred' +
      ' vCPUs yet'));
  }
  for (const d of res.decisions) {
    const li = el('li');
    const t = el('time', null, new Date(d.time_ms).toLocaleTimeString());
    li.append(t, el('span', 'name', d.name),
      el('span', null, ': ' + (d.from === null ? 'none' : d.from) + ' → ' +
        d.to + ' (' + d.reason + ') ' + d.why));
    ol.append(li);
  }
}

// x: seconds relative to the newest period, so ticks read -10 min ... now
// without a date adapter.
function xTick(v) {
  if (v === 0) return 'now';
  const m = v / 60;
  return Number.isInteger(m) ? m + ' min' : v + ' s';
}

// The x axis of every chart: a round span covering the history held.
const SPANS = [[30, 10], [60, 15], [120, 30], [300, 60], [600, 120]];
function xSpan() {
  const P = state.periods;
  const have = P.length ? (P[P.length - 1].time_ms - P[0].time_ms) / 1000 : 0;
  return SPANS.find(([s]) => s >= have) || SPANS[SPANS.length - 1];
}

function setX(opts) {
  const [span, step] = xSpan();
  opts.scales.x.min = -span;
  opts.scales.x.max = 0;
  opts.scales.x.ticks.stepSize = step;
}

function baseOptions(yTitle, yUnit, extra) {
  const o = {
    animation: false,
    responsive: true,
    maintainAspectRatio: false,
    parsing: false,
    normalized: true,
    interaction: { mode: 'index', intersect: false },
    plugins: {
      legend: { display: true, position: 'bottom',
        labels: { boxWidth: 10, boxHeight: 10 } },
      tooltip: {
        callbacks: {
          title: (items) => items.length ? xTick(Math.round(items[0].parsed.x)) : '',
          label: (it) => it.dataset.label + ': ' + fmt(it.parsed.y,
            it.dataset.digits === undefined ? 2 : it.dataset.digits) +
            ' ' + (it.dataset.unit || yUnit),
        },
      },
    },
    scales: {
      x: { type: 'linear', ticks: { callback: xTick, stepSize: 60,
        maxRotation: 0 }, title: { display: false } },
      y: { beginAtZero: true, title: { display: true, text: yTitle },
        ticks: { precision: 0 } },
    },
  };
  return Object.assign(o, extra || {});
}

function upsertChart(id, canvas, config) {
  let c = state.charts.get(id);
  if (!c) {
    setX(config.options);
    c = new Chart(canvas, config);
    state.charts.set(id, c);
  } else {
    c.data.datasets = config.data.datasets;
    setX(c.options);
    c.update('none');
  }
  return c;
}

function points(field, pick) {
  const P = state.periods;
  if (!P.length) return [];
  const t1 = P[P.length - 1].time_ms;
  return P.map((p) => ({ x: (p.time_ms - t1) / 1000, y: pick(p) }))
    .filter((q) => q.y !== null && q.y !== undefined);
}

function renderHostChart() {
  const ds = (label, color, unit, digits, pick, stepped) => ({
    label, unit, digits, borderColor: color, backgroundColor: color,
    borderWidth: 2, pointRadius: 0, stepped: !!stepped,
    data: points(null, pick),
  });
  upsertChart('host', document.getElementById('chart-host'), {
    type: 'line',
    data: { datasets: [
      ds('capacity', HOST_COLORS.capacity, 'CPUs', 2, (p) => p.capacity),
      ds('demand', HOST_COLORS.demand, 'CPUs', 2, (p) => p.demand),
      ds('preferred vCPUs', HOST_COLORS.preferred, 'vCPUs', 0,
        (p) => p.preferred_vcpus, true),
    ] },
    options: baseOptions('CPUs', 'CPUs'),
  });
}

// Per-VM series from the history: uuid -> [{x, y}].
function perVM(field) {
  const P = state.periods;
  const out = new Map();
  if (!P.length) return out;
  const t1 = P[P.length - 1].time_ms;
  for (const p of P) {
    for (const d of p.domains || []) {
      if (!out.has(d.uuid)) out.set(d.uuid, []);
      out.get(d.uuid).push({ x: (p.time_ms - t1) / 1000, y: d[field] });
    }
  }
  return out;
}

function renderDelayChart(doms, live) {
  const top = doms.slice(0, DELAY_CHART_VMS);
  document.getElementById('delay-n').textContent = doms.length >
    DELAY_CHART_VMS ? DELAY_CHART_VMS + ' most delayed of ' + doms.length :
    String(doms.length);
  const series = perVM('run_delay_pct');
  upsertChart('delay', document.getElementById('chart-delay'), {
    type: 'line',
    data: { datasets: top.map((d) => ({
      label: visible(d.name), unit: '%', digits: 1,
      borderColor: colorOf(d.uuid),
      backgroundColor: colorOf(d.uuid),
      borderWidth: 1.6, pointRadius: 0,
      data: series.get(d.uuid) || [],
    })) },
    options: baseOptions('% of vCPU time', '%'),
  });
  const fig = document.getElementById('fig-delay');
  fig.dataset.series = JSON.stringify(top.map((d) => ({
    uuid: d.uuid, color: colorOf(d.uuid) })));
}

// Small multiples are drawn only while on screen: 100+ charts would cost
// every period for nothing.
const observer = new IntersectionObserver((entries) => {
  for (const e of entries) {
    const m = state.multiples.get(e.target.dataset.uuid);
    if (!m) continue;
    m.visible = e.isIntersecting;
    if (m.visible) drawMultiple(m);
  }
}, { rootMargin: '400px 0px' });

function drawMultiple(m) {
  if (!m.next) return;
  if (!m.chart) {
    const opts = baseOptions('vCPUs', 'vCPUs');
    opts.plugins.legend.display = false;
    opts.scales.y = { min: 0, max: 1, ticks: { precision: 0,
      maxTicksLimit: 5 }, title: { display: false } };
    opts.scales.delay = { position: 'right', min: 0, max: 100,
      grid: { display: false }, ticks: { maxTicksLimit: 3,
        callback: (v) => v + '%' } };
    m.chart = new Chart(m.canvas, { type: 'line', data: { datasets: [] },
      options: opts });
  }
  m.chart.options.scales.y.max = m.next.vcpus;
  setX(m.chart.options);
  m.chart.data.datasets = m.next.datasets;
  m.chart.update('none');
  m.next = null;
}

// One small chart per VM, in contention order; each VM keeps its colour.
function renderMultiples(doms, live) {
  const box = document.getElementById('multiples');
  const pref = perVM('preferred_vcpus');
  const delay = perVM('run_delay_pct');
  for (const [uuid, m] of state.multiples) {
    if (!live.has(uuid)) {
      observer.unobserve(m.fig);
      if (m.chart) m.chart.destroy();
      m.fig.remove();
      state.multiples.delete(uuid);
    }
  }
  for (const d of doms) {
    let m = state.multiples.get(d.uuid);
    const color = colorOf(d.uuid);
    if (!m) {
      const fig = el('figure', 'multiple');
      fig.dataset.uuid = d.uuid;
      const cap = el('figcaption');
      const name = el('span', 'name', d.name);
      name.title = visible(d.name);
      cap.append(name, el('span', 'fig'));
      const boxc = el('div', 'chartbox small');
      const canvas = el('canvas');
      boxc.append(canvas);
      fig.append(cap, boxc);
      m = { fig, canvas, chart: null, visible: false, next: null };
      state.multiples.set(d.uuid, m);
      observer.observe(fig);
    }
    m.fig.style.setProperty('--c', color);
    m.fig.dataset.color = color;
    m.fig.querySelector('.fig').textContent = ' ' + (d.decision ?
      d.decision.vcpus : '–') + ' of ' + d.vcpus + ' vCPUs · ' +
      fmt(d.usage.run_delay_pct, 1) + '% delay';
    m.next = { vcpus: Math.max(1, d.vcpus), datasets: [
      { label: 'preferred vCPUs', unit: 'vCPUs', digits: 0,
        borderColor: color, backgroundColor: color, borderWidth: 2,
        pointRadius: 0, stepped: true, data: pref.get(d.uuid) || [] },
      { label: 'run delay share', unit: '%', digits: 1, yAxisID: 'delay',
        borderColor: 'rgba(190,0,50,0.35)', backgroundColor:
        'rgba(190,0,50,0.12)', borderWidth: 1, pointRadius: 0, fill: true,
        data: delay.get(d.uuid) || [] },
    ] };
    if (m.visible) drawMultiple(m);
    box.append(m.fig);  // moves it into contention order
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
    const n = vms.domains.length;
    state.periodMs = Math.max(250, host.period_ms || 1000);
    // Bound the per-VM history: many VMs, a shorter window.
    const periods = Math.max(60, Math.floor(HISTORY_RECORDS / Math.max(1, n)));
    const seconds = Math.min(HISTORY_SECONDS,
      Math.ceil(periods * state.periodMs / 1000));
    if (seconds !== state.seconds) {
      state.seconds = seconds;
      state.periods = [];
      state.lastSeq = 0;
    }
    const since = state.lastSeq ? '&since=' + state.lastSeq : '';
    const hist = await getJSON('/api/v1/history?seconds=' + seconds + since);
    for (const p of hist.periods) {
      if (p.seq > state.lastSeq) { state.periods.push(p); state.lastSeq = p.seq; }
    }
    const cut = Date.now() - seconds * 1000;
    while (state.periods.length > 2 && state.periods[0].time_ms < cut) {
      state.periods.shift();
    }
    const live = new Set(vms.domains.map((d) => d.uuid));
    const doms = byDelay(vms.domains);
    assignColors(doms);
    document.querySelector('#vms tbody').dataset.period = vms.period_seq;
    renderSummary(host);
    document.getElementById('empty').hidden = n > 0;
    for (const id of ['fig-delay', 'multiples-section', 'table-section']) {
      document.getElementById(id).hidden = n === 0;
    }
    renderVMs(doms, live);
    renderDecisions(dec);
    renderHostChart();
    renderDelayChart(doms, live);
    renderMultiples(doms, live);
    status.textContent = 'period ' + host.period_seq + ' · updated ' +
      new Date().toLocaleTimeString() + ' · ' + n + ' VMs';
    status.classList.remove('error');
    document.body.dataset.ready = '1';
  } catch (e) {
    status.textContent = String(e.message || e);
    status.classList.add('error');
  }
  state.timer = setTimeout(refresh, state.periodMs);
}

document.addEventListener('DOMContentLoaded', refresh);
