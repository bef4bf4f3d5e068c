import type { Logger } from "pino";
import type { RequestAuth } from "../auth/actor.js";
import type { Loaders } from "../modules/request-loaders.js";
import type { Services } from "../modules/services.js";

export type Context = RequestAuth & {
  services: Services;
  logger: Logger;
  /** This request's DataLoaders, restricted to the caller's organization. */
  loaders: Loaders;
};
