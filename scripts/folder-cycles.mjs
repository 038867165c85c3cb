#!/usr/bin/env node
/**
 * Folder-level import cycles: dependency-cruiser checks that no module imports itself through
 * others; this checks the same of folders, each module counted in its layer folder (engine/query,
 * server/kafka, ...; a file at engine/ or server/ is in that folder), type imports included.
 * Reads `depcruise --output-type json` on stdin; prints each cycle and exits 1 when there is one.
 */
import { readFileSync } from 'node:fs';

const { modules } = JSON.parse(readFileSync(0, 'utf8'));
/** engine/query/aggregate/sum.ts → engine/query; engine/services/types.ts → engine. */
const folderOf = (file) => {
  const parts = file.split('/');
  if (parts[0] !== 'engine' && parts[0] !== 'server') return null;
  if (parts.length <= 2) return parts[0];
  // The query layer's subfolders are layers of their own: plan, eval, aggregate, exec.
  if (parts[1] === 'query' && parts.length > 3) return parts.slice(0, 3).join('/');
  return `${parts[0]}/${parts[1]}`;
};
const edges = new Map();
for (const module of modules) {
  const from = folderOf(module.source);
  if (from === null) continue;
  if (!edges.has(from)) edges.set(from, new Map());
  for (const dependency of module.dependencies) {
    const to = folderOf(dependency.resolved);
    if (to === null || to === from) continue;
    const via = edges.get(from);
    if (!via.has(to)) via.set(to, `${module.source} → ${dependency.resolved}`);
  }
}
// Tarjan's strongly connected components: a component of more than one folder is a cycle.
let next = 0;
const index = new Map(), low = new Map(), stack = [], onStack = new Set(), cycles = [];
const visit = (v) => {
  index.set(v, next); low.set(v, next); next++;
  stack.push(v); onStack.add(v);
  for (const w of edges.get(v)?.keys() ?? []) {
    if (!index.has(w)) { visit(w); low.set(v, Math.min(low.get(v), low.get(w))); }
    else if (onStack.has(w)) low.set(v, Math.min(low.get(v), index.get(w)));
  }
  if (low.get(v) !== index.get(v)) return;
  const component = [];
  let w;
  do { w = stack.pop(); onStack.delete(w); component.push(w); } while (w !== v);
  if (component.length > 1) cycles.push(component.sort());
};
for (const v of edges.keys()) if (!index.has(v)) visit(v);
for (const cycle of cycles) {
  console.log(`folder cycle: ${cycle.join(', ')}`);
  for (const from of cycle) {
    for (const [to, via] of edges.get(from) ?? []) if (cycle.includes(to)) console.log(`  ${from} → ${to} (${via})`);
  }
}
if (cycles.length > 0) process.exit(1);
console.log(`no folder cycle (${edges.size} folders)`);
