// The rollout viewer's page: hash routes over the JSON API of src/viewer/server.ts.
//   #/                                 runs
//   #/run/<id>?o=<offset>              a run: evaluations, tests and its recorded RL steps (follows it while it runs)
//   #/run/<id>/step/<n>?g=<off>&e=<ep> a step: GRPO groups side by side, an episode's token timelines
'use strict';

const main = document.getElementById('main');
const tip = document.getElementById('tip');
// The run's status in the header: "live" only while its workflow runs (src/viewer/view-types.ts RunStatusView).
const badge = document.getElementById('status');
const POLL_MS = 2000;
let poll = null;
// Each render bumps it; an answer that arrives after the page moved on is dropped, not drawn.
let generation = 0;

/** h('div', { class: 'x' }, child, 'text', ...): an element; strings become text nodes (never HTML). */
function h(tag, attrs, ...children) {
  const el = document.createElement(tag);
  for (const [k, v] of Object.entries(attrs || {})) {
    if (v === undefined || v === null || v === false) continue;
    if (k.startsWith('on')) el.addEventListener(k.slice(2), v);
    else el.setAttribute(k, v === true ? '' : String(v));
  }
  for (const c of children.flat()) {
    if (c === undefined || c === null || c === false) continue;
    el.append(c instanceof Node ? c : document.createTextNode(String(c)));
  }
  return el;
}

class ApiError extends Error {
  constructor(status, code, message) {
    super(message);
    this.status = status;
    this.code = code;
  }
}

async function api(path) {
  let res;
  try {
    res = await fetch(path, { headers: { accept: 'application/json' } });
  } catch (err) {
    throw new ApiError(0, 'unreachable', `the viewer server did not answer (${err.message})`);
  }
  const text = await res.text();
  let body;
  try {
    body = JSON.parse(text);
  } catch {
    throw new ApiError(res.status, 'bad-answer', `the server answered ${res.status} with something that is not JSON`);
  }
  if (!res.ok) throw new ApiError(res.status, body.error || 'error', body.message || `HTTP ${res.status}`);
  return body;
}

function errorPanel(err) {
  const titles = {
    'blob-missing': 'A blob this page needs is missing from the store',
    'blob-corrupt': 'A blob this page needs is corrupt',
    'blob-unreadable': 'A blob this page needs cannot be read',
    'tokenizer-unreadable': "The run's tokenizer cannot be read on this machine",
    'tokenizer-mismatch': 'These samples were written with another tokenizer',
    'not-found': 'Not found',
    'bad-request': 'Bad request',
  };
  return h('div', { class: 'error-panel', role: 'alert', 'data-code': err.code || 'error' },
    h('h3', {}, titles[err.code] || 'Error'),
    h('div', {}, err.message));
}

const fmt = (x, d = 3) => (x === undefined || x === null || Number.isNaN(x) ? '–' : Number(x).toFixed(d));
const pct = (x) => (x === undefined || x === null || Number.isNaN(x) ? '–' : `${(100 * x).toFixed(1)}%`);
const signed = (x, d = 3) => (x === undefined || x === null ? '–' : `${x > 0 ? '+' : ''}${Number(x).toFixed(d)}`);

function parseRoute() {
  const raw = location.hash.replace(/^#/, '') || '/';
  const [pathPart, queryPart] = raw.split('?');
  const q = new URLSearchParams(queryPart || '');
  const parts = pathPart.split('/').filter(Boolean).map(decodeURIComponent);
  return { parts, q };
}

function runHref(id, q) {
  return `#/run/${encodeURIComponent(id)}${q ? `?${new URLSearchParams(q)}` : ''}`;
}
function stepHref(id, step, q) {
  const params = new URLSearchParams(Object.entries(q || {}).filter(([, v]) => v !== undefined && v !== null));
  const s = params.toString();
  return `#/run/${encodeURIComponent(id)}/step/${step}${s ? `?${s}` : ''}`;
}

function stopPolling() {
  if (poll) clearInterval(poll);
  poll = null;
  badge.hidden = true;
}

/** The header's badge for a run's status; unknown shows none (nothing said it runs or ended). */
function showStatus(status) {
  const state = status ? status.state : 'unknown';
  badge.hidden = state === 'unknown';
  badge.dataset.state = state;
  badge.textContent = state === 'running' ? 'live' : state;
  badge.title = status && status.from !== 'none' ? `from the run's ${status.from}` : '';
}

/** A finished run changes no more: the page stops asking. */
const FINAL = new Set(['completed', 'failed', 'canceled', 'terminated', 'timed-out']);

async function render() {
  stopPolling();
  hideTip();
  const mine = ++generation;
  const current = () => mine === generation;
  let parts = [];
  try {
    const route = parseRoute();
    parts = route.parts;
    const q = route.q;
    if (parts.length === 0) await renderRuns(q, current);
    else if (parts[0] === 'run' && parts.length === 2) await renderRun(parts[1], q, current);
    else if (parts[0] === 'run' && parts[2] === 'step' && parts.length === 4) await renderStep(parts[1], parts[3], q, current);
    else throw new ApiError(404, 'not-found', `no page at ${location.hash}`);
    // What the page now shows (scripts and tests wait for it: a hash change keeps the old page up until then).
    if (current()) main.dataset.route = location.hash;
  } catch (err) {
    if (!current()) return;
    // Never a dead end: the way back stays on the page.
    const crumbs = h('div', { class: 'crumbs' }, h('a', { href: '#/' }, 'runs'), parts[1] ? [' / ', h('a', { href: runHref(parts[1]) }, parts[1])] : null);
    main.replaceChildren(crumbs, errorPanel(err instanceof ApiError ? err : new ApiError(400, 'bad-request', err.message)));
    main.dataset.route = location.hash;
  }
}

// ---- runs -----------------------------------------------------------------------------------

async function renderRuns(q, current) {
  const offset = Number(q.get('o') || 0);
  const list = await api(`/api/runs?offset=${offset}&limit=50`);
  if (!current()) return;
  const rows = list.runs.map((r) =>
    h('tr', { class: 'click', 'data-run': r.id, onclick: () => (location.hash = runHref(r.id)) },
      h('td', { class: 'left' }, h('a', { href: runHref(r.id) }, r.id)),
      h('td', { class: 'left' }, new Date(r.modified).toLocaleString())));
  // Through h(), which drops the pager's null (replaceChildren would print it).
  main.replaceChildren(h('div', {},
    h('h2', {}, 'Runs'),
    list.runs.length === 0 ? h('p', { class: 'muted' }, 'No runs with a metrics file in this runs folder yet.') :
      h('table', { id: 'runs' }, h('tr', {}, h('th', { class: 'left' }, 'run'), h('th', { class: 'left' }, 'metrics file changed')), rows),
    pager(list.page, (o) => `#/?o=${o}`),
    h('form', { class: 'section', id: 'open-run', onsubmit: (ev) => { ev.preventDefault(); const id = ev.target.elements.run.value.trim(); if (id) location.hash = runHref(id); } },
      h('label', {}, 'Open a run by its workflow id (plan-act jobs write no metrics file): ', h('input', { name: 'run', size: 48 })), ' ', h('button', { type: 'submit' }, 'open'))));
}

function pager(page, href) {
  if (page.total <= page.limit) return null;
  const prev = Math.max(0, page.offset - page.limit);
  const next = page.offset + page.limit;
  return h('div', { class: 'pager' },
    page.offset > 0 ? h('a', { href: href(prev), class: 'prev' }, '‹ previous') : null,
    h('span', { class: 'muted' }, `${page.offset + 1}–${Math.min(page.total, page.offset + page.limit)} of ${page.total}`),
    next < page.total ? h('a', { href: href(next), class: 'next' }, 'next ›') : null);
}

// ---- a run ----------------------------------------------------------------------------------

async function renderRun(id, q, current) {
  const offset = Number(q.get('o') || 0);
  const url = `/api/runs/${encodeURIComponent(id)}?offset=${offset}&limit=50`;
  let last = '';
  const draw = (run) => {
    if (!current()) return;
    showStatus(run.status);
    if (run.status && FINAL.has(run.status.state) && poll) {
      clearInterval(poll);
      poll = null;
    }
    const text = JSON.stringify(run);
    if (text === last) return;
    last = text;
    main.replaceChildren(runPage(run));
  };
  const failed = (err) => {
    if (!current()) return;
    last = '';
    main.replaceChildren(errorPanel(err));
  };
  // A run just started may have no metrics file yet: keep asking, the page fills in when it does.
  // A finished run is drawn once.
  const run = await api(url).then((r) => (draw(r), r), (err) => failed(err));
  if (!current() || (run && run.status && FINAL.has(run.status.state))) return;
  poll = setInterval(() => {
    api(url).then(draw, failed);
  }, POLL_MS);
}

function statusLine(status) {
  if (!status || status.state === 'unknown') return 'Status unknown (no Temporal server answered for this workflow id and no result file): the page keeps following it.';
  const from = status.from === 'workflow' ? 'its workflow on the Temporal server' : 'the result file the main job wrote';
  return status.state === 'running' ? `Running (${from}): the page follows it.` : `Finished: ${status.state} (${from}).`;
}

function runPage(run) {
  const out = [
    h('div', { class: 'crumbs' }, h('a', { href: '#/' }, 'runs'), ' / ', run.id),
    h('h2', {}, run.id),
    h('p', { id: 'run-status', 'data-state': run.status ? run.status.state : 'unknown' }, statusLine(run.status)),
    h('p', {}, `SFT steps: ${run.sftSteps}${run.lastSftLoss !== undefined ? ` (last loss ${fmt(run.lastSftLoss)})` : ''} · RL steps in the metrics file: ${run.rlSteps} · recorded updates: ${run.page.total}`),
  ];
  if (run.metricsError) out.push(errorPanel(new ApiError(502, 'metrics-unreadable', run.metricsError)));
  if (run.related.length > 0) out.push(h('p', {}, 'Baselines trained by policy gradient: ', run.related.map((r) => h('a', { href: runHref(r), style: 'margin-right:8px' }, r))));
  if (run.test.length > 0) {
    out.push(h('div', { class: 'section' }, h('h3', {}, 'Test split (each policy evaluated once)'),
      h('table', { id: 'test' },
        h('tr', {}, ['policy', 'greedy', '± se', 'sampled', 'pass@k', 'act tool rate'].map((x) => h('th', {}, x))),
        run.test.map((t) => h('tr', {}, h('td', { class: 'left' }, t.policy), h('td', {}, pct(t.greedyAccuracy)), h('td', {}, pct(t.stderr)),
          h('td', {}, pct(t.sampledAccuracy)), h('td', {}, t.passAtK ? pct(t.passAtK[t.passAtK.length - 1]) : '–'), h('td', {}, pct(t.actToolRate)))))));
  }
  if (run.evals.length > 0) {
    out.push(h('div', { class: 'section' }, h('h3', {}, 'Evaluations'),
      h('table', { id: 'evals' },
        h('tr', {}, ['phase', 'step', 'greedy', 'sampled'].map((x) => h('th', {}, x))),
        run.evals.map((e) => h('tr', {}, h('td', { class: 'left' }, e.phase), h('td', {}, e.step), h('td', {}, pct(e.greedyAccuracy)), h('td', {}, pct(e.sampledAccuracy)))))));
  }
  const steps = run.steps.map((s) => {
    const m = s.metrics || {};
    return h('tr', { class: 'click', 'data-step': s.step, onclick: () => (location.hash = stepHref(run.id, s.step)) },
      h('td', {}, h('a', { href: stepHref(run.id, s.step) }, s.rlStep)), h('td', {}, s.step),
      h('td', {}, fmt(m.meanReward)), h('td', {}, pct(m.accuracy)), h('td', {}, fmt(m.loss, 4)), h('td', {}, fmt(m.clipFrac)),
      h('td', {}, fmt(m.approxKl, 4)), h('td', {}, fmt(m.entropy)), h('td', {}, m.tokensTrained ?? '–'),
      h('td', { class: 'left' }, m.schedule ? Object.entries(m.schedule.staleness || {}).map(([k, v]) => `${k}:${v}`).join(' ') : '–'));
  });
  out.push(h('div', { class: 'section' }, h('h3', {}, 'RL steps'),
    run.page.total === 0 ? h('p', { class: 'muted' }, 'No recorded RL updates yet (runs made before rollout records show their metrics only).') :
      h('table', { id: 'steps' },
        h('tr', {}, ['RL step', 'global step', 'mean reward', 'accuracy', 'loss', 'clip frac', 'ppo kl', 'entropy', 'tokens', 'staleness'].map((x) => h('th', {}, x))),
        steps),
    pager(run.page, (o) => runHref(run.id, { o }))));
  return h('div', {}, out);
}

// ---- a step ---------------------------------------------------------------------------------

async function renderStep(id, stepText, q, current) {
  const groupOffset = Number(q.get('g') || 0);
  const step = await api(`/api/runs/${encodeURIComponent(id)}/steps/${encodeURIComponent(stepText)}?groupOffset=${groupOffset}&groupLimit=8`);
  if (!current()) return;
  const selected = q.get('e');
  const m = step.metrics || {};
  const go = (extra) => stepHref(id, step.step, { g: groupOffset || undefined, ...extra });
  const page = h('div', {},
    h('div', { class: 'crumbs' }, h('a', { href: '#/' }, 'runs'), ' / ', h('a', { href: runHref(id) }, id), ' / ', `RL step ${step.rlStep}`),
    h('h2', {}, `RL step ${step.rlStep} (global step ${step.step})`),
    h('p', {},
      `${step.objective === 'rft' ? 'RFT' : 'GRPO'} update from weights v${step.policyVersion}${step.policyVersionKnown ? '' : ' (synchronous)'} · `,
      `${step.episodes} episodes, ${step.samples} samples, ${step.page.total} groups · rollout: ${step.shape}`,
      step.fellBack ? ' · this rollout fell back to a single-agent rollout (the partner job did not come)' : '',
      step.metrics ? ` · mean reward ${fmt(m.meanReward)}, accuracy ${pct(m.accuracy)}, loss ${fmt(m.loss, 4)}` : ''),
    step.chatCheck ? h('p', { id: 'chat-check' }, `Chat episodes' full-render check (timelines.chat): ${Object.entries(step.chatCheck).map(([k, n]) => `${k} ${n}`).join(' · ')}`) : null,
    h('p', { class: 'legend' }, h('span', {}, 'Tokens: '), h('span', { class: 'tok m1 pos' }, 'trained, advantage > 0'), h('span', { class: 'tok m1 neg' }, 'trained, advantage < 0'),
      h('span', { class: 'tok m1' }, 'trained, advantage 0'), h('span', { class: 'tok m0' }, 'environment text (not trained)'), h('span', { class: 'tok prompt' }, 'prompt'),
      h('span', { class: 'muted' }, ' · hover a token for its logprob')),
    pager(step.page, (o) => stepHref(id, step.step, { g: o })),
    h('div', { class: 'cards', id: 'groups' }, step.groups.map((g) => groupCard(id, step, g, selected, go))),
    h('div', { id: 'episode' }));
  main.replaceChildren(page);
  if (selected) await showEpisode(id, step.step, selected, current);
}

function groupCard(runId, step, g, selected, go) {
  const rows = g.episodes.map((e, i) =>
    h('tr', { class: `click${e.episodeId === selected ? ' selected' : ''}`, 'data-episode': e.episodeId, onclick: () => (location.hash = go({ e: e.episodeId })) },
      h('td', { class: 'left' }, e.treeNode ? `${e.treeNode}` : e.planHorizon !== undefined ? `H=${e.planHorizon}` : `#${i + 1}`),
      h('td', {}, fmt(e.reward)), h('td', {}, advantageText(e)), h('td', {}, `${e.trainedTokens}/${e.responseTokens}`),
      h('td', {}, e.toolCalls), h('td', {}, e.weightVersions.map((v) => `v${v}`).join(',')), h('td', {}, e.staleness),
      h('td', { class: 'left' }, e.roles.join('+'), e.trained < e.samples ? ` (${e.samples - e.trained} untrained)` : ''),
      h('td', { class: 'left' }, e.workflowUrl ? h('a', { class: 'wf', href: e.workflowUrl, target: '_blank', rel: 'noopener', onclick: (ev) => ev.stopPropagation() }, 'workflow') : '')));
  return h('div', { class: 'group', 'data-group': g.groupId },
    h('h3', {}, `group ${g.groupId}`, h('span', { class: 'muted' }, ` · mean reward ${fmt(g.meanReward)}`)),
    h('pre', { class: 'prompt' }, g.prompt),
    g.tree ? h('div', { class: 'tree' }, h('ul', {}, treeNode(g.tree, selected, go))) : null,
    h('div', { class: 'scroll' }, h('table', {},
      h('tr', {}, ['', 'reward', 'adv', 'trained/len', 'tools', 'weights', 'stale', 'roles', ''].map((x) => h('th', {}, x))),
      rows)));
}

/** An episode's advantage, or each role's where rl.advantageNorm role gave them different ones. */
function advantageText(e) {
  if (!e.advantageByRole) return signed(e.advantage);
  return Object.entries(e.advantageByRole).map(([role, a]) => `${role} ${signed(a)}`).join(' / ');
}

function treeNode(n, selected, go) {
  return h('li', {},
    h('span', { class: 'node' }, n.id),
    n.outputs.map((o) => h('span', { class: `out${o.reward > 0 ? ' win' : ''}`, 'data-episode': o.episodeId, title: o.episodeId, onclick: () => (location.hash = go({ e: o.episodeId })) },
      `${o.episodeId.slice(o.episodeId.lastIndexOf('#'))} r=${fmt(o.reward, 2)} a=${signed(o.advantage, 2)}`)),
    n.children.length > 0 ? h('ul', {}, n.children.map((c) => treeNode(c, selected, go))) : null);
}

async function showEpisode(runId, step, episodeId, current) {
  const box = document.getElementById('episode');
  try {
    const ep = await api(`/api/runs/${encodeURIComponent(runId)}/steps/${step}/episode?id=${encodeURIComponent(episodeId)}`);
    if (!current()) return;
    const s = ep.summary;
    box.replaceChildren(h('div', { class: 'episode', 'data-episode': ep.episodeId },
      h('h3', {}, `episode ${ep.episodeId}`),
      h('p', {}, `reward ${fmt(s.reward)} · advantage ${advantageText(s)} · ${s.samples} sample${s.samples === 1 ? '' : 's'} (${s.trained} trained) · ${s.toolCalls} tool calls · weights ${s.weightVersions.map((v) => `v${v}`).join(', ')} · staleness ${s.staleness} `,
        s.workflowUrl ? h('a', { class: 'wf', href: s.workflowUrl, target: '_blank', rel: 'noopener' }, `open ${s.workflowId} in the Temporal Web UI`) : ''),
      ep.samples.map(sampleBlock),
      ep.calls ? callsBlock(ep.calls) : null));
  } catch (err) {
    if (current()) box.replaceChildren(errorPanel(err));
  }
}

function sampleBlock(s) {
  const head = h('div', { class: 'sample-head' },
    h('span', {}, h('b', {}, `sample ${s.index}`)), h('span', {}, `role ${s.role}`), h('span', {}, `turn ${s.turn}`),
    s.actId !== undefined ? h('span', {}, `act ${s.actId}`) : null,
    s.planHorizon !== undefined ? h('span', {}, `plan H=${s.planHorizon}, chunk from move ${s.chunkOffset ?? 0}`) : null,
    h('span', {}, `weights ${(s.weightVersions ?? [s.weightVersion]).map((v) => `v${v}`).join('→')}${s.staleness === null ? '' : ` (staleness ${s.staleness})`}`), h('span', {}, `reward ${fmt(s.reward)}`),
    h('span', {}, s.tokenAdvantages ? 'advantage per token (tree credit)' : `advantage ${signed(s.advantage)}`), h('span', {}, s.status),
    s.partnerJob ? h('span', { class: 'partner' }, `trained by the ${s.role} job `, h('a', { href: runHref(s.partnerJob) }, s.partnerJob)) : null);
  if (s.chat) return h('div', { class: 'sample' }, head, chatBlock(s));
  const line = h('div', { class: 'timeline' });
  line._sample = s;
  s.prompt.forEach((p) => line.append(h('span', { class: 'tok prompt', 'data-part': 'prompt' }, p.t)));
  s.response.forEach((p, i) => line.append(h('span', { class: tokClass(s, p), 'data-i': i }, p.t === '' ? '\u200b' : p.t)));
  return h('div', { class: 'sample' }, head, s.grid ? gridTable(s.grid) : null, line);
}

/** A response token's colours: trained (by the sign of its advantage) or environment text, outlined when unlikely. */
function tokClass(s, p) {
  const adv = p.a !== undefined ? p.a : s.advantage;
  return p.m > 0 ? `tok m1${adv > 0 ? ' pos' : adv < 0 ? ' neg' : ''}${p.lp < Math.log(0.1) ? ' lowp' : ''}` : 'tok m0';
}

// ---- a chat episode (src/viewer/chat-view.ts) -------------------------------------------------

const inRange = (g, [a, b]) => g >= a && g < b;

/** The sample as its conversation: each run of ids (first prompt, model turn, environment delta) with its messages, then the full-render check. */
function chatBlock(s) {
  const c = s.chat;
  return h('div', { class: 'chat' },
    h('p', { class: 'legend' }, h('span', {}, `Chat episode (${c.tokenizer}, thinking ${c.enableThinking ? 'on' : 'off'}). Ids: `),
      h('span', { class: 'tok think' }, 'inside <think>'), h('span', { class: 'tok mis' }, 'differs from a full render'),
      h('span', { class: 'tok m0 unaligned' }, 'model id masked out (cannot be aligned)')),
    c.blocks.map((b) => h('div', { class: `chat-block ${b.source}`, 'data-source': b.source },
      h('div', { class: 'block-head muted' }, blockTitle(b)),
      b.messages.map(chatMessage),
      h('details', { class: 'ids', open: b.source !== 'prompt' }, h('summary', {}, `${b.end - b.start} ids`), chatTokens(s, b)))),
    mismatchTable(c));
}

function blockTitle(b) {
  const n = b.end - b.start;
  if (b.source === 'model') return `model turn ${b.turn}${b.weightVersion !== undefined ? ` · weights v${b.weightVersion}` : ''} · ${n} ids as the engine returned them (trained)`;
  if (b.source === 'prompt') return `first prompt · ${n} ids, rendered once`;
  return `environment · ${n} ids rendered as a delta (not trained)`;
}

function chatMessage(m) {
  return h('div', { class: `chat-msg ${m.role}`, 'data-role': m.role },
    h('span', { class: 'role' }, m.role),
    m.answers ? h('div', { class: 'answers muted' }, `result of ${m.answers.name}(${m.answers.arguments})${m.answers.id ? ` · ${m.answers.id}` : ''}`) : null,
    m.reasoning !== undefined ? h('details', { class: 'thinking' }, h('summary', {}, `thinking (${m.reasoning.length} characters)`), h('div', { class: 'msg-text' }, m.reasoning)) : null,
    m.content !== '' ? h('div', { class: 'msg-text content' }, m.content) : null,
    (m.toolCalls || []).map((t) => h('div', { class: 'tool-call', 'data-name': t.name }, h('b', {}, 'tool call '), h('span', { class: 'msg-text' }, `${t.name}(${t.arguments})`), t.id ? h('span', { class: 'muted' }, ` · ${t.id}`) : null)),
    (m.malformed || []).map((x) => h('div', { class: 'malformed', 'data-kind': x.kind }, h('b', {}, `malformed tool call (${x.kind}): `), x.detail, h('div', { class: 'msg-text' }, x.text))));
}

/** A block's ids as the timeline draws them (prompt pieces before promptLength, response pieces after), with thinking and mismatches marked. */
function chatTokens(s, b) {
  const c = s.chat;
  const line = h('div', { class: 'timeline' });
  line._sample = s;
  const inserts = (g) => c.mismatches.forEach((m, k) => {
    if (m.kept[0] === m.kept[1] && m.kept[0] === g) line.append(h('span', { class: 'mis-insert', 'data-kind': m.kind, 'data-mismatch': k, title: `the full render has ${JSON.stringify(m.expectedText)} here (${m.kind})` }, '⌃'));
  });
  for (let g = b.start; g < b.end; g++) {
    inserts(g);
    const prompt = g < c.promptLength;
    const p = prompt ? s.prompt[g] : s.response[g - c.promptLength];
    const k = c.mismatches.findIndex((m) => inRange(g, m.kept));
    let cls = prompt ? 'tok prompt' : tokClass(s, p);
    if (c.thinking.some((r) => inRange(g, r))) cls += ' think';
    if (k >= 0) cls += ' mis';
    if (b.source === 'model' && !prompt && p.m === 0) cls += ' unaligned';
    line.append(h('span', { class: cls, 'data-i': prompt ? undefined : g - c.promptLength, 'data-mismatch': k >= 0 ? k : undefined, 'data-kind': k >= 0 ? c.mismatches[k].kind : undefined }, p.t === '' ? '\u200b' : p.t));
  }
  if (b.end === c.promptLength + s.response.length) inserts(b.end);
  return line;
}

function mismatchTable(c) {
  const counts = Object.entries(c.counts).filter(([, n]) => n > 0).map(([k, n]) => `${k} ${n}`).join(' · ') || 'no differences';
  return h('div', { class: 'section mismatches' },
    h('h4', {}, `Full-render check: ${counts}${c.unalignedModelIds > 0 ? ` · ${c.unalignedModelIds} model ids masked out` : ''}`),
    c.mismatches.length === 0 ? h('p', { class: 'muted' }, 'The kept ids equal the tokenized full render of the conversation.') :
      h('table', {},
        h('tr', {}, ['kind', 'ids', 'kept ids read', 'a full render reads', 'model ids', 'trained'].map((x) => h('th', {}, x))),
        c.mismatches.map((m, k) => h('tr', { 'data-mismatch': k, 'data-kind': m.kind },
          h('td', { class: 'left' }, m.kind), h('td', {}, `${m.kept[0]}–${m.kept[1]}`),
          h('td', { class: 'left msg-text' }, JSON.stringify(m.keptText)), h('td', { class: 'left msg-text' }, JSON.stringify(m.expectedText)),
          h('td', {}, m.modelIds), h('td', { class: 'left' }, m.masked ? 'masked out' : m.modelIds > 0 ? 'as generated' : '–')))));
}

function callsBlock(calls) {
  return h('div', { class: 'section calls' },
    h('h3', {}, `Recorded calls (${calls.length}), as the gateway served them`),
    calls.map((c) => h('details', { class: 'call' },
      h('summary', {}, `attempt ${c.attempt}, call ${c.index + 1} · agent ${c.agent} · ${c.messages.length} messages${c.tools ? ' · tools offered' : ''}`),
      c.messages.map((m) => h('div', { class: `msg ${m.author}` }, h('b', {}, `${m.author} (${m.tokens} tokens): `), h('span', { class: 'msg-text' }, m.text))))));
}

function gridTable(rows) {
  return h('table', { class: 'grid' }, rows.map((r) => h('tr', {}, [...r].map((c) =>
    h('td', { class: c === '#' ? 'wall' : c === 'A' ? 'agent' : c === 'G' ? 'goal' : '' }, c === '.' || c === '#' ? '' : c)))));
}

// ---- the token tooltip ------------------------------------------------------------------------

function tokenInfo(s, i, span) {
  const p = s.response[i];
  const adv = p.a !== undefined ? p.a : s.advantage;
  const unaligned = span.classList.contains('unaligned');
  return [
    `token ${p.id}  ${JSON.stringify(p.t)}`,
    `logprob ${fmt(p.lp, 4)}  (p = ${fmt(Math.exp(p.lp), 3)})`,
    `mask ${p.m}  ${p.m > 0 ? '(trained: the model wrote it)' : unaligned ? '(the model wrote it; masked out: a full render cannot align it)' : '(environment text: not trained)'}`,
    ...chatInfo(s, i),
    adv === null ? 'advantage: in the partner job’s record' : `advantage ${signed(adv, 4)}${p.a !== undefined ? ' (this token’s tree credit)' : ''}`,
    `weights ${(s.weightVersions ?? [s.weightVersion]).map((v) => `v${v}`).join('→')}${s.staleness === null ? ' (the partner job’s versions)' : `, staleness ${s.staleness}`}`,
  ].join('\n');
}

/** A chat token's thinking and full-render mismatch. */
function chatInfo(s, i) {
  if (!s.chat) return [];
  const g = i + s.chat.promptLength;
  const m = s.chat.mismatches.find((x) => inRange(g, x.kept));
  return [
    s.chat.thinking.some((r) => inRange(g, r)) ? 'inside a <think> block' : null,
    m ? `a full render differs here: ${m.kind}${m.masked ? ' (masked out)' : m.modelIds > 0 ? ' (trained as generated)' : ''}` : null,
  ].filter((x) => x !== null);
}

function hideTip() {
  tip.hidden = true;
}

main.addEventListener('mouseover', (ev) => {
  const span = ev.target.closest && ev.target.closest('.tok[data-i]');
  if (!span) return hideTip();
  const s = span.parentElement._sample;
  tip.textContent = tokenInfo(s, Number(span.dataset.i), span);
  tip.hidden = false;
  const r = span.getBoundingClientRect();
  tip.style.left = `${Math.min(r.left, window.innerWidth - 440)}px`;
  tip.style.top = `${r.bottom + 6}px`;
});
main.addEventListener('mouseleave', hideTip);

window.addEventListener('hashchange', () => void render());
void render();
