// Spectral's rulesets for the served OpenAPI document (npm run lint:openapi): its OpenAPI rules and
// the OWASP API Security Top 10 (2023). Imported from node_modules: a YAML `extends` by name may
// fetch the rulesets from the network.
import owasp from "@stoplight/spectral-owasp-ruleset";
import { oas } from "@stoplight/spectral-rulesets";

/** What a caller sends (parameters, request bodies) and every header, on the resolved document. */
const sentOrHeaders = (filter) => [
  `$.paths[*][*].parameters..${filter}`,
  `$.paths[*][*].requestBody..${filter}`,
  `$.components.parameters..${filter}`,
  `$.components.headers..${filter}`,
  `$.paths[*][*].responses[*].headers..${filter}`,
  `$.components.responses[*].headers..${filter}`,
];
const ofType = (type) => [
  `[?(@ && @.type=="${type}")]`,
  `[?(@ && @.type && @.type.constructor.name === "Array" && @.type.includes("${type}"))]`,
];
/** The OWASP rule `name`, on what a caller sends and on the headers only. */
const onInputsAndHeaders = (name, type) => ({
  ...owasp.rules[name],
  given: ofType(type).flatMap(sentOrHeaders),
});

export default {
  extends: [
    [oas, "recommended"],
    [owasp, "all"],
  ],
  rules: {
    // Off for the answers' bodies only: their strings, integers and lists are what the service
    // writes (ids, names, timestamps, pages of at most 100 items), bounded where they come in;
    // the `*-inputs` rules below keep the same checks, as errors, on everything a caller sends and
    // on every header.
    "owasp:api4:2023-string-limit": "off",
    "owasp:api4:2023-integer-limit": "off",
    "owasp:api4:2023-array-limit": "off",
    "string-limit-inputs": onInputsAndHeaders("owasp:api4:2023-string-limit", "string"),
    "integer-limit-inputs": onInputsAndHeaders("owasp:api4:2023-integer-limit", "integer"),
    "array-limit-inputs": onInputsAndHeaders("owasp:api4:2023-array-limit", "array"),
    // The rule looks for CORS headers under every key named `headers`; on the responses' header
    // lists only, so that a schema property of that name (an upload's headers to send) is not one.
    "owasp:api8:2023-define-cors-origin": {
      ...owasp.rules["owasp:api8:2023-define-cors-origin"],
      given: ["$.paths[*][*].responses[*].headers", "$.components.responses[*].headers"],
    },
  },
};
