import { lexicographicSortSchema } from "graphql";
import { builder } from "./graphql/builder.js";
import { boundInputs } from "./graphql/input-bounds.js";
import "./modules/audit/audit.schema.js";
import "./modules/comments/comments.schema.js";
import "./modules/members/members.schema.js";
import "./modules/notifications/notifications.schema.js";
import "./modules/policies/policies.schema.js";
import "./modules/risks/risks.schema.js";
import "./modules/task-items/task-items.schema.js";
import "./modules/tasks/tasks.schema.js";
import "./modules/vendors/vendors.schema.js";
import "./modules/viewer/viewer.schema.js";
import "./modules/webhooks/webhooks.schema.js";
import "./graphql/node.schema.js";
import { freshLoadersPerChange } from "./modules/request-loaders.js";

export const schema = freshLoadersPerChange(boundInputs(lexicographicSortSchema(builder.toSchema())));
