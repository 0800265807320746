// api.js: requests to the agent's own /v1 API, with the ACL token from
// localStorage, and the event stream that keeps pages current.

const tokenKey = 'nomad.token';

export function getToken() {
  return window.localStorage.getItem(tokenKey) || '';
}

export function setToken(secret) {
  if (secret) {
    window.localStorage.setItem(tokenKey, secret);
  } else {
    window.localStorage.removeItem(tokenKey);
  }
}

function headers() {
  const h = {};
  const t = getToken();
  if (t) h['X-Nomad-Token'] = t;
  return h;
}

// APIError carries the HTTP status so pages can tell "not found" and
// "permission denied" from an agent that cannot answer.
export class APIError extends Error {
  constructor(status, message) {
    super(message);
    this.status = status;
  }
}

// get returns the decoded JSON of GET path (relative to the agent). Only
// same-origin requests: the agent's CSRF checks and the page's CSP both
// rely on the UI never talking to another host.
export async function get(path) {
  const resp = await fetch(path, { headers: headers(), credentials: 'omit', cache: 'no-store' });
  if (!resp.ok) {
    const text = (await resp.text()).trim();
    throw new APIError(resp.status, `${resp.status} ${text || resp.statusText} (GET ${path})`);
  }
  return resp.json();
}

// send makes a state-changing request (POST, PUT, DELETE) with body as
// JSON and returns the decoded answer; a refusal throws an APIError
// carrying the agent's own message ("Permission denied: token lacks
// submit-job in namespace ..."), which the UI shows as it is.
export async function send(method, path, body) {
  const h = headers();
  if (body !== undefined) h['Content-Type'] = 'application/json';
  const resp = await fetch(path, {
    method, headers: h, credentials: 'omit', cache: 'no-store',
    body: body === undefined ? undefined : JSON.stringify(body),
  });
  const text = (await resp.text()).trim();
  if (!resp.ok) throw new APIError(resp.status, `${resp.status} ${text || resp.statusText} (${method} ${path})`);
  return text ? JSON.parse(text) : null;
}

// follow reads /v1/event/stream and calls onEvents with each batch that
// carries events, and onState with "live", "polling" or "reconnecting".
// Each time the stream (re)connects it calls onEvents once, so the page
// refetches whatever changed before the stream began: it starts from the
// newest event rather than resuming at an index the servers may have
// dropped, and the page's first render may predate it (a busy agent
// answers the stream seconds after the page's reads).
// When the stream is refused (a token without read access to every
// namespace), it calls onEvents every few seconds instead, so the page
// still refreshes. It runs until the page goes away.
export async function follow(onEvents, onState) {
  for (;;) {
    try {
      const q = new URLSearchParams({ namespace: '*' });
      for (const t of ['Job', 'Allocation', 'Node', 'Evaluation', 'Deployment']) q.append('topic', t);
      const resp = await fetch('/v1/event/stream?' + q, { headers: headers(), credentials: 'omit', cache: 'no-store' });
      if (resp.status === 403 || resp.status === 401) {
        onState('polling');
        await poll(onEvents);
        continue;
      }
      if (!resp.ok || !resp.body) throw new Error(`event stream: ${resp.status}`);
      onState('live');
      onEvents([]);
      await readLines(resp.body, onEvents);
    } catch (err) {
      // reconnect below
    }
    onState('reconnecting');
    await delay(2000);
  }
}

async function readLines(body, onEvents) {
  const reader = body.pipeThrough(new TextDecoderStream()).getReader();
  let buf = '';
  for (;;) {
    const { value, done } = await reader.read();
    if (done) return;
    buf += value;
    let nl;
    while ((nl = buf.indexOf('\n')) >= 0) {
      const line = buf.slice(0, nl).trim();
      buf = buf.slice(nl + 1);
      if (!line) continue;
      const batch = JSON.parse(line);
      if (batch.Error) throw new Error(batch.Error);
      if (batch.Events && batch.Events.length) onEvents(batch.Events);
    }
  }
}

// poll refreshes every few seconds for a minute, then lets follow try
// the stream again (the token may have been changed meanwhile).
async function poll(onEvents) {
  for (let i = 0; i < 12; i++) {
    await delay(5000);
    onEvents([]);
  }
}

function delay(ms) {
  return new Promise((resolve) => window.setTimeout(resolve, ms));
}

// getStream opens GET path for reading as it arrives (a followed log)
// and returns the response's body; signal ends it. A refusal throws an
// APIError, as get does.
export async function getStream(path, signal) {
  const resp = await fetch(path, { headers: headers(), credentials: 'omit', cache: 'no-store', signal });
  if (!resp.ok) {
    const text = (await resp.text()).trim();
    throw new APIError(resp.status, `${resp.status} ${text || resp.statusText} (GET ${path})`);
  }
  if (!resp.body) throw new APIError(resp.status, `no body to stream (GET ${path})`);
  return resp.body;
}
