/**
 * Request parsing shared by routes: JSON bodies, the beacon's base64 `data`, lenient query-string
 * values (docs/api.md §6) and Accept negotiation. Pure functions; they throw ApiError on bad
 * input.
 */
import { ApiError, parseJson, parseJsonBody } from '../../engine/index.js';

export { parseJsonBody };

const BASE64_RE = /^[A-Za-z0-9+/_-]*={0,2}$/;

/** The beacon's `data`: standard or URL-safe base64 of JSON, padding optional. */
export function parseBase64Json(raw: string): unknown {
  // A '+' that reached us as a space was form-decoded; base64 never contains spaces.
  const text = raw.replace(/ /g, '+').trim();
  if (text === '' || !BASE64_RE.test(text)) {
    throw new ApiError('InvalidJsonError',
      'The data parameter is not base64 (standard or URL-safe).');
  }
  const decoded = Buffer.from(text, 'base64').toString('utf8');
  return parseJson(decoded, 'The base64-decoded data parameter');
}

/** Analysis parameters: a value that parses as JSON is used parsed, else the raw string. */
export function lenientParams(query: URLSearchParams): Record<string, unknown> {
  const params: Record<string, unknown> = {};
  for (const [name, value] of query) {
    if (name === 'api_key') continue;
    params[name] = parseLenient(value);
  }
  return params;
}

/** How a JSON text can start after its whitespace; JSON.parse throws for any other value. */
const JSON_START = /^[\t\n\r ]*(?:[-0-9"[{]|(?:true|false|null)[\t\n\r ]*$)/;

function parseLenient(value: string): unknown {
  // Most values are plain words (a collection, "this_7_days"): a thrown SyntaxError per value cost
  // more than the rest of a trivial count's parameters together.
  if (!JSON_START.test(value)) return value;
  try {
    return JSON.parse(value);
  } catch {
    return value; // not JSON: the raw string is the value (docs/api.md §6)
  }
}

/** The q-value the Accept header gives a media type (exact, type/*, or * / *), 0 when none. */
function acceptQuality(accept: string, type: string): number {
  const [major] = type.split('/');
  let best = -1;
  let bestSpecificity = -1;
  for (const part of accept.split(',')) {
    const [rangeRaw, ...paramsRaw] = part.trim().split(';');
    const range = (rangeRaw ?? '').trim().toLowerCase();
    const specificity = range === type ? 2 : range === `${major}/*` ? 1 : range === '*/*' ? 0 : -1;
    if (specificity < 0 || specificity < bestSpecificity) continue;
    const qParam = paramsRaw.map((p) => p.trim()).find((p) => p.startsWith('q='));
    const q = qParam ? Number(qParam.slice(2)) : 1;
    bestSpecificity = specificity;
    best = Number.isFinite(q) ? q : 1;
  }
  return Math.max(best, 0);
}

/** True when the Accept header ranks `type` above JSON (the API's own answer); '' never does. */
export function prefersOverJson(accept: string, type: string): boolean {
  if (accept === '') return false;
  return acceptQuality(accept, type) > acceptQuality(accept, 'application/json');
}

/** True when the client prefers an image (GIF) over JSON, as an <img> beacon does. */
export function prefersImage(accept: string): boolean {
  return prefersOverJson(accept, 'image/gif');
}
