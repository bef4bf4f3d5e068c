/**
 * @generated SignedSource<<07f8aec4428521148f893abc12f6c96c>>
 * @lightSyntaxTransform
 */

/* tslint:disable */
/* eslint-disable */
// @ts-nocheck

import { ConcreteRequest } from 'relay-runtime';
export type PolicyStatus = "draft" | "needs_review" | "published" | "%future added value";
export type PolicyVersionStatus = "draft" | "in_review" | "published" | "%future added value";
export type operationsPolicyQuery$variables = {
  id: string;
};
export type operationsPolicyQuery$data = {
  readonly policy: {
    readonly currentVersion: {
      readonly id: string;
      readonly status: PolicyVersionStatus;
      readonly version: number;
    } | null | undefined;
    readonly currentVersionId: string | null | undefined;
    readonly id: string;
    readonly status: PolicyStatus;
  } | null | undefined;
};
export type operationsPolicyQuery = {
  response: operationsPolicyQuery$data;
  variables: operationsPolicyQuery$variables;
};

const node: ConcreteRequest = (function(){
var v0 = [
  {
    "defaultValue": null,
    "kind": "LocalArgument",
    "name": "id"
  }
],
v1 = {
  "alias": null,
  "args": null,
  "kind": "ScalarField",
  "name": "id",
  "storageKey": null
},
v2 = {
  "alias": null,
  "args": null,
  "kind": "ScalarField",
  "name": "status",
  "storageKey": null
},
v3 = [
  {
    "alias": null,
    "args": [
      {
        "kind": "Variable",
        "name": "id",
        "variableName": "id"
      }
    ],
    "concreteType": "Policy",
    "kind": "LinkedField",
    "name": "policy",
    "plural": false,
    "selections": [
      (v1/*:: as any*/),
      (v2/*:: as any*/),
      {
        "alias": null,
        "args": null,
        "kind": "ScalarField",
        "name": "currentVersionId",
        "storageKey": null
      },
      {
        "alias": null,
        "args": null,
        "concreteType": "PolicyVersion",
        "kind": "LinkedField",
        "name": "currentVersion",
        "plural": false,
        "selections": [
          (v1/*:: as any*/),
          {
            "alias": null,
            "args": null,
            "kind": "ScalarField",
            "name": "version",
            "storageKey": null
          },
          (v2/*:: as any*/)
        ],
        "storageKey": null
      }
    ],
    "storageKey": null
  }
];
return {
  "fragment": {
    "argumentDefinitions": (v0/*:: as any*/),
    "kind": "Fragment",
    "metadata": null,
    "name": "operationsPolicyQuery",
    "selections": (v3/*:: as any*/),
    "type": "Query",
    "abstractKey": null
  },
  "kind": "Request",
  "operation": {
    "argumentDefinitions": (v0/*:: as any*/),
    "kind": "Operation",
    "name": "operationsPolicyQuery",
    "selections": (v3/*:: as any*/)
  },
  "params": {
    "cacheID": "d794267f0354fe7246bf984988e80c75",
    "id": null,
    "metadata": {},
    "name": "operationsPolicyQuery",
    "operationKind": "query",
    "text": "query operationsPolicyQuery(\n  $id: ID!\n) {\n  policy(id: $id) {\n    id\n    status\n    currentVersionId\n    currentVersion {\n      id\n      version\n      status\n    }\n  }\n}\n"
  }
};
})();

(node as any).hash = "bf7cc41a96bad416a30e360d1197f697";

export default node;
