// Every root Query field over GraphQL, the transport cases and the coverage check (graphql-fuzz.ts).
import { fuzzGraphQL } from "./graphql-fuzz.js";

await fuzzGraphQL("query");
