import { createRequire } from "node:module";

type QueryConfig = Record<string, unknown>;
type Normalize = (config: unknown, values?: unknown, callback?: unknown) => QueryConfig;
// pg's own module (the one its Query calls), which has no type declarations.
const utils = createRequire(import.meta.url)("pg/lib/utils.js") as { normalizeQueryConfig: Normalize & { plainCopy?: true } };

/**
 * pg (8.23) copies the config of every statement before it runs it (`normalizeQueryConfig`), through
 * `Object.getOwnPropertyDescriptors` and `Object.defineProperties`: a call into V8's runtime of about
 * 1.8 µs a statement here, against 0.02 µs for a spread (bench/results/2026-12-05.md). The configs
 * this service hands pg (Prisma's driver adapter, row-by-id.ts, the job queue) are plain objects of
 * data properties, for which a spread is the same copy: those are copied so; anything else (a class
 * instance, an accessor) goes through pg's own function as before. Installed once, when the
 * database module loads; `queryConfigCopiedPlainly()` says whether it is (its test).
 */
export function copyQueryConfigsPlainly(): void {
  const original = utils.normalizeQueryConfig;
  if (typeof original !== "function" || original.plainCopy) return;
  const normalize: Normalize = (config, values, callback) => {
    if (config === null || typeof config !== "object" || Object.getPrototypeOf(config) !== Object.prototype) {
      return original(config, values, callback);
    }
    const copy: QueryConfig = { ...(config as QueryConfig) };
    // As pg's: values may be the callback; a callback given separately comes last.
    if (values) {
      if (typeof values === "function") copy.callback = values;
      else copy.values = values;
    }
    if (callback) copy.callback = callback;
    return copy;
  };
  utils.normalizeQueryConfig = Object.assign(normalize, { plainCopy: true as const });
}

/** Whether pg copies plain configs with a spread (copyQueryConfigsPlainly has run and pg still has the function). */
export function queryConfigCopiedPlainly(): boolean {
  return utils.normalizeQueryConfig?.plainCopy === true;
}
