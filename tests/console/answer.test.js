// answerMarkdown: a grounded answer as the Markdown of the artifact it is saved as.
import assert from "node:assert/strict";
import { test } from "node:test";

import { answerMarkdown } from "../../console/answer.js";

test("the question is the title; each claim ends with its citations' numbers", () => {
  const answer = {
    question: "How many\n burrows  were counted?",
    claims: [
      { text: "Seventeen burrows were counted.", citations: [1, 2] },
      { text: "The count   was by the lighthouse.", citations: [] },
    ],
  };
  assert.equal(
    answerMarkdown(answer),
    "# How many burrows were counted?\n\nSeventeen burrows were counted. [1][2]\n\nThe count was by the lighthouse.\n",
  );
});

test("a claim's own bracketed number is not taken for a citation", () => {
  const answer = { question: "Which?", claims: [{ text: "Item [3] of the list.", citations: [1] }] };
  assert.equal(answerMarkdown(answer), "# Which?\n\nItem (3) of the list. [1]\n");
});
