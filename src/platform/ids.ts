import { randomFillSync } from "node:crypto";

export type IdPrefix =
  | "org"
  | "usr"
  | "mem"
  | "dev"
  | "apk"
  | "tsk"
  | "tski"
  | "vnd"
  | "rsk"
  | "pol"
  | "pv"
  | "cmt"
  | "att"
  | "upl"
  | "aud"
  | "acp"
  | "ses"
  | "idk"
  | "ntf"
  | "whe"
  | "whd"
  | "msg"
  | "fw"
  | "req"
  | "rmp"
  | "ctl"
  | "evd"
  | "erq";

// Time-ordered (48-bit millisecond clock, then 80 random bits) so ids sort like creation order;
// but a user id is 128 random bits: accounts are shared between organizations, and `createMember`
// answers an existing account's id, which must not tell when (so that) the account was made.
export function newId(prefix: IdPrefix): string {
  if (prefix === "usr") return `usr_${randomHex(16)}`;
  const time = Date.now().toString(16).padStart(12, "0");
  return `${prefix}_${time}${randomHex(10)}`;
}

/**
 * Random bytes for ids, drawn from a buffer the system's CSPRNG fills 4 KiB at a time, each byte
 * handed out once (as Node keeps the bytes of `randomUUID`). A call of `randomBytes(10)` costs 6.6
 * to 7.6 µs here, nearly all of it the call into OpenSSL, against 0.3 drawn from the buffer; a
 * comment takes several ids (bench/results/2026-12-05.md).
 */
const RANDOM_POOL_BYTES = 4096;
const randomPool = Buffer.alloc(RANDOM_POOL_BYTES);
let randomOffset = RANDOM_POOL_BYTES;

/** `bytes` random bytes (at most the pool's size) written as hex. */
export function randomHex(bytes: number): string {
  if (randomOffset + bytes > RANDOM_POOL_BYTES) {
    randomFillSync(randomPool);
    randomOffset = 0;
  }
  const hex = randomPool.toString("hex", randomOffset, randomOffset + bytes);
  randomOffset += bytes;
  return hex;
}

/** The GraphQL type of each id prefix that names a Node: `node(id)` needs no lookup table. */
export const nodeTypeByPrefix = {
  tsk: "Task",
  tski: "TaskItem",
  vnd: "Vendor",
  rsk: "Risk",
  pol: "Policy",
  pv: "PolicyVersion",
  mem: "Member",
  cmt: "Comment",
} as const satisfies Partial<Record<IdPrefix, string>>;

export type NodeTypeName = (typeof nodeTypeByPrefix)[keyof typeof nodeTypeByPrefix];

/** The Node type an id names by its prefix, or null when it names none. */
export function nodeTypeOf(id: string): NodeTypeName | null {
  const prefix = id.slice(0, id.indexOf("_"));
  return Object.hasOwn(nodeTypeByPrefix, prefix) ? nodeTypeByPrefix[prefix as keyof typeof nodeTypeByPrefix] : null;
}
