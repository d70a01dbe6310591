// The route table: every view's address, and the navigation link each one marks.
import assert from "node:assert/strict";
import { test } from "node:test";

import { routeOf } from "../../console/routes.js";

const ID = "0b8e1c52-7d3f-4f5e-9a1b-2c3d4e5f6a7b";

function named(hash) {
  const route = routeOf(hash);
  return route && { name: route.name, navigation: route.navigation, captured: route.captured };
}

test("each view's address names its route and what the route needs", () => {
  assert.deepEqual(named(""), { name: "upload", navigation: "upload", captured: [] });
  assert.deepEqual(named("#/"), { name: "upload", navigation: "upload", captured: [] });
  assert.deepEqual(named("#/upload"), { name: "upload", navigation: "upload", captured: [] });
  assert.deepEqual(named("#/files"), { name: "files", navigation: "files", captured: [] });
  assert.deepEqual(named(`#/files/${ID}`), { name: "file", navigation: "files", captured: [ID] });
  assert.deepEqual(named("#/search"), { name: "search", navigation: "search", captured: [] });
  assert.deepEqual(named(`#/answers/${ID}`), { name: "answer", navigation: "search", captured: [ID] });
  assert.deepEqual(named(`#/answers/${ID}/citations/2`), {
    name: "answer citation",
    navigation: "search",
    captured: [ID, "2"],
  });
  assert.deepEqual(named(`#/cite/${ID}`), { name: "kept citation", navigation: "search", captured: [ID] });
  assert.deepEqual(named("#/artifacts"), { name: "artifacts", navigation: "artifacts", captured: [] });
  assert.deepEqual(named(`#/artifacts/${ID}`), { name: "artifact", navigation: "artifacts", captured: [ID] });
  assert.deepEqual(named("#/webhooks"), { name: "webhooks", navigation: "webhooks", captured: [] });
  assert.deepEqual(named(`#/webhooks/${ID}`), { name: "webhook", navigation: "webhooks", captured: [ID] });
});

test("the query string is the view's params; empty segments do not count", () => {
  const route = routeOf(`#/files/${ID}?version=${ID}`);
  assert.equal(route.name, "file");
  assert.equal(route.params.get("version"), ID);
  assert.equal(routeOf("#/search?q=quokka%20census&mode=keyword").params.get("q"), "quokka census");
  assert.equal(routeOf("#//files//").name, "files");
});

test("an address no view has is no route", () => {
  for (const hash of [
    "#/nowhere",
    "#/answers",
    "#/cite",
    `#/files/${ID}/more`,
    `#/answers/${ID}/citations`,
    `#/webhooks/${ID}/deliveries`,
  ]) {
    assert.equal(routeOf(hash), null, hash);
  }
});
