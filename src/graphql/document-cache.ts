import type { DocumentNode, GraphQLError, GraphQLSchema, ValidationRule } from "graphql";
import type { Plugin } from "graphql-yoga";
import { LRUCache } from "lru-cache";

/**
 * What a GraphQL document's text gives on its own, kept per distinct text (issue 59): its parse
 * (and so its token limit's verdict), and on the parsed document (useValidationCache), per schema
 * and set of validation rules, the verdicts of validation and of the depth, alias and directive
 * limits. The cost rule keeps its verdict on the parsed document too
 * (query-cost.ts), per schema and operation, and only when no variable sets it. A bound on entries
 * and one on the bytes of the texts kept: many distinct or large documents cannot grow the process.
 */
export const documentCacheLimits = { entries: 1_000, bytes: 4 * 1024 * 1024 };

type Limits = typeof documentCacheLimits;

/**
 * Yoga's `parserAndValidationCache`: a bounded cache of parsed documents and one of parse refusals,
 * by text; validation is useValidationCache's.
 */
export function documentCaches(limits: Limits = documentCacheLimits) {
  // A text's size in bytes (UTF-8); a parse is a few times its text, so the bound also holds the trees.
  const sizeCalculation = (_value: unknown, text: string) => Math.max(1, Buffer.byteLength(text));
  const documentCache = new LRUCache<string, DocumentNode>({ max: limits.entries, maxSize: limits.bytes, sizeCalculation });
  // Refusals are fewer: a tenth of the room, so that a stream of broken texts cannot evict the good ones.
  const errorCache = new LRUCache<string, Error>({
    max: Math.max(1, Math.floor(limits.entries / 10)),
    maxSize: Math.max(1, Math.floor(limits.bytes / 10)),
    sizeCalculation,
  });
  return { documentCache, errorCache, validationCache: false as const };
}

/** Rule sets kept per document and schema: the rules differ only by a plugin's per-request rule (introspection). */
const RULE_SETS_PER_DOCUMENT = 4;

type Validated = { rules: readonly ValidationRule[]; names: string[]; result: readonly GraphQLError[] };

/**
 * Whether `rules` are the kept set: rule by rule the same function, or one of the same name (the
 * document limits' rules are made afresh at each request). A function's `name` is read only when
 * the function differs: most rules are the same objects at every request, and reading `name` is
 * not free.
 */
function sameRules(rules: readonly ValidationRule[], kept: Validated): boolean {
  if (rules.length !== kept.names.length) return false;
  for (let i = 0; i < rules.length; i++) {
    const rule = rules[i] as ValidationRule;
    if (rule !== kept.rules[i] && rule.name !== kept.names[i]) return false;
  }
  return true;
}

/**
 * Validation's verdict (the schema's rules and the document limits' rules) once per parsed
 * document, schema and set of rules, in place of Yoga's cache, which builds a key of every rule's
 * name at each request. Placed after every plugin that adds rules, it sees the request's whole set;
 * a set is told by its rules' names in order, as Yoga's cache tells them (the document limits'
 * rules are made afresh at each request: their identity says nothing). Bounded as the parsed
 * documents are: an entry goes with its document.
 */
export function useValidationCache(): Plugin {
  const verdicts = new WeakMap<DocumentNode, WeakMap<GraphQLSchema, Validated[]>>();
  return {
    onValidate({ validateFn, setValidationFn }) {
      setValidationFn((schema, document, rules, typeInfo, options) => {
        // Anything beyond the plain call (a TypeInfo, options) is validated as it comes.
        if (!rules || typeInfo || options) return validateFn(schema, document, rules, typeInfo, options);
        let bySchema = verdicts.get(document);
        let kept = bySchema?.get(schema);
        const hit = kept?.find((entry) => sameRules(rules, entry));
        if (hit) return hit.result;
        const result = validateFn(schema, document, rules);
        if (!bySchema) {
          bySchema = new WeakMap();
          verdicts.set(document, bySchema);
        }
        if (!kept) {
          kept = [];
          bySchema.set(schema, kept);
        }
        if (kept.length >= RULE_SETS_PER_DOCUMENT) kept.shift();
        kept.push({ rules: [...rules], names: rules.map((rule: ValidationRule) => rule.name), result });
        return result;
      });
    },
  };
}
