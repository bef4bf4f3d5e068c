import { listLoader } from "../../graphql/lists.js";
import { type RecordQuery, recordLoader } from "../../graphql/loaders.js";
import type { Db } from "../../platform/db/database.js";
import { recordsByKey } from "../../platform/db/graph-reader.js";
import { type CommentWithAuthor, commentList, withAuthor } from "./comments.service.js";

/** Comments of many entities for one request of one organization. */
export function createCommentLoaders(db: Db, organizationId: string) {
  // With its author: the GraphQL type Comment includes it in every query plugin-prisma gives, and
  // a load without one (node, nodes) reads it too.
  const read = recordsByKey<CommentWithAuthor>("Comment", db, organizationId);
  const find = (ids: string[], query: RecordQuery) => read(ids, query ?? withAuthor);
  return {
    byId: recordLoader(find),
    /** Pages of comments of many records, each with its own limit, cursor, filter and order, with their counts. */
    pages: listLoader(db, organizationId, commentList, find),
  };
}

export type CommentLoaders = ReturnType<typeof createCommentLoaders>;
