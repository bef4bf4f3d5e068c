/**
 * @generated SignedSource<<a0c48ec06c2556ae3d54aa61165237b5>>
 * @lightSyntaxTransform
 */

/* tslint:disable */
/* eslint-disable */
// @ts-nocheck

import { ConcreteRequest } from 'relay-runtime';
export type operationsUpdateCommentMutation$variables = {
  content: string;
  id: string;
};
export type operationsUpdateCommentMutation$data = {
  readonly updateComment: {
    readonly content: string;
    readonly id: string;
  };
};
export type operationsUpdateCommentMutation = {
  response: operationsUpdateCommentMutation$data;
  variables: operationsUpdateCommentMutation$variables;
};

const node: ConcreteRequest = (function(){
var v0 = {
  "defaultValue": null,
  "kind": "LocalArgument",
  "name": "content"
},
v1 = {
  "defaultValue": null,
  "kind": "LocalArgument",
  "name": "id"
},
v2 = [
  {
    "alias": null,
    "args": [
      {
        "kind": "Variable",
        "name": "content",
        "variableName": "content"
      },
      {
        "kind": "Variable",
        "name": "id",
        "variableName": "id"
      }
    ],
    "concreteType": "Comment",
    "kind": "LinkedField",
    "name": "updateComment",
    "plural": false,
    "selections": [
      {
        "alias": null,
        "args": null,
        "kind": "ScalarField",
        "name": "id",
        "storageKey": null
      },
      {
        "alias": null,
        "args": null,
        "kind": "ScalarField",
        "name": "content",
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
      (v1/*:: as any*/)
    ],
    "kind": "Fragment",
    "metadata": null,
    "name": "operationsUpdateCommentMutation",
    "selections": (v2/*:: as any*/),
    "type": "Mutation",
    "abstractKey": null
  },
  "kind": "Request",
  "operation": {
    "argumentDefinitions": [
      (v1/*:: as any*/),
      (v0/*:: as any*/)
    ],
    "kind": "Operation",
    "name": "operationsUpdateCommentMutation",
    "selections": (v2/*:: as any*/)
  },
  "params": {
    "cacheID": "0d31ac1c95bf08bd5615d9d6f65fb0cf",
    "id": null,
    "metadata": {},
    "name": "operationsUpdateCommentMutation",
    "operationKind": "mutation",
    "text": "mutation operationsUpdateCommentMutation(\n  $id: ID!\n  $content: String!\n) {\n  updateComment(id: $id, content: $content) {\n    id\n    content\n  }\n}\n"
  }
};
})();

(node as any).hash = "c3b79e25ae4c5bc2fd8f89ea3aee01e9";

export default node;
