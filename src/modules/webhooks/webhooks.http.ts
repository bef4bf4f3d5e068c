import { isUtf8 } from "node:buffer";
import { createHmac } from "node:crypto";
import { promises as dns, type LookupAddress } from "node:dns";
import http from "node:http";
import https from "node:https";
import { isIP, type LookupFunction } from "node:net";
import ipaddr from "ipaddr.js";

/** Resolves a host name to its addresses (injectable: tests answer what a rebinding DNS would). */
export type Resolver = (hostname: string) => Promise<string[]>;

export const systemResolver: Resolver = async (hostname) =>
  (await dns.lookup(hostname, { all: true, verbatim: true })).map((a: LookupAddress) => a.address);

export type TargetRules = {
  /** Addresses inside these are reachable although their range is not public. */
  allowedCidrs: string[];
  /** http only to addresses inside allowedCidrs (NODE_ENV=production). */
  httpsOnly: boolean;
};

type Cidr = [ipaddr.IPv4 | ipaddr.IPv6, number];

function parseCidrs(cidrs: string[]): Cidr[] {
  return cidrs.map((cidr) => ipaddr.parseCIDR(cidr));
}

function inside(address: ipaddr.IPv4 | ipaddr.IPv6, cidrs: Cidr[]): boolean {
  return cidrs.some(([range, bits]) => address.kind() === range.kind() && address.match([range, bits] as never));
}

/**
 * Why an address may not be contacted, or null when it may: anything but a public unicast address
 * (loopback, private, link-local with 169.254.169.254, unique-local, multicast, unspecified,
 * IPv4-mapped, reserved, ...) unless it is inside the allowed CIDRs.
 */
export function refusedAddress(text: string, cidrs: string[] | Cidr[]): string | null {
  const parsedCidrs = typeof cidrs[0] === "string" ? parseCidrs(cidrs as string[]) : (cidrs as Cidr[]);
  let address: ipaddr.IPv4 | ipaddr.IPv6;
  try {
    address = ipaddr.parse(text);
  } catch {
    return `${text} is not an IP address`;
  }
  if (inside(address, parsedCidrs)) return null;
  const range = address.range();
  return range === "unicast" ? null : `${text} is a ${range} address`;
}

/** Whether a host name is `localhost` or one of its subdomains. */
function isLocalhost(hostname: string): boolean {
  const host = hostname.toLowerCase().replace(/\.$/, "");
  return /(^|\.)localhost$/.test(host);
}

/** The host of a URL without IPv6 brackets. */
function hostOf(url: URL): string {
  return url.hostname.replace(/^\[(.*)\]$/, "$1");
}

/**
 * What audit events, their exports and webhook messages keep of an endpoint's URL: its origin
 * (scheme, host, port). Chat and ticketing URLs carry their token in the path or query, which only
 * `webhook:manage` reads (the endpoints themselves).
 */
export function urlOrigin(value: string): string {
  try {
    return new URL(value).origin;
  } catch {
    return "";
  }
}

/** What create and update refuse: not an http(s) URL, credentials in it, localhost, a refused address literal. */
export function urlProblem(value: string, rules: TargetRules): string | null {
  let url: URL;
  try {
    url = new URL(value);
  } catch {
    return "must be an absolute http or https URL";
  }
  if (url.protocol !== "https:" && url.protocol !== "http:") return "must be an http or https URL";
  if (url.username || url.password) return "must not carry a user name or password";
  const host = hostOf(url);
  if (isLocalhost(host)) return "must not point at localhost";
  const literal = isIP(host) !== 0;
  if (literal) {
    const refused = refusedAddress(host, rules.allowedCidrs);
    if (refused) return `must not point at ${refused} (WEBHOOK_ALLOWED_CIDRS lists the allowed ones)`;
  }
  if (rules.httpsOnly && url.protocol === "http:" && !(literal && inside(ipaddr.parse(host), parseCidrs(rules.allowedCidrs)))) {
    return "must be an https URL";
  }
  return null;
}

export function sign(secret: string, id: string, timestamp: number, body: string): string {
  const key = Buffer.from(secret.replace(/^whsec_/, ""), "base64");
  return `v1,${createHmac("sha256", key).update(`${id}.${timestamp}.${body}`).digest("base64")}`;
}

export type AttemptResult = {
  /** Null when no answer came (refused, timed out, not allowed). */
  status: number | null;
  /** The first KB of the answer, as text (see `recordableText`). */
  body: string | null;
  retryAfterSeconds: number | null;
  durationMs: number;
  error: string | null;
};

export const RESPONSE_BODY_LIMIT = 1024;

/** Bytes a UTF-8 sequence takes, by its first byte (1 for a byte that starts none). */
function sequenceLength(first: number): number {
  if (first >= 0xf0) return 4;
  if (first >= 0xe0) return 3;
  if (first >= 0xc0) return 2;
  return 1;
}

/**
 * A receiver's answer as text the delivery log can store whatever it holds: characters of valid
 * UTF-8 stay as they are; a NUL, another control byte (tab, line feed and carriage return
 * excepted) and every byte that is not part of valid UTF-8 are written `\xNN`. PostgreSQL's text
 * refuses NUL and invalid UTF-8 (22021), which would leave the attempt unrecorded.
 */
export function recordableText(bytes: Uint8Array): string {
  const buffer = Buffer.from(bytes.buffer, bytes.byteOffset, bytes.byteLength);
  if (isUtf8(buffer) && !buffer.some(isControl)) return buffer.toString("utf8");
  let text = "";
  for (let i = 0; i < buffer.length; ) {
    const length = sequenceLength(buffer[i] as number);
    const sequence = buffer.subarray(i, i + length);
    if (sequence.length === length && isUtf8(sequence) && !(length === 1 && isControl(sequence[0] as number))) {
      text += sequence.toString("utf8");
      i += length;
    } else {
      text += `\\x${(buffer[i] as number).toString(16).padStart(2, "0")}`;
      i += 1;
    }
  }
  return text;
}

function isControl(byte: number): boolean {
  return (byte < 0x20 && byte !== 0x09 && byte !== 0x0a && byte !== 0x0d) || byte === 0x7f;
}

/** Retry-After as seconds (a number or an HTTP date), or null. */
function retryAfter(value: string | undefined): number | null {
  if (!value) return null;
  if (/^\d+$/.test(value.trim())) return Number(value.trim());
  const at = Date.parse(value);
  return Number.isNaN(at) ? null : Math.max(0, (at - Date.now()) / 1000);
}

/**
 * One POST to the endpoint: the host resolved now and every address checked, the connection made
 * to the checked address (a DNS answer that changes between the check and the connect cannot
 * redirect it), no redirect followed, at most 1 KB of the answer read, and the whole attempt
 * (DNS, connect, a receiver trickling bytes) bounded by `timeoutMs`.
 */
export async function attemptDelivery(
  target: string,
  headers: Record<string, string>,
  body: string,
  options: TargetRules & { timeoutMs: number; resolve: Resolver },
): Promise<AttemptResult> {
  const started = performance.now();
  const done = (partial: Omit<AttemptResult, "durationMs">): AttemptResult => ({
    ...partial,
    durationMs: Math.round(performance.now() - started),
  });
  const failure = (error: string) => done({ status: null, body: null, retryAfterSeconds: null, error });
  let url: URL;
  try {
    url = new URL(target);
  } catch {
    return failure("the URL is not valid");
  }
  const host = hostOf(url);
  if (isLocalhost(host)) return failure("the URL points at localhost");
  const cidrs = parseCidrs(options.allowedCidrs);
  const deadline = AbortSignal.timeout(options.timeoutMs);
  let addresses: string[];
  try {
    addresses = isIP(host)
      ? [host]
      : await Promise.race([
          options.resolve(host),
          new Promise<never>((_, reject) =>
            deadline.addEventListener("abort", () => reject(new Error(`no answer within ${options.timeoutMs} ms`)), {
              once: true,
            }),
          ),
        ]);
  } catch (error) {
    return failure(`cannot resolve ${host}: ${(error as Error).message}`);
  }
  if (addresses.length === 0) return failure(`${host} has no address`);
  for (const address of addresses) {
    const refused = refusedAddress(address, cidrs);
    if (!refused) continue;
    // An address literal's range is no news to its owner; what a name resolves to is not told (a
    // tenant would map the internal network's names).
    return failure(
      isIP(host)
        ? `not sent: ${refused}, which is not allowed (WEBHOOK_ALLOWED_CIDRS)`
        : `not sent: the address of ${host} is not allowed (loopback, private or reserved; WEBHOOK_ALLOWED_CIDRS)`,
    );
  }
  const pinned = addresses[0] as string;
  if (options.httpsOnly && url.protocol === "http:" && !inside(ipaddr.parse(pinned), cidrs)) {
    return failure("not sent: http is refused in production (https only, unless inside WEBHOOK_ALLOWED_CIDRS)");
  }
  const lookup: LookupFunction = (_hostname, lookupOptions, callback) => {
    const family = isIP(pinned);
    if ((lookupOptions as { all?: boolean }).all)
      (callback as never as (e: null, a: LookupAddress[]) => void)(null, [{ address: pinned, family }]);
    else callback(null, pinned, family);
  };
  const client = url.protocol === "https:" ? https : http;
  return new Promise<AttemptResult>((resolve) => {
    let settled = false;
    const finish = (result: AttemptResult) => {
      if (settled) return;
      settled = true;
      clearTimeout(timer);
      request.destroy();
      resolve(result);
    };
    const remaining = Math.max(1, options.timeoutMs - (performance.now() - started));
    const timer = setTimeout(() => finish(failure(`no complete answer within ${options.timeoutMs} ms`)), remaining);
    const request = client.request(
      url,
      {
        method: "POST",
        headers: { ...headers, "content-length": String(Buffer.byteLength(body)), "user-agent": "compliance-gateway-webhooks/1" },
        lookup,
        agent: false,
      },
      (response) => {
        const chunks: Buffer[] = [];
        let size = 0;
        const end = () =>
          finish(
            done({
              status: response.statusCode ?? null,
              body: recordableText(Buffer.concat(chunks).subarray(0, RESPONSE_BODY_LIMIT)),
              retryAfterSeconds: retryAfter(response.headers["retry-after"]),
              error: null,
            }),
          );
        response.on("data", (chunk: Buffer) => {
          chunks.push(chunk);
          size += chunk.length;
          if (size >= RESPONSE_BODY_LIMIT) end();
        });
        response.on("end", end);
        response.on("error", (error) => finish(failure(error.message.replaceAll(pinned, host))));
      },
    );
    // Node names the address it connected to ("connect ECONNREFUSED 10.0.0.5:443"): the host stands in for it.
    request.on("error", (error) => finish(failure(error.message.replaceAll(pinned, host))));
    request.end(body);
  });
}
