import { randomBytes } from "node:crypto";

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
  | "aud"
  | "ses"
  | "idk";

// Time-ordered (48-bit millisecond clock, then 80 random bits) so ids sort like creation order.
export function newId(prefix: IdPrefix): string {
  const time = Date.now().toString(16).padStart(12, "0");
  return `${prefix}_${time}${randomBytes(10).toString("hex")}`;
}
