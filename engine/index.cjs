/**
 * The engine for CommonJS programs (`require('tally')`): Node 20 cannot require an ES module, so
 * this entry loads engine/index.js with import() and hands out its openEngine, which is async
 * anyway. `await require('tally').load()` gives the whole module (limits, error types, helpers).
 */
'use strict';

let loaded;

/** The engine module (dist/engine/index.js), loaded once. */
function load() {
  loaded ??= import('../dist/engine/index.js');
  return loaded;
}

/** openEngine of engine/index.ts: resolves with the opened engine. */
async function openEngine(options) {
  return (await load()).openEngine(options);
}

module.exports = { openEngine, load };
