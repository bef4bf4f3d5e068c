import { GraphQLError } from "graphql";

export type ErrorDetail = { path: string; message: string };

/** Stable error codes, each with the HTTP status REST answers with. */
export const errorStatus = {
  BAD_USER_INPUT: 400,
  MALFORMED_JSON: 400,
  GRAPHQL_VALIDATION_FAILED: 400,
  GRAPHQL_PARSE_FAILED: 400,
  QUERY_TOO_COMPLEX: 400,
  PERSISTED_QUERY_NOT_FOUND: 400,
  PERSISTED_QUERY_REQUIRED: 400,
  UNAUTHENTICATED: 401,
  FORBIDDEN: 403,
  NOT_FOUND: 404,
  METHOD_NOT_ALLOWED: 405,
  CONFLICT: 409,
  PAYLOAD_TOO_LARGE: 413,
  UNSUPPORTED_MEDIA_TYPE: 415,
  IDEMPOTENCY_KEY_REUSED: 422,
  RATE_LIMITED: 429,
  TOO_MANY_STREAMS: 429,
  INTERNAL_SERVER_ERROR: 500,
  BAD_GATEWAY: 502,
  SERVICE_UNAVAILABLE: 503,
} as const;

export type ErrorCode = keyof typeof errorStatus;

/** An expected failure: its message and code reach the client unmasked on both transports. */
export class AppError extends GraphQLError {
  readonly code: ErrorCode;
  readonly details: ErrorDetail[] | undefined;

  constructor(code: ErrorCode, message: string, details?: ErrorDetail[]) {
    super(message, { extensions: details ? { code, details } : { code } });
    this.code = code;
    this.details = details;
  }
}

export class BadUserInputError extends AppError {
  constructor(message: string, details?: ErrorDetail[]) {
    super("BAD_USER_INPUT", message, details);
  }
}

export class UnauthenticatedError extends AppError {
  constructor(message = "A valid credential is required: send X-API-Key, a bearer token or a session cookie") {
    super("UNAUTHENTICATED", message);
  }
}

export class ForbiddenError extends AppError {
  constructor(message: string) {
    super("FORBIDDEN", message);
  }
}

export class NotFoundError extends AppError {
  constructor(what: string, id: string) {
    super("NOT_FOUND", `${what} ${JSON.stringify(id)} was not found`);
  }
}

export class ConflictError extends AppError {
  constructor(message: string) {
    super("CONFLICT", message);
  }
}

/** A new live stream past the open streams allowed per credential or per organization. */
export class TooManyStreamsError extends AppError {
  constructor(message: string) {
    super("TOO_MANY_STREAMS", message);
  }
}

export function isErrorCode(value: unknown): value is ErrorCode {
  return typeof value === "string" && value in errorStatus;
}
