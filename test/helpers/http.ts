/** A small fetch wrapper for black-box tests: JSON in, status + parsed JSON out. */
export interface Res {
  readonly status: number;
  readonly headers: Headers;
  readonly text: string;
  /** The parsed body, or undefined when it is not JSON. */
  readonly body: any;
}

export interface ReqOptions {
  readonly key?: string;
  /** An object/array is sent as JSON; a string or Buffer as is. */
  readonly body?: unknown;
  readonly headers?: Record<string, string>;
  readonly redirect?: RequestRedirect;
}

async function req(url: string, method: string, path: string, options: ReqOptions = {}): Promise<Res> {
  const headers: Record<string, string> = { ...options.headers };
  if (options.key !== undefined) headers['Authorization'] = options.key;
  let body: string | Uint8Array | undefined;
  if (typeof options.body === 'string' || Buffer.isBuffer(options.body)) body = options.body;
  else if (options.body !== undefined) body = JSON.stringify(options.body);
  if (body !== undefined && headers['Content-Type'] === undefined) headers['Content-Type'] = 'application/json';
  const response = await fetch(url + path, { method, headers, body: body as string | undefined, redirect: options.redirect ?? 'manual' });
  const text = await response.text();
  let parsed: unknown;
  try {
    parsed = JSON.parse(text);
  } catch {
    parsed = undefined;
  }
  return { status: response.status, headers: response.headers, text, body: parsed };
}

/** Bound helpers for one server. */
export function client(url: string) {
  return {
    get: (path: string, options?: ReqOptions) => req(url, 'GET', path, options),
    head: (path: string, options?: ReqOptions) => req(url, 'HEAD', path, options),
    post: (path: string, options?: ReqOptions) => req(url, 'POST', path, options),
    send: (method: string, path: string, options?: ReqOptions) => req(url, method, path, options),
  };
}

/** Polls `check` until it returns true or the time runs out (events become visible within 10 s). */
export async function eventually(check: () => Promise<boolean>, timeoutMs = 12_000): Promise<boolean> {
  const deadline = Date.now() + timeoutMs;
  while (Date.now() < deadline) {
    if (await check()) return true;
    await new Promise((resolve) => setTimeout(resolve, 100));
  }
  return check();
}

/** In Prometheus text (/metrics), the value of a sample line `name{labels} value` (summed over every line that matches). */
export function sample(text: string, name: string, labels = ''): number {
  let total = 0;
  let found = false;
  for (const line of text.split('\n')) {
    if (line.startsWith('#')) continue;
    const [series, value] = line.split(' ');
    if (series === undefined || value === undefined) continue;
    const bare = series.replace(/\{.*\}$/, '');
    if (bare !== name || !series.includes(labels)) continue;
    total += Number(value);
    found = true;
  }
  return found ? total : NaN;
}
