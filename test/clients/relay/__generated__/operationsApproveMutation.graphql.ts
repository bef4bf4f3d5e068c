/**
 * @generated SignedSource<<f7bde15135e9d0f2604c12f96b16a3e6>>
 * @lightSyntaxTransform
 */

/* tslint:disable */
/* eslint-disable */
// @ts-nocheck

import { ConcreteRequest } from 'relay-runtime';
export type PolicyStatus = "draft" | "needs_review" | "published" | "%future added value";
export type PolicyVersionStatus = "draft" | "in_review" | "published" | "%future added value";
export type operationsApproveMutation$variables = {
  id: string;
  versionId: string;
};
export type operationsApproveMutation$data = {
  readonly approvePolicyVersion: {
    readonly id: string;
    readonly policy: {
      readonly currentVersion: {
        readonly id: string;
        readonly status: PolicyVersionStatus;
        readonly version: number;
      } | null | undefined;
      readonly currentVersionId: string | null | undefined;
      readonly id: string;
      readonly status: PolicyStatus;
    };
    readonly status: PolicyVersionStatus;
  };
};
export type operationsApproveMutation = {
  response: operationsApproveMutation$data;
  variables: operationsApproveMutation$variables;
};

const node: ConcreteRequest = (function(){
var v0 = [
  {
    "defaultValue": null,
    "kind": "LocalArgument",
    "name": "id"
  },
  {
    "defaultValue": null,
    "kind": "LocalArgument",
    "name": "versionId"
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
      },
      {
        "kind": "Variable",
        "name": "versionId",
        "variableName": "versionId"
      }
    ],
    "concreteType": "PolicyVersion",
    "kind": "LinkedField",
    "name": "approvePolicyVersion",
    "plural": false,
    "selections": [
      (v1/*:: as any*/),
      (v2/*:: as any*/),
      {
        "alias": null,
        "args": null,
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
    ],
    "storageKey": null
  }
];
return {
  "fragment": {
    "argumentDefinitions": (v0/*:: as any*/),
    "kind": "Fragment",
    "metadata": null,
    "name": "operationsApproveMutation",
    "selections": (v3/*:: as any*/),
    "type": "Mutation",
    "abstractKey": null
  },
  "kind": "Request",
  "operation": {
    "argumentDefinitions": (v0/*:: as any*/),
    "kind": "Operation",
    "name": "operationsApproveMutation",
    "selections": (v3/*:: as any*/)
  },
  "params": {
    "cacheID": "1927c0b3fa28dec42801b2c78c609e0f",
    "id": null,
    "metadata": {},
    "name": "operationsApproveMutation",
    "operationKind": "mutation",
    "text": "mutation operationsApproveMutation(\n  $id: ID!\n  $versionId: ID!\n) {\n  approvePolicyVersion(id: $id, versionId: $versionId) {\n    id\n    status\n    policy {\n      id\n      status\n      currentVersionId\n      currentVersion {\n        id\n        version\n        status\n      }\n    }\n  }\n}\n"
  }
};
})();

(node as any).hash = "be26487c6288466280fd4bcfdcfd74f4";

export default node;
