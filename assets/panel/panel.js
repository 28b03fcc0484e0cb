// pasarela panel: the little behaviour plain HTML lacks. Loaded as a file (the
// Content-Security-Policy allows no inline script); everything works without it.
'use strict';
document.addEventListener('click', (event) => {
  const button = event.target instanceof Element ? event.target.closest('[data-copy]') : null;
  if (!button) return;
  const source = document.getElementById(button.getAttribute('data-copy'));
  if (!source) return;
  const text = source.textContent.trim();
  const done = () => {
    button.textContent = 'Copied';
    setTimeout(() => (button.textContent = 'Copy'), 2000);
  };
  if (navigator.clipboard && window.isSecureContext) navigator.clipboard.writeText(text).then(done, () => selectText(source));
  else selectText(source);
});

// Without a secure context (plain http on another host) the clipboard API is absent: select the text for Ctrl+C.
function selectText(el) {
  const range = document.createRange();
  range.selectNodeContents(el);
  const sel = window.getSelection();
  sel.removeAllRanges();
  sel.addRange(range);
}

// A form that asks for a typed confirmation (delete a line or a webhook, rotate a key, cancel all of a queue): its button
// waits for the text, as the server compares it (trimmed). Disabled from the start by this script only, so without it the
// button still sends and the server refuses beside the field.
function confirmWait(input) {
  const button = input.form && input.form.querySelector('button[type="submit"]');
  if (button) button.disabled = input.value.trim() !== input.dataset.confirm;
}
document.addEventListener('input', (event) => {
  const input = event.target;
  if (input instanceof HTMLInputElement && input.dataset.confirm) confirmWait(input);
});
document.addEventListener('DOMContentLoaded', () => {
  for (const input of document.querySelectorAll('input[data-confirm]')) confirmWait(input);
});

// ---------------------------------------------------------------------------
// Event monitor (/panel/c/:cid/eventos, src/server/panel/pages/eventos.ts).
// The page's stream through the browser's EventSource, which resumes by
// Last-Event-ID on its own after a dropped connection. A refusal it cannot
// read (an answer that is not a stream: the session ended, an id no longer
// kept, the cap) is asked again with fetch, which sees the status. Pause keeps
// the stream and holds new events aside; the list keeps the newest
// MONITOR_KEEP; the count, not each row, is the live region, updated at most
// every COUNT_EVERY_MS so a screen reader is not flooded.
// ---------------------------------------------------------------------------
const MONITOR_KEEP = 500;
const COUNT_EVERY_MS = 2000;

// The panel's one time format (src/server/panel/pages/overview.ts shortTime): to the second, in UTC.
function shortTime(isoText) {
  return `${String(isoText).slice(0, 19).replace('T', ' ')} UTC`;
}

// What one event says, in a line: the change and what it is about.
function eventSummary(kind, d) {
  const from = (before, now) => (before ? `${before} → ${now}` : now);
  if (kind === 'message.status')
    return `${from(d.estado_anterior, d.estado)} · to ${d.destinatario} · ${d.tipo}${d.error ? ` · ${d.error}` : ''} · ${d.msg_id}`;
  if (kind === 'session.status') return `session ${from(d.status_anterior, d.status)} · line ${d.estado}`;
  if (kind === 'messages.received') {
    const text = d.texto ?? (d.media && (d.media.filename || d.media.url)) ?? d.tipo;
    return `from ${d.de}: ${String(text).length > 80 ? `${String(text).slice(0, 79)}…` : text}`;
  }
  if (kind === 'webhook.test') return 'a test event (Send a test event, on the Webhook page)';
  return '';
}

function startMonitor(root) {
  const list = root.querySelector('[data-monitor-list]');
  const status = root.querySelector('[data-monitor-status]');
  const count = root.querySelector('[data-monitor-count]');
  const pause = root.querySelector('[data-monitor-pause]');
  const form = document.querySelector('[data-monitor-filters]');
  const login = root.dataset.login;
  let streamUrl = root.dataset.stream;
  let source = null;
  let lastId = null;
  let paused = false;
  let held = [];
  let heldTotal = 0;
  // What the filters let through (empty: any), for the rows already shown when they change.
  let kinds = [];
  let line = '';
  let countTimer = null;
  let retryTimer = null;

  const say = (text, link) => {
    status.textContent = text;
    if (link) {
      const a = document.createElement('a');
      a.href = link.href;
      a.textContent = link.text;
      status.append(' ', a);
    }
  };
  const countText = () => {
    const shown = list.querySelectorAll('li:not([hidden])').length;
    const total = `${shown} ${shown === 1 ? 'event' : 'events'} shown`;
    if (paused) return `Paused: ${heldTotal} new ${heldTotal === 1 ? 'event' : 'events'} held (Resume to show them) · ${total}`;
    return shown === 0 ? 'No events yet. New ones appear here as they happen.' : total;
  };
  // The live region changes at most every COUNT_EVERY_MS, with the count as it is then: at once when it has not changed
  // for that long (an event on its own is counted as it is shown, never one behind), else when that time is up.
  let countAt = 0;
  const recount = (now) => {
    const write = () => {
      clearTimeout(countTimer);
      countTimer = null;
      countAt = Date.now();
      count.textContent = countText();
    };
    if (now) return write();
    if (countTimer) return;
    const wait = countAt + COUNT_EVERY_MS - Date.now();
    if (wait <= 0) write();
    else countTimer = setTimeout(write, wait);
  };

  const row = (ev) => {
    const li = document.createElement('li');
    li.className = 'event';
    li.dataset.kind = ev.evento;
    li.dataset.line = ev.celular_id === null ? '' : String(ev.celular_id);
    const head = document.createElement('div');
    head.className = 'event-head';
    const time = document.createElement('time');
    time.dateTime = ev.fecha;
    time.textContent = shortTime(ev.fecha);
    const kind = document.createElement('span');
    kind.className = `badge ${ev.evento === 'message.status' && ev.data.estado === 'error' ? 'bad' : 'ok'}`;
    kind.textContent = ev.evento;
    const line = document.createElement('span');
    line.textContent = ev.celular_id === null ? 'no line' : `line ${ev.celular_id}`;
    head.append(time, ' ', kind, ' ', line);
    const summary = document.createElement('p');
    summary.className = 'event-summary';
    summary.textContent = eventSummary(ev.evento, ev.data || {});
    const details = document.createElement('details');
    const label = document.createElement('summary');
    label.textContent = 'Body ';
    const which = document.createElement('span');
    which.className = 'visually-hidden';
    which.textContent = `of ${ev.evento} ${ev.id}`;
    label.append(which);
    const pre = document.createElement('pre');
    pre.textContent = JSON.stringify(ev, null, 2);
    details.append(label, pre);
    li.append(head, summary, details);
    return li;
  };
  const show = (events) => {
    // Newest on top: the batch's newest goes first.
    const frag = document.createDocumentFragment();
    for (let i = events.length - 1; i >= 0; i--) frag.append(row(events[i]));
    list.prepend(frag);
    while (list.children.length > MONITOR_KEEP) list.lastElementChild.remove();
  };
  const onEvent = (message) => {
    let ev;
    try {
      ev = JSON.parse(message.data);
    } catch {
      return;
    }
    lastId = message.lastEventId || ev.id;
    if (paused) {
      held.push(ev);
      heldTotal += 1;
      // Held events are bounded as the list is: past MONITOR_KEEP the oldest would scroll off at once anyway.
      if (held.length > MONITOR_KEEP) held.shift();
    } else show([ev]);
    recount(false);
  };

  const close = () => {
    clearTimeout(retryTimer);
    if (source) source.close();
    source = null;
  };
  const open = (url) => {
    close();
    // After a fatal refusal the browser's own Last-Event-ID is gone with its EventSource: desde_id carries it.
    const withId = lastId ? `${url}${url.includes('?') ? '&' : '?'}desde_id=${encodeURIComponent(lastId)}` : url;
    const es = new EventSource(withId);
    source = es;
    say('Connecting…');
    es.onopen = () => say('Connected: events appear as they happen.');
    for (const kind of ['message.status', 'session.status', 'messages.received', 'webhook.test']) es.addEventListener(kind, onEvent);
    es.onerror = () => {
      if (source !== es) return;
      if (es.readyState === EventSource.CONNECTING) say('Reconnecting… events resume where they left off.');
      else refused(url, withId);
    };
  };
  // The stream answered something else than a stream: ask again with fetch, which sees why.
  const refused = (url, withId) => {
    close();
    const ask = new AbortController();
    fetch(withId, { redirect: 'manual', signal: ask.signal, headers: { accept: 'text/event-stream' } })
      .then((r) => {
        ask.abort();
        if (r.type === 'opaqueredirect' || r.status === 401) {
          say('Your session has ended.', { href: login, text: 'Sign in again' });
          if (pause) pause.hidden = true;
        } else if (r.status === 410) {
          lastId = null;
          say('Resumed from now: the events while disconnected are no longer kept.');
          open(url);
        } else if (r.ok || r.status === 429 || r.status >= 500) {
          say('Reconnecting… events resume where they left off.');
          retryTimer = setTimeout(() => open(url), 5000);
        } else say(`Stopped: the server refused this stream (HTTP ${r.status}). Reload the page.`);
      })
      .catch(() => {
        say('Reconnecting… the server cannot be reached.');
        retryTimer = setTimeout(() => open(url), 5000);
      });
  };

  if (pause) {
    pause.hidden = false;
    pause.addEventListener('click', () => {
      paused = !paused;
      pause.textContent = paused ? 'Resume' : 'Pause';
      if (!paused && held.length > 0) show(held);
      if (!paused) {
        held = [];
        heldTotal = 0;
      }
      recount(true);
    });
  }

  // A change of the filters restarts the stream after the last event seen, hides the rows they leave out, and keeps the address in step.
  if (form) {
    form.addEventListener('change', () => {
      const data = new FormData(form);
      kinds = data.getAll('eventos').filter(Boolean);
      line = data.get('celular_id') || '';
      const q = new URLSearchParams();
      if (kinds.length > 0) q.set('eventos', kinds.join(','));
      if (line) q.set('celular_id', line);
      const qs = q.toString() ? `?${q}` : '';
      history.replaceState(null, '', `${location.pathname}${qs}`);
      streamUrl = `${location.pathname}/stream${qs}`;
      for (const li of list.children) li.hidden = (kinds.length > 0 && !kinds.includes(li.dataset.kind)) || (line !== '' && li.dataset.line !== line);
      held = held.filter((ev) => (kinds.length === 0 || kinds.includes(ev.evento)) && (line === '' || String(ev.celular_id) === line));
      heldTotal = held.length;
      recount(true);
      open(streamUrl);
    });
  }
  window.addEventListener('pagehide', close);
  open(streamUrl);
}

document.addEventListener('DOMContentLoaded', () => {
  // The events read back as the page opened come with their body only: each gets the live rows' one-line summary.
  for (const li of document.querySelectorAll('[data-earlier] > li')) {
    let body = null;
    try {
      body = JSON.parse(li.querySelector('pre').textContent);
    } catch {
      continue;
    }
    const summary = document.createElement('p');
    summary.className = 'event-summary';
    summary.textContent = eventSummary(body.evento, body.data || {});
    li.querySelector('.event-head').after(summary);
  }
  for (const root of document.querySelectorAll('[data-monitor]')) startMonitor(root);
});

// A form being sent: its button is disabled until the answer comes (a second click would send it again; the server
// acts once anyway, D-90). Disabled after the submit, so the button's own name and value still go with the form.
document.addEventListener('submit', (event) => {
  const form = event.target;
  if (!(form instanceof HTMLFormElement) || event.defaultPrevented) return;
  const buttons = form.querySelectorAll('button[type="submit"], button:not([type])');
  setTimeout(() => {
    for (const b of buttons) {
      b.disabled = true;
      b.setAttribute('aria-busy', 'true');
    }
  }, 0);
});

// Back to a page from the browser's cache (the back button): its buttons work again (a typed confirmation's wait for
// its text is kept).
window.addEventListener('pageshow', (event) => {
  if (!event.persisted) return;
  for (const b of document.querySelectorAll('button[aria-busy="true"]')) {
    b.removeAttribute('aria-busy');
    const confirm = b.form && b.form.querySelector('[data-confirm]');
    b.disabled = Boolean(confirm && confirm.value.trim() !== confirm.dataset.confirm);
  }
});

// A polled part that answers that its object is gone (a deleted line): the page says so and its forms are disabled.
document.addEventListener('htmx:afterSettle', () => {
  const gone = document.querySelector('[data-gone]');
  const main = document.getElementById('main');
  if (!gone || !main || main.querySelector('.gone-banner')) return;
  const banner = document.createElement('p');
  banner.className = 'error gone-banner';
  banner.setAttribute('role', 'alert');
  banner.textContent = gone.getAttribute('data-gone');
  main.insertBefore(banner, main.querySelector('h1') ? main.querySelector('h1').nextSibling : main.firstChild);
  for (const form of main.querySelectorAll('form')) for (const el of form.elements) el.disabled = true;
});
