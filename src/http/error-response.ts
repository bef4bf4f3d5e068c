import { STATUS_CODES } from "node:http";
import { GraphQLError } from "graphql";
import { type AppError, type ErrorCode, type ErrorDetail, errorStatus, isErrorCode } from "../platform/errors.js";

export type ErrorBody = { statusCode: number; error: string; message: string; code: ErrorCode; details?: ErrorDetail[] };

export function errorBody(code: ErrorCode, message: string, details?: ErrorDetail[]): ErrorBody {
  const statusCode = errorStatus[code];
  return { statusCode, error: STATUS_CODES[statusCode] ?? "Error", message, code, ...(details?.length ? { details } : {}) };
}

/** How long a caller should wait before retrying a request answered 503 (the database restarting, say). */
export const RETRY_AFTER_SECONDS = 2;
const retryHeaders = (code: ErrorCode): Record<string, string> =>
  code === "SERVICE_UNAVAILABLE" ? { "retry-after": String(RETRY_AFTER_SECONDS) } : {};

export function errorResponse(
  code: ErrorCode,
  message: string,
  details?: ErrorDetail[],
  headers?: Record<string, string>,
): Response {
  const body = errorBody(code, message, details);
  return new Response(JSON.stringify(body), {
    status: body.statusCode,
    headers: { "content-type": "application/json; charset=utf-8", ...retryHeaders(code), ...headers },
  });
}

/**
 * An error answered before any resolver runs: our envelope under /v1, a GraphQL error response
 * (with the same code) elsewhere.
 */
export function transportErrorResponse(
  pathname: string,
  code: ErrorCode,
  message: string,
  headers?: Record<string, string>,
): Response {
  if (pathname === "/v1" || pathname.startsWith("/v1/")) return errorResponse(code, message, undefined, headers);
  return new Response(JSON.stringify({ errors: [{ message, extensions: { code } }] }), {
    status: errorStatus[code],
    headers: { "content-type": "application/json; charset=utf-8", ...retryHeaders(code), ...headers },
  });
}

export function appErrorResponse(error: AppError, headers?: Record<string, string>): Response {
  return errorResponse(error.code, error.message, error.details, headers);
}

/**
 * The REST answer for a GraphQL result with errors (already masked). Errors without a code come
 * from graphql-js itself (variable coercion, Sofa's own parsing): bad input.
 */
export function graphqlErrorsResponse(errors: readonly unknown[]): Response {
  const coded = errors.find((e): e is GraphQLError => e instanceof GraphQLError && isErrorCode(e.extensions?.code));
  if (coded) {
    const code = coded.extensions.code as ErrorCode;
    const details = Array.isArray(coded.extensions.details) ? (coded.extensions.details as ErrorDetail[]) : undefined;
    return errorResponse(code, coded.message, details);
  }
  const inputErrors = errors.filter((e): e is GraphQLError => e instanceof GraphQLError && !e.originalError);
  if (inputErrors.length === errors.length) {
    const details = inputErrors.map((e) => ({ path: "", message: e.message }));
    return errorResponse("BAD_USER_INPUT", inputErrors.map((e) => e.message).join("; "), details);
  }
  return errorResponse("INTERNAL_SERVER_ERROR", "Internal server error");
}
