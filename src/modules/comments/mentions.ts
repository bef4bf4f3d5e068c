/** `@[Display name](mem_…)`: the markup a plain-text editor writes for a mention. */
const markup = /@\[[^\]\n]{0,255}\]\((mem_[A-Za-z0-9]{1,64})\)/g;

/**
 * Ids read from one comment, at most: 2000 characters hold about 47 markups of real member ids,
 * so more are not mentions anyone means; the rest are ignored.
 */
export const MAX_MENTIONS = 50;

function markupIds(text: string, into: Set<string>) {
  for (const match of text.matchAll(markup)) into.add(match[1] as string);
}

/**
 * The member ids a comment's content mentions, in the order they first appear, without repeats:
 * mention nodes (`{"type":"mention","attrs":{"id":"mem_…"}}`) anywhere in TipTap/ProseMirror JSON,
 * and `@[Display name](mem_…)` markup in plain text (and in the text nodes of such JSON). Whether
 * an id names a member of the organization is for the caller to check.
 */
export function mentionedIds(content: string): string[] {
  const ids = new Set<string>();
  let document: unknown;
  if (/^\s*[[{]/.test(content)) {
    try {
      document = JSON.parse(content);
    } catch {
      document = undefined;
    }
  }
  if (document === undefined || document === null || typeof document !== "object") {
    markupIds(content, ids);
  } else {
    // Iterative: a deeply nested document must not exhaust the stack.
    const stack: unknown[] = [document];
    while (stack.length > 0 && ids.size < MAX_MENTIONS) {
      const node = stack.pop();
      if (Array.isArray(node)) {
        for (let i = node.length - 1; i >= 0; i--) stack.push(node[i]);
        continue;
      }
      if (!node || typeof node !== "object") continue;
      const record = node as Record<string, unknown>;
      const attrs = record.attrs as Record<string, unknown> | undefined;
      if (record.type === "mention" && attrs && typeof attrs.id === "string" && attrs.id.length > 0 && attrs.id.length <= 255) {
        ids.add(attrs.id);
      }
      if (typeof record.text === "string") markupIds(record.text, ids);
      const children = Object.values(record).filter((v) => v !== null && typeof v === "object");
      for (let i = children.length - 1; i >= 0; i--) stack.push(children[i]);
    }
  }
  return [...ids].slice(0, MAX_MENTIONS);
}
