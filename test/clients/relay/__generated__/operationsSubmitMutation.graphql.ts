/**
 * @generated SignedSource<<fa1178588bb4cd5587c3716d9fa7433a>>
 * @lightSyntaxTransform
 */

/* tslint:disable */
/* eslint-disable */
// @ts-nocheck

import { ConcreteRequest } from 'relay-runtime';
export type PolicyStatus = "draft" | "needs_review" | "published" | "%future added value";
export type PolicyVersionStatus = "draft" | "in_review" | "published" | "%future added value";
export type operationsSubmitMutation$variables = {
  approverId: string;
  id: string;
  versionId: string;
};
export type operationsSubmitMutation$data = {
  readonly submitPolicyVersion: {
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
export type operationsSubmitMutation = {
  response: operationsSubmitMutation$data;
  variables: operationsSubmitMutation$variables;
};

const node: ConcreteRequest = (function(){
var v0 = {
  "defaultValue": null,
  "kind": "LocalArgument",
  "name": "approverId"
},
v1 = {
  "defaultValue": null,
  "kind": "LocalArgument",
  "name": "id"
},
v2 = {
  "defaultValue": null,
  "kind": "LocalArgument",
  "name": "versionId"
},
v3 = {
  "alias": null,
  "args": null,
  "kind": "ScalarField",
  "name": "id",
  "storageKey": null
},
v4 = {
  "alias": null,
  "args": null,
  "kind": "ScalarField",
  "name": "status",
  "storageKey": null
},
v5 = [
  {
    "alias": null,
    "args": [
      {
        "kind": "Variable",
        "name": "approverId",
        "variableName": "approverId"
      },
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
    "name": "submitPolicyVersion",
    "plural": false,
    "selections": [
      (v3/*:: as any*/),
      (v4/*:: as any*/),
      {
        "alias": null,
        "args": null,
        "concreteType": "Policy",
        "kind": "LinkedField",
        "name": "policy",
        "plural": false,
        "selections": [
          (v3/*:: as any*/),
          (v4/*:: as any*/),
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
              (v3/*:: as any*/),
              {
                "alias": null,
                "args": null,
                "kind": "ScalarField",
                "name": "version",
                "storageKey": null
              },
              (v4/*:: as any*/)
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
    "argumentDefinitions": [
      (v0/*:: as any*/),
      (v1/*:: as any*/),
      (v2/*:: as any*/)
    ],
    "kind": "Fragment",
    "metadata": null,
    "name": "operationsSubmitMutation",
    "selections": (v5/*:: as any*/),
    "type": "Mutation",
    "abstractKey": null
  },
  "kind": "Request",
  "operation": {
    "argumentDefinitions": [
      (v1/*:: as any*/),
      (v2/*:: as any*/),
      (v0/*:: as any*/)
    ],
    "kind": "Operation",
    "name": "operationsSubmitMutation",
    "selections": (v5/*:: as any*/)
  },
  "params": {
    "cacheID": "36771d648df79c606c1de5898dbe4b4f",
    "id": null,
    "metadata": {},
    "name": "operationsSubmitMutation",
    "operationKind": "mutation",
    "text": "mutation operationsSubmitMutation(\n  $id: ID!\n  $versionId: ID!\n  $approverId: ID!\n) {\n  submitPolicyVersion(id: $id, versionId: $versionId, approverId: $approverId) {\n    id\n    status\n    policy {\n      id\n      status\n      currentVersionId\n      currentVersion {\n        id\n        version\n        status\n      }\n    }\n  }\n}\n"
  }
};
})();

(node as any).hash = "23fd4a228ec48003daaac6c2f155847d";

export default node;
