// The query builder: one form for every analysis of docs/api.md §6. fillForm() shows a query,
// readForm() turns the form back into {analysis, params}, the API's own request body.

/**
 * Every analysis, as the engine lists them: test/unit/explorer/analyses-list.test.ts reads this
 * declaration as text and pins it to the engine's ANALYSES, so it stays exported (knip sees no
 * importer).
 * @public
 */
export const ANALYSES = ['count', 'count_unique', 'minimum', 'maximum', 'sum', 'average', 'median',
  'percentile', 'standard_deviation', 'select_unique', 'extraction', 'funnel', 'multi_analysis'];
const TARGETED = ANALYSES.filter((a) => !['count', 'extraction', 'funnel', 'multi_analysis'].includes(a));
const OPERATORS = ['eq', 'ne', 'lt', 'lte', 'gt', 'gte', 'exists', 'in', 'not_in', 'contains',
  'not_contains', 'starts_with', 'within', 'regex', 'or'];
const VALUE_TYPES = ['auto', 'string', 'number', 'boolean', 'null', 'json'];

const el = (tag, attrs = {}, ...children) => {
  const node = document.createElement(tag);
  for (const [k, v] of Object.entries(attrs)) {
    if (v === false || v === undefined) continue;
    if (k === 'text') node.textContent = v; else node.setAttribute(k, v === true ? '' : v);
  }
  node.append(...children);
  return node;
};
const options = (values, selected) => values.map((v) => el('option', { value: v, selected: v === selected }, v));
const field = (label, control, show, errorFor) => el('label', { class: 'field', 'data-show': show },
  el('span', { text: label }), control, errorFor ? el('output', { class: 'field-error', 'data-error-for': errorFor }) : '');

function collectionSelect(name, collections, value) {
  const names = collections.map((c) => c.name);
  if (value && !names.includes(value)) names.unshift(value);
  return el('select', { name }, ...options(names, value));
}

/**
 * A filter's value typed as the user chose. 'auto' follows the property's schema type (a string
 * property compares with the string "1", a num property with the number 1); lists (in, not_in),
 * within and or take JSON; otherwise JSON when it parses as a scalar, else the string.
 */
function typedValue(raw, type, operator, schemaType) {
  if (type === 'auto' && !['in', 'not_in', 'within', 'or', 'exists'].includes(operator)) {
    if (schemaType === 'string' || schemaType === 'datetime') return raw;
    if (schemaType === 'num' && raw.trim() !== '' && Number.isFinite(Number(raw))) return Number(raw);
    if (schemaType === 'bool' && (raw === 'true' || raw === 'false')) return raw === 'true';
  }
  if (type === 'string') return raw;
  if (type === 'number') return Number(raw);
  if (type === 'boolean') return raw === 'true';
  if (type === 'null') return null;
  if (type === 'json' || ['in', 'not_in', 'within', 'or'].includes(operator)) {
    try { return JSON.parse(raw); } catch { return raw; }
  }
  try { const v = JSON.parse(raw); return typeof v === 'object' && v !== null ? raw : v; } catch { return raw; }
}

function valueType(value) {
  if (value === null) return 'null';
  if (typeof value === 'number') return 'number';
  if (typeof value === 'boolean') return 'boolean';
  if (typeof value === 'object') return 'json';
  try { JSON.parse(value); return 'string'; } catch { return 'auto'; }
}

function filterRow(filter = {}) {
  const value = filter.property_value;
  const type = value === undefined ? 'auto' : valueType(value);
  return el('div', { class: 'row filter' },
    el('input', { name: 'f_property', list: 'properties', placeholder: 'property', value: filter.property_name ?? '' }),
    el('select', { name: 'f_operator' }, ...options(OPERATORS, filter.operator ?? 'eq')),
    el('input', { name: 'f_value', placeholder: 'value',
      value: value === undefined ? '' : typeof value === 'string' ? value : JSON.stringify(value) }),
    el('select', { name: 'f_type', title: 'value type' }, ...options(VALUE_TYPES, type)),
    el('button', { type: 'button', class: 'remove', title: 'remove', text: '×' }));
}

function stepRow(collections, step = {}) {
  return el('div', { class: 'row step' },
    collectionSelect('s_collection', collections, step.event_collection),
    el('input', { name: 's_actor', list: 'properties', placeholder: 'actor property', value: step.actor_property ?? '' }),
    el('input', { name: 's_filters', placeholder: 'filters (JSON, optional)',
      value: step.filters ? JSON.stringify(step.filters) : '' }),
    el('label', {}, el('input', { type: 'checkbox', name: 's_optional', checked: !!step.optional }), 'optional'),
    el('label', {}, el('input', { type: 'checkbox', name: 's_inverted', checked: !!step.inverted }), 'inverted'),
    el('button', { type: 'button', class: 'remove', title: 'remove', text: '×' }));
}

function analysisRow(label = '', spec = {}) {
  return el('div', { class: 'row analysis' },
    el('input', { name: 'm_label', placeholder: 'label', value: label }),
    el('select', { name: 'm_type' }, ...options(ANALYSES.filter((a) => !['funnel', 'multi_analysis', 'extraction'].includes(a)), spec.analysis_type ?? 'count')),
    el('input', { name: 'm_target', list: 'properties', placeholder: 'target property', value: spec.target_property ?? '' }),
    el('input', { name: 'm_percentile', type: 'number', min: 0, max: 100, step: 'any', placeholder: 'percentile',
      value: spec.percentile ?? '' }),
    el('button', { type: 'button', class: 'remove', title: 'remove', text: '×' }));
}

const list = (v) => v === undefined ? '' : Array.isArray(v) ? v.join(', ') : String(v);
const toLocal = (iso) => iso ? new Date(iso).toISOString().slice(0, 16) : '';

/** Renders the form for a query; `collections` are the project's collections with schema. */
export function fillForm(form, collections, analysis, p) {
  const absolute = typeof p.timeframe === 'object' && p.timeframe !== null;
  const order = Array.isArray(p.order_by) ? p.order_by[0] : p.order_by;
  const show = (a) => a.join(' ');
  const notFunnel = show(ANALYSES.filter((a) => a !== 'funnel'));
  form.replaceChildren(
    el('div', { class: 'line' },
      field('Analysis', el('select', { name: 'analysis' }, ...options(ANALYSES, analysis)), show(ANALYSES)),
      field('Collection', collectionSelect('event_collection', collections, p.event_collection), notFunnel),
      field('Target property', el('input', { name: 'target_property', list: 'properties', value: p.target_property ?? '' }),
        show(TARGETED), 'target_property'),
      field('Percentile', el('input', { name: 'percentile', type: 'number', min: 0, max: 100, step: 'any',
        value: p.percentile ?? '' }), 'percentile', 'percentile')),
    el('div', { class: 'line' },
      field('Timeframe', el('select', { name: 'timeframe_kind' }, ...options(['relative', 'absolute'], absolute ? 'absolute' : 'relative')), show(ANALYSES)),
      field('Relative', el('input', { name: 'timeframe', list: 'timeframes', value: absolute ? '' : (p.timeframe ?? 'this_7_days') }),
        'relative', 'timeframe'),
      field('Start (UTC)', el('input', { name: 'start', type: 'datetime-local', value: absolute ? toLocal(p.timeframe.start) : '' }), 'absolute'),
      field('End (UTC)', el('input', { name: 'end', type: 'datetime-local', value: absolute ? toLocal(p.timeframe.end) : '' }), 'absolute'),
      field('Timezone', el('input', { name: 'timezone', list: 'timezones', placeholder: 'UTC', value: p.timezone ?? '' }),
        show(ANALYSES), 'timezone')),
    el('div', { class: 'line' },
      field('Interval', el('input', { name: 'interval', list: 'intervals', placeholder: 'none', value: p.interval ?? '' }),
        show(ANALYSES.filter((a) => !['funnel', 'extraction'].includes(a))), 'interval'),
      field('Group by', el('input', { name: 'group_by', list: 'properties', placeholder: 'prop, prop', value: list(p.group_by) }),
        show(ANALYSES.filter((a) => !['funnel', 'extraction', 'select_unique'].includes(a))), 'group_by'),
      field('Order by', el('input', { name: 'order_by', list: 'properties', placeholder: 'result', value: order?.property_name ?? '' }),
        show(ANALYSES.filter((a) => !['funnel', 'extraction', 'select_unique'].includes(a))), 'order_by'),
      field('Direction', el('select', { name: 'direction' }, ...options(['ASC', 'DESC'], order?.direction ?? 'DESC')),
        show(ANALYSES.filter((a) => !['funnel', 'extraction', 'select_unique'].includes(a)))),
      field('Limit', el('input', { name: 'limit', type: 'number', min: 1, value: p.limit ?? '' }),
        show(ANALYSES.filter((a) => !['funnel', 'select_unique', 'extraction'].includes(a))), 'limit')),
    el('div', { class: 'line' },
      field('Property names', el('input', { name: 'property_names', list: 'properties', placeholder: 'all', value: list(p.property_names) }),
        'extraction', 'property_names'),
      field('Latest', el('input', { name: 'latest', type: 'number', min: 1, value: p.latest ?? '' }), 'extraction', 'latest'),
      field('Exact', el('input', { name: 'force_exact', type: 'checkbox', checked: !!p.force_exact }), 'count_unique')),
    el('fieldset', { 'data-show': notFunnel }, el('legend', { text: 'Filters' }),
      el('div', { class: 'rows', id: 'filters' }, ...(p.filters ?? []).map(filterRow)),
      el('button', { type: 'button', 'data-add': 'filter', text: '+ filter' }),
      el('output', { class: 'field-error', 'data-error-for': 'filters' })),
    el('fieldset', { 'data-show': 'funnel' }, el('legend', { text: 'Funnel steps' }),
      el('div', { class: 'rows', id: 'steps' }, ...(p.steps ?? [{}, {}]).map((s) => stepRow(collections, s))),
      el('button', { type: 'button', 'data-add': 'step', text: '+ step' }),
      el('output', { class: 'field-error', 'data-error-for': 'steps' })),
    el('fieldset', { 'data-show': 'multi_analysis' }, el('legend', { text: 'Analyses' }),
      el('div', { class: 'rows', id: 'analyses' },
        ...Object.entries(p.analyses ?? { count: { analysis_type: 'count' } }).map(([l, s]) => analysisRow(l, s))),
      el('button', { type: 'button', 'data-add': 'analysis', text: '+ analysis' }),
      el('output', { class: 'field-error', 'data-error-for': 'analyses' })),
    el('div', { class: 'line' }, el('button', { type: 'submit', id: 'run', class: 'primary', text: 'Run' })),
  );
  form.onclick = (event) => {
    const target = event.target;
    if (target.classList.contains('remove')) target.closest('.row').remove();
    const add = target.dataset?.add;
    if (add === 'filter') form.querySelector('#filters').append(filterRow());
    if (add === 'step') form.querySelector('#steps').append(stepRow(collections));
    if (add === 'analysis') form.querySelector('#analyses').append(analysisRow(`a${form.querySelectorAll('.analysis').length + 1}`));
  };
  form.onchange = () => applyVisibility(form);
  applyVisibility(form);
}

function applyVisibility(form) {
  const analysis = form.elements.analysis.value;
  const kind = form.elements.timeframe_kind.value;
  for (const node of form.querySelectorAll('[data-show]')) {
    const shown = node.dataset.show.split(' ');
    node.hidden = !(shown.includes(analysis) || shown.includes(kind));
  }
}

const csv = (text) => text.split(',').map((s) => s.trim()).filter((s) => s !== '');
const rows = (form, selector) => [...form.querySelectorAll(selector)];
const value = (row, name) => row.querySelector(`[name="${name}"]`);

/** The form as the API's request: only the members the chosen analysis uses, empty ones left out. */
export function readForm(form, schema = {}) {
  const f = form.elements;
  const analysis = f.analysis.value;
  const p = {};
  const visible = (name) => !f[name].closest('[data-show]')?.hidden;
  const set = (name, v) => { if (v !== '' && v !== undefined && visible(name)) p[name] = v; };
  set('event_collection', f.event_collection.value);
  set('target_property', f.target_property.value.trim());
  if (f.percentile.value !== '') set('percentile', Number(f.percentile.value));
  if (f.timeframe_kind.value === 'absolute') {
    // datetime-local gives "YYYY-MM-DDTHH:mm[:ss]", read as UTC; anything else goes to the API as
    // typed so its TimeframeDefinitionError explains it.
    const iso = (v) => (Number.isNaN(Date.parse(`${v}Z`)) ? v : new Date(`${v}Z`).toISOString());
    p.timeframe = { start: iso(f.start.value), end: iso(f.end.value) };
  } else {
    set('timeframe', f.timeframe.value.trim());
  }
  set('timezone', /^-?\d+$/.test(f.timezone.value.trim()) ? Number(f.timezone.value) : f.timezone.value.trim());
  set('interval', f.interval.value.trim());
  const groups = csv(f.group_by.value);
  if (groups.length > 0) set('group_by', groups.length === 1 ? groups[0] : groups);
  if (f.order_by.value.trim() !== '') set('order_by', { property_name: f.order_by.value.trim(), direction: f.direction.value });
  if (f.limit.value !== '') set('limit', Number(f.limit.value));
  const names = csv(f.property_names.value);
  if (names.length > 0) set('property_names', names);
  if (f.latest.value !== '') set('latest', Number(f.latest.value));
  if (f.force_exact.checked) set('force_exact', true);
  if (analysis !== 'funnel') {
    const filters = rows(form, '#filters .filter').map((row) => {
      const operator = value(row, 'f_operator').value;
      const property = value(row, 'f_property').value.trim();
      return { property_name: property, operator, property_value: typedValue(value(row, 'f_value').value,
        value(row, 'f_type').value, operator, Object.hasOwn(schema, property) ? schema[property] : undefined) };
    });
    if (filters.length > 0) p.filters = filters;
  } else {
    p.steps = rows(form, '#steps .step').map((row) => {
      const step = { event_collection: value(row, 's_collection').value,
        actor_property: value(row, 's_actor').value.trim() };
      const filters = value(row, 's_filters').value.trim();
      if (filters !== '') { try { step.filters = JSON.parse(filters); } catch { step.filters = filters; } }
      if (value(row, 's_optional').checked) step.optional = true;
      if (value(row, 's_inverted').checked) step.inverted = true;
      return step;
    });
  }
  if (analysis === 'multi_analysis') {
    p.analyses = {};
    for (const row of rows(form, '#analyses .analysis')) {
      const spec = { analysis_type: value(row, 'm_type').value };
      if (value(row, 'm_target').value.trim() !== '') spec.target_property = value(row, 'm_target').value.trim();
      if (value(row, 'm_percentile').value !== '') spec.percentile = Number(value(row, 'm_percentile').value);
      p.analyses[value(row, 'm_label').value.trim() || spec.analysis_type] = spec;
    }
  }
  return { analysis, params: p };
}

/** Field names as the API's messages spell them; 'step' ("funnel step 0 needs ...") means steps. */
const FIELDS = ['target_property', 'percentile', 'timeframe', 'timezone', 'interval', 'group_by',
  'order_by', 'limit', 'steps', 'step', 'analyses', 'property_names', 'latest', 'filters'];
const BY_CODE = {
  TimeframeDefinitionError: 'timeframe', InvalidFilterError: 'filters',
  InvalidPropertyNameForGeoFilter: 'filters', NonNumericTargetPropertyError: 'target_property',
  TooManyIntervalsError: 'interval', TooManyGroupsError: 'group_by',
  ApproximationRequiredError: 'target_property', ExtractionTooLargeError: 'timeframe',
};

/**
 * The field an API error concerns: the field its message names first ('"order_by" takes ... a
 * group_by property' is about order_by), else the one its code implies; null when neither.
 */
export function errorField(error) {
  const message = error.message ?? '';
  let best = null;
  let bestIndex = Infinity;
  for (const name of FIELDS) {
    const match = new RegExp(`\\b${name}\\b`).exec(message);
    if (match !== null && match.index < bestIndex) { best = name; bestIndex = match.index; }
  }
  if (best === 'step') best = 'steps';
  return best ?? BY_CODE[error.error_code] ?? null;
}
