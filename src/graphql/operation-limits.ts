import { EnvelopArmorPlugin } from "@escape.tech/graphql-armor";
import { GraphQLError, type ValidationContext } from "graphql";

/** Limits on the shape of a GraphQL document. */
export const operationLimits = { depth: 10, aliases: 15, tokens: 2_000, directives: 20 };

type LimitName = keyof typeof operationLimits;

/** For each limit: what went over, and how a caller stays under it. */
const explanations: Record<LimitName, (found: string) => string> = {
  aliases: (found) =>
    `The operation uses ${found} aliases; at most ${operationLimits.aliases} are allowed per operation (fragments count where they are spread). ` +
    "Alias fewer fields per request, or send several requests; a list field (tasks, members, comments, ...) returns many records without aliases.",
  depth: (found) =>
    `The operation nests fields ${found} levels deep; at most ${operationLimits.depth} levels are allowed. ` +
    "Select fewer nested levels, and fetch the deeper records with a second request.",
  tokens: () =>
    `The document has more than ${operationLimits.tokens} tokens (names, punctuation and literal values); that is the limit. ` +
    "Send a shorter document: pass values as variables, and split large operations into several requests.",
  directives: (found) =>
    `The operation uses ${found} directives; at most ${operationLimits.directives} are allowed. Use fewer @include and @skip directives.`,
};

/**
 * graphql-armor's refusal, rewritten: graphql-armor calls every limit a "Syntax Error" and says
 * nothing of how to stay under it. The code says which phase refused: parsing (too many tokens)
 * or validation (the rest); `extensions.limit` names the limit for programs.
 */
function refusal(limit: LimitName) {
  return (context: ValidationContext | null, original: GraphQLError) => {
    const found = /found (\d+)/.exec(original.message)?.[1] ?? "too many";
    const error = new GraphQLError(explanations[limit](found), {
      extensions: {
        code: context ? "GRAPHQL_VALIDATION_FAILED" : "GRAPHQL_PARSE_FAILED",
        limit: { name: limit, max: operationLimits[limit] },
      },
    });
    if (context) context.reportError(error);
    else throw error;
  };
}

/**
 * The document limits (graphql-armor), all checked before any resolver or database query. Field
 * suggestions ("Did you mean ...?") reveal the schema's names: they are hidden whenever
 * introspection is off (production), and shown while it is on (development).
 */
export function useOperationLimits(options: { suggestFields: boolean }) {
  const callbacks = (limit: LimitName) => ({ onReject: [refusal(limit)], propagateOnRejection: false });
  return EnvelopArmorPlugin({
    // Depth counts fields only: a fragment spread or inline fragment adds no level, so a query
    // written with fragments is refused or accepted exactly as the same query inlined.
    maxDepth: { n: operationLimits.depth, ignoreIntrospection: true, flattenFragments: true, ...callbacks("depth") },
    // Every alias counts, `__typename` too (graphql-armor lets it through by default: 200 of them
    // would each cost a resolver call and bytes of answer, past the limit).
    maxAliases: { n: operationLimits.aliases, allowList: [], ...callbacks("aliases") },
    maxTokens: { n: operationLimits.tokens, ...callbacks("tokens") },
    maxDirectives: { n: operationLimits.directives, ...callbacks("directives") },
    // The cost rule is useQueryCost's (worst-case objects through nested lists); armor's weighs depth.
    costLimit: { enabled: false },
    blockFieldSuggestion: { enabled: !options.suggestFields },
  });
}
