import { GraphQLError } from "graphql";
import { isAsyncIterable, mapAsyncIterator, type Plugin } from "graphql-yoga";
import pg from "pg";
import type { Logger } from "pino";
import { Prisma } from "../generated/prisma/client.js";
import { isDatabaseUnavailable } from "../platform/db/unavailable.js";
import { AppError, BadUserInputError, ConflictError, type ErrorCode, isErrorCode, NotFoundError } from "../platform/errors.js";
import { graphqlErrorsResponse, transportErrorResponse } from "./error-response.js";
import { requestIdOf } from "./request-id.js";

/** Yoga's own request error codes, renamed to ours so both transports agree. */
const yogaCodes: Record<string, ErrorCode> = { REQUEST_ENTITY_TOO_LARGE: "PAYLOAD_TOO_LARGE" };

/**
 * What each "Internal server error" hides, and each database refusal answered as the caller's
 * (a unique violation as 409, NUL in text as 400) came from, for the log line of its request.
 */
const hiddenCauses = new WeakMap<GraphQLError, unknown>();
const expectedCauses = new WeakMap<GraphQLError, { cause: unknown; code: ErrorCode }>();
type Cause = { cause: unknown; expected?: ErrorCode };
/** The same for a REST answer: the causes of the errors it reports. */
const causesOfResponse = new WeakMap<Response, Cause[]>();

/** The answer to a request while the database cannot answer: the caller may retry it as it is. */
export const databaseUnavailable = () =>
  new AppError("SERVICE_UNAVAILABLE", "The database is unavailable or too slow right now; retry the request shortly");

/** Known database failures as our errors; null for anything unexpected. */
function translateDatabaseError(error: unknown): AppError | null {
  if (isDatabaseUnavailable(error)) return databaseUnavailable();
  // The SQLSTATE, through Prisma's adapter or from the pool directly (platform/db/row-by-id.ts).
  const sqlState =
    error instanceof Prisma.PrismaClientKnownRequestError
      ? (error.meta?.driverAdapterError as { cause?: { originalCode?: string } } | undefined)?.cause?.originalCode
      : error instanceof pg.DatabaseError
        ? error.code
        : undefined;
  // PostgreSQL text cannot hold NUL (0x00) or invalid UTF-8: that is the caller's input.
  if (sqlState === "22021" || sqlState === "22P05") {
    return new BadUserInputError("Text must not contain NUL characters (\\u0000)");
  }
  // A unique violation: Prisma's P2002, or 23505 from a statement that writes on the pool directly (writeText).
  const isPrisma = error instanceof Prisma.PrismaClientKnownRequestError;
  if (sqlState === "23505" || (isPrisma && error.code === "P2002")) {
    return new ConflictError("A record with the same unique values already exists");
  }
  if (!isPrisma) return null;
  if (error.code === "P2025") return new NotFoundError("Record", "requested");
  if (error.code === "P2028") return new AppError("SERVICE_UNAVAILABLE", "The database is busy; retry the request");
  return null;
}

/**
 * Yoga's maskError: our errors and the caller's request errors pass with our codes, known database
 * failures become ours, anything else becomes INTERNAL_SERVER_ERROR (its cause is logged, with
 * the request id, by useUnexpectedErrorLog).
 */
export function maskError(error: unknown): Error {
  const original = error instanceof GraphQLError ? (error.originalError ?? error) : error;
  if (original instanceof AppError) return error as GraphQLError;
  // Request errors (syntax, validation, variable values) carry no path: they are the caller's.
  if (error instanceof GraphQLError && !error.path && (!error.originalError || error.originalError instanceof GraphQLError)) {
    const status = (error.extensions?.http as { status?: number } | undefined)?.status;
    const byStatus = status === 405 ? "METHOD_NOT_ALLOWED" : status === 403 ? "FORBIDDEN" : undefined;
    const own = isErrorCode(error.extensions?.code) ? error.extensions.code : undefined;
    const code = own ?? byStatus ?? yogaCodes[String(error.extensions?.code)] ?? "BAD_USER_INPUT";
    if (code === error.extensions?.code) return error;
    return new GraphQLError(error.message, {
      nodes: error.nodes,
      source: error.source,
      positions: error.positions,
      extensions: { ...error.extensions, code },
    });
  }
  const translated = translateDatabaseError(original);
  const path = error instanceof GraphQLError ? error.path : undefined;
  if (translated) {
    const answer = new GraphQLError(translated.message, { path, extensions: translated.extensions });
    if (translated.code === "SERVICE_UNAVAILABLE") hiddenCauses.set(answer, original);
    else expectedCauses.set(answer, { cause: original, code: translated.code });
    return answer;
  }
  const masked = new GraphQLError("Internal server error", { path, extensions: { code: "INTERNAL_SERVER_ERROR" } });
  hiddenCauses.set(masked, original);
  return masked;
}

/** The causes of a result's internal errors and of the database refusals it answers as the caller's. */
function causesIn(errors: readonly unknown[]): Cause[] {
  return errors.flatMap((error): Cause[] => {
    if (!(error instanceof GraphQLError)) return [{ cause: error }];
    if (hiddenCauses.has(error)) return [{ cause: hiddenCauses.get(error) }];
    const expected = expectedCauses.get(error);
    return expected ? [{ cause: expected.cause, expected: expected.code }] : [];
  });
}

/**
 * A result outside Yoga's pipeline (a live stream's event, executed once for many streams): its
 * errors masked as maskError does, and each hidden cause logged once.
 */
export function maskResult<T extends { errors?: readonly unknown[] }>(logger: Logger, result: T, requestId: string): T {
  if (!result.errors?.length) return result;
  const errors = result.errors.map((error) => maskError(error));
  for (const cause of causesIn(errors)) logCause(logger, cause, requestId);
  return { ...result, errors };
}

/** Sofa's error answer (errors already masked); the response remembers what it hides. */
export function restErrorsResponse(errors: readonly unknown[]): Response {
  const response = graphqlErrorsResponse(errors);
  const causes = causesIn(errors);
  if (causes.length) causesOfResponse.set(response, causes);
  return response;
}

/**
 * One line for what an error answer hides: a database outage is expected (warn), a refusal the
 * caller caused (a unique violation lost in a race, NUL in an id) is the caller's (info, with what
 * the database said, not its full message), anything else is a defect (error).
 */
function logCause(logger: Logger, { cause, expected }: Cause, requestId: string) {
  if (expected) {
    const known = cause instanceof Prisma.PrismaClientKnownRequestError ? cause : undefined;
    logger.info(
      { requestId, code: expected, databaseCode: known?.code ?? (cause as { code?: string })?.code, target: known?.meta?.target },
      "a database refusal answered as the caller's",
    );
  } else if (isDatabaseUnavailable(cause)) logger.warn({ err: cause, requestId }, "database unavailable");
  else logger.error({ err: cause, requestId }, "unexpected error");
}

/**
 * Logs the cause of every internal error once, with the request id, where the request is known:
 * when Yoga processes a GraphQL result (also each result of a subscription), and when a REST
 * answer leaves.
 */
export function useUnexpectedErrorLog(logger: Logger): Plugin {
  const log = (serverContext: object, causes: Cause[]) => {
    for (const cause of causes) logCause(logger, cause, requestIdOf(serverContext));
  };
  const logResult = (serverContext: object, result: { errors?: readonly unknown[] }) => {
    if (result.errors?.length) log(serverContext, causesIn(result.errors));
  };
  return {
    onResultProcess({ result, setResult, serverContext }) {
      if (isAsyncIterable(result)) {
        setResult(
          mapAsyncIterator(result, (next) => {
            logResult(serverContext, next);
            return next;
          }),
        );
        return;
      }
      for (const single of Array.isArray(result) ? result : [result]) logResult(serverContext, single);
    },
    onResponse({ serverContext, response }) {
      const causes = causesOfResponse.get(response);
      if (causes) log(serverContext, causes);
    },
  };
}

const isThenable = (value: unknown): value is PromiseLike<unknown> =>
  typeof (value as { then?: unknown } | undefined)?.then === "function";

/** Our answer to an error thrown outside any GraphQL execution, and its log line. */
function answerToThrown(error: unknown, pathname: string, logger: Logger, requestId: string): Response {
  if (error instanceof AppError) return transportErrorResponse(pathname, error.code, error.message);
  logCause(logger, { cause: error }, requestId);
  const own = isDatabaseUnavailable(error)
    ? databaseUnavailable()
    : new AppError("INTERNAL_SERVER_ERROR", "Internal server error");
  return transportErrorResponse(pathname, own.code, own.message);
}

/**
 * The safety net under every plugin. An error thrown by a plugin's onRequest or onResponse, that
 * is outside any GraphQL execution (the REST guard's credential lookup, say), would reach the HTTP
 * server adapter, which answers 500 with the error's stack as plain text and skips every
 * onResponse hook. Here it becomes our JSON error (503 when the database is unavailable), and the
 * request id, the request log and the metrics see it as they see any answer.
 */
export function withSafetyNet<T extends object>(logger: Logger, plugins: T[]): T[] {
  return (plugins as Plugin[]).map((plugin) => {
    const { onRequest, onResponse } = plugin;
    if (!onRequest && !onResponse) return plugin;
    const guarded: Plugin = { ...plugin };
    // Synchronous hooks stay synchronous: a promise per hook per request costs CPU on every request.
    if (onRequest) {
      guarded.onRequest = (payload) => {
        const answer = (error: unknown) =>
          payload.endResponse(answerToThrown(error, payload.url.pathname, logger, requestIdOf(payload.serverContext)));
        try {
          const result = onRequest.call(plugin, payload);
          return isThenable(result) ? Promise.resolve(result).catch(answer) : result;
        } catch (error) {
          answer(error);
        }
      };
    }
    if (onResponse) {
      guarded.onResponse = (payload) => {
        const answer = (error: unknown) => {
          const pathname = new URL(payload.request.url, "http://localhost").pathname;
          payload.setResponse(answerToThrown(error, pathname, logger, requestIdOf(payload.serverContext)));
        };
        try {
          const result = onResponse.call(plugin, payload);
          return isThenable(result) ? Promise.resolve(result).catch(answer) : result;
        } catch (error) {
          answer(error);
        }
      };
    }
    return guarded;
  }) as T[];
}
