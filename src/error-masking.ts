import { GraphQLError } from "graphql";
import { isAsyncIterable, mapAsyncIterator, type Plugin } from "graphql-yoga";
import type { Logger } from "pino";
import { AppError, BadUserInputError, ConflictError, type ErrorCode, isErrorCode, NotFoundError } from "./errors.js";
import { Prisma } from "./generated/prisma/client.js";
import { requestIdOf } from "./request-context.js";
import { graphqlErrorsResponse } from "./rest/error-response.js";

/** Yoga's own request error codes, renamed to ours so both transports agree. */
const yogaCodes: Record<string, ErrorCode> = { REQUEST_ENTITY_TOO_LARGE: "PAYLOAD_TOO_LARGE" };

/** What each "Internal server error" hides, for the log line of its request. */
const hiddenCauses = new WeakMap<GraphQLError, unknown>();
/** The same for a REST answer: the causes of the errors it reports. */
const causesOfResponse = new WeakMap<Response, unknown[]>();

/** Known database failures as our errors; null for anything unexpected. */
function translateDatabaseError(error: unknown): AppError | null {
  if (!(error instanceof Prisma.PrismaClientKnownRequestError)) return null;
  const cause = (error.meta?.driverAdapterError as { cause?: { originalCode?: string } } | undefined)?.cause;
  // PostgreSQL text cannot hold NUL (0x00) or invalid UTF-8: that is the caller's input.
  if (cause?.originalCode === "22021" || cause?.originalCode === "22P05") {
    return new BadUserInputError("Text must not contain NUL characters (\\u0000)");
  }
  if (error.code === "P2002") return new ConflictError("A record with the same unique values already exists");
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
  if (translated) return new GraphQLError(translated.message, { path, extensions: translated.extensions });
  const masked = new GraphQLError("Internal server error", { path, extensions: { code: "INTERNAL_SERVER_ERROR" } });
  hiddenCauses.set(masked, original);
  return masked;
}

/** The causes of a result's internal errors. */
function causesIn(errors: readonly unknown[]): unknown[] {
  return errors.flatMap((error) => {
    if (!(error instanceof GraphQLError)) return [error];
    return hiddenCauses.has(error) ? [hiddenCauses.get(error)] : [];
  });
}

/** Sofa's error answer (errors already masked); the response remembers what it hides. */
export function restErrorsResponse(errors: readonly unknown[]): Response {
  const response = graphqlErrorsResponse(errors);
  const causes = causesIn(errors);
  if (causes.length) causesOfResponse.set(response, causes);
  return response;
}

/**
 * Logs the cause of every internal error once, with the request id, where the request is known:
 * when Yoga processes a GraphQL result (also each result of a subscription), and when a REST
 * answer leaves.
 */
export function useUnexpectedErrorLog(logger: Logger): Plugin {
  const log = (serverContext: object, causes: unknown[]) => {
    for (const cause of causes) logger.error({ err: cause, requestId: requestIdOf(serverContext) }, "unexpected error");
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
