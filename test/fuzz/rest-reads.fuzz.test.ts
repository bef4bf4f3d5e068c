// Every REST read (GET), the OpenAPI document against the route table, any method on any path (rest-fuzz.ts).
import { fuzzRest } from "./rest-fuzz.js";

await fuzzRest("reads");
