/**
 * How the graph reads (issue 46). `reference`: as before the issue, a page's selection planned for
 * every parent. The differential harness (test/integration/differential.test.ts) answers through
 * both to prove them equal.
 */
export const readPath = { reference: false };
