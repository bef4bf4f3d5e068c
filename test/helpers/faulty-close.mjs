// Preloaded (`node --import`) into a server process by test/e2e/shutdown.test.ts, never by the
// service: makes the embedded database's close fail or hang, as FAULTY_DATABASE_CLOSE says, so a
// test can watch shutdown meet a clean-up step that rejects or never ends. It patches the real
// PGlite class the bundled server imports; no code of the service reads that variable.
import { PGlite } from "@electric-sql/pglite";

const fault = process.env.FAULTY_DATABASE_CLOSE;
if (fault === "fail") {
  PGlite.prototype.close = async () => {
    throw new Error("injected: the database failed to close");
  };
} else if (fault === "hang") {
  PGlite.prototype.close = () => new Promise(() => {});
} else {
  throw new Error(`faulty-close.mjs: FAULTY_DATABASE_CLOSE must be fail or hang, not ${fault}`);
}
