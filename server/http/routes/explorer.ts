/**
 * The Explorer page (issue 12): static files from the package's `explorer/` directory and uPlot's
 * dist files from node_modules, served from memory at `/explorer`. `/` sends a browser that asks
 * for HTML there; API clients still get the versions array. The page itself only calls the public
 * API with the key the user typed, so nothing here checks a key.
 */
import { readdirSync, readFileSync } from 'node:fs';
import { createRequire } from 'node:module';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { ApiError } from '../../../engine/index.js';
import { prefersOverJson } from '../parse.js';
import type { Handler, Reply } from '../types.js';
import { getVersions } from './versions.js';

/** dist/server/http/routes/explorer.js → <package root>/explorer */
const PAGE_DIR = fileURLToPath(new URL('../../../../explorer/', import.meta.url));

const TYPES: Readonly<Record<string, string>> = {
  '.html': 'text/html; charset=utf-8',
  '.js': 'text/javascript; charset=utf-8',
  '.css': 'text/css; charset=utf-8',
  '.png': 'image/png',
  '.svg': 'image/svg+xml',
};

interface Asset {
  readonly body: Uint8Array;
  readonly contentType: string;
}

/** Every servable file by its URL name; built once, so a request can only name a listed file. */
function loadAssets(): Map<string, Asset> {
  const assets = new Map<string, Asset>();
  const add = (name: string, file: string) => {
    const type = TYPES[path.extname(file)];
    if (type !== undefined) assets.set(name, { body: readFileSync(file), contentType: type });
  };
  for (const name of readdirSync(PAGE_DIR)) add(name, path.join(PAGE_DIR, name));
  // uPlot ships no `exports` map, so its dist files resolve as plain paths.
  const require = createRequire(import.meta.url);
  add('uPlot.iife.min.js', require.resolve('uplot/dist/uPlot.iife.min.js'));
  add('uPlot.min.css', require.resolve('uplot/dist/uPlot.min.css'));
  return assets;
}

let cache: Map<string, Asset> | undefined;

function assets(): Map<string, Asset> {
  // Loaded on first use, not at import: a server that nobody browses never reads the files.
  cache ??= loadAssets();
  return cache;
}

function serve(name: string): Reply {
  const asset = assets().get(name);
  if (asset === undefined) {
    throw new ApiError('ResourceNotFoundError', `The explorer has no file named "${name}".`);
  }
  return {
    status: 200,
    body: asset.body,
    contentType: asset.contentType,
    // Revalidate on each load so an upgraded server never pairs old and new page modules.
    headers: [['Cache-Control', 'no-cache'], ['X-Content-Type-Options', 'nosniff']],
  };
}

export const getExplorerPage: Handler = () => serve('index.html');

export const getExplorerFile: Handler = (ctx) => serve(ctx.params['file']!);

/**
 * `/`: a browser (no key, an Accept that ranks HTML above JSON, negotiated as every route does)
 * goes to the explorer; others get the versions.
 */
export const getRoot: Handler = (ctx, deps) => {
  if (ctx.key === '' && prefersOverJson(ctx.accept, 'text/html')) {
    return { status: 302, headers: [['Location', '/explorer']] };
  }
  return getVersions(ctx, deps);
};
