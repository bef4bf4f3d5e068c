import type { Comment } from "../../generated/prisma/client.js";
import { listLoader } from "../../graphql/lists.js";
import { recordLoader } from "../../graphql/loaders.js";
import type { Db } from "../../platform/db/database.js";
import { recordsByKey } from "../../platform/db/graph-reader.js";
import { commentList } from "./comments.service.js";

/** Comments of many entities for one request of one organization. */
export function createCommentLoaders(db: Db, organizationId: string) {
  const find = recordsByKey<Comment>("Comment", db, organizationId);
  return {
    byId: recordLoader(find),
    /** Pages of comments of many records, each with its own limit, cursor, filter and order, with their counts. */
    pages: listLoader(db, organizationId, commentList, find),
  };
}

export type CommentLoaders = ReturnType<typeof createCommentLoaders>;
