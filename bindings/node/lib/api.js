'use strict';
// The hybrid plugins' JavaScript half as the library describes it (syncstore_plugin_api();
// docs/hybrid-plugin.md, "The JavaScript half"): which action each Cordova function sends with
// which args object, the query-spec builders with their defaults, the statuses a sync run ends
// with, and which plugin answers are retryable. smartstore.js and mobilesync.js build their
// functions from it; nothing in this package names an action or a builder default.
const { addon } = require('./native');

const table = JSON.parse(addon.pluginApi());

/** One Cordova function of the table, with its arguments normalized to {name, field, ...}. */
function fnOf(row) {
  const args = (row.args || []).map((a) => (typeof a === 'string' ? { name: a, field: a } : { field: a.name, ...a }));
  return {
    ...row,
    args,
    fixed: row.fixed || {},
    storeConfig: Boolean(row.storeConfig),
    /** The arguments a call must give (the optional ones left out). */
    required: args.filter((a) => !a.optional && !('omittedWhen' in a)).length,
  };
}

/** A service of the table ('smartstore' or 'mobilesync'): {service, functions (Map by name),
 *  cursorSteps (Map by name), noStore (Set of actions)}. */
function service(key) {
  const row = table.services[key];
  return {
    service: row.service,
    functions: new Map(row.functions.map((f) => [f.name, fnOf(f)])),
    cursorSteps: new Map((row.cursorSteps || []).map((s) => [s.name, s])),
    noStore: new Set(row.noStore || []),
  };
}

const SERVICES = { smartstore: service('smartstore'), mobilesync: service('mobilesync') };

/** The args object of a call of fn with these positional arguments (the storeConfig apart). */
function fieldsOf(fn, args) {
  const given = [...args];
  const fields = {};
  for (const spec of fn.args) {
    let value;
    if (spec.omittedWhen === 'string' && (given.length === 0 || typeof given[0] === 'string')) value = undefined;
    else value = given.shift();
    if (spec.member !== undefined && value !== null && typeof value === 'object') value = value[spec.member];
    if (value == null && 'default' in spec) value = spec.default;
    fields[spec.field] = value;
  }
  return { ...fields, ...fn.fixed };
}

/** The answer as cordova.force.js hands it on: null where the plugin answers an object without
 *  fn.nullUnless (an unknown sync's {}). */
function answerOf(fn, value) {
  if (fn.nullUnless === undefined) return value;
  return value && typeof value === 'object' && value[fn.nullUnless] !== undefined ? value : null;
}

const QUERY = table.querySpec;
const FALSY_KEEPS = new Set(QUERY.falsyKeepsDefault || []);

/** What cordova.force.js's builder `name` returns for these arguments. */
function buildQuerySpec(name, args) {
  const builder = QUERY.builders.find((b) => b.name === name);
  const spec = { ...QUERY.fields, queryType: builder.queryType };
  builder.params.forEach((param, i) => {
    const field = typeof param === 'string' ? param : param.field;
    const value = args[i];
    if (value == null || (FALSY_KEEPS.has(field) && !value)) return; // keeps the default
    spec[field] = value;
  });
  if (QUERY.orderPathFrom && spec.orderPath === null && builder.queryType !== 'smart') spec.orderPath = spec[QUERY.orderPathFrom];
  return spec;
}

/** Every builder of the table, by name: (...args) => spec. */
const builders = Object.fromEntries(QUERY.builders.map((b) => [b.name, (...args) => buildQuerySpec(b.name, args)]));

const RETRYABLE = new Map(table.statuses.map((s) => [s.code, Boolean(s.retryable)]));
/** Whether a plugin answer with this status is retryable (the library's word). */
const retryable = (status) => RETRYABLE.get(status) === true;

/** The statuses a sync run ends with. */
const TERMINAL = new Set(table.syncStatuses.terminal);

module.exports = { table, SERVICES, fieldsOf, answerOf, buildQuerySpec, builders, retryable, TERMINAL };
