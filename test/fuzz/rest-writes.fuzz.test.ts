// Every REST write: POST, PATCH, PUT and DELETE (rest-fuzz.ts).
import { fuzzRest } from "./rest-fuzz.js";

await fuzzRest("writes");
