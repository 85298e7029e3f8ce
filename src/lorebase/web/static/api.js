// The /v1 API, as the page uses it: same origin, the session cookie sent by the browser, the
// session's CSRF token on every change, problem details turned into errors with their words.

let csrf = null;

export class ApiError extends Error {
  constructor(status, problem) {
    super(problem.detail || problem.title || `HTTP ${status}`);
    this.status = status;
    this.problem = problem;
  }
}

export function setCsrf(token) {
  csrf = token;
}

// Requests under way: while any runs, the header's thin bar (#busy) shows the page is waiting.
let inFlight = 0;

function track(promise) {
  inFlight++;
  const bar = document.getElementById("busy");
  if (bar) bar.hidden = false;
  const done = () => {
    inFlight--;
    if (bar && inFlight === 0) bar.hidden = true;
  };
  promise.then(done, done);
  return promise;
}

function headers(extra = {}) {
  const out = { Accept: "application/json", ...extra };
  if (csrf) out["X-Lorebase-CSRF"] = csrf;
  return out;
}

async function failure(response) {
  let problem = {};
  try { problem = await response.json(); } catch { /* not JSON */ }
  return new ApiError(response.status, problem);
}

/** Call the API; JSON in and out. Throws ApiError on a problem answer. */
export function api(method, path, body, options = {}) {
  return track(call(method, path, body, options));
}

async function call(method, path, body, options) {
  const init = { method, headers: headers(), credentials: "same-origin", signal: options.signal };
  if (body instanceof FormData) init.body = body;
  else if (body !== undefined) {
    init.body = JSON.stringify(body);
    init.headers["Content-Type"] = "application/json";
  }
  const response = await fetch(path, init);
  if (!response.ok) throw await failure(response);
  if (response.status === 204) return null;
  return response.json();
}

/** POST a form with upload progress (fetch cannot report it): onProgress(fraction). */
export function upload(path, form, onProgress) {
  return track(new Promise((resolve, reject) => {
    const request = new XMLHttpRequest();
    request.open("POST", path);
    for (const [name, value] of Object.entries(headers())) request.setRequestHeader(name, value);
    request.responseType = "json";
    request.upload.addEventListener("progress", (event) => {
      if (event.lengthComputable) onProgress(event.loaded / event.total);
    });
    request.addEventListener("load", () => {
      if (request.status >= 200 && request.status < 300) resolve(request.response);
      else reject(new ApiError(request.status, request.response || {}));
    });
    request.addEventListener("error", () => reject(new ApiError(0, { detail: "the server did not answer" })));
    request.send(form);
  }));
}

/** One page of a paged list: {items, total} (the total from X-Total-Count). */
export function apiPage(path, options = {}) {
  return track(page(path, options));
}

async function page(path, options) {
  const response = await fetch(path, { headers: headers(), credentials: "same-origin", signal: options.signal });
  if (!response.ok) throw await failure(response);
  const items = await response.json();
  return { items, total: Number(response.headers.get("X-Total-Count") ?? items.length) };
}

/** Read a server-sent-event body (POST /v1/ask) as it arrives: onEvent(name, data). */
export function stream(path, body, onEvent, signal) {
  return track(read(path, body, onEvent, signal));
}

async function read(path, body, onEvent, signal) {
  const response = await fetch(path, {
    method: "POST",
    headers: headers({ "Content-Type": "application/json", Accept: "text/event-stream" }),
    body: JSON.stringify(body),
    credentials: "same-origin",
    signal,
  });
  if (!response.ok) throw await failure(response);
  const reader = response.body.pipeThrough(new TextDecoderStream()).getReader();
  let pending = "";
  for (;;) {
    const { value, done } = await reader.read();
    if (done) break;
    pending += value;
    let cut;
    while ((cut = pending.indexOf("\n\n")) >= 0) {
      const frame = pending.slice(0, cut);
      pending = pending.slice(cut + 2);
      let name = "message";
      const data = [];
      for (const line of frame.split("\n")) {
        if (line.startsWith("event: ")) name = line.slice(7);
        else if (line.startsWith("data: ")) data.push(line.slice(6));
      }
      if (data.length) onEvent(name, JSON.parse(data.join("\n")));
    }
  }
}

/** The live state changes (GET /v1/events) for one view: listener(kind, data) until the
 * returned function is called. A stream covers the bases visible when it opened, so each view
 * opens its own; the promise ``ready`` settles once the stream is connected (or after 3 s). */
export function onChange(listener) {
  const source = new EventSource("/v1/events");
  for (const kind of ["document", "knowledge_base"]) {
    source.addEventListener(kind, (event) => listener(kind, JSON.parse(event.data)));
  }
  const stop = () => source.close();
  stop.ready = new Promise((done) => {
    source.addEventListener("open", done, { once: true });
    setTimeout(done, 3000);
  });
  return stop;
}

/** GET a picture (a document's page): an object URL for it and the response's headers.
 * Throws ApiError on a problem answer. Revoke the URL when it is no longer shown. */
export function picture(path, options = {}) {
  return track(fetchPicture(path, options));
}

async function fetchPicture(path, options) {
  const response = await fetch(path, { headers: headers({ Accept: "image/png" }), credentials: "same-origin", signal: options.signal });
  if (!response.ok) throw await failure(response);
  return { url: URL.createObjectURL(await response.blob()), headers: response.headers };
}
