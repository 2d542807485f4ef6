// The operator console's page: sign-in (/api/session), then the overview every
// 2 s from /api/overview, the safety events pushed over /api/events (SSE), and
// the actions posted to /api/actions/* with the session's anti-CSRF token.
// Plain DOM, every text set through textContent.
'use strict';

const STATES = [
  'PENDING',
  'CLAIMED',
  'RAIL_SUBMITTED',
  'RAIL_ACKED',
  'RAIL_AMBIGUOUS',
  'POSTED',
  'FAILED',
  'ABANDONED',
];
const REFRESH_MS = 2000;
const FEED_MAX = 200;
const $ = (id) => document.getElementById(id);
/** The signed-in person's view from /api/session: subject, expiresAt, csrfToken; null when out. */
let session = null;

function el(tag, attrs, ...children) {
  const node = document.createElement(tag);
  for (const [k, v] of Object.entries(attrs || {})) {
    if (k === 'class') node.className = v;
    else if (k.startsWith('on')) node.addEventListener(k.slice(2), v);
    else node.setAttribute(k, v);
  }
  for (const c of children)
    node.append(c instanceof Node ? c : document.createTextNode(String(c ?? '')));
  return node;
}

/** A time of day on a 24-hour clock in UTC, as the services' logs write it: `14:03:07`. */
function clock(at) {
  return new Date(at).toISOString().slice(11, 19);
}

function seconds(ms) {
  return ms >= 10000 ? `${Math.round(ms / 1000)} s` : `${(ms / 1000).toFixed(1)} s`;
}

/** A panel whose service did not answer says so instead of showing stale rows. */
function unreachable(section) {
  return el('span', { class: 'unreachable' }, `${section.service} unreachable: ${section.error}`);
}

function renderStats(section) {
  const states = $('states');
  states.replaceChildren();
  const chart = $('chart');
  chart.replaceChildren();
  if (!section.ok) {
    states.append(unavailable(section));
    $('latency').replaceChildren();
    return;
  }
  const s = section.data;
  for (const state of STATES) {
    const count = s.byState[state] ?? 0;
    const attrs = { class: `state ${state}`, 'data-state': state };
    if (state === 'POSTED') attrs['data-testid'] = 'posted-count';
    states.append(el('div', attrs, state, el('b', {}, count)));
  }
  $('window').textContent = `posted per second, last ${Math.round(s.windowSeconds / 60)} min`;
  drawChart(chart, s.postedPerBucket, s.bucketSeconds);
  const minutes = Math.round(s.windowSeconds / 60);
  $('latency').replaceChildren(
    latencyLine(`last ${minutes} min`, s.latencyMillis, 'window'),
    latencyLine('all time', s.latencyMillisAllTime, 'all'),
  );
}

/** created → POSTED percentiles of one set of posted payouts, on one line. */
function latencyLine(label, l, testid) {
  return el(
    'div',
    { 'data-testid': `latency-${testid}`, title: `created to POSTED, payouts posted ${label}` },
    el('span', { class: 'what' }, label),
    el('span', {}, 'p50 ', el('b', { 'data-testid': `p50-${testid}` }, fmtMs(l.p50))),
    el('span', {}, 'p90 ', el('b', {}, fmtMs(l.p90))),
    el('span', {}, 'p99 ', el('b', {}, fmtMs(l.p99))),
    el('span', {}, el('b', {}, l.count), ' posted'),
  );
}

function fmtMs(v) {
  return v === null || v === undefined
    ? '–'
    : v >= 1000
      ? `${(v / 1000).toFixed(2)} s`
      : `${Math.round(v)} ms`;
}

const SVG = 'http://www.w3.org/2000/svg';
function svg(tag, attrs, text) {
  const node = document.createElementNS(SVG, tag);
  for (const [k, v] of Object.entries(attrs)) node.setAttribute(k, v);
  if (text !== undefined) node.textContent = text;
  return node;
}

/** Bars of posted/s per bucket; the y axis scales to the highest bar. */
function drawChart(chart, buckets, bucketSeconds) {
  // Drawn in the element's own pixels, so the labels are never stretched.
  const W = Math.max(200, Math.round(chart.clientWidth));
  const H = Math.max(60, Math.round(chart.clientHeight));
  const left = 34;
  const bottom = 12;
  chart.setAttribute('viewBox', `0 0 ${W} ${H}`);
  const rates = buckets.map((b) => b.count / bucketSeconds);
  const max = Math.max(1, ...rates);
  const width = (W - left) / Math.max(1, rates.length);
  rates.forEach((r, i) => {
    const h = ((H - bottom - 4) * r) / max;
    chart.append(
      svg('rect', {
        x: left + i * width + 0.5,
        y: H - bottom - h,
        width: Math.max(1, width - 1),
        height: h,
      }),
    );
  });
  chart.append(svg('text', { x: 2, y: 10 }, `${max.toFixed(1)}/s`));
  chart.append(svg('text', { x: 2, y: H - bottom }, '0'));
  if (buckets.length > 0) {
    chart.append(svg('text', { x: left, y: H - 1 }, clock(buckets[0].at)));
    const last = `${clock(buckets[buckets.length - 1].at)} UTC`;
    chart.append(svg('text', { x: W - 2, y: H - 1, 'text-anchor': 'end' }, last));
  }
}

/** Rows shown per owner until that owner is expanded: one owner cannot fill a panel. */
const ROWS_PER_OWNER = 3;
/** Owners whose every row is shown, per table; kept across refreshes. */
const expanded = { locks: new Set(), sessions: new Set() };
/** The last data of each grouped table, to redraw it when an owner is expanded or folded. */
const lastGrouped = {};

/**
 * One line per owner (its counts, and a button to show all its rows), then
 * its first rows: every owner stays in sight however many rows one has.
 */
function renderGroups(table, section, columns, summary, row) {
  lastGrouped[table] = { section, columns, summary, row };
  const body = $(table).tBodies[0];
  body.replaceChildren();
  for (const group of section.data.owners) {
    const open = expanded[table].has(group.ownerId);
    const hidden = open ? 0 : Math.max(0, group.count - ROWS_PER_OWNER);
    const toggle =
      group.count > ROWS_PER_OWNER
        ? el(
            'button',
            {
              type: 'button',
              class: 'toggle',
              onclick: () => {
                if (open) expanded[table].delete(group.ownerId);
                else expanded[table].add(group.ownerId);
                const last = lastGrouped[table];
                renderGroups(table, last.section, last.columns, last.summary, last.row);
              },
            },
            open ? 'show fewer' : `show all ${group.count}`,
          )
        : '';
    body.append(
      el(
        'tr',
        { class: 'owner', 'data-owner': group.ownerId },
        el(
          'td',
          { colspan: columns },
          el('b', {}, group.ownerId),
          ` · ${summary(group)}`,
          hidden > 0 ? ` (${hidden} more)` : '',
          toggle,
        ),
      ),
    );
    for (const r of open ? group.rows : group.rows.slice(0, ROWS_PER_OWNER)) body.append(row(r));
  }
}

/** What the panel shows instead when a service failed or the person may not see it. */
function unavailable(section) {
  if (section.denied)
    return el('span', { class: 'denied' }, `not shown: your roles do not grant ${section.denied}`);
  return unreachable(section);
}

const HIDDEN_GRANT = 'your roles do not grant locks.read-grants';

function renderLocks(section) {
  if (!section.ok) {
    $('locks').tBodies[0].replaceChildren();
    $('locks-note').replaceChildren(unavailable(section));
    return;
  }
  const { owners, count, truncated } = section.data;
  $('locks-note').textContent =
    `${count}${truncated ? '+' : ''} now, ${owners.length} owner${owners.length === 1 ? '' : 's'}`;
  renderGroups(
    'locks',
    section,
    4,
    (g) => `${g.count} lock${g.count === 1 ? '' : 's'}`,
    (l) =>
      el(
        'tr',
        { 'data-key': l.key, 'data-owner': l.ownerId },
        el('td', { title: l.key }, l.key),
        el('td', { class: 'num token', title: l.token ? '' : HIDDEN_GRANT }, l.token ?? '–'),
        el('td', { class: 'num' }, seconds(l.leaseRemainingMillis)),
        el('td', {}, el('button', { type: 'button', onclick: () => prefillRevoke(l) }, 'revoke…')),
      ),
  );
}

function renderSessions(section) {
  if (!section.ok) {
    $('sessions').tBodies[0].replaceChildren();
    $('sessions-note').replaceChildren(unavailable(section));
    return;
  }
  const { owners, count, truncated } = section.data;
  $('sessions-note').textContent =
    `${count}${truncated ? '+' : ''} open, ${owners.length} owner${owners.length === 1 ? '' : 's'}`;
  renderGroups(
    'sessions',
    section,
    5,
    (g) => {
      const locks = g.rows.reduce((n, s) => n + s.locksHeld, 0);
      return `${g.count} session${g.count === 1 ? '' : 's'}, ${locks} lock${locks === 1 ? '' : 's'}`;
    },
    (s) => {
      // A heartbeat resets the session's TTL: the time since the last one is what the TTL lost.
      const since = Math.max(0, s.ttlMillis - s.ttlRemainingMillis);
      return el(
        'tr',
        { 'data-owner': s.ownerId },
        s.sessionId
          ? el('td', { title: s.sessionId }, s.sessionId.slice(0, 8))
          : el('td', { title: HIDDEN_GRANT }, '–'),
        // SUSPECT: a heartbeat is overdue, the lease not yet lapsed (docs/lock-server.md).
        el('td', { class: s.state === 'SUSPECT' ? 'suspect' : '' }, s.state),
        el('td', { class: 'num' }, s.locksHeld),
        el('td', { class: 'num' }, `${seconds(since)} ago`),
        el('td', { class: 'num' }, seconds(s.ttlRemainingMillis)),
      );
    },
  );
}

function renderFences(section) {
  const body = $('fences').tBodies[0];
  body.replaceChildren();
  if (!section.ok) {
    $('fences-note').replaceChildren(unavailable(section));
    return;
  }
  const { rows, truncated, highWaterError } = section.data;
  const gaps = rows.filter((r) => !r.agree).length;
  $('fences-note').replaceChildren(
    `${rows.length}${truncated ? '+' : ''} accounts, ${gaps} differ`,
    el('span', { class: 'more-below', 'data-testid': 'fences-more' }),
    highWaterError ? el('span', { class: 'unreachable' }, ` rail-proxy: ${highWaterError}`) : '',
  );
  for (const r of rows) {
    body.append(
      el(
        'tr',
        { class: r.agree ? '' : 'disagree', 'data-account': r.accountId },
        el('td', { title: r.accountId }, r.accountId),
        el(
          'td',
          { class: 'num' },
          r.balanceMinor === null ? '–' : `${r.balanceMinor} ${r.currency}`,
        ),
        el('td', { class: 'num mark' }, r.fence ?? '–'),
        el('td', { class: 'num mark' }, r.highWater ?? '–'),
      ),
    );
  }
  showRowsBelow();
}

/**
 * Says in the fences panel's title how many rows lie below its scrolled view
 * (the panel holds every account; a laptop shows a dozen).
 */
function showRowsBelow() {
  const box = $('fences').closest('.scroll');
  const note = document.querySelector('[data-testid=fences-more]');
  if (!note) return;
  const bottom = box.getBoundingClientRect().bottom;
  const below = [...$('fences').tBodies[0].rows].filter(
    (tr) => tr.getBoundingClientRect().bottom > bottom + 1,
  ).length;
  note.textContent = below > 0 ? ` · ${below} more below, scroll ↓` : '';
}
$('fences').closest('.scroll').addEventListener('scroll', showRowsBelow, { passive: true });

function renderAmbiguous(section) {
  const box = $('ambiguous');
  box.replaceChildren();
  if (!section.ok) {
    $('ambiguous-note').replaceChildren(unavailable(section));
    return;
  }
  const { items, more } = section.data;
  $('ambiguous-note').textContent = `${items.length}${more ? '+' : ''} waiting`;
  for (const { payout, evidence } of items) {
    const subs = !evidence.ok
      ? [
          evidence.denied
            ? el(
                'div',
                { class: 'sub denied' },
                `evidence not shown: your roles do not grant ${evidence.denied}`,
              )
            : el('div', { class: 'sub unreachable' }, `evidence unavailable: ${evidence.error}`),
        ]
      : evidence.data.length === 0
        ? [el('div', { class: 'sub' }, 'no rail submission recorded')]
        : evidence.data.map((s) =>
            el(
              'div',
              { class: 'sub' },
              `${s.submissionId.slice(0, 8)} token ${s.presentedToken ?? '–'} by ${s.ownerId}: ${s.outcome ?? 'no outcome'}`,
              s.railReference ? ` ref ${s.railReference}` : '',
              s.errorCode ? ` (${s.errorCode})` : '',
            ),
          );
    box.append(
      el(
        'div',
        { class: 'amb', 'data-payout': payout.payoutId },
        el('code', {}, payout.payoutId),
        ` ${payout.accountId} ${payout.amountMinor} ${payout.currency} `,
        el(
          'button',
          {
            type: 'button',
            title: 'copies the payout and its rail reference into the Action form',
            onclick: () => prefillPayout(payout, evidence),
          },
          'resolve / abandon…',
        ),
        ...subs,
      ),
    );
  }
}

function renderRequests(requests) {
  const list = $('requests');
  list.replaceChildren();
  $('requests-note').textContent = `${requests.length} open`;
  for (const r of requests) {
    const mine = session && r.requestedBy === session.subject;
    const button = el(
      'button',
      { type: 'button', onclick: () => void act('approve', { requestId: r.requestId }) },
      'Approve',
    );
    if (mine) {
      button.disabled = true;
      button.title = 'a different operator must approve';
    }
    list.append(
      el(
        'li',
        { 'data-request-id': r.requestId, 'data-key': r.key },
        el('code', {}, r.key),
        ` by ${r.requestedBy}: ${r.reason} (until ${clock(r.expiresAt)} UTC)`,
        button,
      ),
    );
  }
}

function renderOverview(o) {
  $('updated').textContent = `updated ${clock(o.at)} UTC`;
  renderStats(o.stats);
  renderLocks(o.locks);
  renderSessions(o.sessions);
  renderFences(o.fences);
  renderAmbiguous(o.ambiguous);
  renderRequests(o.revocationRequests);
}

/**
 * One call to the console; a POST or DELETE carries the session's anti-CSRF
 * token. A 401 means the session ended (expired, signed out elsewhere).
 */
async function api(method, path, body) {
  const headers = { accept: 'application/json' };
  if (body !== undefined) headers['content-type'] = 'application/json';
  if (method !== 'GET' && session) headers['x-csrf-token'] = session.csrfToken;
  const res = await fetch(path, {
    method,
    headers,
    body: body === undefined ? undefined : JSON.stringify(body),
    signal: AbortSignal.timeout(20000),
  });
  if (res.status === 401 && path !== '/api/session') signedOut('your session ended: sign in again');
  return res;
}

/** Refreshes while this sign-in lasts: a later sign-in starts its own loop. */
let generation = 0;
async function refresh(mine) {
  if (mine !== generation) return;
  try {
    const res = await api('GET', '/api/overview');
    if (res.ok) renderOverview(await res.json());
    else $('updated').textContent = `console answered ${res.status}`;
  } catch (err) {
    $('updated').textContent = `console unreachable (${err.message})`;
  } finally {
    if (mine === generation) setTimeout(() => void refresh(mine), REFRESH_MS);
  }
}

function renderSources(sources) {
  $('sources').replaceChildren(
    ...sources.map((s) =>
      el(
        'span',
        {
          class: s.reachable ? 'badge' : 'badge down',
          title: s.error ?? 'reachable',
          'data-service': s.service,
        },
        s.reachable ? s.service : `${s.service} unreachable`,
      ),
    ),
  );
}

/** The event kinds seen so far, offered in the feed's filter; '' shows them all. */
const feedKinds = new Set();

function showKind(li) {
  const kind = $('feed-kind').value;
  li.classList.toggle('filtered-out', kind !== '' && li.dataset.event !== kind);
}

function offerKind(kind) {
  if (feedKinds.has(kind)) return;
  feedKinds.add(kind);
  const select = $('feed-kind');
  const options = [...select.options].slice(1).map((o) => o.value);
  const before = options.find((k) => k > kind);
  const option = el('option', { value: kind }, kind);
  if (before === undefined) select.append(option);
  else select.insertBefore(option, select.querySelector(`option[value="${before}"]`));
}

$('feed-kind').addEventListener('change', () => {
  for (const li of $('feed').children) showKind(li);
});

function addEvent(e) {
  const feed = $('feed');
  offerKind(e.event);
  const fields = Object.entries(e.fields)
    .map(([k, v]) => `${k}=${typeof v === 'object' ? JSON.stringify(v) : v}`)
    .join(' ');
  const li = el(
    'li',
    { 'data-event': e.event, 'data-service': e.service },
    `${clock(e.at)} `,
    el('span', { class: 'ev' }, e.event),
    ' ',
    el('span', { class: 'svc' }, e.service),
    ' ',
    fields,
  );
  showKind(li);
  feed.prepend(li);
  while (feed.children.length > FEED_MAX) feed.lastChild.remove();
}

let source = null;
function listen() {
  source?.close();
  source = new EventSource('/api/events');
  source.addEventListener('safety', (m) => addEvent(JSON.parse(m.data)));
  source.addEventListener('sources', (m) => renderSources(JSON.parse(m.data)));
  source.addEventListener('open', () => ($('feed-note').textContent = 'live'));
  source.addEventListener('error', () => ($('feed-note').textContent = 'reconnecting…'));
}

function prefillRevoke(lock) {
  $('revoke-key').value = lock.key;
  // Without locks.read-grants the token is not shown: the revoke goes without an expected token.
  $('revoke-token').value = lock.token ?? '';
  $('revoke-reason').focus();
}

function prefillPayout(payout, evidence) {
  $('payout-id').value = payout.payoutId;
  const acked = evidence.ok ? evidence.data.find((s) => s.railReference) : undefined;
  $('payout-railref').value = acked ? acked.railReference : '';
  $('payout-reason').focus();
}

/** What an action's answer says changed (or, for a two-person revoke, what is now asked). */
function describe(body) {
  if (body.status === 'PENDING_APPROVAL')
    return `revoke of ${body.key} requested by ${body.requestedBy}: waiting for a second operator (until ${clock(body.expiresAt)} UTC)`;
  if (body.approvedBy)
    return `revoked ${body.key ?? `(request ${body.requestId})`}: token ${body.revokedToken} revoked, new token floor ${body.newTokenFloor}; requested by ${body.requestedBy ?? 'another operator'}, approved by ${body.approvedBy}`;
  if (body.newTokenFloor)
    return `revoked ${body.key}: token ${body.revokedToken} revoked, new token floor ${body.newTokenFloor}`;
  return `payout ${body.payoutId} is now ${body.state}`;
}

/** Shows the service's answer: what changed, or its own refusal (code and message). */
function showResult(ok, body) {
  const box = $('action-result');
  box.className = ok ? 'ok' : 'error';
  if (ok) {
    box.replaceChildren(el('span', { 'data-testid': 'result-text' }, describe(body)));
    return;
  }
  const fields =
    body.details && Array.isArray(body.details.fields)
      ? body.details.fields.map((f) => ` ${f.field}: ${f.message}`).join(';')
      : '';
  box.replaceChildren(
    el('span', { class: 'code', 'data-testid': 'error-code' }, body.code),
    el('span', { 'data-testid': 'error-message' }, body.message + fields),
  );
}

async function act(path, body) {
  try {
    const res = await api('POST', `/api/actions/${path}`, body);
    showResult(res.ok, await res.json());
  } catch (err) {
    showResult(false, { code: 'UNAVAILABLE', message: `console unreachable: ${err.message}` });
  }
}

$('revoke-form').addEventListener('submit', (ev) => {
  ev.preventDefault();
  const token = $('revoke-token').value.trim();
  void act('revoke', {
    key: $('revoke-key').value.trim(),
    reason: $('revoke-reason').value,
    ...(token === '' ? {} : { expectedToken: token }),
  });
});

function payoutAction(path, extra) {
  void act(path, { payoutId: $('payout-id').value.trim(), ...extra });
}
$('abandon').addEventListener('click', () =>
  payoutAction('abandon', { reason: $('payout-reason').value }),
);
$('resolve-acked').addEventListener('click', () => {
  const railReference = $('payout-railref').value.trim();
  payoutAction('resolve', {
    resolution: 'ACKED',
    evidence: $('payout-reason').value,
    ...(railReference === '' ? {} : { railReference }),
  });
});
$('resolve-notfound').addEventListener('click', () =>
  payoutAction('resolve', { resolution: 'NOT_FOUND', evidence: $('payout-reason').value }),
);

$('approve-form').addEventListener('submit', (ev) => {
  ev.preventDefault();
  void act('approve', { requestId: $('approve-id').value.trim() });
});

let expiryTimer;
function signedIn(view) {
  session = view;
  document.body.classList.remove('signed-out');
  $('operator').textContent = `signed in as ${view.subject}`;
  $('operator').title =
    `actions go as ${view.subject} through ${view.via}, until ${view.expiresAt}`;
  clearTimeout(expiryTimer);
  expiryTimer = setTimeout(
    () => signedOut('your token expired: sign in again'),
    Math.max(0, Date.parse(view.expiresAt) - Date.now()),
  );
  generation += 1;
  listen();
  void refresh(generation);
}

function signedOut(message) {
  session = null;
  generation += 1;
  clearTimeout(expiryTimer);
  source?.close();
  source = null;
  document.body.classList.add('signed-out');
  $('operator').textContent = 'not signed in';
  const box = $('sign-in-result');
  box.className = message ? 'error' : '';
  box.textContent = message ?? '';
}

/** Without a token: a proxy in front (IAP, OIDC) vouches for the person (docs/console.md). */
async function signIn(token) {
  const box = $('sign-in-result');
  try {
    const res = await api('POST', '/api/session', token === undefined ? {} : { token });
    const body = await res.json();
    if (res.ok) return signedIn(body);
    box.className = 'error';
    box.replaceChildren(
      el('span', { class: 'code', 'data-testid': 'error-code' }, body.code),
      ` ${body.message}`,
    );
  } catch (err) {
    box.className = 'error';
    box.textContent = `console unreachable: ${err.message}`;
  }
}

$('sign-in-form').addEventListener('submit', (ev) => {
  ev.preventDefault();
  void signIn($('sign-in-token').value.trim());
});

$('sign-out').addEventListener('click', async () => {
  try {
    await api('DELETE', '/api/session');
  } finally {
    signedOut();
  }
});

async function start() {
  try {
    const view = await (await api('GET', '/api/session')).json();
    if (view.signedIn) signedIn(view);
    else if (view.signIn === 'header') await signIn(undefined);
    else signedOut();
  } catch (err) {
    signedOut(`console unreachable: ${err.message}`);
  }
}

void start();
