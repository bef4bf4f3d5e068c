/**
 * @generated SignedSource<<d15118697098466905d390efeb00aaa5>>
 * @lightSyntaxTransform
 */

/* tslint:disable */
/* eslint-disable */
// @ts-nocheck

import { ConcreteRequest } from 'relay-runtime';
export type operationsCommentAddedSubscription$variables = {
  id: string;
};
export type operationsCommentAddedSubscription$data = {
  readonly commentAdded: {
    readonly content: string;
    readonly id: string;
  };
};
export type operationsCommentAddedSubscription = {
  response: operationsCommentAddedSubscription$data;
  variables: operationsCommentAddedSubscription$variables;
};

const node: ConcreteRequest = (function(){
var v0 = [
  {
    "defaultValue": null,
    "kind": "LocalArgument",
    "name": "id"
  }
],
v1 = [
  {
    "alias": null,
    "args": [
      {
        "kind": "Variable",
        "name": "entityId",
        "variableName": "id"
      },
      {
        "kind": "Literal",
        "name": "entityType",
        "value": "task"
      }
    ],
    "concreteType": "Comment",
    "kind": "LinkedField",
    "name": "commentAdded",
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
    "argumentDefinitions": (v0/*:: as any*/),
    "kind": "Fragment",
    "metadata": null,
    "name": "operationsCommentAddedSubscription",
    "selections": (v1/*:: as any*/),
    "type": "Subscription",
    "abstractKey": null
  },
  "kind": "Request",
  "operation": {
    "argumentDefinitions": (v0/*:: as any*/),
    "kind": "Operation",
    "name": "operationsCommentAddedSubscription",
    "selections": (v1/*:: as any*/)
  },
  "params": {
    "cacheID": "a03f9221a8b70a141300b9fe0a638c8d",
    "id": null,
    "metadata": {},
    "name": "operationsCommentAddedSubscription",
    "operationKind": "subscription",
    "text": "subscription operationsCommentAddedSubscription(\n  $id: ID!\n) {\n  commentAdded(entityId: $id, entityType: task) {\n    id\n    content\n  }\n}\n"
  }
};
})();

(node as any).hash = "b16ea989ca53ad32b4efe259d7235e0c";

export default node;
