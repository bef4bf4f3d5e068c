import { pg_trgm } from "@electric-sql/pglite/contrib/pg_trgm";

/**
 * The extensions the migrations create (`pg_trgm` for search). Every PGlite that opens this
 * service's data, or applies its migrations, must be created with them.
 */
export const pgliteExtensions = { pg_trgm };
