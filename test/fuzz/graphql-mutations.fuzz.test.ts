// Every root Mutation field over GraphQL (graphql-fuzz.ts).
import { fuzzGraphQL } from "./graphql-fuzz.js";

await fuzzGraphQL("mutation");
